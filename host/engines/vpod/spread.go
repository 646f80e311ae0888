package vpod

import (
	"context"
	"sort"
)

// scheduleSpread is Knative ≥ v1.17's scheduleVPod (MAXFILLUP_SPREAD):
// the vpod's reservations are its starting point; vreplicas go
// round-robin, one per pod per pass, over the candidates in order (pods
// reserved but dropped from the placements, then pods without a
// placement by ordinal, then the vpod's pods), and a vpod spreads over at
// least MinReplicas pods when it has as many vreplicas. Pods are
// schedulable by their own state only (HEAD does not look at nodes).
func (s *Scheduler) scheduleSpread(ctx context.Context, v *VPod) ([]Placement, error) {
	log := s.log.With("vpod", v.Key.String())
	vw, err := readView(ctx, s.c, s.set.StatefulSet, false)
	if err != nil {
		log.Debug("cannot read the cluster state (will retry)", "error", err)
		return nil, err
	}
	topo := vw.topo
	capacity := s.set.Capacity

	byPod := map[string]int32{}
	for _, m := range s.reserved {
		for pod, n := range m {
			byPod[pod] += n
		}
	}
	existing := make([]Placement, 0)
	if m, ok := s.reserved[v.Key]; ok {
		existing = make([]Placement, 0, len(m))
		for pod, n := range m {
			existing = append(existing, Placement{PodName: pod, VReplicas: n})
		}
	}
	// By ordinal; equal ordinals by name, so the order is deterministic
	// (HEAD leaves it to map iteration).
	sort.Slice(existing, func(i, j int) bool {
		oi, oj := ordinalOf(existing[i].PodName), ordinalOf(existing[j].PodName)
		if oi != oj {
			return oi < oj
		}
		return existing[i].PodName < existing[j].PodName
	})

	var placements []Placement
	if len(existing) > 0 {
		placements = make([]Placement, 0, len(existing))
		for _, p := range existing {
			if !topo.schedulable(ordinalOf(p.PodName)) {
				continue
			}
			if free := capacity - byPod[p.PodName]; free < 0 {
				over := -free
				if p.VReplicas >= over {
					byPod[p.PodName] -= over
					p.VReplicas -= over
				} else {
					byPod[p.PodName] -= p.VReplicas
					p.VReplicas = 0
				}
				log.Debug("overcommitted pod", "pod", p.PodName, "overcommit", over)
			}
			if p.VReplicas > 0 {
				placements = append(placements, p)
			}
		}
	}

	target := v.VReplicas
	if s.set.MinReplicas > target {
		target = min(s.set.MinReplicas, int32(len(topo.ordinals)))
		target = max(target, v.VReplicas)
	}
	tr := TotalVReplicas(placements)
	if tr == target {
		return placements, nil
	}
	if tr > target {
		return removeReplicas(tr-target, placements), nil
	}
	placements, left := s.addSpread(topo, byPod, v.Key, target-tr, placements)
	if left > 0 {
		log.Info("not enough pod replicas to schedule; asking the autoscaler", "left", left)
		s.Trigger()
		return placements, s.requeue(v.Key, left)
	}
	return placements, nil
}

// addSpread places diff vreplicas round-robin over the candidates, one
// per pod with room per pass, until none has room.
func (s *Scheduler) addSpread(topo *topology, byPod map[string]int32, k Key, diff int32, ps []Placement) ([]Placement, int32) {
	if topo.replicas <= 0 {
		return ps, diff
	}
	out := append(make([]Placement, 0, len(ps)), ps...)
	cands := s.candidatesOrdered(topo, k, ps)
	for found := true; diff > 0 && found; {
		found = false
		for _, o := range cands {
			if diff <= 0 {
				break
			}
			pod := podName(s.set.StatefulSet, o)
			if s.set.Capacity-byPod[pod] > 0 {
				found = true
				out = upsertPlacement(out, pod)
				diff--
				byPod[pod]++
			}
		}
	}
	if len(out) == 0 {
		return nil, diff
	}
	return out, diff
}

// candidatesOrdered is HEAD's candidate order: schedulable pods the vpod
// has reservations on but no placement (by ordinal here; HEAD's map
// order), then schedulable pods without a placement by ordinal, then the
// pods of the placements in their order.
func (s *Scheduler) candidatesOrdered(topo *topology, k Key, ps []Placement) []int32 {
	seen := map[string]bool{}
	var tail []int32
	for i := len(ps) - 1; i >= 0; i-- {
		o := ordinalOf(ps[i].PodName)
		if !topo.schedulable(o) || seen[ps[i].PodName] {
			continue
		}
		tail = append(tail, o)
		seen[ps[i].PodName] = true
	}
	var front []string
	for pod := range s.reserved[k] {
		if topo.schedulable(ordinalOf(pod)) && !seen[pod] {
			front = append(front, pod)
		}
	}
	sort.Slice(front, func(i, j int) bool {
		oi, oj := ordinalOf(front[i]), ordinalOf(front[j])
		if oi != oj {
			return oi < oj
		}
		return front[i] < front[j]
	})
	out := make([]int32, 0, len(topo.ordinals))
	for _, pod := range front {
		out = append(out, ordinalOf(pod))
		seen[pod] = true
	}
	for _, o := range topo.ordinals {
		if !seen[podName(s.set.StatefulSet, o)] {
			out = append(out, o)
		}
	}
	for i := len(tail) - 1; i >= 0; i-- {
		out = append(out, tail[i])
	}
	return out
}

// upsertPlacement adds one vreplica on pod.
func upsertPlacement(ps []Placement, pod string) []Placement {
	for i := range ps {
		if ps[i].PodName == pod {
			ps[i].VReplicas++
			return ps
		}
	}
	return append(ps, Placement{PodName: pod, VReplicas: 1})
}

// resyncReserved drops the reservations of vpods no longer listed
// (HEAD, every 3×RefreshPeriod on the leader).
func (s *Scheduler) resyncReserved() error {
	if !s.leader.Load() {
		return nil
	}
	vpods, err := s.c.VPods()
	if err != nil {
		return err
	}
	listed := make(map[Key]bool, len(vpods))
	for _, v := range vpods {
		listed[v.Key] = true
	}
	s.resMu.Lock()
	defer s.resMu.Unlock()
	for k := range s.reserved {
		if !listed[k] {
			delete(s.reserved, k)
		}
	}
	return nil
}
