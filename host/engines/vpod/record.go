package vpod

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// The decision records of a vpod scheduler: a Schedule call's steps,
// filled from the modules' own step replies (verdicts.replies), and an
// autoscaler pass's numbers. Nothing here runs unless a sink wants the
// record (Scheduler.rec, Options.Decisions).

// newRecord starts the record of a Schedule call of v: its placements
// and the reservations of other vpods the step states count. s.mu and
// s.resMu are held.
func (s *Scheduler) newRecord(v *VPod) *decision.VPod {
	rec := decision.NewVPod(v.Key.String(), s.set.Name, s.set.Namespace+"/"+s.set.StatefulSet, v.VReplicas, s.now(), decision.Limits{})
	for _, p := range v.Placements {
		rec.Existing = append(rec.Existing, decision.VPodPlacement{Pod: p.PodName, VReplicas: p.VReplicas})
	}
	byPod := map[string]int32{}
	for k, m := range s.reserved {
		if k == v.Key {
			continue
		}
		for pod, n := range m {
			byPod[pod] += n
		}
	}
	pods := make([]string, 0, len(byPod))
	for pod := range byPod {
		pods = append(pods, pod)
	}
	slices.SortFunc(pods, func(a, b string) int { return cmp.Compare(ordinalOf(a), ordinalOf(b)) })
	for _, pod := range pods {
		rec.AddReserved(pod, byPod[pod])
	}
	return rec
}

// finishRecord completes the call's record with what it returns and
// hands it to the sink.
func (s *Scheduler) finishRecord(ps []Placement, err error) {
	rec := s.rec
	s.rec = nil
	for _, p := range ps {
		rec.Placements = append(rec.Placements, decision.VPodPlacement{Pod: p.PodName, VReplicas: p.VReplicas})
	}
	var rq *RequeueError
	if errors.As(err, &rq) {
		rec.Left = rq.Left
	} else {
		rec.SetError(err)
	}
	s.decisions.Add(&decision.Record{Kind: decision.KindVPod, Time: rec.Time, Key: decision.VPodKey(rec.VPod), VPod: rec})
}

// recordPolicy names the policy's entries in the record, once.
func recordPolicy(rec *decision.VPod, bp *boundPolicy) {
	if rec.Predicates != nil || rec.Priorities != nil {
		return
	}
	rec.Predicates = make([]string, len(bp.preds))
	for i, e := range bp.preds {
		rec.Predicates[i] = e.name
	}
	rec.Priorities = make([]decision.VPodPriority, len(bp.prios))
	for i, e := range bp.prios {
		rec.Priorities[i] = decision.VPodPriority{Name: e.name, Weight: e.weight, Summed: e.summed}
	}
}

