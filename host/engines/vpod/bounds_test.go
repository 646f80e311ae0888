package vpod

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestNewRefusesAbsurdSizes: the settings that size what the engine
// does are bounded, and the error names the setting and the limit.
func TestNewRefusesAbsurdSizes(t *testing.T) {
	c := zonedCluster(1, 1, 1)
	for _, tc := range []struct {
		name string
		set  Settings
		want string
	}{
		{"capacity", Settings{StatefulSet: "s", Capacity: 1<<20 + 1, Strategy: StrategyMaxFillUp}, "pod capacity 1048577 exceeds the limit 1048576"},
		{"maxReplicas", Settings{StatefulSet: "s", Capacity: 1, Strategy: StrategyMaxFillUp, MaxReplicas: 1<<16 + 1}, "maxReplicas 65537 exceeds the limit 65536"},
		{"maxReplicas negative", Settings{StatefulSet: "s", Capacity: 1, Strategy: StrategyMaxFillUp, MaxReplicas: -1}, "maxReplicas -1"},
		{"minReplicas above maxReplicas", Settings{StatefulSet: "s", Capacity: 1, Strategy: StrategyMaxFillUpSpread, MinReplicas: 5, MaxReplicas: 4},
			"minReplicas 5 is above maxReplicas 4"},
		{"maxScaleUpStep", Settings{StatefulSet: "s", Capacity: 1, Strategy: StrategyPolicy, MaxScaleUpStep: 1<<16 + 1}, "maxScaleUpStep 65537 exceeds the limit 65536"},
		{"maxScaleUpStep negative", Settings{StatefulSet: "s", Capacity: 1, Strategy: StrategyPolicy, MaxScaleUpStep: -1}, "maxScaleUpStep -1 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.set, c, nil, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
	// The default ceiling, and one that leaves room for minReplicas.
	s := newSched(t, Settings{Capacity: 1, Strategy: StrategyMaxFillUp}, c, nil, Options{})
	if got := s.Settings().MaxReplicas; got != DefaultMaxReplicas {
		t.Errorf("default maxReplicas %d, want %d", got, DefaultMaxReplicas)
	}
	s = newSched(t, Settings{Capacity: 1, Strategy: StrategyMaxFillUpSpread, MinReplicas: 300}, c, nil, Options{})
	if got := s.Settings().MaxReplicas; got != 300 {
		t.Errorf("maxReplicas %d with minReplicas 300, want 300", got)
	}
}

// TestScheduleRefusesAbsurdVPods: a vpod wanting more than MaxVReplicas
// or listing more than MaxPlacements placements is refused, named, and
// not attempted; the others are placed.
func TestScheduleRefusesAbsurdVPods(t *testing.T) {
	many := make([]Placement, MaxPlacements+1)
	for i := range many {
		many[i] = Placement{PodName: pn(i % 3)}
	}
	for _, strategy := range []Strategy{StrategyMaxFillUp, StrategyMaxFillUpSpread, StrategyPolicy} {
		for _, tc := range []struct {
			v    VPod
			want string
		}{
			{vp("huge", math.MaxInt32), "vpod ns/huge: vreplicas 2147483647 exceeds the limit 100000"},
			{vp("huge", MaxVReplicas+1), "vpod ns/huge: vreplicas 100001 exceeds the limit 100000"},
			{vp("huge", 1, many...), "vpod ns/huge: 65537 placements exceed the limit 65536"},
		} {
			c := zonedCluster(2, 1, 1, tc.v, vp("good", 3))
			sched, p := policiesFor(t, strategy)
			s := newSched(t, Settings{Capacity: 10, Strategy: strategy, SchedPolicy: sched}, c, p, Options{})
			if got, err := s.Schedule(bg, tc.v); err == nil || got != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v %v, want %q", strategy, got, err, tc.want)
			}
			if len(s.Reserved()[tc.v.Key]) != 0 {
				t.Errorf("%s: a refused vpod reserved %v", strategy, s.Reserved()[tc.v.Key])
			}
			if got, err := s.Schedule(bg, vp("good", 3)); err != nil || TotalVReplicas(got) != 3 {
				t.Errorf("%s: good: %v %v", strategy, got, err)
			}
		}
	}
	// The limit itself is fine.
	s := newSched(t, Settings{Capacity: MaxVReplicas, Strategy: StrategyMaxFillUp}, zonedCluster(1, 1, 1, vp("max", MaxVReplicas)), nil, Options{})
	if got, err := s.Schedule(bg, vp("max", MaxVReplicas)); err != nil || !reflect.DeepEqual(got, []Placement{pl(0, MaxVReplicas)}) {
		t.Errorf("at the limit: %v %v", got, err)
	}
}

// TestAutoscalerCountsNoDemandForRefusedVPods: a vpod listed with more
// than MaxVReplicas (a source that bypassed the checks) is no demand:
// the autoscaler does not scale for it (counting it would make the
// simulation create 214 million adapter pods for 2147483647 vreplicas).
func TestAutoscalerCountsNoDemandForRefusedVPods(t *testing.T) {
	for _, strategy := range []Strategy{StrategyMaxFillUp, StrategyMaxFillUpSpread, StrategyPolicy} {
		c := zonedCluster(3, 1, 1, vp("huge", math.MaxInt32, pl(0, 4)), vp("small", 5, pl(0, 5)))
		sched, p := policiesFor(t, strategy)
		s := newSched(t, Settings{Capacity: 10, Strategy: strategy, SchedPolicy: sched}, c, p, Options{})
		res, err := s.Autoscale(bg, false)
		if err != nil || res.Scaled || res.Capped || res.Target != 3 {
			t.Errorf("%s: %+v %v, want target 3 and no scaling", strategy, res, err)
		}
		if got := c.Scaled(); len(got) != 0 {
			t.Errorf("%s: scaled to %v", strategy, got)
		}
	}
}

// TestAutoscalerTargetCappedAtMaxReplicas: however large the demand, the
// autoscaler asks for at most MaxReplicas; it says so in its result (and
// log), the vreplicas that do not fit stay pending, and a StatefulSet
// already above the ceiling is neither grown nor shrunk for it.
func TestAutoscalerTargetCappedAtMaxReplicas(t *testing.T) {
	vpods := func() []VPod { return []VPod{vp("a", MaxVReplicas), vp("b", MaxVReplicas)} }
	for _, strategy := range []Strategy{StrategyMaxFillUp, StrategyMaxFillUpSpread, StrategyPolicy} {
		t.Run(string(strategy), func(t *testing.T) {
			sched, p := policiesFor(t, strategy)
			c := zonedCluster(3, 1, 1, vpods()...)
			s := newSched(t, Settings{Capacity: 1, Strategy: strategy, SchedPolicy: sched, MaxReplicas: 50}, c, p, Options{})
			for _, down := range []bool{false, true, false} {
				res, err := s.Autoscale(bg, down)
				if err != nil || res.Target != 50 || !res.Capped || res.Wanted < 2*MaxVReplicas-10 {
					t.Fatalf("scale down %v: %+v %v, want target 50, capped", down, res, err)
				}
			}
			if got := c.Scaled(); !reflect.DeepEqual(got, []int32{50}) {
				t.Errorf("scaled %v, want once to 50", got)
			}
			// Above the ceiling already (configured lower since): kept.
			c = zonedCluster(80, 1, 1, vpods()...)
			s = newSched(t, Settings{Capacity: 1, Strategy: strategy, SchedPolicy: sched, MaxReplicas: 50}, c, p, Options{})
			for _, down := range []bool{false, true} {
				res, err := s.Autoscale(bg, down)
				if err != nil || res.Target != 80 || !res.Capped || res.Scaled {
					t.Errorf("above the ceiling, scale down %v: %+v %v, want target 80", down, res, err)
				}
			}
			// The default ceiling applies when none is set.
			c = zonedCluster(3, 1, 1, vpods()...)
			s = newSched(t, Settings{Capacity: 1, Strategy: strategy, SchedPolicy: sched}, c, p, Options{})
			if res, err := s.Autoscale(bg, false); err != nil || res.Target != DefaultMaxReplicas || !res.Capped {
				t.Errorf("default ceiling: %+v %v", res, err)
			}
		})
	}
}

// policiesFor is lowestOrdinal on a fake module for the Policy strategy,
// nothing for the others.
func policiesFor(t *testing.T, strategy Strategy) (*Policy, *Policies) {
	t.Helper()
	if strategy != StrategyPolicy {
		return nil, nil
	}
	p, err := fakePolicies(lowestOrdinal, nil, newFakeModule("knative"))
	if err != nil {
		t.Fatal(err)
	}
	return lowestOrdinal, p
}
