package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/internal/testwait"
)

// killCall is one EvictPod or DeletePod call the fake API saw.
type killCall struct {
	uid   string
	grace int64
	ok    bool
}

type killEvent struct {
	reason  string
	warning bool
	message string
}

// killAPI is an in-memory API for the killer's tests.
type killAPI struct {
	mu         sync.Mutex
	pods       map[string]string // namespace/name → UID
	evictErrs  []error           // popped per EvictPod call; nil or empty: success
	deleteErrs []error
	goneOnKill bool // a successful kill removes the pod at once
	evicts     []killCall
	deletes    []killCall
	events     []killEvent
	onEvent    func(reason string) // called without the lock
}

func newKillAPI() *killAPI { return &killAPI{pods: map[string]string{}} }

func (a *killAPI) add(p *abi.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods[p.Namespace+"/"+p.Name] = p.UID
}

func (a *killAPI) remove(p *abi.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pods, p.Namespace+"/"+p.Name)
}

func (a *killAPI) kill(ctx context.Context, pod *abi.Pod, grace *int64, errs *[]error, calls *[]killCall) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var err error
	if len(*errs) > 0 {
		err, *errs = (*errs)[0], (*errs)[1:]
	}
	g := int64(-1)
	if grace != nil {
		g = *grace
	}
	if err == nil && a.pods[pod.Namespace+"/"+pod.Name] != pod.UID {
		err = fmt.Errorf("pod %s: %w", pod.Name, podremoval.ErrNotFound)
	}
	*calls = append(*calls, killCall{uid: pod.UID, grace: g, ok: err == nil})
	if err == nil && a.goneOnKill {
		delete(a.pods, pod.Namespace+"/"+pod.Name)
	}
	return err
}

func (a *killAPI) EvictPod(ctx context.Context, pod *abi.Pod, grace *int64) error {
	return a.kill(ctx, pod, grace, &a.evictErrs, &a.evicts)
}

func (a *killAPI) DeletePod(ctx context.Context, pod *abi.Pod, grace *int64) error {
	return a.kill(ctx, pod, grace, &a.deleteErrs, &a.deletes)
}

func (a *killAPI) PodUID(_ context.Context, namespace, name string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	uid, ok := a.pods[namespace+"/"+name]
	if !ok {
		return "", fmt.Errorf("pod %s/%s: %w", namespace, name, podremoval.ErrNotFound)
	}
	return uid, nil
}

func (a *killAPI) Event(pod *abi.Pod, warning bool, reason, message string) {
	a.mu.Lock()
	a.events = append(a.events, killEvent{reason, warning, message})
	hook := a.onEvent
	a.mu.Unlock()
	if hook != nil {
		hook(reason)
	}
}

func (a *killAPI) snapshot() (evicts, deletes []killCall, events []killEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.evicts), slices.Clone(a.deletes), slices.Clone(a.events)
}

func (a *killAPI) reasons() []string {
	_, _, evs := a.snapshot()
	var rs []string
	for _, e := range evs {
		rs = append(rs, e.reason)
	}
	return rs
}

// recordingLimiter wraps a rate limiter and records every When (each
// AddRateLimited) and Forget, by item.
type recordingLimiter struct {
	workqueue.TypedRateLimiter[KillItem]
	mu      sync.Mutex
	delays  map[KillItem][]time.Duration
	forgets map[KillItem]int
}

func newRecordingLimiter() *recordingLimiter {
	return &recordingLimiter{
		TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[KillItem](time.Millisecond, 50*time.Millisecond),
		delays:           map[KillItem][]time.Duration{},
		forgets:          map[KillItem]int{},
	}
}

func (r *recordingLimiter) When(item KillItem) time.Duration {
	d := r.TypedRateLimiter.When(item)
	r.mu.Lock()
	r.delays[item] = append(r.delays[item], d)
	r.mu.Unlock()
	return d
}

