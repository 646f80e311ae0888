package backendtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// guestBuild is one build of a guest written in Go.
type guestBuild struct {
	name  string
	bytes func(tb testing.TB) []byte
}

// misbehaveBuilds are the builds of plugins-wasm/testguests/misbehave:
// its Filter traps, loops, eats memory or logs as the pod's name says.
var misbehaveBuilds = []guestBuild{
	{"tinygo", func(tb testing.TB) []byte { return testwasm.TinyGoBytes(tb, testwasm.Misbehave) }},
	{"go", func(tb testing.TB) []byte { return testwasm.GoBytes(tb, testwasm.Misbehave) }},
}

// goBuild returns the Go (wasip1) build among builds.
func goBuild(builds []guestBuild) guestBuild {
	for _, b := range builds {
		if b.name == "go" {
			return b
		}
	}
	panic("backendtest: no Go build listed") // the tables above list one
}

func misbehaveKey(build guestBuild) string { return "misbehave-" + build.name }

// misbehaveLimits are the limits the misbehave guest runs under.
var misbehaveLimits = wasm.Limits{MemoryBytes: 32 << 20, CallTimeout: poolDeadline}

const poolDeadline = 200 * time.Millisecond

// misbehave returns the build compiled once per Run, and its log.
func (s *suite) misbehave(t *testing.T, build guestBuild) (guest.Backend, *testlog.Buffer) {
	t.Helper()
	return s.sharedCompile(t, misbehaveKey(build), "misbehave", func() []byte { return build.bytes(t) }, misbehaveLimits)
}

// poolRow is a failure of a plugin call: the pod whose name picks it, the
// words of the error, and what it counts.
type poolRow struct {
	pod              string
	want             []string
	traps, deadlines float64 // added by this pod; -1: either, once
}

var wasmPoolRows = []poolRow{
	{"trap", []string{"instance lost: wasmsched_call: guest panicked: runtime error: index out of range"}, 1, 0},
	{"loop", []string{"instance lost: wasmsched_call: ", "deadline of 200ms exceeded"}, 0, 1},
	// Whether the guest's allocator gives up before the deadline depends
	// on the build and the machine.
	{"hog", []string{"instance lost: "}, -1, -1},
}

// nativePoolRows: a twin cannot be stopped or capped, only recovered.
var nativePoolRows = []poolRow{
	{"trap", []string{"instance lost: ", "panicked: runtime error: index out of range"}, 1, 0},
}

var poolCases = []wasmCase{
	{"pool/an instance whose memory grew for the last time is replaced between calls", growthRecycles},
	{"pool/a guest out of memory says so, with module and plugin", outOfMemoryIsNamed},
	{"pool/a failed instance is discarded and the pool makes a fresh one", func(t *testing.T, s *suite) {
		for _, build := range misbehaveBuilds {
			t.Run(build.name, func(t *testing.T) {
				b, logs := s.misbehave(t, build)
				runPool(t, b, logs, wasmPoolRows)
				if !s.logging() {
					return
				}
				if !strings.Contains(logs.String(), "misbehave says hello from n1: module=misbehave plugin=Misbehave") {
					t.Errorf("guest log line missing or untagged; logs:\n%s", logs)
				}
			})
		}
	}},
}

// growthLimits are misbehaveLimits with a deadline no loaded machine
// reaches: a call of the growing guest may collect or copy tens of MiB.
var growthLimits = wasm.Limits{MemoryBytes: misbehaveLimits.MemoryBytes, CallTimeout: 30 * time.Second}

