package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// boomVPod is a vpod predicate that panics at every step: through the
// native runtime, a guest trap.
type boomVPod struct{}

func (boomVPod) Name() string { return "Boom" }
func (boomVPod) NewVPodFilter([]byte) (plugin.VPodFilter, error) {
	return func(*plugin.VPodState, []int, []*plugin.Status) { panic("boom") }, nil
}

// vpodCluster is three nodes, an adapter StatefulSet of three pods and
// the VPod documents given.
func vpodCluster(t *testing.T, vpods string) *Objects {
	t.Helper()
	o := &Objects{}
	doc := probeNodes + `---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: adapter, namespace: eventing}
spec:
  replicas: 3
  selector: {matchLabels: {app: adapter}}
  template:
    metadata: {labels: {app: adapter}}
    spec: {containers: [{name: a, image: a, resources: {requests: {cpu: 100m}}}]}
` + vpods
	if err := o.Read("vpods.yaml", strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	return o
}

// vpodConfig is a configuration with one vpod scheduler for the adapter
// StatefulSet and the modules given.
func vpodConfig(t *testing.T, modules, scheduler string) *config.Configuration {
	t.Helper()
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
` + modules + `
profiles:
- schedulerName: default-scheduler
vpod:
  schedulers:
  - {name: adapter, statefulSet: {namespace: eventing, name: adapter}, ` + scheduler + `}
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A vpod policy module that traps is a module failure, not a lack of
// pods: the run reports the failure (module, plugin, reason) on the
// vpod, which keeps its placements, and the StatefulSet keeps its
// replicas (3; counting the failure as a lack of pods would make 14).
func TestSimulateVPodModuleFailureScalesNothing(t *testing.T) {
	cfg := vpodConfig(t, "modules: [{name: faulty, path: in-process}]", `podCapacity: 2, schedulerPolicy: {predicates: [{name: PodFitsResources}, {name: Boom}]}`)
	objs := vpodCluster(t, `---
apiVersion: wasmsched.io/v1alpha1
kind: VPod
metadata: {name: orders, namespace: shop}
spec: {vreplicas: 6, statefulSet: eventing/adapter}
status: {placements: [{podName: adapter-1, vreplicas: 2}]}
`)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), objs, Options{Config: cfg, Seed: 1, NativeBuiltin: true, CacheDir: t.TempDir(), Metrics: m,
		Backends: map[string]guest.Backend{"faulty": native.New(nil,
			plugin.Registration{Name: "Boom", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return boomVPod{}, nil }})}})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.VPods.Schedulers[0]
	if s.Error != "" || s.ReplicasBefore != 3 || s.ReplicasAfter != 3 {
		t.Fatalf("replicas %d -> %d (%s), want 3 -> 3", s.ReplicasBefore, s.ReplicasAfter, s.Error)
	}
	for _, p := range s.Passes {
		if p.Scaled || p.Target != 3 {
			t.Errorf("autoscaler pass %+v, want none scaling", p)
		}
	}
	v := s.VPods[0]
	if f := v.PolicyFailure; f == nil || f.Module != "faulty" || f.Plugin != "Boom" || f.Reason != metrics.PolicyFailureTrap {
		t.Fatalf("vpod %+v: want the trap of module faulty, plugin Boom reported", v)
	}
	for _, part := range []string{`module "faulty"`, "Boom", "trap"} {
		if !strings.Contains(v.Error, part) {
			t.Errorf("error %q does not name %s", v.Error, part)
		}
	}
	if len(v.Placements) != 1 || v.Placements[0].PodName != "adapter-1" || v.Placements[0].VReplicas != 2 || v.Pending != 4 {
		t.Errorf("vpod %+v: want its old placement kept, 4 pending", v)
	}
	if n := testmetrics.Value(t, reg, "wasmsched_vpod_policy_failures_total",
		testmetrics.Labels{"scheduler": "adapter", "plugin": "Boom", "reason": "trap"}); n < 1 {
		t.Errorf("policy failures counted %v", n)
	}
}

// The autoscaler never asks for more than maxReplicas: a vpod wanting
// far more vreplicas than fit leaves the rest pending.
func TestSimulateVPodAutoscalerCapped(t *testing.T) {
	cfg := vpodConfig(t, "", `podCapacity: 10, maxReplicas: 5`)
	objs := vpodCluster(t, `---
apiVersion: wasmsched.io/v1alpha1
kind: VPod
metadata: {name: orders, namespace: shop}
spec: {vreplicas: 100000, statefulSet: eventing/adapter}
`)
	rep, err := Run(context.Background(), objs, Options{Config: cfg, Seed: 1, NativeBuiltin: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := rep.VPods.Schedulers[0]
	if s.ReplicasAfter != 5 {
		t.Fatalf("replicas %d -> %d, want 5 (maxReplicas)", s.ReplicasBefore, s.ReplicasAfter)
	}
	capped := false
	for _, p := range s.Passes {
		capped = capped || p.Capped && p.Wanted == 10000 && p.Target <= 5
		if p.Target > 5 {
			t.Errorf("pass %+v asked for more than maxReplicas", p)
		}
	}
	if !capped {
		t.Errorf("no pass says it was capped: %+v", s.Passes)
	}
	if v := s.VPods[0]; v.Pending != 100000-50 {
		t.Errorf("vpod %+v: want 50 placed, the rest pending", v)
	}
}

// VPod documents asking for absurd sizes are refused at load, the field
// and the limit named.
func TestSimulateRefusesAbsurdVPods(t *testing.T) {
	vpod := func(spec, status string) string {
		return "apiVersion: wasmsched.io/v1alpha1\nkind: VPod\nmetadata: {name: v, namespace: shop}\nspec: " + spec + "\nstatus: " + status + "\n"
	}
	many := make([]string, 65537)
	for i := range many {
		many[i] = fmt.Sprintf(`{"podName": "a-%d", "vreplicas": 0}`, i)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"vreplicas", vpod("{vreplicas: 2147483647, statefulSet: a}", "{}"),
			"(document 0, VPod shop/v): spec.vreplicas: 2147483647 exceeds the limit 100000"},
		{"placements", `{"apiVersion": "wasmsched.io/v1alpha1", "kind": "VPod", "metadata": {"name": "v", "namespace": "shop"}, ` +
			`"spec": {"vreplicas": 1, "statefulSet": "a"}, "status": {"placements": [` + strings.Join(many, ",") + `]}}`,
			"status.placements: 65537 placements exceed the limit 65536"},
		{"placed vreplicas", vpod("{vreplicas: 1, statefulSet: a}", "{placements: [{podName: a-0, vreplicas: 60000}, {podName: a-1, vreplicas: 60000}]}"),
			"status.placements: 120000 vreplicas in all exceed the limit 100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&Objects{}).Read("v.yaml", strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("count", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"apiVersion": "v1", "kind": "List", "items": [`)
		for i := 0; i <= MaxVPods; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"apiVersion": "wasmsched.io/v1alpha1", "kind": "VPod", "metadata": {"name": "v%d"}, "spec": {"vreplicas": 1, "statefulSet": "a"}}`, i)
		}
		b.WriteString("]}")
		err := (&Objects{}).Read("v.json", strings.NewReader(b.String()))
		if err == nil || !strings.Contains(err.Error(), "more than 10000 VPod objects") {
			t.Fatalf("error %v", err)
		}
	})
}