func (r *recordingLimiter) Forget(item KillItem) {
	r.TypedRateLimiter.Forget(item)
	r.mu.Lock()
	r.forgets[item]++
	r.mu.Unlock()
}

func (r *recordingLimiter) enqueued(item KillItem) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.delays[item])
}

func (r *recordingLimiter) forgotten(item KillItem) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.forgets[item]
}

func (r *recordingLimiter) items() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.delays)
}

type blockedCall struct {
	uid   string
	until time.Time
}

// killerEnv is a killer over a killAPI with a fake clock.
type killerEnv struct {
	t       *testing.T
	api     *killAPI
	clock   *clocktesting.FakeClock
	limiter *recordingLimiter
	reg     *prometheus.Registry
	k       *Killer

	mu      sync.Mutex
	blocked []blockedCall

	cancel context.CancelFunc
	done   chan struct{}
}

var killT0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func newKillerEnv(t *testing.T, mutate func(*KillerOptions)) *killerEnv {
	t.Helper()
	e := &killerEnv{t: t, api: newKillAPI(), clock: clocktesting.NewFakeClock(killT0), limiter: newRecordingLimiter(),
		reg: prometheus.NewRegistry()}
	m, err := metrics.New(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	opts := KillerOptions{
		RateLimiter: e.limiter,
		Clock:       e.clock,
		Metrics:     m.Eviction(),
		OnBlocked: func(uid string, until time.Time) {
			e.mu.Lock()
			e.blocked = append(e.blocked, blockedCall{uid, until})
			e.mu.Unlock()
		},
	}
	if mutate != nil {
		mutate(&opts)
	}
	e.k = NewKiller(e.api, opts)
	return e
}

// run starts the killer; the test's cleanup stops it.
func (e *killerEnv) run() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() {
		defer close(e.done)
		e.k.Run(ctx)
	}()
	e.t.Cleanup(e.stop)
}

func (e *killerEnv) stop() {
	e.cancel()
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		e.t.Fatal("Run did not return after its context was cancelled")
	}
}

func (e *killerEnv) blockedCalls() []blockedCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.blocked)
}

// step advances the fake clock by d once a worker waits on it.
func (e *killerEnv) step(d time.Duration) {
	e.t.Helper()
	waitUntil(e.t, "a worker waiting on the clock", e.clock.HasWaiters)
	e.clock.Step(d)
}

func (e *killerEnv) kills(result string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wasmsched_eviction_kills_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

func (e *killerEnv) wantKills(want map[string]float64) {
	e.t.Helper()
	for _, r := range []string{metrics.KillSucceeded, metrics.KillFailed, metrics.KillBlocked, metrics.KillForced, metrics.KillTimeout} {
		if got := e.kills(r); got != want[r] {
			e.t.Errorf("kills_total{result=%q} = %v, want %v", r, got, want[r])
		}
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, 5*time.Second, cond, "timed out waiting for %s", what)
}

func killPodFixture(name, uid string, specGrace *int64) *abi.Pod {
	return &abi.Pod{Namespace: "ns", Name: name, UID: uid, TerminationGraceSeconds: specGrace}
}

func i64(v int64) *int64 { return &v }

func itemOf(p *abi.Pod, grace int64) KillItem {
	return KillItem{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Grace: grace}
}

func TestKillerGracePeriod(t *testing.T) {
	for _, tc := range []struct {
		name         string
		policy, spec *int64
		want         int64
	}{
		{"policy value wins", i64(7), i64(30), 7},
		{"policy zero wins", i64(0), i64(30), 0},
		{"pod spec", nil, i64(30), 30},
		{"neither: zero", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newKillerEnv(t, nil)
			e.api.goneOnKill = true
			p := killPodFixture("a", "u1", tc.spec)
			e.api.add(p)
			e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: tc.policy, Policy: "mem", Reason: "pressure"}})
			e.run()
			waitUntil(t, "the killer to be idle", e.k.Idle)
			evicts, _, _ := e.api.snapshot()
			if want := []killCall{{"u1", tc.want, true}}; !slices.Equal(evicts, want) {
				t.Errorf("evictions %v, want %v", evicts, want)
			}
			e.wantKills(map[string]float64{metrics.KillSucceeded: 1})
		})
	}

	t.Run("negative refused, never retried", func(t *testing.T) {
		e := newKillerEnv(t, nil)
		p := killPodFixture("a", "u1", i64(30))
		e.api.add(p)
		e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: i64(-1), Policy: "mem", Reason: "pressure"}})
		if e.k.Holds("u1") || !e.k.Idle() {
			t.Error("a refused request is held")
		}
		e.run()
		_, _, evs := e.api.snapshot()
		if len(evs) != 1 || evs[0].reason != ReasonEvictFailed || !evs[0].warning {
			t.Fatalf("events %+v, want one Warning EvictFailed", evs)
		}
		evicts, deletes, _ := e.api.snapshot()
		if len(evicts)+len(deletes) != 0 || e.limiter.items() != 0 {
			t.Errorf("a refused request was queued or killed: %v %v", evicts, deletes)
		}
		e.wantKills(map[string]float64{metrics.KillFailed: 1})
	})
}

