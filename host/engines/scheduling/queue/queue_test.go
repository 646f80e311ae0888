package queue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/internal/testwait"
)

// fitEvents is NodeResourcesFit's registration in the scenarios below.
var fitEvents = map[string][]ClusterEvent{
	"NodeResourcesFit": {{Resource: Node, Action: Add}, {Resource: AssignedPod, Action: Delete}},
}

func TestActiveQOrder(t *testing.T) {
	type add struct {
		name string
		prio int32
		step time.Duration // clock step before the Add
	}
	tests := []struct {
		name string
		adds []add
		want []string
	}{
		{"priority first", []add{{"low", 1, 0}, {"high", 10, time.Second}, {"mid", 5, time.Second}}, []string{"high", "mid", "low"}},
		{"then earlier timestamp", []add{{"a", 3, 0}, {"b", 3, time.Second}, {"c", 3, time.Second}}, []string{"a", "b", "c"}},
		{"mixed", []add{{"first-7", 7, 0}, {"early-low", 1, 0}, {"second-7", 7, time.Second}, {"neg", -5, time.Second}, {"third-7", 7, 0}, {"top", 8, time.Second}}, []string{"top", "first-7", "second-7", "third-7", "early-low", "neg"}},
		{"same time keeps insertion order", []add{{"1", 0, 0}, {"2", 0, 0}, {"3", 0, 0}}, []string{"1", "2", "3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, fc := newTestQueue(Options{})
			for _, a := range tc.adds {
				fc.Step(a.step)
				if err := q.Add(mkPod(a.name, a.prio)); err != nil {
					t.Fatal(err)
				}
			}
			checkInvariants(t, q)
			for _, w := range tc.want {
				p := popNow(t, q)
				if p.Pod.Name != w {
					t.Fatalf("popped %s, want %s", p.Pod.Name, w)
				}
				if p.Attempts != 1 || p.InitialAttemptTimestamp.IsZero() {
					t.Fatalf("pop bookkeeping: attempts %d, initial %v", p.Attempts, p.InitialAttemptTimestamp)
				}
				q.Done(p.Pod.UID)
			}
			if a, b, u := q.PendingPods(); a+b+u != 0 {
				t.Fatalf("left over: %d %d %d", a, b, u)
			}
		})
	}
}

func TestBackoffDuration(t *testing.T) {
	q, _ := newTestQueue(Options{})
	tests := []struct {
		unsched, errs int
		want          time.Duration
	}{
		{0, 0, 0},
		{1, 0, 1 * time.Second},
		{2, 0, 2 * time.Second},
		{3, 0, 4 * time.Second},
		{4, 0, 8 * time.Second},
		{5, 0, 10 * time.Second},
		{6, 0, 10 * time.Second},
		{1000, 0, 10 * time.Second},
		{0, 1, 1 * time.Second},
		{0, 3, 4 * time.Second},
		{5, 1, 1 * time.Second}, // errors in a row drive backoff while they last
	}
	for _, tc := range tests {
		p := &QueuedPodInfo{UnschedulableCount: tc.unsched, ConsecutiveErrorsCount: tc.errs}
		if got := q.backoffDuration(p); got != tc.want {
			t.Errorf("unsched=%d errs=%d: got %v, want %v", tc.unsched, tc.errs, got, tc.want)
		}
	}
	q2, _ := newTestQueue(Options{InitialBackoff: 3 * time.Second, MaxBackoff: time.Minute})
	if got := q2.backoffDuration(&QueuedPodInfo{UnschedulableCount: 3}); got != 12*time.Second {
		t.Errorf("custom backoff: got %v, want 12s", got)
	}
}

// TestBackoffFlush drives a pod through repeated failures and checks that
// the flush releases it exactly when its backoff (1,2,4,8,10,10s) is over.
func TestBackoffFlush(t *testing.T) {
	for _, isError := range []bool{false, true} {
		t.Run(map[bool]string{false: "unschedulable", true: "error"}[isError], func(t *testing.T) {
			q, fc := newTestQueue(Options{PluginEvents: fitEvents})
			pod := mkPod("p", 0)
			if err := q.Add(pod); err != nil {
				t.Fatal(err)
			}
			for i, want := range []time.Duration{1, 2, 4, 8, 10, 10} {
				want *= time.Second
				p := popUID(t, q, pod)
				if !isError {
					// an event in flight, so the rejected pod goes to
					// backoffQ rather than being parked
					q.MoveAllToActiveOrBackoffQueue(NodeAdd, nil)
				}
				if err := q.AddUnschedulableIfNotPresent(p, NewPluginSet("NodeResourcesFit"), isError); err != nil {
					t.Fatal(err)
				}
				expectWhere(t, q, pod, "backoff")
				fc.Step(want - time.Millisecond)
				q.flushBackoffCompleted()
				expectWhere(t, q, pod, "backoff")
				fc.Step(time.Millisecond)
				q.flushBackoffCompleted()
				expectWhere(t, q, pod, "active")
				checkInvariants(t, q)
				if p.Attempts != i+1 {
					t.Fatalf("attempts %d, want %d", p.Attempts, i+1)
				}
			}
		})
	}
}

