package sim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

type series = testmetrics.Labels

func newMetrics(t *testing.T, opts ...metrics.Option) (*prometheus.Registry, *metrics.Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return reg, m
}

// TestSchedulingMetrics runs one pod that fits and one that fits nowhere
// through the Wasm default bundle, under a profile with its own name, with
// every cycle's plugin calls timed, and checks what a scrape would show.
func TestSchedulingMetrics(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: metered
`))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := read(t, `apiVersion: v1
kind: Node
metadata: {name: node1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: fits}
spec: {schedulerName: metered, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: too-big}
spec: {schedulerName: metered, containers: [{name: c, image: i, resources: {requests: {cpu: "64"}}}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	reg, m := newMetrics(t, metrics.WithPluginSamplePercent(100))
	ctx := context.Background()
	env, err := Start(ctx, objs, Options{Config: cfg, CacheDir: t.TempDir(), Seed: 1, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close(ctx)
	rep, err := env.Settle(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Pod("default", "fits"); p.Status != StatusScheduled {
		t.Fatalf("fits: %+v", p)
	}
	tooBig := rep.Pod("default", "too-big")
	if tooBig.Status != StatusUnschedulable || tooBig.Attempts != 1 {
		t.Fatalf("too-big: %+v, want unschedulable after one attempt", tooBig)
	}

	value := func(name string, l series) float64 { return testmetrics.Value(t, reg, name, l) }
	count := func(name string, l series) uint64 { return testmetrics.Count(t, reg, name, l) }
	for result, want := range map[string]float64{
		metrics.ResultScheduled: 1, metrics.ResultUnschedulable: 1, metrics.ResultError: 0,
	} {
		l := series{"result": result, "profile": "metered"}
		if got := value("scheduler_schedule_attempts_total", l); got != want {
			t.Errorf("schedule_attempts_total%v = %v, want %v", l, got, want)
		}
		if got := count("scheduler_scheduling_attempt_duration_seconds", l); got != uint64(want) {
			t.Errorf("scheduling_attempt_duration_seconds%v has %d observations, want %v", l, got, want)
		}
	}
	for queue, want := range map[string]float64{"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0} {
		if got := value("scheduler_pending_pods", series{"queue": queue}); got != want {
			t.Errorf("pending_pods{queue=%q} = %v, want %v", queue, got, want)
		}
	}
	// NodeResourcesFit ran in the Wasm bundle: one PreFilter per cycle, one
	// Filter call per cycle over both nodes (passing both for fits;
	// rejecting both for too-big, whose request exceeds what any node has,
	// which kube-scheduler calls unresolvable), and one Score call for fits.
	fit := func(point, status string) uint64 {
		return count("scheduler_plugin_execution_duration_seconds",
			series{"plugin": "NodeResourcesFit", "extension_point": point, "status": status})
	}
	for _, tc := range []struct {
		point, status string
		want          uint64
	}{
		{metrics.PreFilter, "Success", 2},
		{metrics.Filter, "Success", 1},
		{metrics.Filter, "UnschedulableAndUnresolvable", 1},
		{metrics.Score, "Success", 1},
	} {
		if got := fit(tc.point, tc.status); got != tc.want {
			t.Errorf("NodeResourcesFit %s %s: %d observations, want %d", tc.point, tc.status, got, tc.want)
		}
	}
	if got := value("wasmsched_module_loads_total", series{"module": config.BuiltinDefaultModule, "result": metrics.LoadSuccess}); got != 1 {
		t.Errorf("the builtin module loaded %v times, want 1", got)
	}
	if got := value("wasmsched_module_instances", series{"module": config.BuiltinDefaultModule}); got < 1 {
		t.Errorf("%v live instances of the builtin module while the profile runs, want at least 1", got)
	}
	if got := value("wasmsched_guest_traps_total", nil) + value("wasmsched_guest_deadline_exceeded_total", nil); got != 0 {
		t.Errorf("%v guest failures counted in a clean run", got)
	}
}

// TestTrapsAndDeadlinesAreCounted runs the misbehave module's filter with
// failurePolicy Fail: the pod named "trap" makes the guest trap and the one
// named "loop" runs it into its deadline, in every attempt (each retried
// after backoff until the run settles). Each attempt is one scheduling
// error and one guest failure of the right kind, labelled with the module
// and the plugin; the well-behaved pod is scheduled.
func TestTrapsAndDeadlinesAreCounted(t *testing.T) {
	root, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- {name: misbehave, path: ` + filepath.Join(root, testwasm.Misbehave.TinyGo) + `, failurePolicy: Fail, callTimeout: 100ms}
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled: [{name: Misbehave}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var manifests strings.Builder
	manifests.WriteString("apiVersion: v1\nkind: Node\nmetadata: {name: node1}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n")
	for _, name := range []string{"trap", "loop", "fine"} {
		manifests.WriteString("---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {containers: [{name: c, image: i}]}\n")
	}
	objs, err := read(t, manifests.String())
	if err != nil {
		t.Fatal(err)
	}
	reg, m := newMetrics(t)
	rep, err := Run(context.Background(), objs, Options{Config: cfg, CacheDir: t.TempDir(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	trap, loop, fine := rep.Pod("default", "trap"), rep.Pod("default", "loop"), rep.Pod("default", "fine")
	if trap.Status != StatusSchedulerError || loop.Status != StatusSchedulerError || fine.Status != StatusScheduled {
		t.Fatalf("trap %+v, loop %+v, fine %+v", trap, loop, fine)
	}
	if trap.Attempts < 1 || loop.Attempts < 1 {
		t.Fatalf("attempts: trap %d, loop %d", trap.Attempts, loop.Attempts)
	}
	value := func(name string, l series) float64 { return testmetrics.Value(t, reg, name, l) }
	plugin := series{"module": "misbehave", "plugin": "Misbehave"}
	if got, want := value("wasmsched_guest_traps_total", plugin), float64(trap.Attempts); got != want {
		t.Errorf("guest_traps_total%v = %v, want %v (one per attempt of the trap pod)", plugin, got, want)
	}
	if got, want := value("wasmsched_guest_deadline_exceeded_total", plugin), float64(loop.Attempts); got != want {
		t.Errorf("guest_deadline_exceeded_total%v = %v, want %v (one per attempt of the loop pod)", plugin, got, want)
	}
	if got := value("wasmsched_guest_traps_total", series{"plugin": ""}) + value("wasmsched_guest_deadline_exceeded_total", series{"plugin": ""}); got != 0 {
		t.Errorf("%v failures counted against module-wide calls, want 0", got)
	}
	errors := series{"result": metrics.ResultError, "profile": "default-scheduler"}
	if got, want := value("scheduler_schedule_attempts_total", errors), float64(trap.Attempts+loop.Attempts); got != want {
		t.Errorf("schedule_attempts_total%v = %v, want %v", errors, got, want)
	}
}
