package vpod

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Autoscale runs one autoscaler pass: it computes the replicas the
// StatefulSet needs and scales it, or, on a scale-down pass that leaves
// the scale alone, may compact vreplicas off the last pods (at most once
// per RefreshPeriod). Scale-up passes never lower the scale. Run calls it;
// so may a caller that drives the engine itself.
func (s *Scheduler) Autoscale(ctx context.Context, scaleDown bool) (AutoscaleResult, error) {
	s.asMu.Lock()
	defer s.asMu.Unlock()
	var res AutoscaleResult
	var err error
	if s.set.Strategy == StrategyMaxFillUpSpread {
		res, err = s.autoscaleSpread(ctx, scaleDown)
	} else {
		res, err = s.autoscale116(ctx, scaleDown)
	}
	s.recordAutoscale(res, err)
	return res, err
}

// autoscale116 is Knative v1.16.0's doautoscale, with the target capped
// at MaxReplicas and no demand counted for vpods whose last Schedule
// failed in a policy module.
func (s *Scheduler) autoscale116(ctx context.Context, scaleDown bool) (AutoscaleResult, error) {
	var res AutoscaleResult
	vw, err := readView(ctx, s.c, s.set.StatefulSet, true)
	if err != nil {
		return res, fmt.Errorf("autoscaler: %w", err)
	}
	s.resMu.Lock()
	reserved := copyReserved(s.reserved)
	failed := s.copyFailed()
	s.resMu.Unlock()
	s.asCC.refresh(vw.vpods)
	pending, expected := s.demand(failed)
	st := tally(vw.topo, s.asCC, s.set.Capacity, reserved, nil, nil)
	replicas := vw.topo.replicas
	res.Replicas = replicas

	f := int32(1)
	numZones, numNodes := int32(len(vw.topo.zones)), int32(len(vw.topo.nodes))
	sp := s.schedPolicy()
	if sp != nil && hasEntry(sp.Priorities, "AvailabilityZonePriority") {
		f = numZones
	}
	if sp != nil && hasEntry(sp.Priorities, "AvailabilityNodePriority") {
		f = numNodes
	}
	res.ScaleFactor = f

	// In int64: a demand beyond int32 is capped below, not wrapped.
	target := int64(st.last) + 1
	if s.set.Strategy == StrategyMaxFillUp {
		target = ceilDiv64(expected, int64(s.set.Capacity))
	} else {
		if pending > 0 {
			per := s.set.Capacity
			if sp != nil && hasEntry(sp.Predicates, "EvenPodSpread") && len(st.free) > 0 {
				per = minNonZero(st.free, s.set.Capacity)
			}
			minPods := ceilDiv64(pending, int64(per))
			if f > 0 {
				target += ceilDiv64(minPods, int64(f)) * int64(f)
			}
		}
		if target <= int64(st.last) {
			target = int64(st.last) + int64(f)
		}
	}
	if !scaleDown && target < int64(replicas) {
		target = int64(replicas)
	}
	if scaled, err := s.scaleTo(ctx, &res, replicas, s.capTarget(&res, replicas, f, target, pending)); scaled || err != nil {
		return res, err
	}
	if scaleDown {
		return s.mayCompact116(ctx, st, vw, f, res)
	}
	return res, nil
}

// copyFailed copies the vpods that failed in a module; s.resMu is held.
func (s *Scheduler) copyFailed() map[Key]struct{} {
	out := make(map[Key]struct{}, len(s.failed))
	for k := range s.failed {
		out[k] = struct{}{}
	}
	return out
}

// demand is the autoscaler's pending and expected vreplicas over the
// listed vpods, without the pending vreplicas of those whose last
// Schedule failed in a policy module: more pods cannot fix a module, and
// counting them would scale up on every pass while it keeps failing.
func (s *Scheduler) demand(failed map[Key]struct{}) (pending, expected int64) {
	pending, expected = s.asCC.pending, s.asCC.expected
	for k := range failed {
		if e := s.asCC.entries[k]; e != nil {
			pending -= int64(e.pendingOf())
			expected -= int64(e.pendingOf())
		}
	}
	return pending, expected
}

