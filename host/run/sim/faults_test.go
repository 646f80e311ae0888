package sim

import (
	"context"
	"strings"
	"sync/atomic"
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

// The "probe" module of these tests is a native twin (the same guest
// runtime and byte-level calls as Wasm) of two plugins:
//
//   - Probe misbehaves as the pod's name says: "prefilter-77" and
//     "filter-77" answer status code 77, "prefilter-panic",
//     "filter-panic", "score-panic" panic (a trap: the instance is lost),
//     "prescore-error" answers Error, "evil" rejects every node with a
//     reason full of control characters and escape sequences.
//   - Sibling behaves: its Filter rejects node n1 and its Score favours
//     n3, so a pod lands on n3 when Sibling ran. It counts its Filter
//     calls.
//
// A wrapper around the instances fails the cycle start of pods named
// "cycle-fail…" (a module-wide call).

var siblingFilters atomic.Int64

type probe struct{}

func (probe) Name() string { return "Probe" }

func (probe) PreFilter(_ *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	switch pod.Name {
	case "prefilter-77":
		return plugin.NewStatus(abi.Code(77))
	case "prefilter-panic":
		panic("probe: PreFilter panics")
	}
	return nil
}

func (probe) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	switch pod.Name {
	case "filter-77":
		return plugin.NewStatus(abi.Code(77), "forged")
	case "filter-panic":
		panic("probe: Filter panics\nwith a second line")
	case "evil":
		return plugin.NewStatus(abi.Unschedulable, "bad\n\x1b[31mred\x1b[0m\r\ndefault/forged  default-scheduler  n1  Scheduled"+strings.Repeat("x", 5000))
	}
	return nil
}

func (probe) PreScore(_ *plugin.CycleState, pod *abi.Pod, _ []*plugin.NodeInfo) *plugin.Status {
	if pod.Name == "prescore-error" {
		return plugin.NewStatus(abi.Error, "probe: PreScore failed")
	}
	return nil
}

func (probe) Score(_ *plugin.CycleState, pod *abi.Pod, _ *plugin.NodeInfo) (int64, *plugin.Status) {
	if pod.Name == "score-panic" {
		panic("probe: Score panics")
	}
	return 0, nil
}

type sibling struct{}

func (sibling) Name() string { return "Sibling" }

func (sibling) Filter(_ *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	siblingFilters.Add(1)
	if node.Name() == "n1" {
		return plugin.NewStatus(abi.Unschedulable, "sibling says no")
	}
	return nil
}

func (sibling) Score(_ *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	if node.Name() == "n3" {
		return 100, nil
	}
	return 0, nil
}

// probeBackend serves the probe module and fails the cycle start of pods
// named "cycle-fail…" with an error reply.
type probeBackend struct{ inner guest.Backend }

func newProbeBackend() *probeBackend {
	return &probeBackend{inner: native.New(nil,
		plugin.Registration{Name: "Probe", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return probe{}, nil }},
		plugin.Registration{Name: "Sibling", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return sibling{}, nil }},
	)}
}

func (b *probeBackend) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := b.inner.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return &probeInstance{Instance: inst}, nil
}

func (b *probeBackend) Close(ctx context.Context) error { return b.inner.Close(ctx) }

type probeInstance struct {
	guest.Instance
	in []byte
}

func (i *probeInstance) Input(ctx context.Context, n int) ([]byte, error) {
	b, err := i.Instance.Input(ctx, n)
	i.in = b
	return b, err
}

func (i *probeInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	if fn == abi.FuncCycle {
		var pod abi.Pod
		abi.NewDecoder(i.in[:n]).Pod(&pod)
		if strings.HasPrefix(pod.Name, "cycle-fail") {
			var e abi.Encoder
			e.U8(abi.ReplyError)
			e.String("probe: cannot start a cycle")
			return e.B, nil
		}
	}
	return i.Instance.Call(ctx, fn, arg, n)
}

const probeNodes = `apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n3}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
`

// runProbe schedules one pod named name with the probe module under the
// given module entry options (YAML flow mapping fields) and profile
// plugins, and returns its result and the metrics.
func runProbe(t *testing.T, name, moduleOpts string) (*PodResult, *prometheus.Registry) {
	t.Helper()
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- {name: probe, path: in-process` + moduleOpts + `}
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled: [{name: "*"}]
      enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: Probe}, {name: Sibling}]