func TestBackoffCounters(t *testing.T) {
	q, _ := newTestQueue(Options{})
	pod := mkPod("p", 0)
	_ = q.Add(pod)
	p := popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, nil, false) // no rejector: an error
	if p.ConsecutiveErrorsCount != 1 || p.UnschedulableCount != 0 {
		t.Fatalf("after error: errs %d unsched %d", p.ConsecutiveErrorsCount, p.UnschedulableCount)
	}
	q.Activate([]*abi.Pod{pod})
	p = popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, NewPluginSet("X"), true) // error with rejectors
	if p.ConsecutiveErrorsCount != 2 || p.UnschedulableCount != 0 {
		t.Fatalf("after 2nd error: errs %d unsched %d", p.ConsecutiveErrorsCount, p.UnschedulableCount)
	}
	expectWhere(t, q, pod, "backoff")
	q.Activate([]*abi.Pod{pod})
	p = popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, NewPluginSet("X"), false)
	if p.ConsecutiveErrorsCount != 0 || p.UnschedulableCount != 1 || !p.UnschedulablePlugins.Has("X") {
		t.Fatalf("after rejection: %+v", p)
	}
	expectWhere(t, q, pod, "unschedulable")
}

// park pops pod and gives it back rejected by plugins, with nothing
// happening in flight, so it lands in unschedulablePods.
func park(t *testing.T, q *PriorityQueue, pod *abi.Pod, plugins ...string) *QueuedPodInfo {
	t.Helper()
	p := popUID(t, q, pod)
	if err := q.AddUnschedulableIfNotPresent(p, NewPluginSet(plugins...), false); err != nil {
		t.Fatal(err)
	}
	expectWhere(t, q, pod, "unschedulable")
	return p
}

func TestMoveOnEvent(t *testing.T) {
	events := map[string][]ClusterEvent{
		"NodeResourcesFit":     fitEvents["NodeResourcesFit"],
		"TaintToleration":      {{Resource: Node, Action: Add | UpdateNodeTaint}},
		"NodeDeclaredFeatures": {{Resource: Node, Action: Add | UpdateNodeDeclaredFeature}},
		"Deaf":                 {},
	}
	tests := []struct {
		name     string
		plugins  []string
		event    ClusterEvent
		preCheck func(*abi.Pod) bool
		moved    bool
	}{
		{"node add helps Fit", []string{"NodeResourcesFit"}, NodeAdd, nil, true},
		{"pod delete helps Fit", []string{"NodeResourcesFit"}, AssignedPodDelete, nil, true},
		{"node label update does not", []string{"NodeResourcesFit"}, ClusterEvent{Resource: Node, Action: UpdateNodeLabel}, nil, false},
		{"unscheduled pod delete does not", []string{"NodeResourcesFit"}, ClusterEvent{Resource: UnscheduledPod, Action: Delete}, nil, false},
		{"PDB event does not", []string{"NodeResourcesFit"}, ClusterEvent{Resource: PodDisruptionBudget, Action: Update}, nil, false},
		{"generic node update reaches taint bit", []string{"TaintToleration"}, ClusterEvent{Resource: Node, Action: Update}, nil, true},
		{"declared-feature update helps NodeDeclaredFeatures", []string{"NodeDeclaredFeatures"}, ClusterEvent{Resource: Node, Action: UpdateNodeDeclaredFeature}, nil, true},
		{"generic node update reaches the declared-feature bit", []string{"NodeDeclaredFeatures"}, ClusterEvent{Resource: Node, Action: Update}, nil, true},
		{"taint update does not help NodeDeclaredFeatures", []string{"NodeDeclaredFeatures"}, ClusterEvent{Resource: Node, Action: UpdateNodeTaint}, nil, false},
		{"any rejector suffices", []string{"TaintToleration", "NodeResourcesFit"}, AssignedPodDelete, nil, true},
		{"unregistered plugin hears all", []string{"Mystery"}, ClusterEvent{Resource: StorageClass, Action: Add}, nil, true},
		{"empty registration hears nothing", []string{"Deaf"}, NodeAdd, nil, false},
		{"wildcard moves all", []string{"Deaf"}, WildCardEvent, nil, true},
		{"preCheck false holds", []string{"NodeResourcesFit"}, NodeAdd, func(*abi.Pod) bool { return false }, false},
		{"preCheck true passes", []string{"NodeResourcesFit"}, NodeAdd, func(p *abi.Pod) bool { return p.Name == "p" }, true},
		{"panicking preCheck passes", []string{"NodeResourcesFit"}, NodeAdd, func(*abi.Pod) bool { panic("boom") }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, fc := newTestQueue(Options{PluginEvents: events})
			pod := mkPod("p", 0)
			_ = q.Add(pod)
			park(t, q, pod, tc.plugins...)
			fc.Step(2 * time.Second) // backoff (1s) over
			q.MoveAllToActiveOrBackoffQueue(tc.event, tc.preCheck)
			want := "unschedulable"
			if tc.moved {
				want = "active"
			}
			expectWhere(t, q, pod, want)
			checkInvariants(t, q)
		})
	}
}

