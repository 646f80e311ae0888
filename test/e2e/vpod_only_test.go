package e2e

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// vpodOnlyConfig is a configuration with a vpod section and nothing
// else (no profiles); NAME and CAPACITY are filled in.
const vpodOnlyConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
vpod:
  schedulers:
  - {name: NAME, statefulSet: {namespace: adapters, name: solo}, podCapacity: CAPACITY, strategy: MAXFILLUP, refreshPeriod: 1s}
`

func vpodOnlyYAML(name, capacity string) []byte {
	return []byte(strings.NewReplacer("NAME", name, "CAPACITY", capacity).Replace(vpodOnlyConfig))
}

// TestServeVPodOnly runs serve with a configuration that has only a vpod
// section against a real API server: it places VPods, and a reload that
// renames the scheduler and raises its podCapacity stops the old one and
// starts the new one, which places by the new capacity.
func TestServeVPodOnly(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	installCRD(t, ctx, admin, dyn, "../../deploy/vpod-crd.yaml", vpodsGVR)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: adapterNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range vpodNodes {
		createNode(t, ctx, admin, node(name, "4"))
	}
	createStatefulSet(t, ctx, admin, "solo", 2)
	stsCtx, stopSTS := context.WithCancel(ctx)
	defer stopSTS()
	go statefulSetController(stsCtx, admin, map[string]int32{"solo": 2})

	cm := &mountedConfigMap{t: t, dir: t.TempDir()}
	cm.update(map[string][]byte{"config.yaml": vpodOnlyYAML("solo", "3")})
	cfgPath := filepath.Join(cm.dir, "config.yaml")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Profiles) != 0 {
		t.Fatalf("the configuration has profiles: %v", cfg.Profiles)
	}
	promReg := prometheus.NewRegistry()
	met, err := metrics.New(promReg)
	if err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs.String())
		}
	})
	startServe(t, ctx, kube.ServeOptions{Client: admin, RESTConfig: rc, Config: cfg, ConfigPath: cfgPath, Watch: true, Metrics: met,
		Log: hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})})
	v := &vpodClient{t: t, ctx: ctx, dyn: dyn, admin: admin}

	v.create(vpodsGVR, vpodObj("first", 4, "solo"))
	v.waitPlacements(vpodsGVR, "first", "filled from the lowest ordinal", func(ps []place) bool {
		return reflect.DeepEqual(ps, []place{{"solo-0", 3}, {"solo-1", 1}})
	})

	// Renamed, podCapacity 3 → 5: solo-0 takes 2 more (at 3 they would
	// go to solo-1).
	cm.update(map[string][]byte{"config.yaml": vpodOnlyYAML("renamed", "5")})
	v.waitUntil("the reload", func() bool {
		return testmetrics.Value(t, promReg, "wasmsched_config_reloads_total", testmetrics.Labels{"result": metrics.ReloadSuccess}) >= 2
	})
	v.create(vpodsGVR, vpodObj("second", 2, "solo"))
	v.waitPlacements(vpodsGVR, "second", "placed by the new capacity", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"solo-0", 2}}) })
	for _, line := range []string{"vpod scheduler stopped: the configuration no longer names it: scheduler=solo", "vpod scheduler started: scheduler=renamed"} {
		if !strings.Contains(logs.String(), line) {
			t.Errorf("serve's log lacks %q", line)
		}
	}
}