func TestKillTimeout(t *testing.T) {
	for _, tc := range []struct {
		grace int64
		want  time.Duration
	}{{0, 10 * time.Second}, {6, 10 * time.Second}, {10, 15 * time.Second}, {60, 90 * time.Second}, {1 << 62, maxKillTimeout}} {
		if got := killTimeout(tc.grace, 10*time.Second); got != tc.want {
			t.Errorf("killTimeout(%d) = %s, want %s", tc.grace, got, tc.want)
		}
	}
}

func TestKillerDedupe(t *testing.T) {
	t.Run("same grace skipped, shorter queued separately", func(t *testing.T) {
		e := newKillerEnv(t, nil)
		e.api.goneOnKill = true
		p := killPodFixture("a", "u1", nil)
		e.api.add(p)
		e.k.Submit([]KillRequest{
			{Pod: p, GracePeriodSeconds: i64(30), Policy: "mem"},
			{Pod: p, GracePeriodSeconds: i64(30), Policy: "cpu"},
			{Pod: p, GracePeriodSeconds: i64(60), Policy: "disk"},
		})
		if n := len(e.limiter.enqueued(itemOf(p, 30))); n != 1 || e.limiter.items() != 1 {
			t.Fatalf("grace 30 enqueued %d times, %d items; want once, 1 item", n, e.limiter.items())
		}
		if !e.k.Holds("u1") || e.k.Idle() {
			t.Fatal("a queued pod is not held")
		}
		e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: i64(10), Policy: "hard"}})
		if n := len(e.limiter.enqueued(itemOf(p, 10))); n != 1 {
			t.Fatalf("the shorter grace was enqueued %d times, want once as its own item", n)
		}
		e.run()
		waitUntil(t, "the killer to be idle", e.k.Idle)
		evicts, _, _ := e.api.snapshot()
		if want := []killCall{{"u1", 10, true}}; !slices.Equal(evicts, want) {
			t.Errorf("evictions %v, want only the shortest grace once: %v", evicts, want)
		}
		if e.k.Holds("u1") {
			t.Error("a killed pod is still held")
		}
	})

	t.Run("different UID not merged", func(t *testing.T) {
		e := newKillerEnv(t, nil)
		e.api.goneOnKill = true
		old, cur := killPodFixture("a", "u-old", nil), killPodFixture("a", "u-new", nil)
		e.api.add(cur)
		e.k.Submit([]KillRequest{{Pod: old, Policy: "mem"}, {Pod: cur, Policy: "mem"}})
		if !e.k.Holds("u-old") || !e.k.Holds("u-new") || e.limiter.items() != 2 {
			t.Fatalf("two pods of one name were merged (%d items)", e.limiter.items())
		}
		e.run()
		waitUntil(t, "the killer to be idle", e.k.Idle)
		evicts, _, _ := e.api.snapshot()
		if want := []killCall{{"u-new", 0, true}}; !slices.Equal(evicts, want) {
			t.Errorf("evictions %v, want only the current pod: %v", evicts, want)
		}
	})

	t.Run("in flight: same or longer skipped, shorter supersedes", func(t *testing.T) {
		e := newKillerEnv(t, nil)
		p := killPodFixture("a", "u1", nil)
		e.api.add(p)
		e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: i64(30), Policy: "soft"}})
		e.run()
		waitUntil(t, "the first eviction", func() bool { ev, _, _ := e.api.snapshot(); return len(ev) == 1 })
		waitUntil(t, "the worker polling", e.clock.HasWaiters)

		e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: i64(30), Policy: "again"}, {Pod: p, GracePeriodSeconds: i64(60), Policy: "longer"}})
		if n := len(e.limiter.enqueued(itemOf(p, 30))); n != 1 || e.limiter.items() != 1 {
			t.Fatalf("a request for a pod being killed was queued (%d, %d items)", n, e.limiter.items())
		}

		e.api.mu.Lock()
		e.api.goneOnKill = true
		e.api.mu.Unlock()
		e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: i64(0), Policy: "hard"}})
		waitUntil(t, "the killer to be idle", e.k.Idle)
		evicts, _, _ := e.api.snapshot()
		if want := []killCall{{"u1", 30, true}, {"u1", 0, true}}; !slices.Equal(evicts, want) {
			t.Errorf("evictions %v, want %v", evicts, want)
		}
		if got, want := e.api.reasons(), []string{ReasonEvictCreated, ReasonEvictCreated, ReasonEvictSucceeded}; !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
		e.wantKills(map[string]float64{metrics.KillSucceeded: 1})
	})
}

