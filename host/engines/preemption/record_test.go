package preemption_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// The preemption record attached to the attempt says what preemption
// did: its chosen candidate's victims are the pods removed, each with
// its outcome, on the native and the Wasm builds, sync and async.
func TestPreemptionRecordEqualsWhatWasPreempted(t *testing.T) {
	for _, backend := range []string{"native", "wasm"} {
		for _, mode := range []string{"{asyncPreemption: false}", ""} {
			t.Run(backend+" "+mode, func(t *testing.T) {
				o := objects(t, nodeYAML("n1", "2"), nodeYAML("n2", "2"),
					podYAML("low-1", "low", "n1", "1500m", "", ""),
					podYAML("low-2", "low", "n2", "1", "", ""), podYAML("low-3", "low", "n2", "900m", "", ""),
					podYAML("big", "high", "", "1500m", "", ""))
				opts := sim.Options{Config: profileConfig(t, mode), NativeBuiltin: backend == "native", CacheDir: t.TempDir(), Seed: 1,
					Explain: func(k string) bool { return k == "default/big" }}
				rep, err := sim.Run(context.Background(), o, opts)
				if err != nil {
					t.Fatal(err)
				}
				var rec *decision.Preemption
				for _, s := range rep.Explanations {
					if s.Preemption != nil {
						if rec != nil {
							t.Fatalf("two attempts preempted")
						}
						rec = s.Preemption
						if s.Outcome != decision.OutcomeNominated || s.Node != rec.Nominated {
							t.Errorf("attempt %s on %q, preemption nominated %q", s.Outcome, s.Node, rec.Nominated)
						}
					}
				}
				if rec == nil {
					t.Fatalf("no preemption record among %d attempts", len(rep.Explanations))
				}
				var removed []string
				for _, p := range rep.Preemptions {
					removed = append(removed, p.Victim)
				}
				if !reflect.DeepEqual(rec.Victims(), removed) || rec.Chosen != rep.Preemptions[0].Node || rec.Nominated != rec.Chosen {
					t.Fatalf("record chose %s with victims %v, nominated %s; preemption removed %v on %s", rec.Chosen, rec.Victims(), rec.Nominated, removed, rep.Preemptions[0].Node)
				}
				if len(rec.Candidates) != 2 || rec.Candidates[1].Node != "n2" || rec.Candidates[1].NumVictims != 2 || rec.PotentialNodes != 2 {
					t.Fatalf("candidates %+v (potential %d)", rec.Candidates, rec.PotentialNodes)
				}
				if !strings.Contains(rec.Why, "smallest sum of victim priorities") {
					t.Errorf("why %q", rec.Why)
				}
				ex := rec.Execution()
				if !ex.Done || ex.Used != "n1" || ex.Error != "" || len(ex.Victims) != 1 ||
					ex.Victims[0] != (decision.VictimOutcome{Victim: "default/low-1", Node: "n1", Outcome: decision.VictimDeleted}) {
					t.Fatalf("execution %+v", ex)
				}
				// The JSON carries the execution; a victim finds the record.
				b, err := json.Marshal(rec)
				if err != nil || !strings.Contains(string(b), `"outcome":"deleted"`) {
					t.Fatalf("json %s %v", b, err)
				}
				var back decision.Preemption
				if err := json.Unmarshal(b, &back); err != nil || back.Execution().Used != "n1" || back.Chosen != "n1" {
					t.Fatalf("round trip: %v %+v", err, back.Execution())
				}
				r := &decision.Record{Kind: decision.KindScheduling, Key: "default/big", Scheduling: &decision.Scheduling{Preemption: rec}}
				if !r.Mentions("default/low-1") || r.Mentions("default/low-2") {
					t.Errorf("Mentions: the chosen candidate's victims only")
				}
			})
		}
	}
}

// An ineligible pod and one without candidates say why in the record.
func TestPreemptionRecordWhyNone(t *testing.T) {
	o := objects(t, nodeYAML("n1", "1"), nodeYAML("n2", "1"),
		podYAML("peer", "high", "n1", "1", "", ""), podYAML("low", "low", "n2", "500m", "", ""),
		podYAML("peer2", "high", "n2", "500m", "", ""), podYAML("huge", "high", "", "1", "", ""),
		podYAML("polite", "high", "", "1", "", "preemptionPolicy: Never"))
	rep := run(t, profileConfig(t, ""), o, sim.Options{Explain: func(k string) bool { return k == "default/huge" || k == "default/polite" }})
	got := map[string]*decision.Preemption{}
	for _, s := range rep.Explanations {
		if s.Preemption != nil {
			got[s.Pod] = s.Preemption
		}
	}
	if p := got["default/polite"]; p == nil || !strings.Contains(p.Ineligible, "preemptionPolicy=Never") {
		t.Errorf("polite: %+v", p)
	}
	p := got["default/huge"]
	if p == nil || p.Chosen != "" || len(p.Candidates) != 0 || len(p.NoCandidate) != 2 || !strings.Contains(p.Message, "0/2 nodes are available") {
		t.Fatalf("huge: %+v", p)
	}
}

// A refusal (KEP-3280) that moves preemption to the next candidate is in
// the record: the abandoned candidate, the dry run's refusal, and the
// victims of the node used, which are the ones removed.
func TestPreemptionRecordOfARefusal(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		docs := fallbackNodes(
			podYAML("db-n1", "guarded", "n1", "1", "app: db-n1", ""), pdbYAML("pdb-n1", "db-n1", 1),
			podYAML("u1-n1", "low", "n1", "1", "", ""), podYAML("u2-n1", "low", "n1", "1", "", ""))
		env, err := sim.Start(context.Background(), objects(t, docs...), sim.Options{Config: profileConfig(t, mode),
			NativeBuiltin: true, CacheDir: t.TempDir(), Seed: 1, Explain: func(k string) bool { return k == "default/mid" }})
		if err != nil {
			t.Fatal(err)
		}
		c := env.Cluster()
		b := *c.PDB("default", "pdb-n1")
		b.DisruptionsAllowed = 0
		c.SetPDB(&b)
		rep, err := env.Settle(context.Background())
		env.Preemption.Wait()
		env.Close(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var rec *decision.Preemption
		for _, s := range rep.Explanations {
			if s.Preemption != nil && s.Preemption.Chosen != "" {
				rec = s.Preemption
				break
			}
		}
		if rec == nil || rec.Chosen != "n1" || len(rec.Candidates) != 2 || rec.Candidates[1].Node != "n2" {
			t.Fatalf("%s: record %+v", mode, rec)
		}
		ex := rec.Execution()
		if !ex.Done || ex.Used != "n2" || !reflect.DeepEqual(ex.Refused, []string{"n1"}) {
			t.Fatalf("%s: execution %+v", mode, ex)
		}
		var deleted, refused []string
		for _, v := range ex.Victims {
			switch v.Outcome {
			case decision.VictimDeleted:
				deleted = append(deleted, v.Victim)
			case decision.VictimDryRunNo:
				refused = append(refused, v.Victim)
			}
		}
		var removed []string
		for _, p := range rep.Preemptions {
			removed = append(removed, p.Victim)
		}
		slices.Sort(deleted)
		slices.Sort(removed)
		if !reflect.DeepEqual(refused, []string{"default/db-n1"}) || !reflect.DeepEqual(deleted, removed) ||
			!reflect.DeepEqual(deleted, slices.Sorted(slices.Values(rec.Candidates[1].Victims))) {
			t.Errorf("%s: refused %v, deleted %v; removed %v; n2's victims %v", mode, refused, deleted, removed, rec.Candidates[1].Victims)
		}
	}
}
