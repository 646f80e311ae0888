package scheduler_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
)

// annotatingEvents is a Recorder that takes decision summaries
// (scheduler.DecisionAnnotator).
type annotatingEvents struct {
	events
	mu        sync.Mutex
	summaries map[string][]string
}

func (a *annotatingEvents) AnnotateDecision(pod *abi.Pod, summary string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.summaries[pod.Name] = append(a.summaries[pod.Name], summary)
}

// With AnnotateDecisions, an attempt that finds no node hands its
// summary (outcome, message, grouped reasons) to the Recorder; the
// attempt that binds does not (its summary rides on the binding).
func TestUnplacedAttemptSummaryGoesToTheRecorder(t *testing.T) {
	b := &binder{bound: map[string]string{}}
	rec := &annotatingEvents{events: events{failed: map[string]string{}}, summaries: map[string][]string{}}
	e := newEnvOpts(t, b, func(o *scheduler.Options) { o.Recorder, o.AnnotateDecisions = rec, true })
	b.sched, e.b = e.sched, b
	e.sched.OnNodeAdd(node("small", 1000))
	e.sched.OnPodAdd(pod("big", 3000))
	e.cycle(t)
	got := rec.summaries["big"]
	if len(got) != 1 {
		t.Fatalf("%d summaries for the unschedulable attempt, want 1", len(got))
	}
	var sum decision.Summary
	if err := json.Unmarshal([]byte(got[0]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Outcome != decision.OutcomeUnschedulable || !strings.Contains(sum.Message, "Insufficient cpu") || sum.Node != "" ||
		len(sum.Rejected) != 1 || sum.Rejected[0].Reason != "Insufficient cpu" || sum.Rejected[0].Nodes != 1 {
		t.Errorf("summary %s", got[0])
	}

	e.sched.OnNodeAdd(node("large", 4000))
	e.clk.Step(2 * time.Second)
	e.q.FlushBackoffCompleted()
	e.cycle(t)
	if b.bound["big"] != "large" {
		t.Fatalf("big bound to %q, want large", b.bound["big"])
	}
	if n := len(rec.summaries["big"]); n != 1 {
		t.Errorf("the binding attempt handed a summary to the Recorder too (%d in all)", n)
	}
}
