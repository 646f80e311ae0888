package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
)

// slowBinder holds every bind until the test lets it go (one token on
// release, or all once open is closed), counts the binds in flight, and
// confirms a successful one to the scheduler as an informer would.
type slowBinder struct {
	limit     int           // over is closed when more binds than this run at once
	failEvery int           // every failEvery-th bind fails (0: none)
	release   chan struct{} // one token lets one bind finish
	open      chan struct{} // closed: every bind finishes at once
	over      chan struct{}
	sched     *scheduler.Scheduler

	mu       sync.Mutex
	overOnce sync.Once
	calls    int
	inFlight int
	max      int
	bound    map[string]int // successful binds per pod
}

func newSlowBinder(limit int) *slowBinder {
	return &slowBinder{limit: limit, release: make(chan struct{}), open: make(chan struct{}), over: make(chan struct{}),
		bound: map[string]int{}}
}

func (b *slowBinder) Bind(ctx context.Context, pod *abi.Pod, node string) error {
	b.mu.Lock()
	b.calls++
	fail := b.failEvery > 0 && b.calls%b.failEvery == 0
	b.inFlight++
	b.max = max(b.max, b.inFlight)
	if b.inFlight > b.limit {
		b.overOnce.Do(func() { close(b.over) })
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	select {
	case <-b.release:
	case <-b.open:
	case <-ctx.Done():
		return fmt.Errorf("bind %s: %w", pod.Name, ctx.Err())
	}
	if fail {
		return errors.New("etcdserver: request timed out")
	}
	b.mu.Lock()
	b.bound[pod.Name]++
	b.mu.Unlock()
	nb, old := *pod, *pod
	nb.NodeName, old.NodeName = node, ""
	b.sched.OnPodUpdate(&old, &nb)
	return nil
}

// boundPods returns how many distinct pods were bound and the largest
// number of binds in flight seen.
func (b *slowBinder) stats() (bound, maxInFlight int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bound), b.max
}

// waitSignal returns a channel that gets a value each time the
// scheduler's loop starts waiting for a binding slot.
func waitSignal(s *scheduler.Scheduler) <-chan struct{} {
	ch := make(chan struct{}, 1)
	scheduler.OnBindingSlotWait(s, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch
}

// runLoop runs the scheduling loop until ctx ends; the returned channel
// is closed when Run has returned.
func runLoop(ctx context.Context, s *scheduler.Scheduler) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	return done
}

// waitReturn fails the test if Run does not return: a deadlock guard, not
// a timing assertion (no correct run comes anywhere near it).
func waitReturn(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the scheduling loop did not return: deadlocked waiting for a binding slot")
	}
}

// checkAllBoundOnce checks that every pod was bound exactly once and that
// the cache holds it bound (confirmed, not assumed).
func checkAllBoundOnce(t *testing.T, e *env, b *slowBinder, pods int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range pods {
		name := fmt.Sprintf("p%d", i)
		if n := b.bound[name]; n != 1 {
			t.Errorf("%s bound %d times", name, n)
		}
		if e.cache.IsAssumed(name) {
			t.Errorf("%s still assumed in the cache", name)
		}
		if p := e.cache.GetPod(name); p == nil || p.NodeName == "" {
			t.Errorf("%s not in the cache as bound: %+v", name, p)
		}
	}
}

