package queue

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	testingclock "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func newTestQueue(opts Options) (*PriorityQueue, *testingclock.FakeClock) {
	fc := testingclock.NewFakeClock(t0)
	opts.Clock = fc
	return New(opts), fc
}

func mkPod(name string, prio int32) *abi.Pod {
	return &abi.Pod{UID: "uid-" + name, Namespace: "default", Name: name, Priority: prio}
}

// where tells which structure holds the pod, checking that it is only one.
func where(t *testing.T, q *PriorityQueue, uid string) string {
	t.Helper()
	q.mu.RLock()
	defer q.mu.RUnlock()
	var in []string
	if q.activeQ.has(uid) {
		in = append(in, "active")
	}
	if q.backoffQ.has(uid) {
		in = append(in, "backoff")
	}
	if q.unschedulable[uid] != nil {
		if q.unschedulable[uid].Gated() {
			in = append(in, "gated")
		} else {
			in = append(in, "unschedulable")
		}
	}
	if q.inFlight[uid] != nil {
		in = append(in, "inflight")
	}
	switch len(in) {
	case 0:
		return "none"
	case 1:
		return in[0]
	}
	t.Fatalf("pod %s is in several places: %v", uid, in)
	return ""
}

func expectWhere(t *testing.T, q *PriorityQueue, pod *abi.Pod, want string) {
	t.Helper()
	if got := where(t, q, pod.UID); got != want {
		t.Fatalf("pod %s: in %q, want %q", pod.Name, got, want)
	}
}

// popNow pops without waiting long; it fails the test if activeQ is empty.
func popNow(t *testing.T, q *PriorityQueue) *QueuedPodInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	p, err := q.Pop(ctx)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	return p
}

// popUID pops and checks that the expected pod came out.
func popUID(t *testing.T, q *PriorityQueue, want *abi.Pod) *QueuedPodInfo {
	t.Helper()
	p := popNow(t, q)
	if p.Pod.UID != want.UID {
		t.Fatalf("popped %s, want %s", p.Pod.Name, want.Name)
	}
	return p
}

// checkInvariants verifies the internal structures agree with each other.
func checkInvariants(t *testing.T, q *PriorityQueue) {
	t.Helper()
	q.mu.RLock()
	defer q.mu.RUnlock()
	seen := map[string]string{}
	note := func(uid, where string) {
		if prev, ok := seen[uid]; ok {
			t.Errorf("pod %s in %s and %s", uid, prev, where)
		}
		seen[uid] = where
	}
	for name, h := range map[string]*podHeap{"active": q.activeQ, "backoff": q.backoffQ} {
		if len(h.pos) != len(h.items) {
			t.Errorf("%s: %d index entries for %d items", name, len(h.pos), len(h.items))
		}
		for i, p := range h.items {
			if h.pos[p.Pod.UID] != i {
				t.Errorf("%s: index of %s is %d, want %d", name, p.Pod.UID, h.pos[p.Pod.UID], i)
			}
			if i > 0 && h.less(p, h.items[(i-1)/2]) {
				t.Errorf("%s: heap order broken at %d", name, i)
			}
			if p.Gated() {
				t.Errorf("%s: gated pod %s", name, p.Pod.UID)
			}
			note(p.Pod.UID, name)
		}
	}
	for uid, p := range q.unschedulable {
		if p.Pod.UID != uid {
			t.Errorf("unschedulable: key %s holds %s", uid, p.Pod.UID)
		}
		note(uid, "unschedulable")
	}
	for uid := range q.inFlight {
		note(uid, "inflight")
	}
	for i := 1; i < len(q.events); i++ {
		if q.events[i].seq <= q.events[i-1].seq {
			t.Errorf("events out of order")
		}
	}
	if len(q.inFlight) == 0 && len(q.events) != 0 {
		t.Errorf("%d events kept with nothing in flight", len(q.events))
	}
	n := 0
	for node, pods := range q.nominator.byNode {
		if len(pods) == 0 {
			t.Errorf("nominator: empty list for %s", node)
		}
		for _, p := range pods {
			n++
			if q.nominator.byUID[p.UID] != node {
				t.Errorf("nominator: %s listed under %s but mapped to %q", p.UID, node, q.nominator.byUID[p.UID])
			}
		}
	}
	if n != len(q.nominator.byUID) {
		t.Errorf("nominator: %d listed, %d mapped", n, len(q.nominator.byUID))
	}
}

// gate is a PreEnqueue plugin whose verdict tests control per pod.
type gate struct {
	name string
	mu   sync.Mutex
	shut map[string]bool // uid → gated
	all  bool            // gate every pod
	log  *[]string       // call order, shared between gates
}

func newGate(name string, log *[]string) *gate {
	return &gate{name: name, shut: map[string]bool{}, log: log}
}

func (g *gate) Name() string { return g.name }

func (g *gate) PreEnqueue(pod *abi.Pod) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.log != nil {
		*g.log = append(*g.log, g.name)
	}
	if g.all || g.shut[pod.UID] {
		return false, fmt.Sprintf("%s says wait", g.name)
	}
	return true, ""
}

func (g *gate) set(uid string, shut bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut[uid] = shut
}

func gates(gs ...PreEnqueuePlugin) func(*abi.Pod) []PreEnqueuePlugin {
	return func(*abi.Pod) []PreEnqueuePlugin { return gs }
}
