package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// binder fails the first `fail` binds with err, then succeeds and tells
// the scheduler, as an informer would.
type binder struct {
	mu    sync.Mutex
	fail  int
	err   error
	sched *scheduler.Scheduler
	bound map[string]string
}

func (b *binder) Bind(_ context.Context, pod *abi.Pod, node string) error {
	b.mu.Lock()
	if b.fail > 0 {
		b.fail--
		b.mu.Unlock()
		return b.err
	}
	b.bound[pod.Name] = node
	b.mu.Unlock()
	nb := *pod
	nb.NodeName = node
	old := *pod
	old.NodeName = ""
	b.sched.OnPodUpdate(&old, &nb)
	return nil
}

type events struct {
	mu     sync.Mutex
	failed map[string]string
}

func (e *events) Scheduled(*abi.Pod, string, string) {}
func (e *events) FailedScheduling(pod *abi.Pod, _, reason, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failed[pod.Name] = reason + ": " + msg
}
func (e *events) Nominated(*abi.Pod, string, string) {}

type env struct {
	sched *scheduler.Scheduler
	q     *queue.PriorityQueue
	cache *cache.Cache
	clk   *testingclock.FakeClock
	b     *binder
	ev    *events
}

func newEnv(t *testing.T) *env {
	t.Helper()
	b := &binder{bound: map[string]string{}}
	e := newEnvWith(t, b, 0)
	b.sched = e.sched
	e.b = b
	return e
}

// newEnvWith is newEnv with another binder and a bound on the bindings
// in flight (0: none).
func newEnvWith(t *testing.T, b framework.Binder, maxBindings int) *env {
	t.Helper()
	return newEnvOpts(t, b, func(o *scheduler.Options) { o.MaxBindingsInFlight = maxBindings })
}

// newEnvOpts is newEnv with another binder and options set by with.
func newEnvOpts(t *testing.T, b framework.Binder, with func(*scheduler.Options)) *env {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	reg, err := modules.Load(ctx, cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	prof, err := framework.BuildProfile(ctx, cfg, 0, reg, framework.HostPlugins{
		"PrioritySort": framework.PrioritySort{}, "DefaultBinder": framework.DefaultBinder{Binder: b}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prof.Close(ctx) })
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	e := &env{clk: clk, ev: &events{failed: map[string]string{}}}
	e.q = queue.New(queue.Options{Clock: clk, PluginEvents: framework.PluginEvents})
	e.cache = cache.New(0, clk.Now)
	opts := scheduler.Options{Profiles: []*framework.Profile{prof}, Cache: e.cache, Queue: e.q, Recorder: e.ev}
	with(&opts)
	e.sched, err = scheduler.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func node(name string, cpu int64) *abi.Node {
	return &abi.Node{Name: name, AllowedPods: 110, Allocatable: abi.Resources{MilliCPU: cpu, Memory: 1 << 34}}
}

func pod(name string, cpu int64) *abi.Pod {
	return &abi.Pod{UID: name, Name: name, Namespace: "ns", SchedulerName: "default-scheduler",
		Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: cpu}}}}
}

func (e *env) cycle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.sched.ScheduleOne(ctx); err != nil {
		t.Fatal(err)
	}
	e.sched.WaitBindings()
}

func TestAssumedPodIsSeenByTheNextCycle(t *testing.T) {
	e := newEnv(t)
	e.sched.OnNodeAdd(node("n1", 1000))
	e.sched.OnNodeAdd(node("n2", 1000))
	e.b.fail = 0
	for i := 0; i < 2; i++ {
		e.sched.OnPodAdd(pod(fmt.Sprintf("p%d", i), 700))
	}
	e.cycle(t)
	e.cycle(t)
	if e.b.bound["p0"] == e.b.bound["p1"] || e.b.bound["p0"] == "" || e.b.bound["p1"] == "" {
		t.Fatalf("two 700m pods on 1-CPU nodes went to %v: the second cycle did not see the first pod", e.b.bound)
	}
}

func TestFailedBindForgetsThePodAndRetriesIt(t *testing.T) {
	e := newEnv(t)
	e.sched.OnNodeAdd(node("n1", 1000))
	e.b.fail, e.b.err = 1, errors.New("apiserver unavailable")
	e.sched.OnPodAdd(pod("p", 700))
	e.cycle(t)
	if msg := e.ev.failed["p"]; msg != "SchedulerError: binding rejected: apiserver unavailable" {
		t.Fatalf("failure reported as %q", msg)
	}
	if e.cache.IsAssumed("p") {
		t.Fatal("pod still assumed after its bind failed")
	}
	if _, backoff, _ := e.q.PendingPods(); backoff != 1 {
		t.Fatalf("pod not backing off after a bind error (backoff=%d)", backoff)
	}
	e.clk.Step(2 * time.Second)
	e.q.FlushBackoffCompleted()
	e.cycle(t)
	if e.b.bound["p"] != "n1" {
		t.Fatalf("retry did not bind: %v", e.b.bound)
	}
}

func TestPodGoneDuringBindIsDropped(t *testing.T) {
	e := newEnv(t)
	e.sched.OnNodeAdd(node("n1", 1000))
	e.b.fail, e.b.err = 1, fmt.Errorf("bind: %w", scheduler.ErrPodGone)
	e.sched.OnPodAdd(pod("p", 100))
	e.cycle(t)
	if a, b, u := e.q.PendingPods(); a+b+u != 0 {
		t.Fatalf("vanished pod requeued: active %d backoff %d unschedulable %d", a, b, u)
	}
	if e.cache.IsAssumed("p") {
		t.Fatal("vanished pod still assumed")
	}
}

