package vpod

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// A Schedule call's record is what the call decided: the pods its steps
// chose add up to the placements returned, each chosen pod passed every
// predicate and has the best total, each total is the weighted sum of
// the recorded raw scores, and a full pod shows the predicate that
// refused it; on the fake modules, the native twins and the Wasm build.
func TestVPodRecordEqualsPlacements(t *testing.T) {
	policy := &Policy{
		Predicates: []PolicyEntry{pred("PodFitsResources")},
		Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 10, `{"MaxSkew": 2}`), prio("LowestOrdinalPriority", 2)},
	}
	for backend, mk := range policyBackends {
		t.Run(backend, func(t *testing.T) {
			p := mk(t, policy, nil)
			defer p.Close(bg)
			ring := decision.NewRing(8)
			more := vp("more", 5)
			c := zonedCluster(6, 3, 3, vp("src", 4), more)
			s := newSched(t, Settings{Capacity: 1, Strategy: StrategyPolicy, SchedPolicy: policy}, c, p,
				Options{Rand: lastRand, Decisions: ring})
			v := vp("src", 4)
			got, err := s.Schedule(bg, v)
			if err != nil {
				t.Fatal(err)
			}
			c.Commit(v.Key, got)
			recs := ring.Lookup(decision.VPodKey("ns/src"))
			if len(recs) != 1 || recs[0].VPod == nil {
				t.Fatalf("records %v", recs)
			}
			rec := recs[0].VPod
			if len(rec.Steps) != 4 || rec.Left != 0 || rec.Error != "" || len(rec.Priorities) != 2 || rec.Predicates[0] != "PodFitsResources" {
				t.Fatalf("record %+v", rec)
			}
			chosen := map[string]int32{}
			for _, pod := range rec.ChosenPods() {
				chosen[pod]++
			}
			placed := map[string]int32{}
			for _, pl := range got {
				placed[pl.PodName] = pl.VReplicas
			}
			if len(chosen) != len(placed) {
				t.Fatalf("steps chose %v, Schedule placed %v", chosen, placed)
			}
			for pod, n := range placed {
				if chosen[pod] != n {
					t.Fatalf("steps chose %v, Schedule placed %v", chosen, placed)
				}
			}
			if len(rec.Placements) != len(got) {
				t.Errorf("record placements %v, returned %v", rec.Placements, got)
			}
			for i, st := range rec.Steps {
				if st.Op != decision.StepPlace || len(st.Candidates) != 6 || st.Feasible != 6-i {
					t.Fatalf("step %d: %+v", i, st)
				}
				c0 := st.Candidates[0]
				if c0.Pod != st.Chosen || c0.Rejected != "" {
					t.Fatalf("step %d: chosen %s, first candidate %+v", i, st.Chosen, c0)
				}
				rejected := 0
				for _, c := range st.Candidates {
					if c.Rejected != "" {
						rejected++
						if c.Rejected != "PodFitsResources" || c.Total != 0 {
							t.Errorf("step %d: %+v", i, c)
						}
						continue
					}
					if c.Total > c0.Total {
						t.Errorf("step %d: %s total %d above the chosen %s's %d", i, c.Pod, c.Total, c0.Pod, c0.Total)
					}
					var sum int64
					for k, sc := range c.Scores {
						if rec.Priorities[k].Summed {
							sum += sc * rec.Priorities[k].Weight
						}
					}
					if sum != c.Total {
						t.Errorf("step %d: %s total %d, weighted scores %v sum to %d", i, c.Pod, c.Total, c.Scores, sum)
					}
				}
				if rejected != i {
					t.Errorf("step %d: %d refused, want %d (capacity 1: each earlier step fills a pod)", i, rejected, i)
				}
			}
			b, err := json.Marshal(recs[0])
			if err != nil || !strings.Contains(string(b), `"chosen":"`+rec.Steps[0].Chosen+`"`) {
				t.Fatalf("json: %v %s", err, b)
			}

			// The autoscaler's pass is recorded, findable by a vpod it
			// counts pending.
			if _, err := s.Schedule(bg, more); err == nil {
				t.Fatalf("placed 5 vreplicas on 2 free slots")
			}
			if more := ring.Lookup(decision.VPodKey("ns/more")); len(more) != 1 || more[0].VPod.Left != 3 ||
				!strings.Contains(more[0].VPod.Steps[len(more[0].VPod.Steps)-1].Why, "no feasible pod") {
				t.Fatalf("records of more: %+v", more)
			}
			if _, err := s.Autoscale(bg, false); err != nil {
				t.Fatal(err)
			}
			as := ring.Lookup(decision.AutoscaleKey("test"))
			if len(as) != 1 || as[0].Autoscale == nil || as[0].Autoscale.Why == "" {
				t.Fatalf("autoscale records %+v", as)
			}
			if got := ring.Lookup(decision.VPodKey("ns/more")); len(got) != 2 || got[0].Autoscale == nil {
				t.Errorf("a pending vpod finds the pass that counted it: %+v", got)
			}
		})
	}
}

// A call with more steps than the bound keeps the first ones and counts
// the rest; one nobody asks for makes no record.
func TestVPodRecordBounds(t *testing.T) {
	policy := &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 2)}}
	p := policyBackends["fake"](t, policy, nil)
	defer p.Close(bg)
	ring := decision.NewRing(8)
	ring.Match = func(kind, key string) bool { return key == decision.VPodKey("ns/big") }
	s := newSched(t, Settings{Capacity: 100, Strategy: StrategyPolicy, SchedPolicy: policy}, zonedCluster(50, 3, 3), p,
		Options{Rand: lastRand, Decisions: ring})
	if _, err := s.Schedule(bg, vp("small", 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Schedule(bg, vp("big", 60)); err != nil {
		t.Fatal(err)
	}
	all := ring.All()
	if len(all) != 1 {
		t.Fatalf("%d records, want big's only", len(all))
	}
	rec := all[0].VPod
	lim := decision.DefaultLimits.MaxScored
	if len(rec.Steps) != lim || rec.StepsDropped != 60-lim {
		t.Fatalf("%d steps kept, %d dropped", len(rec.Steps), rec.StepsDropped)
	}
	for _, st := range rec.Steps {
		if len(st.Candidates) != lim || st.CandidatesDropped != 50-lim {
			t.Fatalf("step %d: %d candidates kept, %d dropped", st.Step, len(st.Candidates), st.CandidatesDropped)
		}
	}
	if len(rec.Reserved) != 1 || rec.Reserved[0].VReplicas != 3 {
		t.Errorf("reserved %+v: small's three vreplicas, not yet committed", rec.Reserved)
	}
}
