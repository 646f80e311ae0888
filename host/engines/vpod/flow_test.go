package vpod

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// TestStepStatesMatchOracle runs random Schedule sequences in the Policy
// strategy and checks the state of every single placement or removal
// step against Knative's from-scratch build over the same reservations,
// as v1.16.0 rebuilds it before each step: free capacity, the stepped
// vpod's spread and the reservations the build deletes.
func TestStepStatesMatchOracle(t *testing.T) {
	policies := []struct{ sched, desched *Policy }{
		{lowestOrdinal, nil},
		{&Policy{Predicates: []PolicyEntry{pred("PodFitsResources"), pred("EvenPodSpread", `{"MaxSkew": 2}`)},
			Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 10, `{"MaxSkew": 1}`), prio("LowestOrdinalPriority", 2)}},
			&Policy{Priorities: []PolicyEntry{prio("RemoveWithEvenPodSpreadPriority", 3, `{"MaxSkew": 1}`), prio("RemoveWithHighestOrdinalPriority", 1)}}},
		{&Policy{Predicates: []PolicyEntry{pred("NoMaxResourceCount", `{"NumPartitions": 3}`)},
			Priorities: []PolicyEntry{prio("AvailabilityNodePriority", 1, `{"MaxSkew": 1}`)}},
			&Policy{Priorities: []PolicyEntry{prio("RemoveWithAvailabilityNodePriority", 1, `{"MaxSkew": 1}`)}}},
	}
	r := rand.New(rand.NewSource(7))
	steps := 0
	defer func() { stepHook = nil }()
	for iter := 0; iter < 300; iter++ {
		c, res, capacity := randomScenario(r)
		pp := policies[r.Intn(len(policies))]
		p, err := fakePolicies(pp.sched, pp.desched, newFakeModule("knative"))
		if err != nil {
			t.Fatal(err)
		}
		s := newSched(t, Settings{Capacity: capacity, Strategy: StrategyPolicy, SchedPolicy: pp.sched, DeschedPolicy: pp.desched}, c, p,
			Options{Rand: func(n int64) int64 { return r.Int63n(n) }})
		s.reserved = res
		what := fmt.Sprintf("scenario %d", iter)
		stepHook = func(s *Scheduler, ss *stepState, before map[Key]map[string]int32) {
			steps++
			o := oracleBuild(t, c, capacity, before)
			compareFree(t, what, o, ss.st)
			compareSpread(t, what, o, ss)
			if !reflect.DeepEqual(before, s.reserved) {
				t.Fatalf("%s: reservations after the build %v, oracle %v", what, s.reserved, before)
			}
		}
		for call := 0; call < 6; call++ {
			vpods, _ := c.VPods()
			if len(vpods) == 0 {
				break
			}
			v := vpods[r.Intn(len(vpods))]
			v.VReplicas = int32(r.Intn(12))
			got, err := s.Schedule(bg, v)
			if _, rq := IsRequeue(err); err != nil && !rq {
				t.Fatalf("%s: %v", what, err)
			}
			if r.Intn(2) == 0 {
				c.SetVPod(VPod{Key: v.Key, VReplicas: v.VReplicas, Placements: got})
			}
		}
	}
	if steps < 1000 {
		t.Fatalf("only %d steps checked", steps)
	}
}