func TestMoveWhileBackingOffGoesToBackoffQ(t *testing.T) {
	q, fc := newTestQueue(Options{PluginEvents: fitEvents})
	pod := mkPod("p", 0)
	_ = q.Add(pod)
	park(t, q, pod, "NodeResourcesFit")
	fc.Step(500 * time.Millisecond)
	q.MoveAllToActiveOrBackoffQueue(NodeAdd, nil)
	expectWhere(t, q, pod, "backoff")
	fc.Step(499 * time.Millisecond)
	q.flushBackoffCompleted()
	expectWhere(t, q, pod, "backoff")
	fc.Step(time.Millisecond)
	q.flushBackoffCompleted()
	expectWhere(t, q, pod, "active")
}

func TestEventDuringFlight(t *testing.T) {
	tests := []struct {
		name     string
		event    *ClusterEvent // sent while the pod is in flight
		preCheck func(*abi.Pod) bool
		want     string
	}{
		{"nothing happened: parked", nil, nil, "unschedulable"},
		{"interesting event: requeued", &NodeAdd, nil, "backoff"},
		{"uninteresting event: parked", &ClusterEvent{Resource: Node, Action: UpdateNodeLabel}, nil, "unschedulable"},
		{"wildcard: requeued", &WildCardEvent, nil, "backoff"},
		{"preCheck rules the pod out: parked", &NodeAdd, func(*abi.Pod) bool { return false }, "unschedulable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, _ := newTestQueue(Options{PluginEvents: fitEvents})
			pod := mkPod("p", 0)
			_ = q.Add(pod)
			p := popNow(t, q)
			if tc.event != nil {
				q.MoveAllToActiveOrBackoffQueue(*tc.event, tc.preCheck)
			}
			if err := q.AddUnschedulableIfNotPresent(p, NewPluginSet("NodeResourcesFit"), false); err != nil {
				t.Fatal(err)
			}
			expectWhere(t, q, pod, tc.want)
			q.Done(pod.UID) // harmless after AddUnschedulableIfNotPresent
			expectWhere(t, q, pod, tc.want)
			checkInvariants(t, q)
		})
	}
}

// TestEventFlightWindows checks that an event counts only for pods that
// were in flight when it arrived, and is forgotten once they are done.
func TestEventFlightWindows(t *testing.T) {
	q, _ := newTestQueue(Options{PluginEvents: fitEvents})
	a, b, c := mkPod("a", 3), mkPod("b", 2), mkPod("c", 1)
	for _, p := range []*abi.Pod{a, b, c} {
		_ = q.Add(p)
	}
	pa := popUID(t, q, a)
	q.MoveAllToActiveOrBackoffQueue(NodeAdd, nil) // during a's flight only
	pb := popUID(t, q, b)
	q.MoveAllToActiveOrBackoffQueue(ClusterEvent{Resource: Node, Action: UpdateNodeLabel}, nil)
	_ = q.AddUnschedulableIfNotPresent(pb, NewPluginSet("NodeResourcesFit"), false)
	expectWhere(t, q, b, "unschedulable")
	_ = q.AddUnschedulableIfNotPresent(pa, NewPluginSet("NodeResourcesFit"), false)
	expectWhere(t, q, a, "backoff")
	checkInvariants(t, q) // nothing in flight: the event log is empty
	pc := popUID(t, q, c)
	_ = q.AddUnschedulableIfNotPresent(pc, NewPluginSet("NodeResourcesFit"), false)
	expectWhere(t, q, c, "unschedulable")
}

func TestLeftoverFlush(t *testing.T) {
	log := []string{}
	g := newGate("Gate", &log)
	q, fc := newTestQueue(Options{PluginEvents: map[string][]ClusterEvent{"Deaf": {}, "Gate": {}}, PreEnqueue: gates(g)})
	parked, gated := mkPod("parked", 0), mkPod("gated", 0)
	_ = q.Add(parked)
	park(t, q, parked, "Deaf")
	g.set(gated.UID, true)
	_ = q.Add(gated)
	expectWhere(t, q, gated, "gated")
	queued := mkPod("queued", 0)
	_ = q.Add(queued)
	if got, want := q.PendingByQueue(), (PendingCounts{Active: 1, Unschedulable: 1, Gated: 1}); got != want {
		t.Fatalf("PendingByQueue = %+v, want %+v", got, want)
	}
	popUID(t, q, queued)
	q.Done(queued.UID)

	fc.Step(5 * time.Minute)
	q.flushUnschedulableLeftover() // exactly 5m: not longer than the limit
	expectWhere(t, q, parked, "unschedulable")
	n := len(log)
	fc.Step(time.Second)
	q.flushUnschedulableLeftover()
	expectWhere(t, q, parked, "active")
	expectWhere(t, q, gated, "gated") // re-ran its gate, still shut
	if len(log) == n {
		t.Fatal("leftover flush did not re-run the gate")
	}
	g.set(gated.UID, false)
	fc.Step(30 * time.Second)
	q.flushUnschedulableLeftover()
	expectWhere(t, q, gated, "active")
	checkInvariants(t, q)
}

