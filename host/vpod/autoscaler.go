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
	if s.set.Strategy == StrategyMaxFillUpSpread {
		return s.autoscaleSpread(ctx, scaleDown)
	}
	return s.autoscale116(ctx, scaleDown)
}

// autoscale116 is Knative v1.16.0's doautoscale.
func (s *Scheduler) autoscale116(ctx context.Context, scaleDown bool) (AutoscaleResult, error) {
	var res AutoscaleResult
	vw, err := readView(ctx, s.c, s.set.StatefulSet, true)
	if err != nil {
		return res, fmt.Errorf("autoscaler: %w", err)
	}
	s.resMu.Lock()
	reserved := copyReserved(s.reserved)
	s.resMu.Unlock()
	s.asCC.refresh(vw.vpods)
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

	target := st.last + 1
	if s.set.Strategy == StrategyMaxFillUp {
		target = ceilDiv(s.asCC.expected, int64(s.set.Capacity))
	} else {
		if pending := s.asCC.pending; pending > 0 {
			per := s.set.Capacity
			if sp != nil && hasEntry(sp.Predicates, "EvenPodSpread") && len(st.free) > 0 {
				per = minNonZero(st.free, s.set.Capacity)
			}
			minPods := ceilDiv(pending, int64(per))
			if f > 0 {
				target += ceilDiv(int64(minPods), int64(f)) * f
			}
		}
		if target <= st.last {
			target = st.last + f
		}
	}
	if !scaleDown && target < replicas {
		target = replicas
	}
	if scaled, err := s.scaleTo(ctx, &res, replicas, target); scaled || err != nil {
		return res, err
	}
	if scaleDown {
		return s.mayCompact116(ctx, st, vw, f, res)
	}
	return res, nil
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
	compact := false
	if s.set.Strategy == StrategyMaxFillUp {
		free := st.freeCapacity() - st.Free(st.last)
		used := s.set.Capacity - st.Free(st.last)
		compact = free >= used
	} else if s.schedPolicy() != nil {
		free := st.freeCapacity()
		used := s.set.Capacity * f
		for i := int32(0); i < f && st.last-i >= 0; i++ {
			free -= st.Free(st.last - i)
			used -= st.Free(st.last - i)
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
	s.asCC.refresh(vw.vpods)
	st := tally(vw.topo, s.asCC, s.set.Capacity, nil, nil, nil)
	replicas := vw.topo.replicas
	res.Replicas, res.ScaleFactor = replicas, 1
	target := max(ceilDiv(s.asCC.expected, int64(s.set.Capacity)), s.set.MinReplicas)
	if !scaleDown && target < replicas {
		target = replicas
	}
	if scaled, err := s.scaleTo(ctx, &res, replicas, target); scaled || err != nil {
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

// ceilDiv is ⌈a/b⌉ for b > 0, clamped to int32.
func ceilDiv(a, b int64) int32 {
	if b <= 0 {
		return 0
	}
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	if q > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(q)
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