func TestKillerPodGoneOrReplacedIsDone(t *testing.T) {
	e := newKillerEnv(t, nil)
	gone := killPodFixture("gone", "u1", nil)
	replaced := killPodFixture("sts-0", "u-old", nil)
	e.api.add(killPodFixture("sts-0", "u-new", nil))
	e.k.Submit([]KillRequest{{Pod: gone, Policy: "mem"}, {Pod: replaced, Policy: "mem"}})
	e.run()
	waitUntil(t, "the killer to be idle", e.k.Idle)
	evicts, deletes, evs := e.api.snapshot()
	if len(evicts)+len(deletes)+len(evs) != 0 {
		t.Errorf("gone pods were killed: evictions %v, deletes %v, events %v", evicts, deletes, evs)
	}
	for _, it := range []KillItem{itemOf(gone, 0), itemOf(replaced, 0)} {
		if e.limiter.forgotten(it) != 1 || len(e.limiter.enqueued(it)) != 1 {
			t.Errorf("%v: enqueued %v, forgotten %d times; want once each", it, e.limiter.enqueued(it), e.limiter.forgotten(it))
		}
	}
	e.wantKills(nil)
}

func TestKillerSuccessWaitsForThePodToGo(t *testing.T) {
	e := newKillerEnv(t, nil)
	p := killPodFixture("a", "u1", i64(20)) // timeout 30s
	e.api.add(p)
	e.k.Submit([]KillRequest{{Pod: p, Policy: "mem", Reason: "memory pressure"}})
	e.run()
	waitUntil(t, "the eviction", func() bool { ev, _, _ := e.api.snapshot(); return len(ev) == 1 })
	e.step(5 * time.Second)
	e.step(5 * time.Second)
	if got := e.api.reasons(); !slices.Equal(got, []string{ReasonEvictCreated}) {
		t.Fatalf("events %v while the pod is there, want only EvictCreated", got)
	}
	if e.k.Idle() || !e.k.Holds("u1") {
		t.Fatal("a pod being killed is not held")
	}
	waitUntil(t, "the worker polling again", e.clock.HasWaiters) // it has checked: the pod was there
	e.api.remove(p)
	e.step(5 * time.Second)
	waitUntil(t, "the killer to be idle", e.k.Idle)
	_, _, evs := e.api.snapshot()
	if len(evs) != 2 || evs[1].reason != ReasonEvictSucceeded || evs[0].warning || evs[1].warning {
		t.Fatalf("events %+v, want Normal EvictCreated then Normal EvictSucceeded", evs)
	}
	evicts, _, _ := e.api.snapshot()
	if len(evicts) != 1 || evicts[0].grace != 20 {
		t.Errorf("evictions %v, want one with the pod's grace 20", evicts)
	}
	e.wantKills(map[string]float64{metrics.KillSucceeded: 1})
}

