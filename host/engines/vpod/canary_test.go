package vpod

import (
	"context"
	"testing"
)

// The canary runs the policies' steps on the scheduler's cluster and
// leaves the running scheduler as it was: no reservation, no module
// failure noted, no scale.
func TestCanaryLeavesTheSchedulerAlone(t *testing.T) {
	ctx := context.Background()
	reg := knativeRegistry(t, "native")
	c := zonedCluster(3, 3, 3, vp("placed", 2, pl(0, 1), pl(1, 1)))
	sched := &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}
	desched := &Policy{Priorities: []PolicyEntry{prio("RemoveWithHighestOrdinalPriority", 1)}}
	p, err := NewPolicies(ctx, reg, sched, desched, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	s, err := New(Settings{Name: "s", Namespace: testNS, StatefulSet: testSTS, Capacity: 10, Strategy: StrategyPolicy,
		SchedPolicy: sched, DeschedPolicy: desched}, c, p, Options{Rand: seqRand(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Canary(ctx, p); err != nil {
		t.Fatal(err)
	}
	if r := s.Reserved(); len(r) != 0 {
		t.Errorf("reservations after the canary: %v", r)
	}
	if f := s.Failed(); len(f) != 0 {
		t.Errorf("failures after the canary: %v", f)
	}
	if sc := c.Scaled(); len(sc) != 0 {
		t.Errorf("scaled by the canary: %v", sc)
	}
	select {
	case <-s.trigger:
		t.Error("the canary asked the running scheduler's autoscaler for a pass")
	default:
	}
}