func TestPreEnqueueGates(t *testing.T) {
	var log []string
	ga, gb := newGate("A", &log), newGate("B", &log)
	q, _ := newTestQueue(Options{
		PreEnqueue:   gates(ga, gb),
		PluginEvents: map[string][]ClusterEvent{"B": {AssignedPodDelete}},
	})
	pod := mkPod("p", 0)
	gb.set(pod.UID, true)
	_ = q.Add(pod)
	expectWhere(t, q, pod, "gated")
	if a, b, u := q.PendingPods(); a != 0 || b != 0 || u != 1 {
		t.Fatalf("pending %d %d %d", a, b, u)
	}
	q.mu.RLock()
	gp, reason := q.unschedulable[pod.UID].GatingPlugin, q.unschedulable[pod.UID].GatingReason
	q.mu.RUnlock()
	if gp != "B" || reason != "B says wait" {
		t.Fatalf("gating plugin %q reason %q", gp, reason)
	}

	// Activate re-runs the gates, the gating plugin first; still gated.
	log = log[:0]
	q.Activate([]*abi.Pod{pod})
	expectWhere(t, q, pod, "gated")
	if len(log) != 1 || log[0] != "B" {
		t.Fatalf("gates run on Activate: %v, want [B]", log)
	}

	// An event B did not register for leaves the gate alone.
	log = log[:0]
	q.MoveAllToActiveOrBackoffQueue(NodeAdd, nil)
	if len(log) != 0 {
		t.Fatalf("uninteresting event ran gates: %v", log)
	}
	// One it registered for re-runs them.
	q.MoveAllToActiveOrBackoffQueue(AssignedPodDelete, nil)
	if len(log) != 1 {
		t.Fatalf("interesting event ran gates %v", log)
	}
	expectWhere(t, q, pod, "gated")

	// Gate opens: Activate sends the pod to activeQ after all gates pass.
	gb.set(pod.UID, false)
	log = log[:0]
	q.Activate([]*abi.Pod{pod})
	expectWhere(t, q, pod, "active")
	if len(log) != 2 || log[0] != "B" || log[1] != "A" {
		t.Fatalf("gates run: %v, want [B A]", log)
	}
	p := popUID(t, q, pod)
	if p.Gated() {
		t.Fatal("popped pod still marked gated")
	}

	// An event for the gate moves a gated pod once it opens.
	other := mkPod("other", 0)
	gb.set(other.UID, true)
	_ = q.Add(other)
	expectWhere(t, q, other, "gated")
	gb.set(other.UID, false)
	q.MoveAllToActiveOrBackoffQueue(AssignedPodDelete, nil)
	expectWhere(t, q, other, "active")
}

func TestGateOnLeavingBackoff(t *testing.T) {
	g := newGate("G", nil)
	q, fc := newTestQueue(Options{PreEnqueue: gates(g)})
	pod := mkPod("p", 0)
	_ = q.Add(pod)
	p := popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, nil, true)
	expectWhere(t, q, pod, "backoff")
	g.set(pod.UID, true)
	fc.Step(time.Second)
	q.flushBackoffCompleted()
	expectWhere(t, q, pod, "gated")
}

func TestPanickingGate(t *testing.T) {
	q, _ := newTestQueue(Options{PreEnqueue: func(*abi.Pod) []PreEnqueuePlugin { panic("lookup") }})
	pod := mkPod("p", 0)
	if err := q.Add(pod); err != nil {
		t.Fatal(err)
	}
	expectWhere(t, q, pod, "gated")
	q2, _ := newTestQueue(Options{PreEnqueue: gates(panicPlugin{}, nil)})
	_ = q2.Add(pod)
	expectWhere(t, q2, pod, "gated")
}

type panicPlugin struct{}

func (panicPlugin) Name() string                       { return "Panic" }
func (panicPlugin) PreEnqueue(*abi.Pod) (bool, string) { panic("gate") }

func TestActivate(t *testing.T) {
	q, _ := newTestQueue(Options{PluginEvents: fitEvents})
	parked, backing, active := mkPod("parked", 0), mkPod("backing", 0), mkPod("active", 0)
	_ = q.Add(parked)
	park(t, q, parked, "NodeResourcesFit")
	_ = q.Add(backing)
	p := popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, nil, true)
	expectWhere(t, q, backing, "backoff")
	_ = q.Add(active)

	q.Activate([]*abi.Pod{parked, backing, active, mkPod("unknown", 0), nil})
	for _, pod := range []*abi.Pod{parked, backing, active} {
		expectWhere(t, q, pod, "active")
	}
	expectWhere(t, q, mkPod("unknown", 0), "none")
	if a, _, _ := q.PendingPods(); a != 3 {
		t.Fatalf("active %d, want 3 (activating a pod in activeQ must not duplicate it)", a)
	}
	checkInvariants(t, q)
}

