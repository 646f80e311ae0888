package preemption_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/run/memapi"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// KEP-3280 fallback: when a guarded victim's eviction is refused, the
// node is abandoned, and it must be abandoned before anything on it is
// removed. The refusals here come from the API server's own budgets,
// lowered after the scheduler last saw them (the scheduler is not told),
// as when another disruption spent them in the meantime.

// fallbackNodes: n1 (3 CPU) holds the pods of onN1; n2 (3 CPU) holds six
// low pods of 500m, so removing them all costs more than anything on n1
// and n1 is the first candidate of a 3-CPU "mid" preemptor.
func fallbackNodes(onN1 ...string) []string {
	docs := append([]string{nodeYAML("n1", "3"), nodeYAML("n2", "3")}, onN1...)
	for i := 1; i <= 6; i++ {
		docs = append(docs, podYAML(fmt.Sprintf("w%d-n2", i), "low", "n2", "500m", "", ""))
	}
	return append(docs, podYAML("mid", "mid", "", "3", "", ""))
}

// runServerBudgets runs the cluster with the server's budgets set to
// allowed (name -> status.disruptionsAllowed) after the scheduler saw them.
func runServerBudgets(t *testing.T, mode string, docs []string, allowed map[string]int32) (*sim.Report, *memapi.Cluster) {
	t.Helper()
	env, err := sim.Start(context.Background(), objects(t, docs...), sim.Options{Config: profileConfig(t, mode),
		NativeBuiltin: true, CacheDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close(context.Background()) })
	c := env.Cluster()
	for name, n := range allowed {
		b := *c.PDB("default", name)
		b.DisruptionsAllowed = n
		c.SetPDB(&b)
	}
	rep, err := env.Settle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	env.Preemption.Wait()
	return rep, c
}

// untouched fails unless each named pod is still in the cluster, without
// the DisruptionTarget condition, with no mark, delete or eviction done
// on it and no event but the Warning EvictBlocked that reports a refusal.
func untouched(t *testing.T, mode string, rep *sim.Report, c *memapi.Cluster, names ...string) {
	t.Helper()
	for _, n := range names {
		p := c.Pod("uid-default/" + n)
		if p == nil {
			t.Errorf("%s: %s was removed from the abandoned node", mode, n)
			continue
		}
		if p.PreemptedByScheduler {
			t.Errorf("%s: %s was left with the DisruptionTarget condition", mode, n)
		}
		for _, e := range rep.Timeline {
			if e.Pod != "default/"+n {
				continue
			}
			switch {
			case e.Op == memapi.OpMark, (e.Op == memapi.OpDelete || e.Op == memapi.OpEvict) && e.Err == "":
				t.Errorf("%s: %s on the abandoned node got %s", mode, n, e.Op)
			case e.Op == memapi.OpEvent && !strings.HasPrefix(e.Detail, "Warning "+preemption.ReasonEvictBlocked+": "):
				t.Errorf("%s: event on %s: %s", mode, n, e.Detail)
			}
		}
	}
}

// blockedEvent says whether the pod got the Warning EvictBlocked event
// with that message.
func blockedEvent(rep *sim.Report, pod, message string) bool {
	for _, e := range rep.Timeline {
		if e.Op == memapi.OpEvent && e.Pod == "default/"+pod && e.Detail == "Warning "+preemption.ReasonEvictBlocked+": "+message {
			return true
		}
	}
	return false
}

// n2Won checks the next candidate was used: n2's six pods removed and
// mid bound there.
func n2Won(t *testing.T, mode string, rep *sim.Report) {
	t.Helper()
	var want, onN2 []string
	for i := 1; i <= 6; i++ {
		want = append(want, fmt.Sprintf("default/w%d-n2@n2/delete", i))
	}
	for _, v := range victims(rep) {
		if strings.HasSuffix(v, "@n2/delete") {
			onN2 = append(onN2, v)
		}
	}
	sort.Strings(onN2)
	if !reflect.DeepEqual(onN2, want) {
		t.Errorf("%s: n2 victims %v, want %v (all removals %v)", mode, onN2, want, victims(rep))
	}
	if p := rep.Pod("default", "mid"); p.Status != sim.StatusScheduled || p.Node != "n2" || p.NominatedNode != "n2" {
		t.Errorf("%s: mid = %+v, want it on n2", mode, p)
	}
}

