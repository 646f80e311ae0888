package vpod

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// arg is a Knative-style args value: a JSON string holding the object.
func arg(obj string) json.RawMessage {
	b, _ := json.Marshal(obj)
	return b
}

func pred(name string, args ...string) PolicyEntry {
	e := PolicyEntry{Name: name}
	if len(args) > 0 {
		e.Args = arg(args[0])
	}
	return e
}

func prio(name string, w int64, args ...string) PolicyEntry {
	e := PolicyEntry{Name: name, Weight: w}
	if len(args) > 0 {
		e.Args = arg(args[0])
	}
	return e
}

// policyCase is one Policy-strategy scenario; its expectations are
// derived by hand in the comments.
type policyCase struct {
	name     string
	cluster  func() *StaticCluster
	capacity int32
	sched    *Policy
	desched  *Policy
	vpod     VPod
	rand     func(int64) int64
	want     []Placement
	left     int32
	reserved map[string]int32
}

// backends runs a test against the fake modules and, once available,
// the knative bundle's native twins; see twins_test.go.
var policyBackends = map[string]func(t *testing.T, sched, desched *Policy) *Policies{
	"fake": func(t *testing.T, sched, desched *Policy) *Policies {
		p, err := fakePolicies(sched, desched, newFakeModule("knative"))
		if err != nil {
			t.Fatal(err)
		}
		return p
	},
}

func runPolicyCases(t *testing.T, cases []policyCase) {
	for backend, mk := range policyBackends {
		for _, tc := range cases {
			t.Run(backend+"/"+tc.name, func(t *testing.T) {
				c := tc.cluster()
				p := mk(t, tc.sched, tc.desched)
				defer p.Close(bg)
				r := tc.rand
				if r == nil {
					r = func(int64) int64 { t.Error("unexpected tie"); return 0 }
				}
				capacity := tc.capacity
				if capacity == 0 {
					capacity = 10
				}
				s := newSched(t, Settings{Capacity: capacity, Strategy: StrategyPolicy, SchedPolicy: tc.sched, DeschedPolicy: tc.desched}, c, p, Options{Rand: r})
				got, err := s.Schedule(bg, tc.vpod)
				var rq *RequeueError
				switch {
				case tc.left == 0 && err != nil:
					t.Fatalf("unexpected error %v", err)
				case tc.left > 0 && (!errors.As(err, &rq) || rq.Left != tc.left):
					t.Fatalf("error %v, want a requeue with %d left", err, tc.left)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("placements %v, want %v", got, tc.want)
				}
				if r := s.Reserved()[tc.vpod.Key]; !reflect.DeepEqual(r, tc.reserved) {
					t.Errorf("reserved %v, want %v", r, tc.reserved)
				}
			})
		}
	}
}

var lowestOrdinal = &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}