func TestKillerTimeout(t *testing.T) {
	// grace 10: timeout 15s, checked at 0, 5, 10 and 15s.
	start := func(t *testing.T) *killerEnv {
		e := newKillerEnv(t, nil)
		p := killPodFixture("a", "u1", nil)
		e.api.add(p)
		e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: i64(10), Policy: "mem", Reason: "why"}})
		e.run()
		waitUntil(t, "the eviction", func() bool { ev, _, _ := e.api.snapshot(); return len(ev) == 1 })
		e.step(5 * time.Second)
		e.step(5 * time.Second)
		waitUntil(t, "the check at 10s", e.clock.HasWaiters)
		if slices.Contains(e.api.reasons(), ReasonEvictExceededGracePeriod) {
			t.Fatal("timed out before 1.5×grace")
		}
		return e
	}

	t.Run("retried while the pod stays", func(t *testing.T) {
		e := start(t)
		e.step(5 * time.Second)
		waitUntil(t, "the retry", func() bool { ev, _, _ := e.api.snapshot(); return len(ev) == 2 })
		_, _, evs := e.api.snapshot()
		if evs[1].reason != ReasonEvictExceededGracePeriod || !evs[1].warning {
			t.Fatalf("events %+v, want a Warning EvictExceededGracePeriod", evs)
		}
		if n := len(e.limiter.enqueued(KillItem{"ns", "a", "u1", 10})); n != 2 {
			t.Errorf("item enqueued %d times, want 2 (the retry rate-limited)", n)
		}
		waitUntil(t, "the worker polling", e.clock.HasWaiters)
		e.api.remove(killPodFixture("a", "u1", nil))
		e.step(5 * time.Second)
		waitUntil(t, "the killer to be idle", e.k.Idle)
		e.wantKills(map[string]float64{metrics.KillTimeout: 1, metrics.KillSucceeded: 1})
	})

	t.Run("never a second eviction once the pod is gone", func(t *testing.T) {
		e := start(t)
		e.api.mu.Lock()
		e.api.onEvent = func(reason string) {
			if reason == ReasonEvictExceededGracePeriod {
				e.api.remove(killPodFixture("a", "u1", nil))
			}
		}
		e.api.mu.Unlock()
		e.step(5 * time.Second)
		waitUntil(t, "the killer to be idle", e.k.Idle)
		evicts, _, _ := e.api.snapshot()
		if len(evicts) != 1 {
			t.Errorf("evictions %v, want one: the retry found the pod gone", evicts)
		}
		e.wantKills(map[string]float64{metrics.KillTimeout: 1})
	})
}