// TestActivateInFlight is the async-preemption rule: the preemption
// goroutine may finish and Activate the preemptor before its cycle has
// given it back; the activation must not be lost.
func TestActivateInFlight(t *testing.T) {
	preempting := newGate("DefaultPreemption", nil)
	q, _ := newTestQueue(Options{
		PreEnqueue: gates(preempting),
		PluginEvents: map[string][]ClusterEvent{
			"NodeResourcesFit":  fitEvents["NodeResourcesFit"],
			"DefaultPreemption": {AssignedPodDelete},
		},
	})
	pod := mkPod("preemptor", 100)
	_ = q.Add(pod)
	p := popNow(t, q)
	preempting.set(pod.UID, true) // goroutine started
	preempting.set(pod.UID, false)
	q.Activate([]*abi.Pod{pod}) // goroutine done, pod still in flight
	expectWhere(t, q, pod, "inflight")
	if err := q.AddUnschedulableIfNotPresent(p, NewPluginSet("NodeResourcesFit"), false); err != nil {
		t.Fatal(err)
	}
	expectWhere(t, q, pod, "active")

	// Without the Activate the same failure parks the pod.
	p = popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, NewPluginSet("NodeResourcesFit"), false)
	expectWhere(t, q, pod, "unschedulable")

	// A pod activated in flight that then succeeds just leaves.
	q.Activate([]*abi.Pod{pod})
	p = popNow(t, q)
	q.Activate([]*abi.Pod{pod})
	q.Done(p.Pod.UID)
	expectWhere(t, q, pod, "none")
}

func TestDelete(t *testing.T) {
	g := newGate("G", nil)
	setups := map[string]func(q *PriorityQueue, pod *abi.Pod){
		"active": func(q *PriorityQueue, pod *abi.Pod) { _ = q.Add(pod) },
		"backoff": func(q *PriorityQueue, pod *abi.Pod) {
			_ = q.Add(pod)
			p, _ := q.Pop(context.Background())
			_ = q.AddUnschedulableIfNotPresent(p, nil, true)
		},
		"unschedulable": func(q *PriorityQueue, pod *abi.Pod) {
			_ = q.Add(pod)
			p, _ := q.Pop(context.Background())
			_ = q.AddUnschedulableIfNotPresent(p, NewPluginSet("X"), false)
		},
		"gated": func(q *PriorityQueue, pod *abi.Pod) {
			g.set(pod.UID, true)
			_ = q.Add(pod)
		},
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			q, _ := newTestQueue(Options{PreEnqueue: gates(g)})
			pod := mkPod("p-"+name, 0)
			setup(q, pod)
			expectWhere(t, q, pod, name)
			q.AddNominatedPod(pod, "n1")
			q.Delete(pod)
			expectWhere(t, q, pod, "none")
			if got := q.NominatedPodsForNode("n1"); len(got) != 0 {
				t.Fatalf("nomination survived Delete: %v", got)
			}
			checkInvariants(t, q)
		})
	}
	t.Run("inflight", func(t *testing.T) {
		q, _ := newTestQueue(Options{})
		pod := mkPod("p", 0)
		_ = q.Add(pod)
		p := popNow(t, q)
		q.AddNominatedPod(pod, "n1")
		q.Delete(pod)
		q.AddNominatedPod(pod, "n1") // late nomination of a deleted pod
		_ = q.Update(pod, pod)       // stale update
		if err := q.AddUnschedulableIfNotPresent(p, NewPluginSet("X"), false); err != nil {
			t.Fatal(err)
		}
		expectWhere(t, q, pod, "none")
		if got := q.NominatedPodsForNode("n1"); len(got) != 0 {
			t.Fatalf("nomination of deleted pod: %v", got)
		}
		checkInvariants(t, q)
	})
	t.Run("unknown and nil", func(t *testing.T) {
		q, _ := newTestQueue(Options{})
		q.Delete(mkPod("ghost", 0))
		q.Delete(nil)
		q.Done("ghost")
	})
}