func TestPolicyScheduling(t *testing.T) {
	cases := []policyCase{{
		// Lowest ordinal with room: 2, 2, then 1 on pod 2.
		name: "scale up from zero", capacity: 2, cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 5)) },
		sched: lowestOrdinal, vpod: vp("v", 5),
		want: []Placement{pl(0, 2), pl(1, 2), pl(2, 1)}, reserved: map[string]int32{pn(0): 2, pn(1): 2, pn(2): 1},
	}, {
		// Full rebalance: pod 2's 3 are reserved at 0 and all 4 are
		// placed again from scratch, on pod 0.
		name: "scale up with existing placements rebalances", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 3, pl(2, 3))) },
		sched: lowestOrdinal, vpod: vp("v", 4, pl(2, 3)),
		want: []Placement{pl(0, 4)}, reserved: map[string]int32{pn(0): 4, pn(2): 0},
	}, {
		// No descheduler: a scale down is a rebalance too. Pod 0 gets
		// both; pod 1 stays reserved at 0.
		name: "scale down without a descheduler", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 4, pl(0, 2), pl(1, 2))) },
		sched: lowestOrdinal, vpod: vp("v", 2, pl(0, 2), pl(1, 2)),
		want: []Placement{pl(0, 2)}, reserved: map[string]int32{pn(0): 2, pn(1): 0},
	}, {
		// 3 zones, pod i in zone i. AvailabilityZonePriority w10 +
		// LowestOrdinalPriority w2 (penalties: zone skew sums, ordinal):
		//  1: every zone −20 → pod 0 (−20).
		//  2: zone 0 −40, zones 1,2 −10 → pod 1 (−12) over pod 2 (−14).
		//  3: zone 2 0 → pod 2 (−4).
		//  4: all −20 → pod 0 (−20).
		name: "zone spread", cluster: func() *StaticCluster { return zonedCluster(6, 3, 3, vp("v", 4)) },
		sched: &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{
			prio("AvailabilityZonePriority", 10, `{"MaxSkew": 2}`), prio("LowestOrdinalPriority", 2)}},
		vpod: vp("v", 4),
		want: []Placement{pl(0, 2), pl(1, 1), pl(2, 1)}, reserved: map[string]int32{pn(0): 2, pn(1): 1, pn(2): 1},
	}, {
		// 4 nodes in 2 zones (node i in zone i mod 2), pod i on node i.
		// Node spread + lowest ordinal puts one on each node.
		name: "node spread", cluster: func() *StaticCluster { return zonedCluster(4, 4, 2, vp("v", 4)) },
		sched: &Policy{Priorities: []PolicyEntry{prio("AvailabilityNodePriority", 1, `{"MaxSkew": 1}`), prio("LowestOrdinalPriority", 1)}},
		vpod:  vp("v", 4),
		want:  []Placement{pl(0, 1), pl(1, 1), pl(2, 1), pl(3, 1)}, reserved: map[string]int32{pn(0): 1, pn(1): 1, pn(2): 1, pn(3): 1},
	}, {
		// The same cluster with zone spread: zone 0 (pods 0,2) and zone
		// 1 (pods 1,3) alternate, lowest ordinal within a zone:
		// pod 0 (−1), pod 1 (0−1), pod 0 (−1), pod 1.
		name: "zone spread over nodes", cluster: func() *StaticCluster { return zonedCluster(4, 4, 2, vp("v", 4)) },
		sched: &Policy{Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 1, `{"MaxSkew": 1}`), prio("LowestOrdinalPriority", 1)}},
		vpod:  vp("v", 4),
		want:  []Placement{pl(0, 2), pl(1, 2)}, reserved: map[string]int32{pn(0): 2, pn(1): 2},
	}, {
		// NoMaxResourceCount{2} caps v at two pods. Node spread w1 +
		// lowest ordinal w1 over 4 pods on 4 nodes:
		//  1: all −3 → pod 0.  2: pod 0 −6, others −2 → pod 1 (−3).
		//  3: pods 2,3 refused; pods 0,1 −5 → pod 0.  4: pod 0 −8, pod
		//  1 −4 → pod 1.  5: pod 0 −7, pod 1 −8 → pod 0.  6: pod 0 −10,
		//  pod 1 −7 → pod 1.
		name: "NumPartitions", cluster: func() *StaticCluster { return zonedCluster(4, 4, 4, vp("v", 6)) },
		sched: &Policy{Predicates: []PolicyEntry{pred("PodFitsResources"), pred("NoMaxResourceCount", `{"NumPartitions": 2}`)},
			Priorities: []PolicyEntry{prio("AvailabilityNodePriority", 1, `{"MaxSkew": 1}`), prio("LowestOrdinalPriority", 1)}},
		vpod: vp("v", 6),
		want: []Placement{pl(0, 3), pl(1, 3)}, reserved: map[string]int32{pn(0): 3, pn(1): 3},
	}, {
		// Even pod spread with MaxSkew 1 and no priority: every feasible
		// pod scores 1, ties go to the first pod in ordinal order
		// (firstRand). Each pod may only get one ahead of the others:
		// 0, 1, 2, then 0 again.
		name: "even pod spread, ties", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 4)) },
		sched: &Policy{Predicates: []PolicyEntry{pred("EvenPodSpread", `{"MaxSkew": 1}`)}},
		vpod:  vp("v", 4), rand: firstRand,
		want: []Placement{pl(0, 2), pl(1, 1), pl(2, 1)}, reserved: map[string]int32{pn(0): 2, pn(1): 1, pn(2): 1},
	}, {
		// The same, ties to the last feasible pod (lastRand): 2, 1, 0, 2.
		name: "even pod spread, other ties", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 4)) },
		sched: &Policy{Predicates: []PolicyEntry{pred("EvenPodSpread", `{"MaxSkew": 1}`)}},
		vpod:  vp("v", 4), rand: lastRand,
		want: []Placement{pl(0, 1), pl(1, 1), pl(2, 2)}, reserved: map[string]int32{pn(0): 1, pn(1): 1, pn(2): 2},
	}, {
		// Pod 0 holds v 6 and w 7 (capacity 10): v drops to 3 there, is
		// rebalanced from 0: pod 0 has 3 free, pod 1 takes the rest.
		name: "overcommit", cluster: func() *StaticCluster { return zonedCluster(2, 2, 1, vp("v", 6, pl(0, 6)), vp("w", 7, pl(0, 7))) },
		sched: lowestOrdinal, vpod: vp("v", 6, pl(0, 6)),
		want: []Placement{pl(0, 3), pl(1, 3)}, reserved: map[string]int32{pn(0): 3, pn(1): 3},
	}, {
		// Capacity 2, two pods, 5 wanted with 1 committed on pod 0: the
		// rebalance places 4 and finds no room for the 5th; the old
		// placements come back (and are reserved over the new ones;
		// pod 1's 2 stay reserved, as in v1.16.0).
		name: "insufficient capacity reverts", capacity: 2, cluster: func() *StaticCluster { return zonedCluster(2, 2, 1, vp("v", 5, pl(0, 1))) },
		sched: lowestOrdinal, vpod: vp("v", 5, pl(0, 1)),
		want: []Placement{pl(0, 1)}, left: 1, reserved: map[string]int32{pn(0): 1, pn(1): 2},
	}, {
		// No placements before: 4 fit, 1 is left; the revert returns
		// none and clears the vpod's reservations.
		name: "insufficient capacity from zero", capacity: 2, cluster: func() *StaticCluster { return zonedCluster(2, 2, 1, vp("v", 5)) },
		sched: lowestOrdinal, vpod: vp("v", 5),
		want: nil, left: 1, reserved: map[string]int32{},
	}, {
		// Lenient (Knative's way): an unknown plugin is skipped; the
		// rest still applies.
		name: "unknown plugin skipped", capacity: 2, cluster: func() *StaticCluster { return zonedCluster(2, 2, 1, vp("v", 3)) },
		sched: &Policy{Predicates: []PolicyEntry{pred("NoSuchPredicate"), pred("PodFitsResources")},
			Priorities: []PolicyEntry{prio("NoSuchPriority", 5), prio("LowestOrdinalPriority", 1)}, Lenient: true},
		vpod: vp("v", 3),
		want: []Placement{pl(0, 2), pl(1, 1)}, reserved: map[string]int32{pn(0): 2, pn(1): 1},
	}, {
		// Lenient: EvenPodSpread without args refuses every pod
		// ("invalid arguments"): nothing is placed.
		name: "predicate with invalid args", cluster: func() *StaticCluster { return zonedCluster(2, 2, 1, vp("v", 1)) },
		sched: &Policy{Predicates: []PolicyEntry{pred("EvenPodSpread")}, Lenient: true},
		vpod:  vp("v", 1),
		want:  nil, left: 1, reserved: map[string]int32{},
	}, {
		// Lenient: a priority with bad args fails scoring: nothing is
		// placed.
		name: "priority with invalid args", cluster: func() *StaticCluster { return zonedCluster(2, 2, 1, vp("v", 1)) },
		sched: &Policy{Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 1, `{"MaxSkew": 1, "Extra": 1}`)}, Lenient: true},
		vpod:  vp("v", 1),
		want:  nil, left: 1, reserved: map[string]int32{},
	}}
	runPolicyCases(t, cases)
}