func TestKillerPDBRefusal(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		want       time.Duration
	}{{"Retry-After", 30 * time.Second, 30 * time.Second}, {"no Retry-After", 0, DefaultRetryAfter}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newKillerEnv(t, nil)
			p := killPodFixture("a", "u1", nil)
			e.api.add(p)
			e.api.evictErrs = []error{&podremoval.RefusedError{RetryAfter: tc.retryAfter, Err: errors.New("Cannot evict pod as it would violate the pod's disruption budget.")}}
			e.k.Submit([]KillRequest{{Pod: p, Policy: "mem", Reason: "why"}})
			e.run()
			waitUntil(t, "the killer to be idle", e.k.Idle)
			if got, want := e.blockedCalls(), []blockedCall{{"u1", killT0.Add(tc.want)}}; !slices.Equal(got, want) {
				t.Errorf("OnBlocked calls %v, want %v", got, want)
			}
			evicts, deletes, evs := e.api.snapshot()
			if len(evicts) != 1 || len(deletes) != 0 {
				t.Errorf("evictions %v, deletes %v; want one refused eviction, no delete", evicts, deletes)
			}
			if len(evs) != 1 || evs[0].reason != ReasonEvictBlocked || !evs[0].warning {
				t.Errorf("events %+v, want one Warning EvictBlocked", evs)
			}
			if e.limiter.forgotten(itemOf(p, 0)) != 1 {
				t.Error("a blocked item was not forgotten")
			}
			e.wantKills(map[string]float64{metrics.KillBlocked: 1})
		})
	}

	t.Run("ForceDelete deletes after Retry-After", func(t *testing.T) {
		e := newKillerEnv(t, nil)
		e.api.goneOnKill = true
		p := killPodFixture("a", "u1", nil)
		e.api.add(p)
		e.api.evictErrs = []error{&podremoval.RefusedError{RetryAfter: 7 * time.Second}}
		e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: i64(3), Policy: "mem", ForceDelete: true}})
		e.run()
		waitUntil(t, "the refusal", func() bool { return slices.Contains(e.api.reasons(), ReasonEvictBlocked) })
		e.step(6 * time.Second)
		if _, deletes, _ := e.api.snapshot(); len(deletes) != 0 {
			t.Fatalf("deleted %v before Retry-After", deletes)
		}
		e.step(time.Second)
		waitUntil(t, "the killer to be idle", e.k.Idle)
		evicts, deletes, _ := e.api.snapshot()
		if len(evicts) != 1 || !slices.Equal(deletes, []killCall{{"u1", 3, true}}) {
			t.Errorf("evictions %v, deletes %v; want one refused eviction then one delete with grace 3", evicts, deletes)
		}
		if got, want := e.api.reasons(), []string{ReasonEvictBlocked, ReasonEvictCreated, ReasonEvictSucceeded}; !slices.Equal(got, want) {
			t.Errorf("events %v, want %v", got, want)
		}
		if b := e.blockedCalls(); len(b) != 0 {
			t.Errorf("OnBlocked called %v for a forced kill", b)
		}
		e.wantKills(map[string]float64{metrics.KillForced: 1})
	})
}

func TestKillerOtherErrorsRetryWithBackoff(t *testing.T) {
	e := newKillerEnv(t, nil)
	e.api.goneOnKill = true
	p := killPodFixture("a", "u1", nil)
	e.api.add(p)
	boom := errors.New("internal error (500)")
	e.api.evictErrs = []error{boom, boom}
	e.k.Submit([]KillRequest{{Pod: p, Policy: "mem", Reason: "why"}})
	e.run()
	waitUntil(t, "the killer to be idle", e.k.Idle)

	evicts, _, evs := e.api.snapshot()
	if want := []killCall{{"u1", 0, false}, {"u1", 0, false}, {"u1", 0, true}}; !slices.Equal(evicts, want) {
		t.Errorf("evictions %v, want two failures then exactly one success: %v", evicts, want)
	}
	var rs []string
	for _, ev := range evs {
		rs = append(rs, ev.reason)
	}
	if want := []string{ReasonEvictFailed, ReasonEvictFailed, ReasonEvictCreated, ReasonEvictSucceeded}; !slices.Equal(rs, want) {
		t.Errorf("events %v, want %v", rs, want)
	}
	if !evs[0].warning {
		t.Error("EvictFailed is not a Warning")
	}
	delays := e.limiter.enqueued(itemOf(p, 0))
	if len(delays) != 3 || !(delays[0] < delays[1] && delays[1] < delays[2]) {
		t.Errorf("enqueue delays %v, want 3 growing ones (first enqueue and two backoffs)", delays)
	}
	if e.limiter.forgotten(itemOf(p, 0)) != 1 {
		t.Error("the item was not forgotten after the success")
	}
	e.wantKills(map[string]float64{metrics.KillFailed: 2, metrics.KillSucceeded: 1})
}