`))
	if err != nil {
		t.Fatal(err)
	}
	o := &Objects{}
	pod := "---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {containers: [{name: c, image: i}]}\n"
	if err := o.Read("test.yaml", strings.NewReader(probeNodes+pod)); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), o, Options{Config: cfg, CacheDir: t.TempDir(), Metrics: m,
		Backends: map[string]guest.Backend{"probe": newProbeBackend()}})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Pod("default", name), reg
}

func ignored(t *testing.T, reg *prometheus.Registry, plugin, point string) float64 {
	t.Helper()
	return testmetrics.Value(t, reg, "wasmsched_plugin_ignored_failures_total",
		testmetrics.Labels{"profile": "default-scheduler", "plugin": plugin, "extension_point": point})
}

// TestRepliesAreValidated: a status code outside what a function may
// return is an Error of the plugin that names the code, through the
// plugin's failurePolicy — never a rejection.
func TestRepliesAreValidated(t *testing.T) {
	for _, tc := range []struct {
		pod, policy, status, msg string
	}{
		{"prefilter-77", "Fail", StatusSchedulerError, `prefilter plugin "Probe": invalid reply: status code 77 is not one prefilter may return`},
		{"filter-77", "Fail", StatusSchedulerError, `filter plugin "Probe": invalid reply: status code 77 is not one filter may return`},
		{"prefilter-77", "Ignore", StatusScheduled, ""},
		{"filter-77", "Ignore", StatusScheduled, ""},
	} {
		t.Run(tc.pod+"/"+tc.policy, func(t *testing.T) {
			res, reg := runProbe(t, tc.pod, ", plugins: {Probe: {failurePolicy: "+tc.policy+"}}")
			if res.Status != tc.status || !strings.Contains(res.Message, tc.msg) {
				t.Fatalf("got %s %q, want %s containing %q", res.Status, res.Message, tc.status, tc.msg)
			}
			if tc.status == StatusScheduled {
				if res.Node != "n3" {
					t.Errorf("placed on %s, want n3 (Sibling's choice)", res.Node)
				}
				point := map[string]string{"prefilter-77": metrics.PreFilter, "filter-77": metrics.Filter}[tc.pod]
				if n := ignored(t, reg, "Probe", point); n != 1 {
					t.Errorf("ignored failures of Probe at %s = %v, want 1", point, n)
				}
			}
		})
	}
}

// TestIgnoreAtEachExtensionPoint pins down what failurePolicy Ignore
// does, per point, for a plugin whose module also serves a plugin with
// failurePolicy Fail: the failure is counted, the Fail sibling still runs
// (on a fresh instance after a trap) and decides the placement.
func TestIgnoreAtEachExtensionPoint(t *testing.T) {
	for _, tc := range []struct{ pod, point string }{
		{"prefilter-panic", metrics.PreFilter}, // as if Skip: its Filter is not called
		{"filter-panic", metrics.Filter},       // the nodes pass it
		{"prescore-error", metrics.PreScore},   // its Score is skipped
		{"score-panic", metrics.Score},         // it adds 0
	} {
		t.Run(tc.pod, func(t *testing.T) {
			before := siblingFilters.Load()
			res, reg := runProbe(t, tc.pod, ", failurePolicy: Fail, plugins: {Probe: {failurePolicy: Ignore}}")
			if res.Status != StatusScheduled || res.Node != "n3" {
				t.Fatalf("got %s on %q (%s), want Scheduled on n3", res.Status, res.Node, res.Message)
			}
			if siblingFilters.Load() == before {
				t.Error("Sibling's Filter never ran")
			}
			if n := ignored(t, reg, "Probe", tc.point); n != 1 {
				t.Errorf("ignored failures of Probe at %s = %v, want 1", tc.point, n)
			}
			if n := ignored(t, reg, "Sibling", tc.point); n != 0 {
				t.Errorf("Sibling counted %v ignored failures", n)
			}
		})
	}
}

// TestModuleWideFailures: when the module's cycle start fails, its Ignore
// plugins are skipped for the cycle and counted, and a Fail plugin fails
// the pod with an Error naming it.
func TestModuleWideFailures(t *testing.T) {
	res, reg := runProbe(t, "cycle-fail-1", ", failurePolicy: Ignore")
	if res.Status != StatusScheduled {
		t.Fatalf("all Ignore: got %s (%s), want Scheduled", res.Status, res.Message)
	}
	for _, p := range []string{"Probe", "Sibling"} {
		if n := ignored(t, reg, p, "cycle"); n != 1 {
			t.Errorf("ignored failures of %s at cycle = %v, want 1", p, n)
		}
	}

	res, _ = runProbe(t, "cycle-fail-2", ", plugins: {Probe: {failurePolicy: Ignore}}")
	want := `plugin "Sibling" (failurePolicy Fail) cannot run: module "probe": cycle: probe: cannot start a cycle`
	if res.Status != StatusSchedulerError || !strings.Contains(res.Message, want) {
		t.Fatalf("Sibling Fail: got %s %q, want an error containing %q", res.Status, res.Message, want)
	}
}

// TestGuestTextIsSafeToPrint: a reason with line breaks and escape
// sequences reaches the pod's message on one line, without them, and
// bounded like an Event message.
func TestGuestTextIsSafeToPrint(t *testing.T) {
	res, _ := runProbe(t, "evil", "")
	if res.Status != StatusUnschedulable {
		t.Fatalf("got %s %q", res.Status, res.Message)
	}
	if strings.ContainsAny(res.Message, "\n\r\x1b") {
		t.Errorf("message keeps control characters: %q", res.Message)
	}
	if !strings.Contains(res.Message, "bad [31mred[0m") && !strings.Contains(res.Message, "bad red default/forged") {
		t.Errorf("message lost the reason's text: %q", res.Message)
	}
	if len(res.Message) > guest.MaxText {
		t.Errorf("message is %d bytes, want at most %d", len(res.Message), guest.MaxText)
	}

	res, _ = runProbe(t, "filter-panic", "")
	if res.Status != StatusSchedulerError || strings.ContainsAny(res.Message, "\n\t") || !strings.Contains(res.Message, `filter plugin "Probe": instance lost`) {
		t.Errorf("trap message: %s %q, want one line naming the plugin", res.Status, res.Message)
	}
}
