package vpod

import (
	"context"
	"errors"

	"github.com/hashicorp/go-hclog"
)

// scheduleVPod is Knative v1.16.0's scheduleVPod for the Policy and
// MAXFILLUP strategies, with the two deliberate fixes (see the package
// documentation).
func (s *Scheduler) scheduleVPod(ctx context.Context, v *VPod) ([]Placement, error) {
	log := s.log.With("vpod", v.Key.String())
	vw, err := readView(ctx, s.c, s.set.StatefulSet, true)
	if err != nil {
		log.Debug("cannot read the cluster state (will retry)", "error", err)
		return nil, err
	}
	s.cc.refresh(vw.vpods)
	st := tally(vw.topo, s.cc, s.set.Capacity, s.reserved, nil, nil)
	s.cleanupReserved()

	existing := v.Placements
	var placements []Placement
	if len(existing) > 0 {
		placements = make([]Placement, 0, len(existing))
		for _, p := range existing {
			o := ordinalOf(p.PodName)
			if !st.topo.schedulable(o) {
				continue
			}
			if f := st.Free(o); f < 0 {
				// Overcommitted: give back what the pod holds too many.
				over := -f
				if p.VReplicas >= over {
					st.SetFree(o, 0)
					p.VReplicas -= over
				} else {
					st.SetFree(o, p.VReplicas-over)
					p.VReplicas = 0
				}
				log.Debug("overcommitted pod", "pod", p.PodName, "overcommit", over)
			}
			if p.VReplicas > 0 {
				placements = append(placements, p)
			}
		}
	}

	tr := TotalVReplicas(placements)
	if tr == v.VReplicas {
		return placements, nil
	}
	var left int32
	sched, desched := s.policies()
	if s.set.Strategy == StrategyMaxFillUp {
		if tr > v.VReplicas {
			return removeReplicas(tr-v.VReplicas, placements), nil
		}
		placements, left = s.addReplicas(st, v.VReplicas-tr, placements)
	} else {
		undo := s.keepReserved(v.Key)
		if tr > v.VReplicas && desched != nil {
			ps, err := s.removeWithPolicy(ctx, log, vw, desched, v, tr-v.VReplicas, placements)
			if err != nil {
				undo()
				return nil, s.stepFailed(log, err)
			}
			return ps, nil
		}
		if sched != nil {
			var err error
			if placements, left, err = s.rebalance(ctx, log, vw, sched, v, placements); err != nil {
				undo()
				return nil, s.stepFailed(log, err)
			}
		}
	}
	if left > 0 {
		log.Info("not enough pod replicas to schedule; asking the autoscaler", "left", left)
		s.Trigger()
		if s.set.Strategy == StrategyPolicy && sched != nil {
			// A rebalance re-places every vreplica: keep the old ones.
			s.reservePlacements(v.Key, existing)
			return copyPlacements(existing), s.requeue(v.Key, left)
		}
		return placements, s.requeue(v.Key, left)
	}
	return placements, nil
}

// keepReserved saves the vpod's reservations; the function returned puts
// them back (a step failed: the call must leave no trace).
func (s *Scheduler) keepReserved(k Key) func() {
	m, ok := s.reserved[k]
	saved := make(map[string]int32, len(m))
	for pod, n := range m {
		saved[pod] = n
	}
	return func() {
		if ok {
			s.reserved[k] = saved
		} else {
			delete(s.reserved, k)
		}
	}
}

// stepFailed reports a failed placement or removal step: a module failure
// (*PolicyError) is logged and counted; any error is returned as is, with
// nothing placed and the autoscaler left alone.
func (s *Scheduler) stepFailed(log hclog.Logger, err error) error {
	var pe *PolicyError
	if errors.As(err, &pe) {
		log.Error("vpod policy module failed; placements left as they are, nothing scaled", "policy", pe.Policy,
			"module", pe.Module, "plugin", pe.Plugin, "reason", pe.Reason, "error", pe.Err)
		s.metrics.PolicyFailure(s.set.Name, pe.Plugin, pe.Reason)
		return err
	}
	log.Debug("vpod step stopped; nothing placed", "error", err)
	return err
}

// cleanupReserved drops the reservations of vpods no longer listed and
// empties those of vpods with nothing pending (their placements are
// committed); it forgets the module failures of vpods no longer listed.
func (s *Scheduler) cleanupReserved() {
	for k := range s.failed {
		if s.cc.entries[k] == nil {
			delete(s.failed, k)
		}
	}
	for k, m := range s.reserved {
		e := s.cc.entries[k]
		switch {
		case e == nil:
			delete(s.reserved, k)
		case e.pendingOf() == 0:
			if len(m) > 0 {
				s.reserved[k] = map[string]int32{}
			}
		}
	}
}

// removeReplicas takes diff vreplicas off, last placement first (MAXFILLUP).
func removeReplicas(diff int32, ps []Placement) []Placement {
	out := make([]Placement, 0, len(ps))
	for i := len(ps) - 1; i >= 0; i-- {
		if diff >= ps[i].VReplicas {
			diff -= ps[i].VReplicas
			continue
		}
		out = append(out, Placement{PodName: ps[i].PodName, VReplicas: ps[i].VReplicas - diff})
		diff = 0
	}
	return out
}

// addReplicas fills the vpod's placements first, then pods by ordinal
// (v1.16.0 MAXFILLUP). As in v1.16.0, the second pass does not check that
// a pod is schedulable: any ordinal below the replicas with free capacity
// takes vreplicas.
func (s *Scheduler) addReplicas(st *state, diff int32, ps []Placement) ([]Placement, int32) {
	out := make([]Placement, 0, len(ps))
	for _, p := range ps {
		o := ordinalOf(p.PodName)
		if f := st.Free(o); diff >= 0 && f > 0 {
			a := min(f, diff)
			out = append(out, Placement{PodName: p.PodName, VReplicas: p.VReplicas + a})
			diff -= a
			st.SetFree(o, f-a)
		} else {
			out = append(out, p)
		}
	}
	if diff > 0 {
		for o := int32(0); o < st.topo.replicas && o <= maxOrdinal; o++ {
			if f := st.Free(o); f > 0 {
				a := min(f, diff)
				out = append(out, Placement{PodName: podName(s.set.StatefulSet, o), VReplicas: a})
				diff -= a
				st.SetFree(o, f-a)
			}
			if diff == 0 {
				break
			}
		}
	}
	return out, diff
}