func TestKillerDeleteMode(t *testing.T) {
	e := newKillerEnv(t, func(o *KillerOptions) { o.Mode = ModeDelete })
	e.api.goneOnKill = true
	p := killPodFixture("a", "u1", i64(15))
	e.api.add(p)
	e.k.Submit([]KillRequest{{Pod: p, Policy: "mem"}})
	e.run()
	waitUntil(t, "the killer to be idle", e.k.Idle)
	evicts, deletes, _ := e.api.snapshot()
	if len(evicts) != 0 || !slices.Equal(deletes, []killCall{{"u1", 15, true}}) {
		t.Errorf("evictions %v, deletes %v; want one delete with grace 15", evicts, deletes)
	}
	if got, want := e.api.reasons(), []string{ReasonEvictCreated, ReasonEvictSucceeded}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestKillerIgnoresBadInput(t *testing.T) {
	e := newKillerEnv(t, nil)
	e.k.Submit(nil)
	e.k.Submit([]KillRequest{{}, {Pod: &abi.Pod{Namespace: "ns", Name: "no-uid"}}, {Pod: &abi.Pod{UID: "no-name"}}})
	if !e.k.Idle() || e.k.Holds("") || e.k.Holds("no-name") || e.limiter.items() != 0 {
		t.Fatal("bad requests were queued")
	}
	e.run()
	e.wantKills(map[string]float64{metrics.KillFailed: 2})
}

func TestKillerRunStopsWithContext(t *testing.T) {
	e := newKillerEnv(t, nil)
	p := killPodFixture("a", "u1", nil)
	e.api.add(p)
	e.k.Submit([]KillRequest{{Pod: p, Policy: "mem"}})
	e.run()
	waitUntil(t, "the worker polling", e.clock.HasWaiters)
	e.stop()
	if !e.k.Idle() {
		t.Error("a stopped killer holds pods")
	}
	e.k.Submit([]KillRequest{{Pod: killPodFixture("b", "u2", nil), Policy: "mem"}})
	if !e.k.Idle() {
		t.Error("a stopped killer took a request")
	}
	e.k.Run(context.Background()) // a second Run returns at once
}

func TestKillerConcurrentSubmitsHoldsAndIdle(t *testing.T) {
	e := newKillerEnv(t, func(o *KillerOptions) { o.Workers = 4 })
	e.api.goneOnKill = true
	const n = 40
	pods := make([]*abi.Pod, n)
	for i := range pods {
		pods[i] = killPodFixture(fmt.Sprintf("p%d", i), fmt.Sprintf("u%d", i), nil)
		e.api.add(pods[i])
	}
	e.run()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < n; i += 4 {
				e.k.Submit([]KillRequest{{Pod: pods[i], Policy: "mem"}, {Pod: pods[(i+1)%n], Policy: "cpu"}})
				_ = e.k.Holds(pods[i].UID)
				_ = e.k.Idle()
			}
		})
	}
	wg.Wait()
	waitUntil(t, "the killer to be idle", e.k.Idle)
	evicts, _, _ := e.api.snapshot()
	ok := map[string]int{}
	for _, c := range evicts {
		if c.ok {
			ok[c.uid]++
		}
	}
	for _, p := range pods {
		if ok[p.UID] != 1 {
			t.Errorf("%s evicted %d times, want once", p.Name, ok[p.UID])
		}
		if e.k.Holds(p.UID) {
			t.Errorf("%s still held", p.Name)
		}
	}
}
