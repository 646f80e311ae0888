package vpod

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
)

// TestBackendsAgree runs the same random Schedule sequences on the fake
// plugins and on the knative bundle's native twins (same clusters, same
// tie-breaking draws): two independent implementations of Knative's
// plugins must place identically.
func TestBackendsAgree(t *testing.T) {
	pols := []struct{ sched, desched *Policy }{
		{benchPolicy, &Policy{Priorities: []PolicyEntry{prio("RemoveWithEvenPodSpreadPriority", 3, `{"MaxSkew": 1}`),
			prio("RemoveWithAvailabilityZonePriority", 2, `{"MaxSkew": 1}`), prio("RemoveWithHighestOrdinalPriority", 1)}}},
		{&Policy{Predicates: []PolicyEntry{pred("NoMaxResourceCount", `{"NumPartitions": 3}`), pred("PodFitsResources")},
			Priorities: []PolicyEntry{prio("AvailabilityNodePriority", 1, `{"MaxSkew": 1}`), prio("EvenPodSpread", 2, `{"MaxSkew": 1}`)}},
			&Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{prio("RemoveWithAvailabilityNodePriority", 1, `{"MaxSkew": 1}`)}}},
	}
	reg := knativeRegistry(t, "native")
	for iter := 0; iter < 60; iter++ {
		seed := int64(iter)
		pp := pols[iter%len(pols)]
		var outs [2][]string
		for b := 0; b < 2; b++ {
			r := rand.New(rand.NewSource(seed))
			c, res, capacity := randomScenario(r)
			if iter%2 == 1 {
				// Roomier: 6–12 pods, capacity 10–30, 5 empty vpods.
				var vpods []VPod
				for i := 0; i < 5; i++ {
					vpods = append(vpods, vp(fmt.Sprintf("v%d", i), 0))
				}
				c = zonedCluster(6+r.Intn(7), 2+r.Intn(4), 1+r.Intn(3), vpods...)
				res, capacity = map[Key]map[string]int32{}, int32(10+r.Intn(21))
			}
			var p *Policies
			var err error
			if b == 0 {
				p, err = fakePolicies(pp.sched, pp.desched, newFakeModule("knative"))
			} else {
				p, err = NewPolicies(bg, reg, pp.sched, pp.desched, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			s := newSched(t, Settings{Capacity: capacity, Strategy: StrategyPolicy, SchedPolicy: pp.sched, DeschedPolicy: pp.desched}, c, p,
				Options{Rand: rand.New(rand.NewSource(seed)).Int63n})
			s.reserved = res
			for call := 0; call < 8; call++ {
				vpods, _ := c.VPods()
				if len(vpods) == 0 {
					break
				}
				v := vpods[r.Intn(len(vpods))]
				v.VReplicas = int32(r.Intn(30))
				got, err := s.Schedule(bg, v)
				outs[b] = append(outs[b], fmt.Sprintf("%s %d: %v %v", v.Key, v.VReplicas, got, err))
				if r.Intn(3) > 0 {
					c.SetVPod(VPod{Key: v.Key, VReplicas: v.VReplicas, Placements: got})
				}
			}
			p.Close(bg)
		}
		if !reflect.DeepEqual(outs[0], outs[1]) {
			t.Fatalf("seed %d: fake and native differ:\nfake   %q\nnative %q", seed, outs[0], outs[1])
		}
	}
}