// unschedulableCluster has 8 pods, each unschedulable a different way
// except 6 and 7.
func unschedulableCluster(vpods ...VPod) *StaticCluster {
	nodes := []*corev1.Node{mkNode("cordoned", "z"), mkNode("noexec", "z"), mkNode("nosched", "z"), mkNode("ok", "z"), mkNode("prefer", "z")}
	nodes[0].Spec.Unschedulable = true
	nodes[1].Spec.Taints = []corev1.Taint{{Key: unreachableTaint, Effect: corev1.TaintEffectNoExecute}}
	nodes[2].Spec.Taints = []corev1.Taint{{Key: unreachableTaint, Effect: corev1.TaintEffectNoSchedule}}
	nodes[4].Spec.Taints = []corev1.Taint{{Key: unreachableTaint, Effect: corev1.TaintEffectPreferNoSchedule}}
	pods := []*corev1.Pod{
		mkPod(0, "cordoned"),
		mkPod(1, "noexec"),
		mkPod(2, "nosched"),
		mkPod(3, "ok", UnschedulableAnnotation, "TRUE"),
		// 4 is missing
		mkPod(5, ""), // not bound
		mkPod(6, "ok", UnschedulableAnnotation, "yes"), // not a bool: schedulable
		mkPod(7, "prefer"),
	}
	return NewStaticCluster(testNS, testSTS, 8, pods, nodes, vpods)
}

