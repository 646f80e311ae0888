package vpod

import (
	"reflect"
	"testing"
)

// TestMaxFillUpSpread walks HEAD's MAXFILLUP through a sequence on one
// scheduler (capacity 10, 3 pods, MinReplicas 3); expectations by hand.
func TestMaxFillUpSpread(t *testing.T) {
	v, w := vp("v", 2), vp("w", 4)
	c := zonedCluster(3, 3, 1, v, w)
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread, MinReplicas: 3}, c, nil, Options{})
	if err := s.Promote(bg); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		vpod VPod
		want []Placement
	}{
		// 2 wanted, MinReplicas 3 with 3 schedulable pods: target 3,
		// one per pod round-robin.
		{"minReplicas spreads", vp("v", 2), []Placement{pl(0, 1), pl(1, 1), pl(2, 1)}},
		// From the reservations; no pod is new: pods with placements in
		// order, one each per pass: 0, 1.
		{"scale up from reservations", vp("v", 5), []Placement{pl(0, 2), pl(1, 2), pl(2, 1)}},
		// w: target 4 over three empty-for-w pods: 0, 1, 2, then 0.
		{"second vpod", vp("w", 4), []Placement{pl(0, 2), pl(1, 1), pl(2, 1)}},
		// v down to 1 (target 3 = max(1, min(3, 3))): remove 2 from the
		// last placement backwards: pod 2's 1, then 1 of pod 1's 2.
		{"scale down", vp("v", 1), []Placement{pl(0, 2), pl(1, 1)}},
		// v to 0 vreplicas: target 3 still (MinReplicas): unchanged.
		{"min replicas floor", vp("v", 0), []Placement{pl(0, 2), pl(1, 1)}},
	}
	for _, st := range steps {
		got, err := s.Schedule(bg, st.vpod)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !reflect.DeepEqual(got, st.want) {
			t.Fatalf("%s: placements %v, want %v", st.name, got, st.want)
		}
		if r := s.Reserved()[st.vpod.Key]; !reflect.DeepEqual(r, placementMap(st.want)) {
			t.Fatalf("%s: reserved %v, want exactly the placements", st.name, r)
		}
	}
}

func placementMap(ps []Placement) map[string]int32 {
	m := map[string]int32{}
	for _, p := range ps {
		m[p.PodName] = p.VReplicas
	}
	return m
}

// TestMaxFillUpSpreadEdges: overcommit from the reservations of all
// vpods, unschedulable pods, no pods, Promote and the resync.
func TestMaxFillUpSpreadEdges(t *testing.T) {
	t.Run("overcommit", func(t *testing.T) {
		// Committed: v 6 and w 7 on pod 0 (capacity 10): promoted, the
		// reservations overcommit pod 0 by 3; v gives back 3 there and
		// the 3 go to pod 1 (pod 0 is full: 10 reserved).
		c := zonedCluster(2, 1, 1, vp("v", 6, pl(0, 6)), vp("w", 7, pl(0, 7)))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread}, c, nil, Options{})
		if err := s.Promote(bg); err != nil {
			t.Fatal(err)
		}
		got, err := s.Schedule(bg, vp("v", 6, pl(0, 6)))
		if err != nil || !reflect.DeepEqual(got, []Placement{pl(0, 3), pl(1, 3)}) {
			t.Fatalf("%v %v", got, err)
		}
	})
	t.Run("unschedulable reserved pod", func(t *testing.T) {
		// v reserved on pods 0 (annotated) and 1: pod 0's 2 are dropped
		// and re-placed: pod 2 (no placement yet) first, then pods by
		// order: 1.
		c := zonedCluster(3, 1, 1, vp("v", 4, pl(0, 2), pl(1, 2)))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread}, c, nil, Options{})
		if err := s.Promote(bg); err != nil {
			t.Fatal(err)
		}
		c.SetPod(mkPod(0, "node-0", UnschedulableAnnotation, "true"))
		got, err := s.Schedule(bg, vp("v", 4, pl(0, 2), pl(1, 2)))
		if err != nil || !reflect.DeepEqual(got, []Placement{pl(1, 3), pl(2, 1)}) {
			t.Fatalf("%v %v", got, err)
		}
	})
	t.Run("not promoted starts from nothing", func(t *testing.T) {
		// HEAD's starting point is the reservations: without Promote the
		// committed placement is not one.
		c := zonedCluster(3, 1, 1, vp("v", 2, pl(2, 2)))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread}, c, nil, Options{})
		got, err := s.Schedule(bg, vp("v", 2, pl(2, 2)))
		if err != nil || !reflect.DeepEqual(got, []Placement{pl(0, 1), pl(1, 1)}) {
			t.Fatalf("%v %v", got, err)
		}
	})
	t.Run("no room", func(t *testing.T) {
		c := zonedCluster(1, 1, 1, vp("v", 12))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread}, c, nil, Options{})
		got, err := s.Schedule(bg, vp("v", 12))
		if n, ok := IsRequeue(err); !ok || n != RequeueAfter || !reflect.DeepEqual(got, []Placement{pl(0, 10)}) {
			t.Fatalf("%v %v", got, err)
		}
		c.SetReplicas(0)
		got, err = s.Schedule(bg, vp("v", 12))
		// No replicas: the reserved placement on pod 0 is dropped and
		// nothing is placed: 12 left.
		var rq *RequeueError
		if !asRequeue(err, &rq) || rq.Left != 12 || len(got) != 0 {
			t.Fatalf("%v %v", got, err)
		}
		if _, ok := s.Reserved()[key("v")]; ok {
			t.Errorf("empty placements must delete the reservation: %v", s.Reserved())
		}
	})
	t.Run("resync drops deleted vpods", func(t *testing.T) {
		c := zonedCluster(2, 1, 1, vp("v", 1, pl(0, 1)), vp("w", 1, pl(1, 1)))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread}, c, nil, Options{})
		if err := s.Promote(bg); err != nil {
			t.Fatal(err)
		}
		c.DeleteVPod(key("w"))
		if err := s.resyncReserved(); err != nil {
			t.Fatal(err)
		}
		want := map[Key]map[string]int32{key("v"): {pn(0): 1}}
		if got := s.Reserved(); !reflect.DeepEqual(got, want) {
			t.Errorf("reserved %v, want %v", got, want)
		}
	})
}