// recordStep adds one step to the call's record: the chosen candidate,
// the feasible ones with the highest totals and then refused ones, at
// most the record's bound, each with the predicate that refused it
// (from the modules' verdicts) or its raw score per priority (from their
// scores) and the total the choice compared; chosen is the ordinal
// picked (-1: none, why says why). It selects the kept candidates before
// naming any, so a step over many pods costs a pass over their totals.
func (sp *stepper) recordStep(bp *boundPolicy, vd *verdicts, cands []uint32, op string, chosen int32, why string) {
	rec := sp.s.rec
	if rec == nil || !rec.WantStep() {
		return
	}
	recordPolicy(rec, bp)
	topo := sp.topo
	k := rec.MaxCandidates()
	st := decision.VPodStep{Step: len(rec.Steps) + rec.StepsDropped, Op: op, Why: why}
	// keep: the chosen index, then the best feasible by total (earlier
	// first on equal totals), then the first refused.
	keep := make([]int, 0, k)
	chosenAt := -1
	for i, c := range cands {
		if vd.feasible[i] {
			st.Feasible++
		}
		if chosen >= 0 && topo.Pods[c].Ordinal == chosen {
			chosenAt = i
		}
	}
	if chosenAt >= 0 {
		keep = append(keep, chosenAt)
	}
	first := len(keep)
	for i := range cands {
		if !vd.feasible[i] || i == chosenAt {
			continue
		}
		t := vd.totals[i]
		if len(keep) == k && t <= vd.totals[keep[k-1]] {
			continue
		}
		at := len(keep)
		for at > first && vd.totals[keep[at-1]] < t {
			at--
		}
		if len(keep) < k {
			keep = append(keep, 0)
		} else if at == k {
			continue
		}
		copy(keep[at+1:], keep[at:len(keep)-1])
		keep[at] = i
	}
	for i := range cands {
		if len(keep) == k {
			break
		}
		if !vd.feasible[i] && i != chosenAt {
			keep = append(keep, i)
		}
	}
	st.CandidatesDropped = len(cands) - len(keep)
	st.Candidates = make([]decision.VPodCandidate, len(keep))
	scores := make([]int64, len(keep)*len(bp.prios))
	var invalid *boundEntry
	for i := range bp.preds {
		if bp.preds[i].invalid != "" {
			invalid = &bp.preds[i]
			break
		}
	}
	for j, i := range keep {
		vc := &st.Candidates[j]
		vc.Pod = podName(sp.s.set.StatefulSet, topo.Pods[cands[i]].Ordinal)
		if len(bp.prios) > 0 {
			vc.Scores = scores[j*len(bp.prios) : (j+1)*len(bp.prios)]
		}
		if vd.feasible[i] {
			vc.Total = vd.totals[i]
		}
		if invalid != nil {
			vc.Rejected, vc.Code, vc.Reason = invalid.name, abi.Error.String(), "invalid arguments: "+invalid.invalid
		}
		for mi, ms := range bp.mods {
			if mi >= len(vd.replies) || vd.replies[mi] == nil {
				continue
			}
			r := vd.replies[mi]
			if v := r.Verdicts[i]; v.Entry != 0 && vc.Rejected == "" {
				vc.Rejected, vc.Code, vc.Reason = fmt.Sprintf("#%d", v.Entry-1), v.Code.String(), v.Reason
				if local := int(v.Entry - 1); local < len(ms.kinds) {
					vc.Rejected = bp.entry(ms, local).name
				}
			}
			for _, sc := range r.Scores {
				if int(sc.Entry) < len(ms.kinds) && ms.kinds[sc.Entry] == abi.VPodPriority && i < len(sc.Scores) {
					if g := ms.global[sc.Entry]; g < len(bp.prios) {
						vc.Scores[g] = sc.Scores[i]
					}
				}
			}
		}
	}
	if chosenAt >= 0 {
		st.Chosen = st.Candidates[0].Pod
		best := vd.totals[chosenAt]
		for i := range cands {
			if vd.feasible[i] && i != chosenAt && vd.totals[i] == best {
				st.Tied++
			}
		}
	}
	rec.AddStep(st)
}

// recordAutoscale hands the sink a pass's record, if it wants one.
// s.asMu is held; the committed cache is the pass's.
func (s *Scheduler) recordAutoscale(res AutoscaleResult, err error) {
	if s.decisions == nil || !s.decisions.Want(decision.KindVPod, decision.AutoscaleKey(s.set.Name)) {
		return
	}
	failed := s.copyFailedLocked()
	pending, expected := s.demand(failed)
	a := &decision.VPodAutoscale{Scheduler: s.set.Name, StatefulSet: s.set.Namespace + "/" + s.set.StatefulSet, Time: s.now(),
		Pending: pending, Expected: expected, Replicas: res.Replicas, Target: res.Target, ScaleFactor: res.ScaleFactor,
		Wanted: res.Wanted, Bounded: res.Bounded, Bound: res.Bound, Need: res.Need, Capped: res.Capped, Scaled: res.Scaled, Compacted: res.Compacted}
	for k, e := range s.asCC.entries {
		if _, bad := failed[k]; !bad && e.pendingOf() > 0 && len(a.PendingVPods) < decision.DefaultLimits.MaxNodes {
			a.PendingVPods = append(a.PendingVPods, k.String())
		}
	}
	slices.Sort(a.PendingVPods)
	switch {
	case err != nil:
		a.Error = err.Error()
		a.Why = "the pass failed"
	case res.Bounded:
		a.Why = fmt.Sprintf("wanted %d replicas, above the scale-up bound %d (maxScaleUpStep over the vpods' need of %d): scaled by the bound only", res.Wanted, res.Bound, res.Need)
	case res.Capped:
		a.Why = fmt.Sprintf("wanted %d replicas, capped at maxReplicas: the vreplicas that do not fit stay pending", res.Wanted)
	case res.Compacted:
		a.Why = fmt.Sprintf("compacted: %d placements evicted from the last pods", len(res.Evictions))
	case res.Scaled:
		a.Why = fmt.Sprintf("%d pending vreplicas: scaled from %d to %d replicas (scale factor %d)", pending, res.Replicas, res.Target, res.ScaleFactor)
	default:
		a.Why = fmt.Sprintf("%d replicas fit the demand (%d pending of %d vreplicas): no change", res.Replicas, pending, expected)
	}
	s.decisions.Add(&decision.Record{Kind: decision.KindVPod, Time: a.Time, Key: decision.AutoscaleKey(s.set.Name), Autoscale: a})
}

// copyFailedLocked is copyFailed taking s.resMu.
func (s *Scheduler) copyFailedLocked() map[Key]struct{} {
	s.resMu.Lock()
	defer s.resMu.Unlock()
	return s.copyFailed()
}