func TestPolicyUnschedulablePods(t *testing.T) {
	runPolicyCases(t, []policyCase{{
		// Only pods 6 and 7 may take vreplicas; v's placements on the
		// others are dropped.
		name: "cordon, taints, annotation, missing, unbound", capacity: 2,
		cluster: func() *StaticCluster { return unschedulableCluster(vp("v", 4, pl(0, 1), pl(3, 1), pl(4, 1))) },
		sched:   lowestOrdinal, vpod: vp("v", 4, pl(0, 1), pl(3, 1), pl(4, 1)),
		want: []Placement{pl(6, 2), pl(7, 2)}, reserved: map[string]int32{pn(6): 2, pn(7): 2},
	}})
	// MAXFILLUP drops the same placements (its second pass is the one
	// that ignores schedulability).
	c := unschedulableCluster(vp("v", 3, pl(1, 1), pl(6, 1), pl(7, 1)))
	s := newSched(t, Settings{Capacity: 2, Strategy: StrategyMaxFillUp}, c, nil, Options{})
	got, err := s.Schedule(bg, vp("v", 2, pl(1, 1), pl(6, 1), pl(7, 1)))
	if err != nil || !reflect.DeepEqual(got, []Placement{pl(6, 1), pl(7, 1)}) {
		t.Errorf("MAXFILLUP: %v %v", got, err)
	}
}

var highestOrdinalOut = &Policy{Priorities: []PolicyEntry{prio("RemoveWithHighestOrdinalPriority", 1)}}

func TestPolicyDescheduling(t *testing.T) {
	runPolicyCases(t, []policyCase{{
		// Zones: pods 0,2 in zone 0, pods 1,3 in zone 1. Zone 0 holds 3,
		// zone 1 holds 1: removing from zone 0 scores −1, from zone 1
		// −3; of pods 0 and 2, the higher ordinal (w1) wins: pod 2.
		name: "zone-aware removal", cluster: func() *StaticCluster { return zonedCluster(4, 4, 2, vp("v", 4, pl(0, 2), pl(1, 1), pl(2, 1))) },
		sched: lowestOrdinal,
		desched: &Policy{Priorities: []PolicyEntry{prio("RemoveWithAvailabilityZonePriority", 1, `{"MaxSkew": 1}`),
			prio("RemoveWithHighestOrdinalPriority", 1)}},
		vpod: vp("v", 3, pl(0, 2), pl(1, 1), pl(2, 1)),
		want: []Placement{pl(0, 2), pl(1, 1)}, reserved: map[string]int32{pn(0): 2, pn(1): 1, pn(2): 0},
	}, {
		// Deliberate fix 2. Remove all 3, highest ordinal first: pod 2,
		// pod 1, then pod 0 alone. v1.16.0 keeps offering pod 2 (still
		// committed, still reserved at 1) and removes only one.
		name: "every removal happens", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 3, pl(0, 1), pl(1, 1), pl(2, 1))) },
		sched: lowestOrdinal, desched: highestOrdinalOut,
		vpod: vp("v", 0, pl(0, 1), pl(1, 1), pl(2, 1)),
		want: []Placement{}, reserved: map[string]int32{},
	}, {
		// Deliberate fix 2, partway: remove 2 of 4 (pods 3 and 2, one
		// each, the last vreplica of each): pods 2 and 3 are reserved
		// at 0.
		name: "removed pods reserved at 0", cluster: func() *StaticCluster {
			return zonedCluster(4, 4, 4, vp("v", 4, pl(0, 1), pl(1, 1), pl(2, 1), pl(3, 1)))
		},
		sched: lowestOrdinal, desched: highestOrdinalOut,
		vpod: vp("v", 2, pl(0, 1), pl(1, 1), pl(2, 1), pl(3, 1)),
		want: []Placement{pl(0, 1), pl(1, 1)}, reserved: map[string]int32{pn(0): 1, pn(1): 1, pn(2): 0, pn(3): 0},
	}, {
		// Deliberate fix 1 (signed scores). Pod 0 has 1, pod 5 has 2;
		// remove 1 with RemoveWithEvenPodSpreadPriority w10 +
		// RemoveWithHighestOrdinalPriority w2. Signed: pod 0 −20, pod 5
		// 0+10 → pod 5, evening the spread out. With v1.16.0's uint64
		// sums pod 5 totals 0 (wrapped) and pod 0 2^64−30: pod 0 would
		// lose its only vreplica.
		name: "signed scores", cluster: func() *StaticCluster { return zonedCluster(6, 3, 3, vp("v", 3, pl(0, 1), pl(5, 2))) },
		sched: lowestOrdinal,
		desched: &Policy{Priorities: []PolicyEntry{prio("RemoveWithEvenPodSpreadPriority", 10, `{"MaxSkew": 1}`),
			prio("RemoveWithHighestOrdinalPriority", 2)}},
		vpod: vp("v", 2, pl(0, 1), pl(5, 2)),
		want: []Placement{pl(0, 1), pl(5, 1)}, reserved: map[string]int32{pn(0): 1, pn(5): 1},
	}, {
		// A single candidate is not scored: even a failing priority does
		// not stop the removal.
		name: "single candidate", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 3, pl(1, 3))) },
		sched:   lowestOrdinal,
		desched: &Policy{Priorities: []PolicyEntry{prio("RemoveWithEvenPodSpreadPriority", 1)}, Lenient: true}, // no args: fails
		vpod:    vp("v", 1, pl(1, 3)),
		want:    []Placement{pl(1, 1)}, reserved: map[string]int32{pn(1): 1},
	}, {
		// Two candidates and a failing priority: scoring aborts and
		// nothing more is removed (no error: v1.16.0 reports success).
		name: "scoring error stops removals", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 2, pl(0, 1), pl(1, 1))) },
		sched:   lowestOrdinal,
		desched: &Policy{Priorities: []PolicyEntry{prio("RemoveWithEvenPodSpreadPriority", 1)}, Lenient: true}, // no args: fails
		vpod:    vp("v", 0, pl(0, 1), pl(1, 1)),
		want:    []Placement{pl(0, 1), pl(1, 1)}, reserved: map[string]int32{pn(0): 1, pn(1): 1},
	}})
}

