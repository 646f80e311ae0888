package vpod

import (
	"context"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// stepHook, when set (tests), sees the state of every placement or
// removal step before it is evaluated, with the reservations the state
// was built from.
var stepHook func(s *Scheduler, ss *stepState, before map[Key]map[string]int32)

// stepState builds (ss nil) or refreshes the state of a step.
func (s *Scheduler) stepState(ss *stepState, topo *topology, k Key) *stepState {
	var before map[Key]map[string]int32
	if stepHook != nil {
		before = copyReserved(s.reserved)
	}
	if ss == nil {
		ss = newStepState(topo, s.cc, s.set.Capacity, s.set.StatefulSet, s.reserved, k)
	} else {
		ss.refresh()
	}
	if stepHook != nil {
		stepHook(s, ss, before)
	}
	return ss
}

// rebalance re-places every vreplica of the vpod from scratch (v1.16.0
// rebalanceReplicasWithPolicy): its current placements are reserved at 0
// so that the state ignores them, then vreplicas go one at a time to the
// best feasible pod. A step that fails in a module ends it with the
// error (a *PolicyError): the caller undoes the reservations.
func (s *Scheduler) rebalance(ctx context.Context, log hclog.Logger, vw *view, bp *boundPolicy, v *VPod, pruned []Placement) ([]Placement, int32, error) {
	zero := make([]Placement, len(pruned))
	for i, p := range pruned {
		zero[i] = Placement{PodName: p.PodName}
	}
	s.reservePlacements(v.Key, zero)

	sp := newStepper(s, s.moduleTopology(vw.topo))
	defer sp.release(ctx)
	topo := vw.topo
	cands := make([]uint32, len(topo.ordinals))
	for i := range cands {
		cands[i] = uint32(i)
	}
	placements := []Placement{}
	num := v.VReplicas
	diff := num
	var ss *stepState
	var ids []int32
	var totals []int64
	for i := int32(0); i < num; i++ {
		ss = s.stepState(ss, topo, v.Key)
		if topo.replicas == 0 {
			log.Info("no pods in the statefulset")
			s.reserveAll(ss, placements)
			diff = num - i
			break
		}
		vd, err := sp.evaluate(ctx, bp, ss, v, cands)
		if err != nil {
			return nil, 0, err
		}
		ids, totals = ids[:0], totals[:0]
		for c, ok := range vd.feasible {
			if ok {
				ids = append(ids, topo.ordinals[cands[c]])
				totals = append(totals, vd.totals[c])
			}
		}
		if len(ids) == 0 {
			sp.recordStep(bp, vd, cands, decision.StepPlace, -1, "no feasible pod for this vreplica: the autoscaler is asked for more")
			log.Info("no feasible pod for this vreplica", "vreplica", i)
			s.reserveAll(ss, placements)
			diff = num - i
			break
		}
		if vd.scoreErr != nil {
			sp.recordStep(bp, vd, cands, decision.StepPlace, -1, "scoring failed: "+vd.scoreErr.Error())
			log.Info("scoring feasible pods failed", "error", vd.scoreErr)
			s.reserveAll(ss, placements)
			diff = num - i
			break
		}
		o := s.selectPod(ids, totals)
		sp.recordStep(bp, vd, cands, decision.StepPlace, o, "")
		var pod string
		placements, pod = s.addSelection(o, placements)
		for _, p := range placements {
			if p.PodName == pod {
				ss.reserve(pod, p.VReplicas)
			}
		}
		diff--
	}
	return placements, diff, nil
}

// addSelection adds one vreplica on the pod of ordinal o (to every
// placement of that ordinal, as v1.16.0 does, or as a new placement) and
// names the pod.
func (s *Scheduler) addSelection(o int32, ps []Placement) ([]Placement, string) {
	pod := ""
	for i := range ps {
		if ordinalOf(ps[i].PodName) == o {
			ps[i].VReplicas++
			pod = ps[i].PodName
		}
	}
	if pod == "" {
		pod = podName(s.set.StatefulSet, o)
		ps = append(ps, Placement{PodName: pod, VReplicas: 1})
	}
	return ps, pod
}

// reserveAll is reservePlacements on a step state.
func (s *Scheduler) reserveAll(ss *stepState, ps []Placement) {
	if len(ps) == 0 {
		ss.clear()
	}
	for _, p := range ps {
		ss.reserve(p.PodName, p.VReplicas)
	}
}

// removeWithPolicy takes diff vreplicas off one at a time (v1.16.0
// removeReplicasWithPolicy): the candidates are the pods holding the
// vpod's vreplicas now that pass the descheduling predicates; a single
// one loses a vreplica, else the best by the descheduling priorities.
//
// Deliberate fix: the candidates are the current working placements (not
// the committed ones), and a pod that loses its last vreplica is reserved
// at 0, so no step picks a pod with nothing left to remove and every
// asked removal happens. A step that fails in a module ends it with the
// error (a *PolicyError): nothing is removed, the caller undoes the
// reservations.
func (s *Scheduler) removeWithPolicy(ctx context.Context, log hclog.Logger, vw *view, bp *boundPolicy, v *VPod, diff int32, placements []Placement) ([]Placement, error) {
	sp := newStepper(s, s.moduleTopology(vw.topo))
	defer sp.release(ctx)
	topo := vw.topo
	var ss *stepState
	var cands []uint32
	var ids []int32
	var totals []int64
	for i := int32(0); i < diff; i++ {
		ss = s.stepState(ss, topo, v.Key)
		cands = cands[:0]
		for _, p := range placements {
			if o := ordinalOf(p.PodName); p.VReplicas > 0 && topo.schedulable(o) {
				cands = insertSorted(cands, uint32(topo.podIndex[o]))
			}
		}
		vd, err := sp.evaluate(ctx, bp, ss, v, cands)
		if err != nil {
			return nil, err
		}
		ids, totals = ids[:0], totals[:0]
		for _, p := range placements {
			o := ordinalOf(p.PodName)
			if p.VReplicas <= 0 || !topo.schedulable(o) {
				continue
			}
			c := indexOf(cands, uint32(topo.podIndex[o]))
			if c >= 0 && vd.feasible[c] {
				ids = append(ids, o)
				totals = append(totals, vd.totals[c])
			}
		}
		if len(ids) == 1 {
			sp.recordStep(bp, vd, cands, decision.StepRemove, ids[0], "")
			placements = s.removeSelection(ss, ids[0], placements)
			continue
		}
		if len(ids) == 0 {
			sp.recordStep(bp, vd, cands, decision.StepRemove, -1, "no pod to remove a vreplica from")
			log.Info("no pod to remove a vreplica from", "vreplica", i)
			s.reserveAll(ss, placements)
			break
		}
		if vd.scoreErr != nil {
			sp.recordStep(bp, vd, cands, decision.StepRemove, -1, "scoring failed: "+vd.scoreErr.Error())
			log.Info("scoring pods for removal failed", "error", vd.scoreErr)
			s.reserveAll(ss, placements)
			break
		}
		o := s.selectPod(ids, totals)
		sp.recordStep(bp, vd, cands, decision.StepRemove, o, "")
		placements = s.removeSelection(ss, o, placements)
	}
	return placements, nil
}

// removeSelection takes one vreplica off every placement on ordinal o,
// dropping those that had one, and reserves the change (a dropped one at
// 0: the deliberate fix).
func (s *Scheduler) removeSelection(ss *stepState, o int32, ps []Placement) []Placement {
	out := ps[:0:0]
	for _, p := range ps {
		if ordinalOf(p.PodName) != o {
			out = append(out, p)
			continue
		}
		if p.VReplicas == 1 {
			continue
		}
		p.VReplicas--
		out = append(out, p)
	}
	if len(out) == 0 {
		ss.clear()
	}
	for _, p := range out {
		if ordinalOf(p.PodName) == o {
			ss.reserve(p.PodName, p.VReplicas)
		}
	}
	for _, p := range ps {
		if ordinalOf(p.PodName) == o && p.VReplicas == 1 {
			ss.reserve(p.PodName, 0)
		}
	}
	return out
}

func insertSorted(xs []uint32, x uint32) []uint32 {
	i := 0
	for i < len(xs) && xs[i] < x {
		i++
	}
	if i < len(xs) && xs[i] == x {
		return xs
	}
	xs = append(xs, 0)
	copy(xs[i+1:], xs[i:])
	xs[i] = x
	return xs
}

func indexOf(xs []uint32, x uint32) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
