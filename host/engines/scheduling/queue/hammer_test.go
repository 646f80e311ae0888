package queue

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
)

// TestHammer runs every operation concurrently on a small set of pods (so
// that operations collide on the same pod) and then checks that the
// structures are consistent and that every pod still pending can be
// scheduled exactly once. Run it with -race.
func TestHammer(t *testing.T) {
	const nPods = 64
	var shut atomic.Bool
	gate := &flipGate{shut: &shut}
	q, fc := newTestQueue(Options{
		PreEnqueue: gates(gate),
		PluginEvents: map[string][]ClusterEvent{
			"NodeResourcesFit": fitEvents["NodeResourcesFit"],
			"Flip":             {AssignedPodDelete},
			"Deaf":             {},
		},
	})
	pods := make([]*abi.Pod, nPods)
	for i := range pods {
		pods[i] = mkPod(fmt.Sprintf("p%02d", i), int32(i%5))
	}
	version := func(r *rand.Rand, i int) *abi.Pod {
		p := *pods[i]
		p.Labels = abi.Labels{{Key: "v", Value: fmt.Sprint(r.Intn(3))}}
		if r.Intn(4) == 0 {
			p.NominatedNodeName = fmt.Sprintf("n%d", r.Intn(3))
		}
		return &p
	}
	events := []ClusterEvent{NodeAdd, AssignedPodDelete, {Resource: Node, Action: UpdateNodeLabel}, WildCardEvent}
	plugins := []string{"NodeResourcesFit", "Flip", "Deaf", "Other"}

	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	worker := func(seed int64, f func(r *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(seed))
			for ctx.Err() == nil {
				f(r)
			}
		}()
	}
	var popped atomic.Int64
	for w := 0; w < 4; w++ {
		worker(int64(w), func(r *rand.Rand) {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Millisecond)
			p, err := q.Pop(pctx)
			pcancel()
			if err != nil {
				return
			}
			popped.Add(1)
			if r.Intn(3) == 0 {
				q.AddNominatedPod(p.Pod, fmt.Sprintf("n%d", r.Intn(3)))
			}
			switch r.Intn(4) {
			case 0: // scheduled
				q.DeleteNominatedPodIfExists(p.Pod)
				q.Done(p.Pod.UID)
			case 1:
				_ = q.AddUnschedulableIfNotPresent(p, nil, true)
				q.Done(p.Pod.UID)
			default:
				_ = q.AddUnschedulableIfNotPresent(p, NewPluginSet(plugins[r.Intn(len(plugins))]), false)
				q.Done(p.Pod.UID)
			}
		})
	}
	worker(10, func(r *rand.Rand) { _ = q.Add(version(r, r.Intn(nPods))) })
	worker(11, func(r *rand.Rand) {
		i := r.Intn(nPods)
		_ = q.Update(version(r, i), version(r, i))
	})
	worker(12, func(r *rand.Rand) { q.Delete(pods[r.Intn(nPods)]) })
	worker(13, func(r *rand.Rand) {
		q.Activate([]*abi.Pod{pods[r.Intn(nPods)], pods[r.Intn(nPods)]})
	})
	worker(14, func(r *rand.Rand) {
		var pre func(*abi.Pod) bool
		if r.Intn(2) == 0 {
			k := r.Intn(5)
			pre = func(p *abi.Pod) bool { return int(p.Priority) != k }
		}
		q.MoveAllToActiveOrBackoffQueue(events[r.Intn(len(events))], pre)
	})
	worker(15, func(r *rand.Rand) {
		fc.Step(time.Duration(r.Intn(2000)) * time.Millisecond)
		q.flushBackoffCompleted()
		if r.Intn(10) == 0 {
			fc.Step(time.Minute)
			q.flushUnschedulableLeftover()
		}
	})
	worker(16, func(r *rand.Rand) {
		for _, p := range q.NominatedPodsForNode(fmt.Sprintf("n%d", r.Intn(3))) {
			if p.UID == "" {
				t.Error("empty nominated pod")
			}
		}
		q.PendingPods()
		shut.Store(r.Intn(3) == 0)
	})
	wg.Wait()
	checkInvariants(t, q)
	if popped.Load() == 0 {
		t.Fatal("no pod was ever popped")
	}

	// Drain: with the gate open and every wait over, each pending pod must
	// come out exactly once.
	shut.Store(false)
	q.mu.RLock()
	inFlight := len(q.inFlight)
	q.mu.RUnlock()
	if inFlight != 0 {
		t.Fatalf("%d pods still in flight after all workers returned them", inFlight)
	}
	a, b, u := q.PendingPods()
	fc.Step(time.Hour)
	q.MoveAllToActiveOrBackoffQueue(WildCardEvent, nil)
	q.flushBackoffCompleted()
	if a2, b2, u2 := q.PendingPods(); a2 != a+b+u || b2 != 0 || u2 != 0 {
		t.Fatalf("after releasing everything: %d %d %d, want %d 0 0", a2, b2, u2, a+b+u)
	}
	seen := map[string]bool{}
	for i := 0; i < a+b+u; i++ {
		p := popNow(t, q)
		if seen[p.Pod.UID] {
			t.Fatalf("%s popped twice", p.Pod.Name)
		}
		seen[p.Pod.UID] = true
		q.Done(p.Pod.UID)
	}
	checkInvariants(t, q)
}

// flipGate gates every pod while shut is set.
type flipGate struct{ shut *atomic.Bool }

func (flipGate) Name() string { return "Flip" }
func (g flipGate) PreEnqueue(*abi.Pod) (bool, string) {
	if g.shut.Load() {
		return false, "shut"
	}
	return true, ""
}