func TestUpdate(t *testing.T) {
	q, fc := newTestQueue(Options{PluginEvents: fitEvents})

	// activeQ: in place, re-sorted.
	a, b := mkPod("a", 1), mkPod("b", 2)
	_ = q.Add(a)
	_ = q.Add(b)
	a2 := *a
	a2.Priority = 5
	_ = q.Update(a, &a2)
	p := popUID(t, q, a)
	if p.Pod.Priority != 5 {
		t.Fatal("activeQ pod not updated")
	}
	q.Done(a.UID)

	// backoffQ: in place, stays.
	pb := popUID(t, q, b)
	_ = q.AddUnschedulableIfNotPresent(pb, nil, true)
	b2 := *b
	b2.Labels = abi.Labels{{Key: "k", Value: "v"}}
	_ = q.Update(b, &b2)
	expectWhere(t, q, b, "backoff")
	q.mu.RLock()
	if q.backoffQ.get(b.UID).Pod != &b2 {
		t.Error("backoffQ pod not updated")
	}
	q.mu.RUnlock()
	q.Delete(b)

	// unschedulablePods: a status-only change stays, a spec change moves.
	c := mkPod("c", 0)
	_ = q.Add(c)
	park(t, q, c, "NodeResourcesFit")
	c2 := *c
	c2.NominatedNodeName = "n1"
	c2.StartTime = 42
	_ = q.Update(c, &c2)
	expectWhere(t, q, c, "unschedulable")
	c3 := c2
	c3.Labels = abi.Labels{{Key: "app", Value: "x"}}
	_ = q.Update(&c2, &c3)
	expectWhere(t, q, c, "backoff")
	fc.Step(10 * time.Second)
	q.flushBackoffCompleted()
	expectWhere(t, q, c, "active")
	if got := popUID(t, q, c); got.Pod != &c3 {
		t.Fatal("moved pod is not the new version")
	}

	// in flight: a spec change makes the failure requeue instead of park,
	// with the new version.
	d := mkPod("d", 0)
	_ = q.Add(d)
	pd := popUID(t, q, d)
	d2 := *d
	d2.Tolerations = []abi.Toleration{{Key: "t"}}
	_ = q.Update(nil, &d2)
	_ = q.Add(&d2) // a duplicate Add of an in-flight pod is an update
	expectWhere(t, q, d, "inflight")
	_ = q.AddUnschedulableIfNotPresent(pd, NewPluginSet("NodeResourcesFit"), false)
	expectWhere(t, q, d, "backoff")
	if pd.Pod != &d2 {
		t.Fatal("requeued pod is not the version updated in flight")
	}

	// unknown: added; bound: removed.
	e := mkPod("e", 0)
	_ = q.Update(nil, e)
	expectWhere(t, q, e, "active")
	e2 := *e
	e2.NodeName = "n1"
	_ = q.Update(e, &e2)
	expectWhere(t, q, e, "none")
	if err := q.Add(&e2); !errors.Is(err, ErrAssigned) {
		t.Fatalf("Add of a bound pod: %v", err)
	}
	checkInvariants(t, q)
}