func TestUnschedulablePodRetriedWhenANodeArrives(t *testing.T) {
	e := newEnv(t)
	e.sched.OnNodeAdd(node("small", 500))
	e.sched.OnPodAdd(pod("big", 2000))
	e.cycle(t)
	if msg := e.ev.failed["big"]; msg != "Unschedulable: 0/1 nodes are available: 1 Insufficient cpu." {
		t.Fatalf("failure = %q", msg)
	}
	if _, _, u := e.q.PendingPods(); u != 1 {
		t.Fatal("unschedulable pod not parked")
	}
	e.sched.OnNodeAdd(node("large", 4000))
	if a, b, _ := e.q.PendingPods(); a+b != 1 {
		t.Fatalf("a node add did not move the pod rejected by NodeResourcesFit (active %d backoff %d)", a, b)
	}
	e.clk.Step(2 * time.Second)
	e.q.FlushBackoffCompleted()
	e.cycle(t)
	if e.b.bound["big"] != "large" {
		t.Fatalf("bound = %v", e.b.bound)
	}
}

func TestPodsOfOtherSchedulersAreLeftAlone(t *testing.T) {
	e := newEnv(t)
	p := pod("theirs", 100)
	p.SchedulerName = "someone-else"
	e.sched.OnPodAdd(p)
	if a, b, u := e.q.PendingPods(); a+b+u != 0 {
		t.Fatal("a pod of another scheduler was queued")
	}
}

func TestNominatedPodsOfEqualOrHigherPriorityAreCounted(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nomPriority int32
		want        string
	}{
		// n1 would be best, but a higher-priority pod is nominated there
		// and both do not fit: the pod must go to n2.
		{"higher priority nomination holds the room", 10, "n2"},
		{"equal priority nomination holds the room", 0, "n2"},
		// A lower-priority nomination does not count: this pod may take
		// the room preemption freed for it.
		{"lower priority nomination is ignored", -1, "n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.sched.OnNodeAdd(node("n1", 1000))
			e.sched.OnNodeAdd(node("n2", 1000))
			busy := pod("busy", 600)
			busy.NodeName = "n2"
			e.sched.OnPodAdd(busy)
			nom := pod("nominee", 800)
			nom.Priority = tc.nomPriority
			e.q.AddNominatedPod(nom, "n1")
			e.sched.OnPodAdd(pod("p", 300))
			e.cycle(t)
			if got := e.b.bound["p"]; got != tc.want {
				t.Fatalf("p bound to %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPodsCopyTheDisruptionGuardOfTheirPriorityClass(t *testing.T) {
	e := newEnv(t)
	g := int32(500)
	e.sched.OnPriorityClass("guarded", &g)
	e.sched.OnNodeAdd(node("n1", 4000))
	v := pod("v", 100)
	v.NodeName, v.PriorityClassName = "n1", "guarded"
	e.sched.OnPodAdd(v)
	got := e.cache.GetPod("v")
	if got == nil || got.DisruptionGuard == nil || *got.DisruptionGuard != 500 {
		t.Fatalf("cached pod guard = %+v", got)
	}
	if v.DisruptionGuard != nil {
		t.Fatal("the caller's pod was modified")
	}
	// Like admission, a later change of the class leaves known pods alone;
	// a deleted class gives new pods no guard.
	e.sched.OnPriorityClassDelete("guarded")
	if e.sched.DisruptionGuard("guarded") != nil {
		t.Fatal("deleted class still has a guard")
	}
	if got := e.cache.GetPod("v"); got.DisruptionGuard == nil {
		t.Fatal("deleting the class rewrote a known pod")
	}
}

// A pod NodeDeclaredFeatures rejected waits for a node to declare what it
// needs: a taint change leaves it parked, a declared-feature change moves
// it, and it then lands on that node.
func TestPodNeedingAFeatureRetriedWhenANodeDeclaresIt(t *testing.T) {
	e := newEnv(t)
	n := node("n1", 4000)
	e.sched.OnNodeAdd(n)
	p := pod("needs", 100)
	p.RequiredFeatures = 1 << 2
	e.sched.OnPodAdd(p)
	e.cycle(t)
	if msg := e.ev.failed["needs"]; msg != "Unschedulable: 0/1 nodes are available: 1 node(s) didn't match Pod's required features." {
		t.Fatalf("failure = %q", msg)
	}
	tainted := *n
	tainted.Taints = []abi.Taint{{Key: "k", Effect: abi.EffectPreferNoSchedule}}
	e.sched.OnNodeUpdate(n, &tainted)
	if a, b, u := e.q.PendingPods(); a+b != 0 || u != 1 {
		t.Fatalf("a taint change moved the pod NodeDeclaredFeatures rejected (active %d backoff %d unschedulable %d)", a, b, u)
	}
	declares := tainted
	declares.DeclaredFeatures = 1<<2 | 1
	e.sched.OnNodeUpdate(&tainted, &declares)
	if a, b, _ := e.q.PendingPods(); a+b != 1 {
		t.Fatalf("a declared-feature change did not move the pod (active %d backoff %d)", a, b)
	}
	e.clk.Step(2 * time.Second)
	e.q.FlushBackoffCompleted()
	e.cycle(t)
	if e.b.bound["needs"] != "n1" {
		t.Fatalf("bound = %v", e.b.bound)
	}
}