// growthRecycles: a guest that keeps 1 MiB more per call ("grow") would
// run out of memory under growthLimits within 32 calls; the pool
// replaces its instance between calls once its memory has grown past half
// the cap, so three times as many calls all succeed, nothing counts as
// lost or trapped, and the replacement is counted. A guest that does not
// grow ("ok") keeps its instance.
func growthRecycles(t *testing.T, s *suite) {
	for _, build := range misbehaveBuilds {
		t.Run(build.name, func(t *testing.T) {
			b, _ := s.sharedCompile(t, misbehaveKey(build)+"-growth", "misbehave", func() []byte { return build.bytes(t) }, growthLimits)
			ctx := context.Background()
			m, reg := meteredMisbehave(t, b)
			snap := oneNode()
			for i := 0; i < 50; i++ {
				if _, err := runFilter(ctx, m, snap, "ok"); err != nil {
					t.Fatalf("ok call %d: %v", i, err)
				}
			}
			if got := m.Recycled(); got != 0 {
				t.Fatalf("%d instances recycled by calls that keep nothing, want 0", got)
			}
			calls := 3 * int(growthLimits.MemoryBytes>>20)
			for i := 0; i < calls; i++ {
				reply, err := runFilter(ctx, m, snap, "grow")
				if err != nil {
					t.Fatalf("grow call %d (after %d recycled): %v", i, m.Recycled(), err)
				}
				if len(reply.Indexes) != 1 || reply.Indexes[0] != 0 {
					t.Fatalf("grow call %d: the node did not pass: %+v", i, reply)
				}
			}
			if m.Recycled() < 2 || m.Lost() != 0 {
				t.Errorf("%d calls keeping 1 MiB each under a %d MiB cap: %d instances recycled, %d lost; want at least 2 and none",
					calls, growthLimits.MemoryBytes>>20, m.Recycled(), m.Lost())
			}
			labels := testmetrics.Labels{"module": "misbehave"}
			if got := testmetrics.Value(t, reg, "wasmsched_instances_recycled_total", labels); got != float64(m.Recycled()) {
				t.Errorf("wasmsched_instances_recycled_total = %v, want %d", got, m.Recycled())
			}
			// The last Put may have closed the instance; the next call has one.
			if _, err := runFilter(ctx, m, snap, "ok"); err != nil {
				t.Fatalf("ok call after the growth: %v", err)
			}
			if got := testmetrics.Value(t, reg, "wasmsched_module_instances", labels); got != 1 {
				t.Errorf("%v live instances, want 1", got)
			}
		})
	}
}

// outOfMemoryIsNamed: a guest that keeps allocating ("hog") under
// growthLimits, whose deadline it cannot reach, runs out of memory: the
// error names the module and the plugin and says "guest out of memory"
// with the limit, from a TinyGo build (its allocator's panic) and a Go
// build (the runtime's fatal error and exit) alike.
func outOfMemoryIsNamed(t *testing.T, s *suite) {
	for _, build := range misbehaveBuilds {
		t.Run(build.name, func(t *testing.T) {
			b, _ := s.sharedCompile(t, misbehaveKey(build)+"-growth", "misbehave", func() []byte { return build.bytes(t) }, growthLimits)
			m, _ := meteredMisbehave(t, b)
			_, err := runFilter(context.Background(), m, oneNode(), "hog")
			t.Logf("err = %v", err)
			if !errors.Is(err, guest.ErrInstanceBroken) {
				t.Fatalf("err = %v, want %v", err, guest.ErrInstanceBroken)
			}
			wantFault(t, err, guest.ErrGuestTrap,
				`module "misbehave": filter plugin "Misbehave": instance lost: wasmsched_call: guest out of memory (`,
				fmt.Sprintf("memoryLimit %d MiB", growthLimits.MemoryBytes>>20))
		})
	}
}

func nativePool(t *testing.T, n Native) {
	logs := &testlog.Buffer{}
	b := n.New(hclog.New(&hclog.LoggerOptions{Output: logs}), misbehaveTwin)
	t.Cleanup(func() { b.Close(context.Background()) })
	runPool(t, b, logs, nativePoolRows)
	if !strings.Contains(logs.String(), "misbehave says hello from n1") {
		t.Errorf("guest log line missing; logs:\n%s", logs)
	}
}

func nativeMissingPlugin(t *testing.T, n Native) {
	b := n.New(nil, misbehaveTwin)
	t.Cleanup(func() { b.Close(context.Background()) })
	_, err := guest.Load(context.Background(), b, guest.PoolConfig{Name: "misbehave", Require: []string{"Misbehave", "NodePorts"}})
	if !errors.Is(err, guest.ErrMissingPlugin) {
		t.Fatalf("err = %v, want %v", err, guest.ErrMissingPlugin)
	}
	wantWords(t, err, `module "misbehave"`, `"NodePorts" (it implements Misbehave)`)
}

