package preemption_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/run/memapi"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// KEP-3280 (PDB-guaranteed preemption). The "guarded" class (priority 10)
// lets only preemptors of priority >= 2000 violate its pods' budgets.

func guardedNode(node string, allowed int) []string {
	return []string{nodeYAML(node, "1"), podYAML("db-"+node, "guarded", node, "1", "app: db-"+node, ""), pdbYAML("pdb-"+node, "db-"+node, allowed)}
}

func evictions(rep *sim.Report) (ok, refused []string) {
	for _, e := range rep.Timeline {
		if e.Op != memapi.OpEvict {
			continue
		}
		if e.Err == "" {
			ok = append(ok, e.Pod)
		} else if e.Code == http.StatusTooManyRequests {
			refused = append(refused, e.Pod)
		}
	}
	return ok, refused
}

func TestGuardReachedEvictsThroughTheEvictionAPI(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		o := objects(t, append(guardedNode("n1", 1), podYAML("boss", "top", "", "1", "", ""))...)
		rep := run(t, profileConfig(t, mode), o, sim.Options{})
		if got := victims(rep); !reflect.DeepEqual(got, []string{"default/db-n1@n1/evict"}) {
			t.Fatalf("%s: victims %v, want an eviction", mode, got)
		}
		if rep.Pod("default", "boss").Node != "n1" {
			t.Fatalf("%s: boss = %+v", mode, rep.Pod("default", "boss"))
		}
	}
}

func TestGuardReachedFallsBackToDeleteOn429(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		// The budget allows nothing: the victim violates it, which the
		// preemptor (5000 >= 2000) may do; the Eviction API says 429 and
		// the pod is deleted instead (best effort, as the KEP says).
		o := objects(t, append(guardedNode("n1", 0), podYAML("boss", "top", "", "1", "", ""))...)
		rep := run(t, profileConfig(t, mode), o, sim.Options{})
		ok, refused := evictions(rep)
		if len(ok) != 0 || !reflect.DeepEqual(refused, []string{"default/db-n1"}) {
			t.Fatalf("%s: evictions ok %v refused %v", mode, ok, refused)
		}
		if got := victims(rep); !reflect.DeepEqual(got, []string{"default/db-n1@n1/delete"}) {
			t.Fatalf("%s: victims %v, want the 429 to fall back to delete", mode, got)
		}
	}
}

func TestBelowTheGuardViolatingVictimsAreNotSelectable(t *testing.T) {
	o := objects(t, append(guardedNode("n1", 0), podYAML("mid", "mid", "", "1", "", ""))...)
	rep := run(t, profileConfig(t, ""), o, sim.Options{})
	p := rep.Pod("default", "mid")
	if len(rep.Preemptions) != 0 || p.Status != sim.StatusUnschedulable ||
		!strings.Contains(p.Message, "preemption: 0/1 nodes are available: 1 preemption would violate a PodDisruptionBudget its PriorityClass guards against this priority.") {
		t.Fatalf("mid = %+v, preemptions %v", p, rep.Preemptions)
	}
}

func TestBelowTheGuardNonViolatingVictimsAreEvicted(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		o := objects(t, append(guardedNode("n1", 1), podYAML("mid", "mid", "", "1", "", ""))...)
		rep := run(t, profileConfig(t, mode), o, sim.Options{})
		if got := victims(rep); !reflect.DeepEqual(got, []string{"default/db-n1@n1/evict"}) {
			t.Fatalf("%s: victims %v, want an eviction", mode, got)
		}
		for _, e := range rep.Timeline {
			if e.Op == memapi.OpMark && e.Pod == "default/db-n1" {
				t.Fatalf("%s: a guarded victim was marked before the Eviction API agreed", mode)
			}
		}
	}
}

// refuse makes the Eviction API answer 429 for the named pods, as when a
// budget changed after the scheduler last saw it.
func refuse(names ...string) func(memapi.Op, *abi.Pod) error {
	return func(op memapi.Op, pod *abi.Pod) error {
		for _, n := range names {
			if op == memapi.OpEvict && pod.Name == n {
				return memapi.ErrTooManyRequests
			}
		}
		return nil
	}
}

func TestBelowTheGuard429MovesToTheNextCandidate(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		// n1 (lower victim priority sum... equal here, first in order) is
		// tried first; its eviction is refused, so n2 is used.
		docs := append(guardedNode("n1", 1), guardedNode("n2", 1)...)
		o := objects(t, append(docs, podYAML("mid", "mid", "", "1", "", ""))...)
		rep := run(t, profileConfig(t, mode), o, sim.Options{APIFailures: refuse("db-n1")})
		if p := rep.Pod("default", "mid"); p.Status != sim.StatusScheduled && p.Status != sim.StatusUnschedulable {
			t.Fatalf("%s: mid = %+v", mode, p)
		}
		_, refused := evictions(rep)
		got := victims(rep)
		// Depending on the random offset n2 may be tried first; then there
		// is no refusal at all. Either way the pod lands where the victim
		// was evicted, and n1's guarded pod survives.
		if !reflect.DeepEqual(got, []string{"default/db-n2@n2/evict"}) {
			t.Fatalf("%s: victims %v (refused %v)", mode, got, refused)
		}
		if p := rep.Pod("default", "mid"); p.Node != "n2" || p.NominatedNode != "n2" {
			t.Fatalf("%s: mid = %+v", mode, p)
		}
		if rep.Pod("default", "db-n1").Status == sim.StatusPreempted {
			t.Fatalf("%s: the refused victim was removed", mode)
		}
	}
}

func TestBelowTheGuardEveryCandidateRefusedLeavesThePodUnschedulable(t *testing.T) {
	docs := append(guardedNode("n1", 1), guardedNode("n2", 1)...)
	docs = append(docs, podYAML("mid", "mid", "", "1", "", ""))
	// Sync: the cycle's message says why.
	rep := run(t, profileConfig(t, "{asyncPreemption: false}"), objects(t, docs...), sim.Options{APIFailures: refuse("db-n1", "db-n2")})
	p := rep.Pod("default", "mid")
	if p.Status != sim.StatusUnschedulable || p.NominatedNode != "" || len(rep.Preemptions) != 0 ||
		!strings.Contains(p.Message, "preemption: no candidate node left: the Eviction API refused victims whose PriorityClass guards their PodDisruptionBudget against this priority on 2 node(s)") {
		t.Fatalf("sync: mid = %+v, preemptions %v", p, rep.Preemptions)
	}
	// Async: the goroutine clears the nomination and says why in an Event.
	rep = run(t, profileConfig(t, ""), objects(t, docs...), sim.Options{APIFailures: refuse("db-n1", "db-n2")})
	p = rep.Pod("default", "mid")
	if p.Status != sim.StatusUnschedulable || p.NominatedNode != "" || len(rep.Preemptions) != 0 {
		t.Fatalf("async: mid = %+v, preemptions %v", p, rep.Preemptions)
	}
	var said bool
	for _, e := range rep.Timeline {
		said = said || (e.Op == memapi.OpEvent && e.Pod == "default/mid" && strings.Contains(e.Detail, "Warning FailedPreemption: preemption: no candidate node left"))
	}
	if !said {
		t.Fatalf("async: no FailedPreemption event saying why; timeline %+v", rep.Timeline)
	}
}