// capTarget bounds the computed target by the scale-up bound (see
// scaleUpBound), then caps it at MaxReplicas (or the replicas now, when
// already above it: neither bound grows nor, by itself, shrinks the
// StatefulSet), recording and logging each once per new uncapped target.
// f is the pass's scale factor. s.asMu is held.
func (s *Scheduler) capTarget(res *AutoscaleResult, replicas, f int32, target, pending int64) int32 {
	if bound, need := s.scaleUpBound(replicas, f); target > bound {
		res.Bounded, res.Wanted, res.Bound, res.Need = true, int32(min(target, math.MaxInt32)), int32(min(bound, math.MaxInt32)), int32(min(need, math.MaxInt32))
		if res.Wanted != s.lastBounded {
			s.log.Warn("autoscaler target above what the vpods need; scaling by the bound only (maxScaleUpStep)",
				"wanted", res.Wanted, "bound", res.Bound, "need", res.Need, "replicas", replicas, "pending", pending)
		}
		s.lastBounded = res.Wanted
		target = bound
	} else {
		s.lastBounded = 0
	}
	limit := max(int64(s.set.MaxReplicas), int64(replicas))
	if target <= limit {
		s.lastCapped = 0
		return int32(max(target, 0))
	}
	res.Capped = true
	if !res.Bounded {
		res.Wanted = int32(min(target, math.MaxInt32))
	}
	if res.Wanted != s.lastCapped {
		s.log.Warn("autoscaler target capped at maxReplicas; vreplicas that do not fit stay pending",
			"wanted", res.Wanted, "max_replicas", s.set.MaxReplicas, "replicas", replicas, "pending", pending)
	}
	s.lastCapped = res.Wanted
	return int32(limit)
}

// scaleUpBound is the most replicas one pass may scale the StatefulSet
// to, and the vpods' need: need is ⌈Σ vreplicas / capacity⌉ over every
// listed vpod (rounded up to a multiple of the scale factor f, at least
// MinReplicas); step is MaxScaleUpStep, or need (at least f, at least 1)
// when unset; the bound is the lower of replicas + step and need + step,
// never below replicas. Knative's policy-mode target has no such bound:
// a predicate that refuses every pod (a misspelt or mistyped entry kept
// by a lenient policy) leaves vreplicas pending whatever the scale, and
// each pass would add pods for them up to maxReplicas.
func (s *Scheduler) scaleUpBound(replicas, f int32) (bound, need int64) {
	need = ceilDiv64(s.asCC.expected, int64(s.set.Capacity))
	if f > 1 {
		need = ceilDiv64(need, int64(f)) * int64(f)
	}
	need = max(need, int64(s.set.MinReplicas))
	step := int64(s.set.MaxScaleUpStep)
	if step <= 0 {
		step = max(need, int64(f), 1)
	}
	return max(min(int64(replicas)+step, need+step), int64(replicas)), need
}

// mayCompact116 evicts the vreplicas of the last f pods when the other
// pods have room for them.
func (s *Scheduler) mayCompact116(ctx context.Context, st *state, vw *view, f int32, res AutoscaleResult) (AutoscaleResult, error) {
	now := s.now()
	if now.Before(s.lastCompact.Add(s.set.RefreshPeriod)) {
		return res, nil
	}
	if st.last < 1 || len(vw.topo.ordinals) <= int(f) {
		return res, nil
	}
	// In int64: capacity × pods may exceed an int32.
	compact := false
	if s.set.Strategy == StrategyMaxFillUp {
		free := st.freeCapacity() - int64(st.Free(st.last))
		used := int64(s.set.Capacity) - int64(st.Free(st.last))
		compact = free >= used
	} else if s.schedPolicy() != nil {
		free := st.freeCapacity()
		used := int64(s.set.Capacity) * int64(f)
		for i := int32(0); i < f && st.last-i >= 0; i++ {
			free -= int64(st.Free(st.last - i))
			used -= int64(st.Free(st.last - i))
		}
		compact = free >= used && vw.topo.replicas-f >= f
	}
	if !compact {
		return res, nil
	}
	s.lastCompact = now
	res.Compacted = true
	for _, v := range vw.vpods {
		for i := len(v.Placements) - 1; i >= 0; i-- {
			p := v.Placements[i]
			o := ordinalOf(p.PodName)
			for j := int32(0); j < f; j++ {
				if o != st.last-j {
					continue
				}
				pod := s.c.Pod(p.PodName)
				if pod == nil {
					return res, fmt.Errorf("autoscaler: compaction: pod %s not found", p.PodName)
				}
				if err := s.evictOne(ctx, &res, pod.Name, v, p); err != nil {
					return res, err
				}
			}
		}
	}
	return res, nil
}