// runPool makes each row's failure happen in a module of one instance
// and checks it: the error, the counters, the instance discarded, and a
// well-behaved call served by a fresh instance. The "log" pod ends it.
func runPool(t *testing.T, b guest.Backend, logs *testlog.Buffer, rows []poolRow) {
	ctx := context.Background()
	m, reg := meteredMisbehave(t, b)
	snap := oneNode()
	labels := testmetrics.Labels{"module": "misbehave", "plugin": "Misbehave"}
	traps := func() float64 { return testmetrics.Value(t, reg, "wasmsched_guest_traps_total", labels) }
	deadlines := func() float64 {
		return testmetrics.Value(t, reg, "wasmsched_guest_deadline_exceeded_total", labels)
	}
	instances := func() float64 {
		return testmetrics.Value(t, reg, "wasmsched_module_instances", testmetrics.Labels{"module": "misbehave"})
	}
	for i, r := range rows {
		traps0, deadlines0 := traps(), deadlines()
		start := time.Now()
		_, err := runFilter(ctx, m, snap, r.pod)
		took := time.Since(start)
		if !errors.Is(err, guest.ErrInstanceBroken) {
			t.Fatalf("%s: err = %v, want %v", r.pod, err, guest.ErrInstanceBroken)
		}
		wantWords(t, err, append([]string{`module "misbehave": filter plugin "Misbehave": `}, r.want...)...)
		for _, w := range []string{"goroutine", "wasm stack trace"} {
			if strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %q: says %q (a stack trace)", r.pod, err, w)
			}
		}
		// Generous bound: the deadline plus instantiation on a loaded machine.
		if took > 10*poolDeadline {
			t.Errorf("%s: took %v, want it stopped near the %v deadline", r.pod, took, poolDeadline)
		}
		if got := m.Lost(); got != int64(i+1) {
			t.Errorf("after %s: %d instances lost, want %d", r.pod, got, i+1)
		}
		dt, dd := traps()-traps0, deadlines()-deadlines0
		if r.traps < 0 && dt+dd != 1 || r.traps >= 0 && (dt != r.traps || dd != r.deadlines) {
			t.Errorf("%s (%v): counted %v traps and %v deadlines; want %v and %v (-1: one of either)",
				r.pod, err, dt, dd, r.traps, r.deadlines)
		}
		if got := instances(); got != 0 {
			t.Errorf("after %s: %v live instances, want 0 (one instance, lost)", r.pod, got)
		}
		// The module keeps serving with a fresh instance.
		reply, err := runFilter(ctx, m, snap, "ok")
		if err != nil {
			t.Fatalf("after %s, a well-behaved call failed: %v", r.pod, err)
		}
		if len(reply.Indexes) != 1 || reply.Indexes[0] != 0 {
			t.Fatalf("after %s, the node did not pass: %+v", r.pod, reply)
		}
		if got := instances(); got != 1 {
			t.Errorf("after %s and a good call: %v live instances, want 1", r.pod, got)
		}
	}
	if _, err := runFilter(ctx, m, snap, "log"); err != nil {
		t.Fatal(err)
	}
}

// meteredMisbehave loads the misbehave guest as a module of one instance
// whose metrics go to the returned registry.
func meteredMisbehave(t *testing.T, b guest.Backend) (*guest.Pool, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	met, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return load(t, b, guest.PoolConfig{Name: "misbehave", PoolSize: 1, Metrics: met}), reg
}

func oneNode() *snapshot.Snapshot {
	s := snapshot.New()
	s.SetNode(abi.Node{Name: "n1", AllowedPods: 110, Allocatable: abi.Resources{MilliCPU: 4000, Memory: 8 << 30}})
	return s
}

// runFilter runs one cycle of the Misbehave plugin for a pod named name.
func runFilter(ctx context.Context, m *guest.Pool, snap *snapshot.Snapshot, name string) (*abi.FilterReply, error) {
	c, err := m.Get(ctx)
	if err != nil {
		return nil, err
	}
	defer m.Put(ctx, c)
	if err := c.Sync(ctx, snap); err != nil {
		return nil, err
	}
	if err := c.StartCycle(ctx, &abi.Pod{Name: name, Namespace: "default", UID: name}); err != nil {
		return nil, err
	}
	slots := []uint32{snap.Nodes()[0].Slot}
	return c.Filter(ctx, 0, slots)
}

// misbehaveTwin is the native twin of the misbehave guest's plugin, for
// the failures a twin can have: Filter panics for the pod "trap" and logs
// for the pod "log".
var misbehaveTwin = plugin.Registration{
	Name: "Misbehave",
	New:  func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return misbehaveFilter{}, nil },
}

type misbehaveFilter struct{}

func (misbehaveFilter) Name() string { return "Misbehave" }

func (misbehaveFilter) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	switch pod.Name {
	case "trap":
		var nodes []*plugin.NodeInfo
		return plugin.NewStatus(abi.Unschedulable, nodes[len(pod.Name)].Name()) // index out of range
	case "log":
		plugin.Log(abi.LogWarn, "misbehave says hello from "+node.Name())
	}
	return nil
}