func TestPolicyQuirks(t *testing.T) {
	runPolicyCases(t, []policyCase{{
		// Knative keeps one score list per plugin name: of the two
		// LowestOrdinalPriority entries only the last (weight −1, so the
		// highest ordinal first) counts.
		name: "same priority twice: the last counts", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 1)) },
		sched: &Policy{Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 5), prio("LowestOrdinalPriority", -1)}},
		vpod:  vp("v", 1),
		want:  []Placement{pl(2, 1)}, reserved: map[string]int32{pn(2): 1},
	}, {
		// A reservation of 0 (a rebalance's) is present in the vpod's
		// spread: NoMaxResourceCount{1} then refuses every other pod, so
		// v stays on pod 1 even though LowestOrdinal prefers pod 0.
		name: "zero reservations count as present", cluster: func() *StaticCluster { return zonedCluster(3, 3, 3, vp("v", 1, pl(1, 1))) },
		sched: &Policy{Predicates: []PolicyEntry{pred("NoMaxResourceCount", `{"NumPartitions": 1}`)},
			Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}},
		vpod: vp("v", 2, pl(1, 1)),
		want: []Placement{pl(1, 2)}, reserved: map[string]int32{pn(1): 2},
	}})
}

// TestRevertReturnsACopy: when a Policy rebalance leaves vreplicas over,
// Schedule reverts to the vpod's committed placements. Knative v1.16.0
// returns the caller's own slice there and then sorts it by ordinal in
// place; the engine returns a sorted copy and leaves the caller's
// placements as they were.
func TestRevertReturnsACopy(t *testing.T) {
	committed := []Placement{pl(1, 1), pl(0, 1)} // not in ordinal order
	c := zonedCluster(2, 2, 1, vp("v", 9, committed...))
	p, err := fakePolicies(&Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}, nil, newFakeModule("knative"))
	if err != nil {
		t.Fatal(err)
	}
	s := newSched(t, Settings{Capacity: 2, Strategy: StrategyPolicy, SchedPolicy: p.Sched()}, c, p, Options{Rand: lastRand})
	v := vp("v", 9, committed...)
	got, err := s.Schedule(bg, v)
	var rq *RequeueError
	if !asRequeue(err, &rq) {
		t.Fatalf("error %v, want a requeue (9 vreplicas, room for 4)", err)
	}
	if want := []Placement{pl(0, 1), pl(1, 1)}; !reflect.DeepEqual(got, want) {
		t.Fatalf("placements %v, want the committed ones sorted %v", got, want)
	}
	if want := []Placement{pl(1, 1), pl(0, 1)}; !reflect.DeepEqual(v.Placements, want) || !reflect.DeepEqual(committed, want) {
		t.Fatalf("the caller's placements became %v (%v), want them untouched %v", v.Placements, committed, want)
	}
	got[0].VReplicas = 99
	if committed[1].VReplicas != 1 {
		t.Fatal("the returned placements share the caller's array")
	}
}