// autoscaleSpread is Knative ≥ v1.17's doautoscale (MAXFILLUP_SPREAD).
func (s *Scheduler) autoscaleSpread(ctx context.Context, scaleDown bool) (AutoscaleResult, error) {
	var res AutoscaleResult
	vw, err := readView(ctx, s.c, s.set.StatefulSet, false)
	if err != nil {
		return res, fmt.Errorf("autoscaler: %w", err)
	}
	s.resMu.Lock()
	failed := s.copyFailed()
	s.resMu.Unlock()
	s.asCC.refresh(vw.vpods)
	pending, expected := s.demand(failed)
	st := tally(vw.topo, s.asCC, s.set.Capacity, nil, nil, nil)
	replicas := vw.topo.replicas
	res.Replicas, res.ScaleFactor = replicas, 1
	target := max(ceilDiv64(expected, int64(s.set.Capacity)), int64(s.set.MinReplicas))
	if !scaleDown && target < int64(replicas) {
		target = int64(replicas)
	}
	if scaled, err := s.scaleTo(ctx, &res, replicas, s.capTarget(&res, replicas, 1, target, pending)); scaled || err != nil {
		return res, err
	}
	if !scaleDown {
		return res, nil
	}
	now := s.now()
	if now.Before(s.lastCompact.Add(s.set.RefreshPeriod)) {
		return res, nil
	}
	if int(replicas) == len(st.free) {
		return res, nil
	}
	s.lastCompact = now
	res.Compacted = true
	for _, v := range vw.vpods {
		for i := len(v.Placements) - 1; i >= 0; i-- {
			p := v.Placements[i]
			if ordinalOf(p.PodName) < replicas {
				continue
			}
			if err := s.evictOne(ctx, &res, p.PodName, v, p); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// evictOne asks the Evictor to remove one placement and records it.
func (s *Scheduler) evictOne(ctx context.Context, res *AutoscaleResult, pod string, v VPod, p Placement) error {
	res.Evictions = append(res.Evictions, Eviction{VPod: v.Key, Pod: p.PodName, VReplicas: p.VReplicas})
	if s.evict == nil {
		s.log.Info("compaction would evict a placement (no evictor)", "vpod", v.Key.String(), "pod", p.PodName, "vreplicas", p.VReplicas)
		return nil
	}
	if err := s.evict(ctx, s.c.Pod(p.PodName), v, p); err != nil {
		return fmt.Errorf("autoscaler: compaction: evict vpod %s from pod %s: %w", v.Key, pod, err)
	}
	return nil
}

// Run is the autoscaler loop: a scale-down pass every RefreshPeriod
// without a trigger (a trigger restarts the wait, as in Knative), a
// scale-up pass on each Trigger, a new pass RetryPeriod after a failed
// one. With MAXFILLUP_SPREAD it also drops, every 3×RefreshPeriod, the
// reservations of vpods no longer listed. Run it on the leader only
// (after Promote); it returns when ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	if s.set.Strategy == StrategyMaxFillUpSpread {
		go func() {
			t := time.NewTicker(3 * s.set.RefreshPeriod)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if err := s.resyncReserved(); err != nil {
						s.log.Warn("reservations resync failed", "error", err)
					}
				}
			}
		}()
	}
	for {
		var scaleDown bool
		timer := time.NewTimer(s.set.RefreshPeriod)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
			scaleDown = true
		case <-s.trigger:
			timer.Stop()
		}
		if _, err := s.Autoscale(ctx, scaleDown); err != nil {
			s.log.Error("autoscaler pass failed; retrying", "error", err, "retry", s.set.RetryPeriod)
			go func() {
				t := time.NewTimer(s.set.RetryPeriod)
				defer t.Stop()
				select {
				case <-ctx.Done():
				case <-t.C:
					s.Trigger()
				}
			}()
		}
	}
}

func hasEntry(es []PolicyEntry, name string) bool {
	for _, e := range es {
		if e.Name == name {
			return true
		}
	}
	return false
}

// ceilDiv64 is ⌈a/b⌉ for b > 0 (0 otherwise).
func ceilDiv64(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// minNonZero is the least positive value of xs below capacity, else
// capacity (Knative's minNonZeroInt).
func minNonZero(xs []int32, capacity int32) int32 {
	m := capacity
	for _, x := range xs {
		if x > 0 && x < m {
			m = x
		}
	}
	return m
}

// scaleTo records target in res and, when it differs from replicas,
// scales the StatefulSet to it (scaled: the pass is done).
func (s *Scheduler) scaleTo(ctx context.Context, res *AutoscaleResult, replicas, target int32) (scaled bool, err error) {
	res.Target = target
	if target == replicas {
		return false, nil
	}
	s.log.Info("updating adapter replicas", "replicas", replicas, "target", target)
	if err := s.c.Scale(ctx, target); err != nil {
		return true, fmt.Errorf("autoscaler: scale statefulset %s to %d: %w", s.set.StatefulSet, target, err)
	}
	res.Scaled = true
	return true, nil
}
