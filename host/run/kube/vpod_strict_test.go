package kube

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// serve refuses a vpod policy with a misspelt plugin or arg when it
// builds its engines, naming the entries' lines, before any controller
// runs; lenient, it starts.
func TestServeRefusesMisspeltVPodPolicy(t *testing.T) {
	ctx := context.Background()
	for _, lenient := range []bool{false, true} {
		compat := ""
		if lenient {
			compat = "    knativeCompat: lenient\n"
		}
		path := filepath.Join(t.TempDir(), "c.yaml")
		doc := `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles: [{schedulerName: wasmsched}]
vpod:
  schedulers:
  - name: disp
    statefulSet: {namespace: adapters, name: disp}
    podCapacity: 10
` + compat + `    schedulerPolicy:
      predicates:
      - {name: PodFitsResource}
      priorities:
      - {name: AvailabilityZonePriority, weight: 1, args: {MaxSkw: 2}}
`
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		reg, err := modules.Load(ctx, cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		specs, err := vpodSpecsFrom(cfg)
		if err != nil {
			t.Fatal(err)
		}
		client := fake.NewClientset()
		client.Resources = []*metav1.APIResourceList{
			{GroupVersion: "wasmsched.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "vpods", Namespaced: true, Kind: "VPod"}}},
		}
		dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{VPodCRD: "VPodList"})
		parts, err := newVPodPartsWith(ctx, vpodPartsOptions{Client: client, Dynamic: dyn, Specs: specs, Registry: reg, Log: hclog.NewNullLogger()})
		if lenient {
			if err != nil {
				t.Fatalf("lenient: %v", err)
			}
			parts.close(ctx)
			reg.Close(ctx)
			continue
		}
		reg.Close(ctx)
		if err == nil {
			parts.close(ctx)
			t.Fatal("strict: a misspelt policy was accepted")
		}
		for _, want := range []string{
			path + `:11: vpod.schedulers[0].schedulerPolicy.predicates[0]: vpod predicate "PodFitsResource": no module serves it (did you mean "PodFitsResources"?)`,
			path + `:13: vpod.schedulers[0].schedulerPolicy.priorities[0]: vpod priority "AvailabilityZonePriority": module "knative" refuses its args`,
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("strict: error %v\nwant it to contain %s", err, want)
			}
		}
	}
}