func TestNominator(t *testing.T) {
	q, _ := newTestQueue(Options{})
	names := func(pods []*abi.Pod) []string {
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	eq := func(got []*abi.Pod, want ...string) {
		t.Helper()
		g := names(got)
		if len(g) != len(want) {
			t.Fatalf("got %v, want %v", g, want)
		}
		for i := range g {
			if g[i] != want[i] {
				t.Fatalf("got %v, want %v", g, want)
			}
		}
	}
	a, b, c := mkPod("a", 0), mkPod("b", 0), mkPod("c", 0)
	for _, p := range []*abi.Pod{a, b, c} {
		_ = q.Add(p)
	}
	q.AddNominatedPod(a, "n1")
	q.AddNominatedPod(b, "n1")
	eq(q.NominatedPodsForNode("n1"), "a", "b")
	q.AddNominatedPod(a, "n2") // move
	eq(q.NominatedPodsForNode("n1"), "b")
	eq(q.NominatedPodsForNode("n2"), "a")
	q.AddNominatedPod(b, "") // clear
	eq(q.NominatedPodsForNode("n1"))
	q.AddNominatedPod(c, "n2")
	q.DeleteNominatedPodIfExists(a)
	eq(q.NominatedPodsForNode("n2"), "c")
	bound := mkPod("bound", 0)
	bound.NodeName = "n3"
	q.AddNominatedPod(bound, "n3")
	eq(q.NominatedPodsForNode("n3"))

	// Newest version, copied, with the nominated node filled in.
	c2 := *c
	c2.Labels = abi.Labels{{Key: "v", Value: "2"}}
	_ = q.Update(c, &c2)
	got := q.NominatedPodsForNode("n2")
	eq(got, "c")
	if v, _ := got[0].Labels.Get("v"); v != "2" || got[0].NominatedNodeName != "n2" {
		t.Fatalf("got %+v, want the updated pod nominated to n2", got[0])
	}
	got[0].Name = "mutated"
	eq(q.NominatedPodsForNode("n2"), "c")

	// The version in flight counts too.
	q.Delete(a)
	q.Delete(b)
	popUID(t, q, c)
	c3 := c2
	c3.Labels = abi.Labels{{Key: "v", Value: "3"}}
	_ = q.Update(&c2, &c3)
	if v, _ := q.NominatedPodsForNode("n2")[0].Labels.Get("v"); v != "3" {
		t.Fatalf("in-flight update not seen: v=%s", v)
	}

	// Updates: no nominatedNodeName on either side keeps the in-memory
	// nomination; a new one moves it; losing it clears it.
	d := mkPod("d", 0)
	_ = q.Add(d)
	q.AddNominatedPod(d, "n4")
	d2 := *d
	d2.Labels = abi.Labels{{Key: "x", Value: "y"}}
	_ = q.Update(d, &d2)
	eq(q.NominatedPodsForNode("n4"), "d")
	d3 := d2
	d3.NominatedNodeName = "n5"
	_ = q.Update(&d2, &d3)
	eq(q.NominatedPodsForNode("n4"))
	eq(q.NominatedPodsForNode("n5"), "d")
	d4 := d3
	d4.NominatedNodeName = ""
	_ = q.Update(&d3, &d4)
	eq(q.NominatedPodsForNode("n5"))

	// A pod added with a nominatedNodeName (e.g. after a restart) is
	// nominated.
	e := mkPod("e", 0)
	e.NominatedNodeName = "n6"
	_ = q.Add(e)
	eq(q.NominatedPodsForNode("n6"), "e")
	checkInvariants(t, q)

	// Nil and empty input are no-ops.
	q.AddNominatedPod(nil, "n1")
	q.AddNominatedPod(&abi.Pod{}, "n1")
	q.DeleteNominatedPodIfExists(nil)
	eq(q.NominatedPodsForNode("n1"))
}

func TestPopBlocksUntilAdd(t *testing.T) {
	q, _ := newTestQueue(Options{})
	got := make(chan *QueuedPodInfo)
	go func() {
		p, err := q.Pop(context.Background())
		if err != nil {
			t.Error(err)
		}
		got <- p
	}()
	select {
	case p := <-got:
		t.Fatalf("Pop returned %v on an empty queue", p)
	case <-time.After(50 * time.Millisecond):
	}
	pod := mkPod("p", 0)
	_ = q.Add(pod)
	select {
	case p := <-got:
		if p.Pod.UID != pod.UID {
			t.Fatalf("popped %s", p.Pod.Name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Pop did not wake up on Add")
	}
}

func TestPopContextAndClose(t *testing.T) {
	q, _ := newTestQueue(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 2)
	go func() { _, err := q.Pop(ctx); errc <- err }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Pop: %v", err)
	}

	go func() { _, err := q.Pop(context.Background()); errc <- err }()
	select {
	case err := <-errc:
		t.Fatalf("Pop returned early: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	q.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Pop after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not unblock Pop")
	}
	q.Close() // twice is fine
	_ = q.Add(mkPod("late", 0))
	if _, err := q.Pop(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Pop on a closed queue: %v", err)
	}
}

func TestRunFlushLoops(t *testing.T) {
	q, fc := newTestQueue(Options{PluginEvents: map[string][]ClusterEvent{"Deaf": {}}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	backing, parked := mkPod("backing", 0), mkPod("parked", 0)
	_ = q.Add(backing)
	p := popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, nil, true)
	_ = q.Add(parked)
	park(t, q, parked, "Deaf")
	q.Run(ctx)
	testwait.Eventually(t, 5*time.Second, func() bool { return fc.Waiters() >= 2 }, "flush loops did not start")
	eventually := func(pod *abi.Pod, want string) {
		t.Helper()
		if !testwait.Within(5*time.Second, func() bool { return where(t, q, pod.UID) == want }) {
			t.Fatalf("%s: in %s, want %s", pod.Name, where(t, q, pod.UID), want)
		}
	}
	fc.Step(time.Second)
	eventually(backing, "active")
	expectWhere(t, q, parked, "unschedulable")
	for i := 0; i < 11; i++ { // 5.5 minutes in 30s ticks
		fc.Step(30 * time.Second)
	}
	eventually(parked, "active")
}

func TestBadInput(t *testing.T) {
	q, _ := newTestQueue(Options{})
	if err := q.Add(nil); !errors.Is(err, ErrInvalidPod) {
		t.Fatalf("Add(nil): %v", err)
	}
	if err := q.Add(&abi.Pod{Name: "no-uid"}); !errors.Is(err, ErrInvalidPod) {
		t.Fatalf("Add without UID: %v", err)
	}
	if err := q.Update(nil, nil); !errors.Is(err, ErrInvalidPod) {
		t.Fatalf("Update(nil): %v", err)
	}
	if err := q.AddUnschedulableIfNotPresent(nil, nil, false); !errors.Is(err, ErrInvalidPod) {
		t.Fatalf("AddUnschedulable(nil): %v", err)
	}
	if err := q.AddUnschedulableIfNotPresent(&QueuedPodInfo{}, nil, false); !errors.Is(err, ErrInvalidPod) {
		t.Fatalf("AddUnschedulable(no pod): %v", err)
	}
	pod := mkPod("p", 0)
	_ = q.Add(pod)
	if err := q.AddUnschedulableIfNotPresent(&QueuedPodInfo{Pod: pod}, NewPluginSet("X"), false); !errors.Is(err, ErrAlreadyQueued) {
		t.Fatalf("AddUnschedulable of a queued pod: %v", err)
	}
	// A pod never popped is requeued after backoff rather than parked.
	other := mkPod("other", 0)
	if err := q.AddUnschedulableIfNotPresent(&QueuedPodInfo{Pod: other}, NewPluginSet("X"), false); err != nil {
		t.Fatal(err)
	}
	expectWhere(t, q, other, "backoff")
	q.Activate(nil)
	q.MoveAllToActiveOrBackoffQueue(ClusterEvent{}, nil)
	checkInvariants(t, q)
}

func TestClusterEventMatch(t *testing.T) {
	tests := []struct {
		reg, in ClusterEvent
		want    bool
	}{
		{ClusterEvent{Resource: Node, Action: Add}, NodeAdd, true},
		{ClusterEvent{Resource: Node, Action: Add}, ClusterEvent{Resource: Node, Action: Delete}, false},
		{ClusterEvent{Resource: Node, Action: Update}, ClusterEvent{Resource: Node, Action: UpdateNodeTaint}, true},
		{ClusterEvent{Resource: Pod, Action: Delete}, AssignedPodDelete, true},
		{ClusterEvent{Resource: Pod, Action: Delete}, ClusterEvent{Resource: UnscheduledPod, Action: Delete}, true},
		{ClusterEvent{Resource: AssignedPod, Action: Delete}, ClusterEvent{Resource: UnscheduledPod, Action: Delete}, false},
		{ClusterEvent{Resource: WildCard, Action: Add}, NodeAdd, true},
		{ClusterEvent{Resource: Node, Action: Add}, WildCardEvent, true},
		{ClusterEvent{Resource: Node, Action: Add}, ClusterEvent{Resource: AssignedPod, Action: Add}, false},
	}
	for _, tc := range tests {
		if got := tc.reg.Match(tc.in); got != tc.want {
			t.Errorf("%v matches %v: got %v, want %v", tc.reg, tc.in, got, tc.want)
		}
	}
	if s := (ClusterEvent{Resource: Node, Action: UpdateNodeLabel | UpdateNodeTaint}).String(); s != "Node/UpdateNodeLabel|UpdateNodeTaint" {
		t.Errorf("String: %q", s)
	}
}

func TestNextBackoffExpiryAndManualFlush(t *testing.T) {
	q, clk := newTestQueue(Options{})
	if _, ok := q.NextBackoffExpiry(); ok {
		t.Fatal("empty backoffQ reported an expiry")
	}
	pod := &abi.Pod{UID: "u1", Name: "p1", Namespace: "ns"}
	if err := q.Add(pod); err != nil {
		t.Fatal(err)
	}
	qp, err := q.Pop(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := q.AddUnschedulableIfNotPresent(qp, nil, true); err != nil {
		t.Fatal(err)
	}
	exp, ok := q.NextBackoffExpiry()
	if !ok || !exp.Equal(clk.Now().Add(time.Second)) {
		t.Fatalf("expiry = %v %v, want 1s after the failure", exp, ok)
	}
	q.FlushBackoffCompleted()
	if a, b, _ := q.PendingPods(); a != 0 || b != 1 {
		t.Fatalf("flushed before expiry: active %d backoff %d", a, b)
	}
	clk.Step(time.Second)
	q.FlushBackoffCompleted()
	if a, b, _ := q.PendingPods(); a != 1 || b != 0 {
		t.Fatalf("not flushed at expiry: active %d backoff %d", a, b)
	}
}

// TestRequeueRespectsBackoff: a failed asynchronous preemption requeues
// its preemptor without an event, in flight or parked, but through its
// backoff (no hot loop against a failing API).
func TestRequeueRespectsBackoff(t *testing.T) {
	q, clk := newTestQueue(Options{PluginEvents: fitEvents})
	pod := mkPod("preemptor", 100)
	_ = q.Add(pod)
	p := popNow(t, q)
	q.Requeue([]*abi.Pod{pod}) // in flight
	if err := q.AddUnschedulableIfNotPresent(p, NewPluginSet("NodeResourcesFit"), false); err != nil {
		t.Fatal(err)
	}
	expectWhere(t, q, pod, "backoff")
	clk.Step(2 * DefaultInitialBackoff)
	q.FlushBackoffCompleted()
	p = popNow(t, q)
	_ = q.AddUnschedulableIfNotPresent(p, NewPluginSet("NodeResourcesFit"), false)
	expectWhere(t, q, pod, "unschedulable")
	q.Requeue([]*abi.Pod{pod, mkPod("unknown", 0), nil}) // parked
	expectWhere(t, q, pod, "backoff")
	expectWhere(t, q, mkPod("unknown", 0), "none")
	checkInvariants(t, q)
}