func TestSlowBinderSeesAtMostTheBoundInFlight(t *testing.T) {
	const limit, pods = 3, 10
	b := newSlowBinder(limit)
	e := newEnvWith(t, b, limit)
	b.sched = e.sched
	waiting := waitSignal(e.sched)
	for i := range 4 {
		e.sched.OnNodeAdd(node(fmt.Sprintf("n%d", i), 4000))
	}
	for i := range pods {
		e.sched.OnPodAdd(pod(fmt.Sprintf("p%d", i), 100))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runLoop(ctx, e.sched)
	defer func() { cancel(); waitReturn(t, done); e.sched.WaitBindings() }()
	for {
		select {
		case <-b.over:
			t.Fatalf("more than %d bindings in flight", limit)
		case <-waiting:
		}
		// The loop waits for a slot, so it pops nothing until a binding
		// ends: every slot is taken and the other pods are still queued.
		if n := e.sched.BindingsInFlight(); n != limit {
			t.Fatalf("the loop waits with %d slots taken, want %d", n, limit)
		}
		active, _, _ := e.q.PendingPods()
		if active == 0 {
			break
		}
		b.release <- struct{}{}
	}
	// Every pod is popped: let the bindings finish before stopping.
	close(b.open)
	e.sched.WaitBindings()
	cancel()
	waitReturn(t, done)
	if bound, most := b.stats(); bound != pods || most > limit {
		t.Fatalf("%d of %d pods bound, at most %d binds in flight (bound %d)", bound, pods, most, limit)
	}
	checkAllBoundOnce(t, e, b, pods)
	if n := e.sched.BindingsInFlight(); n != 0 {
		t.Fatalf("%d binding slots still taken after every binding ended", n)
	}
}

func TestWaitingForABindingSlotEndsOnShutdown(t *testing.T) {
	for _, how := range []string{"context canceled", "scheduler closed"} {
		t.Run(how, func(t *testing.T) {
			b := newSlowBinder(1)
			e := newEnvWith(t, b, 1)
			b.sched = e.sched
			waiting := waitSignal(e.sched)
			e.sched.OnNodeAdd(node("n1", 4000))
			e.sched.OnPodAdd(pod("p0", 100))
			e.sched.OnPodAdd(pod("p1", 100))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := runLoop(ctx, e.sched)
			select { // p0's binding holds the one slot; p1 waits in the queue
			case <-waiting:
			case <-b.over:
				t.Fatal("two bindings in flight with a bound of one")
			}
			if how == "scheduler closed" {
				e.sched.Close()
				waitReturn(t, done)
				cancel()
			} else {
				cancel()
				waitReturn(t, done)
			}
			e.sched.WaitBindings()
			// p0's binding ended with the context: forgotten and queued
			// again, as p1 still is.
			if e.cache.IsAssumed("p0") {
				t.Fatal("p0 still assumed after its binding was cut short")
			}
			if a, bo, u := e.q.PendingPods(); a+bo+u != 2 {
				t.Fatalf("pods queued: active %d backoff %d unschedulable %d, want both", a, bo, u)
			}
			if n := e.sched.BindingsInFlight(); n != 0 {
				t.Fatalf("%d binding slots still taken", n)
			}
		})
	}
}

func TestEveryEndOfACycleGivesItsBindingSlotBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cpu   int64
		fail  error
		check func(t *testing.T, e *env)
	}{
		{name: "unschedulable", cpu: 2000, check: func(t *testing.T, e *env) {
			if _, _, u := e.q.PendingPods(); u != 1 {
				t.Fatal("unschedulable pod not parked")
			}
		}},
		{name: "binding failed", cpu: 100, fail: errors.New("Timeout: request did not complete within requested timeout"),
			check: func(t *testing.T, e *env) {
				if e.cache.IsAssumed("p") {
					t.Fatal("pod still assumed after its binding failed")
				}
				if _, backoff, _ := e.q.PendingPods(); backoff != 1 {
					t.Fatalf("pod not backing off after its binding failed (backoff=%d)", backoff)
				}
			}},
		{name: "pod gone", cpu: 100, fail: fmt.Errorf("bind: %w", scheduler.ErrPodGone), check: func(t *testing.T, e *env) {
			if e.cache.IsAssumed("p") {
				t.Fatal("pod still assumed after it was found gone")
			}
		}},
		{name: "bound", cpu: 100, check: func(t *testing.T, e *env) {
			if e.b.bound["p"] != "n1" {
				t.Fatalf("bound = %v", e.b.bound)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &binder{bound: map[string]string{}}
			e := newEnvWith(t, b, 1)
			b.sched, e.b = e.sched, b
			e.sched.OnNodeAdd(node("n1", 1000))
			if tc.fail != nil {
				b.fail, b.err = 1, tc.fail
			}
			e.sched.OnPodAdd(pod("p", tc.cpu))
			e.cycle(t)
			if n := e.sched.BindingsInFlight(); n != 0 {
				t.Fatalf("%d binding slots still taken after the cycle and its binding ended", n)
			}
			tc.check(t, e)
			// With the one slot given back, the next pod is scheduled.
			e.sched.OnPodAdd(pod("next", 100))
			e.cycle(t)
			if e.b.bound["next"] != "n1" {
				t.Fatalf("the next pod was not bound: %v", e.b.bound)
			}
		})
	}
}

func TestBoundedBindingLosesNoPod(t *testing.T) {
	const limit, pods = 4, 100
	b := newSlowBinder(limit)
	b.failEvery = 3
	e := newEnvWith(t, b, limit)
	b.sched = e.sched
	for i := range 5 {
		e.sched.OnNodeAdd(node(fmt.Sprintf("n%d", i), 4000))
	}
	for i := range pods {
		e.sched.OnPodAdd(pod(fmt.Sprintf("p%d", i), 100))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runLoop(ctx, e.sched)
	defer func() { cancel(); waitReturn(t, done); e.sched.WaitBindings() }()
	guard := time.After(2 * time.Minute) // deadlock guard only
	for {
		if bound, _ := b.stats(); bound == pods {
			break
		}
		select {
		case <-b.over:
			t.Fatalf("more than %d bindings in flight", limit)
		case <-guard:
			bound, _ := b.stats()
			a, bo, u := e.q.PendingPods()
			t.Fatalf("stuck with %d of %d bound (active %d backoff %d unschedulable %d, slots %d)",
				bound, pods, a, bo, u, e.sched.BindingsInFlight())
		case b.release <- struct{}{}:
		default:
			// Failed bindings back off: let them out.
			e.clk.Step(time.Minute)
			e.q.FlushBackoffCompleted()
			// Pacing, not ordering: every turn re-checks the bindings
			// and the channels; the pause only keeps this loop from
			// starving the scheduler's goroutines of the CPU.
			time.Sleep(100 * time.Microsecond)
		}
	}
	cancel()
	waitReturn(t, done)
	e.sched.WaitBindings()
	if _, most := b.stats(); most > limit {
		t.Fatalf("%d binds in flight at once, bound %d", most, limit)
	}
	checkAllBoundOnce(t, e, b, pods)
	if a, bo, u := e.q.PendingPods(); a+bo+u != 0 {
		t.Fatalf("pods left queued: active %d backoff %d unschedulable %d", a, bo, u)
	}
}