func TestKEP3280RefusalLeavesEveryPodOfTheAbandonedNodeRunning(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		docs := fallbackNodes(
			podYAML("db-n1", "guarded", "n1", "1", "app: db-n1", ""), pdbYAML("pdb-n1", "db-n1", 1),
			podYAML("u1-n1", "low", "n1", "1", "", ""), podYAML("u2-n1", "low", "n1", "1", "", ""))
		rep, c := runServerBudgets(t, mode, docs, map[string]int32{"pdb-n1": 0})
		var dry bool
		for _, e := range rep.Timeline {
			dry = dry || (e.Op == memapi.OpEvictDryRun && e.Pod == "default/db-n1" && e.Err != "")
		}
		if !dry {
			t.Errorf("%s: the refusal was not learned by a dry run", mode)
		}
		if !blockedEvent(rep, "db-n1", "The dry-run eviction for preemptor default/mid on node n1 was refused by PodDisruptionBudget pdb-n1: "+
			"the pod stays, and preemption tries the next candidate node") {
			t.Errorf("%s: no EvictBlocked event on db-n1", mode)
		}
		untouched(t, mode, rep, c, "db-n1", "u1-n1", "u2-n1")
		n2Won(t, mode, rep)
	}
}

// With two guarded victims whose budgets the server now holds apart, the
// dry runs check both before either is evicted: a refusal of either
// leaves the node whole, whichever order the victims come in.
func TestKEP3280SecondGuardedVictimRefusedLeavesTheFirst(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		docs := fallbackNodes(
			podYAML("db-a", "guarded", "n1", "1", "app: a", ""), pdbYAML("pdb-a", "a", 1),
			podYAML("db-b", "guarded", "n1", "1", "app: b", ""), pdbYAML("pdb-b", "b", 1),
			podYAML("u1-n1", "low", "n1", "1", "", ""))
		for _, refused := range []string{"pdb-a", "pdb-b"} {
			rep, c := runServerBudgets(t, mode, docs, map[string]int32{refused: 0})
			untouched(t, mode+" "+refused, rep, c, "db-a", "db-b", "u1-n1")
			n2Won(t, mode+" "+refused, rep)
		}
	}
}

// The remaining window: two guarded victims under one budget that the
// server lowered to allow only one of them. Each dry run passes on its
// own (a dry run spends nothing), so the first real eviction succeeds and
// the second is refused: the node is abandoned with that one guarded
// victim gone (its eviction was within its budget), but nothing else on
// it is touched.
func TestKEP3280SharedBudgetWindowCostsOnlyTheGuardedVictimsBeforeTheRefusal(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		docs := fallbackNodes(
			podYAML("db-a", "guarded", "n1", "1", "app: db", ""), podYAML("db-b", "guarded", "n1", "1", "app: db", ""),
			pdbYAML("pdb-db", "db", 2), podYAML("u1-n1", "low", "n1", "1", "", ""))
		rep, c := runServerBudgets(t, mode, docs, map[string]int32{"pdb-db": 1})
		gone, kept := "db-a", "db-b"
		if c.Pod("uid-default/db-a") != nil {
			gone, kept = kept, gone
		}
		if c.Pod("uid-default/"+gone) != nil {
			t.Fatalf("%s: neither guarded victim was evicted; timeline %+v", mode, rep.Timeline)
		}
		if got := victims(rep); len(got) == 0 || got[0] != "default/"+gone+"@n1/evict" {
			t.Errorf("%s: removals %v, want %s evicted first", mode, got, gone)
		}
		untouched(t, mode, rep, c, kept, "u1-n1")
		n2Won(t, mode, rep)
	}
}
