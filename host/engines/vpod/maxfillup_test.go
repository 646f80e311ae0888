package vpod

import (
	"errors"
	"reflect"
	"testing"
)

// TestMaxFillUp drives v1.16.0 MAXFILLUP through its cases; every
// expectation is derived by hand from the rules (capacity 10 unless
// said).
func TestMaxFillUp(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		missing  []int // pods absent from the cluster
		others   []VPod
		vpod     VPod
		want     []Placement
		left     int32 // RequeueError.Left, 0 for none
		reserved map[string]int32
	}{{
		// Pods fill by ordinal: 10 on pod 0, the rest on pod 1.
		name: "scale up from zero", replicas: 3,
		vpod: vp("v", 15),
		want: []Placement{pl(0, 10), pl(1, 5)}, reserved: map[string]int32{pn(0): 10, pn(1): 5},
	}, {
		// w leaves pod 0 full and 2 free on pod 1: v first fills its own
		// pod 1 (3→5), then pod 2 takes the 3 left.
		name: "existing placements first", replicas: 3,
		others: []VPod{vp("w", 15, pl(1, 5), pl(0, 10))},
		vpod:   vp("v", 8, pl(1, 3)),
		want:   []Placement{pl(1, 5), pl(2, 3)}, reserved: map[string]int32{pn(1): 5, pn(2): 3},
	}, {
		// Remove 4 from the last placement backwards: pod 2 goes (2),
		// pod 1 keeps 4−2.
		name: "scale down", replicas: 3,
		vpod: vp("v", 5, pl(0, 3), pl(1, 4), pl(2, 2)),
		want: []Placement{pl(0, 3), pl(1, 2)}, reserved: map[string]int32{pn(0): 3, pn(1): 2},
	}, {
		// v1.16.0 edge case: the second pass does not check
		// schedulability, so missing pod 0 takes 10.
		name: "second pass skips the schedulability check", replicas: 3, missing: []int{0},
		vpod: vp("v", 12),
		want: []Placement{pl(0, 10), pl(1, 2)}, reserved: map[string]int32{pn(0): 10, pn(1): 2},
	}, {
		// 2 pods hold 20: 5 left, requeue; the partial placements are
		// returned and reserved.
		name: "insufficient capacity", replicas: 2,
		vpod: vp("v", 25),
		want: []Placement{pl(0, 10), pl(1, 10)}, left: 5, reserved: map[string]int32{pn(0): 10, pn(1): 10},
	}, {
		// Pod 0 is overcommitted by 3 (v 6 + w 7): v's placement drops
		// to 3 and pod 0 has no room; pod 1 takes the 3.
		name: "overcommit", replicas: 2,
		others: []VPod{vp("w", 7, pl(0, 7))},
		vpod:   vp("v", 6, pl(0, 6)),
		want:   []Placement{pl(0, 3), pl(1, 3)}, reserved: map[string]int32{pn(0): 3, pn(1): 3},
	}, {
		// A placement on a pod that is gone is dropped, then refilled.
		name: "placement on a missing pod", replicas: 3, missing: []int{1},
		vpod: vp("v", 4, pl(1, 4)),
		want: []Placement{pl(0, 4)}, reserved: map[string]int32{pn(0): 4},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vpods := append([]VPod{tc.vpod}, tc.others...)
			c := zonedCluster(tc.replicas, 3, 3, vpods...)
			for _, o := range tc.missing {
				c.DeletePod(pn(o))
			}
			s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp}, c, nil, Options{})
			got, err := s.Schedule(bg, tc.vpod)
			var rq *RequeueError
			switch {
			case tc.left == 0 && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.left > 0 && (!errors.As(err, &rq) || rq.Left != tc.left || rq.After != RequeueAfter):
				t.Fatalf("error %v, want a requeue with %d left", err, tc.left)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("placements %v, want %v", got, tc.want)
			}
			if r := s.Reserved()[tc.vpod.Key]; !reflect.DeepEqual(r, tc.reserved) {
				t.Errorf("reserved %v, want %v", r, tc.reserved)
			}
			if triggered := len(s.trigger) == 1; triggered != (tc.left > 0) {
				t.Errorf("autoscaler triggered %v, want %v", triggered, tc.left > 0)
			}
		})
	}
}

// TestMaxFillUpReservationsShared: an uncommitted reservation of one vpod
// takes capacity from the next, and is cleaned up once committed.
func TestMaxFillUpReservationsShared(t *testing.T) {
	a, b := vp("a", 7), vp("b", 5)
	c := zonedCluster(2, 1, 1, a, b)
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp}, c, nil, Options{})
	pa, err := s.Schedule(bg, a)
	if err != nil || !reflect.DeepEqual(pa, []Placement{pl(0, 7)}) {
		t.Fatalf("a: %v %v", pa, err)
	}
	// a's 7 are reserved on pod 0: b gets the 3 left there, then pod 1.
	pb, err := s.Schedule(bg, b)
	if err != nil || !reflect.DeepEqual(pb, []Placement{pl(0, 3), pl(1, 2)}) {
		t.Fatalf("b: %v %v", pb, err)
	}
	c.Commit(a.Key, pa)
	c.Commit(b.Key, pb)
	// The next state build finds both committed as reserved: their
	// reservations are deleted (and the emptied maps with them).
	if _, err := s.Schedule(bg, VPod{Key: b.Key, VReplicas: 5, Placements: pb}); err != nil {
		t.Fatal(err)
	}
	got := s.Reserved()
	want := map[Key]map[string]int32{b.Key: {pn(0): 3, pn(1): 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("reserved %v, want %v", got, want)
	}
}
