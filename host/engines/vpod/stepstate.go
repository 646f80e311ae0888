package vpod

// stepState is the state the placement steps of one vpod see, the same
// as Knative rebuilding its State from scratch before every step: a full
// tally at the first step, then kept current as the vpod's reservations
// change (only this vpod's reservations change between steps, so every
// other vpod's share of the free capacity stays put).
type stepState struct {
	st      *state
	sts     string
	res     map[Key]map[string]int32
	key     Key
	entry   *committedVPod // the vpod as listed; nil when it is not
	eff     map[string]int32
	dirty   map[string]struct{}
	podVal  []int32
	podIn   []bool
	nodeVal []int32
	nodeIn  []int32
	zoneVal []int32
	zoneIn  []int32
}

// newStepState tallies the state for key with the reservations res
// (deleting those committed, as a state build does). Every other vpod's
// reservations must have been through a state build since they last
// changed (Schedule builds one first): then this build deletes none of
// theirs, and their share of the capacity stays as tallied here.
func newStepState(topo *topology, cc *committedCache, capacity int32, sts string, res map[Key]map[string]int32, key Key) *stepState {
	ss := &stepState{sts: sts, res: res, key: key, entry: cc.entries[key], eff: map[string]int32{}, dirty: map[string]struct{}{}}
	var before []string
	for pod := range res[key] {
		before = append(before, pod)
	}
	ss.st = tally(topo, cc, capacity, res, &key, ss.eff)
	for _, pod := range before {
		if _, kept := res[key][pod]; !kept {
			// Deleted as committed: with several placements on the pod
			// the next build counts it differently.
			ss.dirty[pod] = struct{}{}
		}
	}
	ss.podVal = make([]int32, len(topo.ordinals))
	ss.podIn = make([]bool, len(topo.ordinals))
	ss.nodeVal = make([]int32, len(topo.nodes))
	ss.nodeIn = make([]int32, len(topo.nodes))
	ss.zoneVal = make([]int32, len(topo.zones))
	ss.zoneIn = make([]int32, len(topo.zones))
	if ss.entry != nil {
		for pod, v := range ss.eff {
			ss.spread(pod, v, 1)
		}
	}
	return ss
}

// spread adds (sign 1) or takes out (sign −1) a present pod entry.
func (ss *stepState) spread(pod string, v int32, sign int32) {
	i := ss.st.topo.index(ss.sts, pod)
	if i < 0 {
		return
	}
	n := ss.st.topo.podNode[i]
	z := ss.st.topo.nodeZone[n]
	ss.podVal[i] += sign * v
	ss.podIn[i] = sign > 0
	ss.nodeVal[n] += sign * v
	ss.nodeIn[n] += sign
	ss.zoneVal[z] += sign * v
	ss.zoneIn[z] += sign
}

// reserve sets the vpod's reservation for pod (reservePlacements writes
// one entry per placement).
func (ss *stepState) reserve(pod string, vr int32) {
	m := ss.res[ss.key]
	if m == nil {
		m = map[string]int32{}
		ss.res[ss.key] = m
	}
	if old, ok := m[pod]; ok && old == vr {
		return
	}
	m[pod] = vr
	ss.dirty[pod] = struct{}{}
}

// clear empties the vpod's reservations (reservePlacements of no
// placements).
func (ss *stepState) clear() {
	for pod := range ss.res[ss.key] {
		ss.dirty[pod] = struct{}{}
	}
	ss.res[ss.key] = map[string]int32{}
}

// refresh brings the state to what a state build would give now: every
// pod whose reservation changed is recomputed (and its reservation
// deleted if it equals the committed count).
func (ss *stepState) refresh() {
	var again []string
	for pod := range ss.dirty {
		delete(ss.dirty, pod)
		oldV, oldIn := ss.eff[pod]
		newV, newIn, deleted := ss.recompute(pod)
		if deleted {
			// With several placements on the pod, the count differs once
			// the reservation is gone: the next build sees that.
			again = append(again, pod)
		}
		if oldIn {
			delete(ss.eff, pod)
		}
		if newIn {
			ss.eff[pod] = newV
		}
		if o := usableOrdinal(pod); o >= 0 && (newIn || newV != oldV) {
			ss.st.free = growFree(ss.st.free, o, ss.st.capacity)
			ss.st.free[o] -= newV - oldV
		}
		if ss.entry != nil && (oldIn != newIn || oldV != newV) {
			if oldIn {
				ss.spread(pod, oldV, -1)
			}
			if newIn {
				ss.spread(pod, newV, 1)
			}
		}
	}
	for _, pod := range again {
		ss.dirty[pod] = struct{}{}
	}
}

// recompute is one pod's vreplicas for the vpod as a state build counts
// them, deleting a reservation equal to a committed placement.
func (ss *stepState) recompute(pod string) (vr int32, present, deleted bool) {
	m := ss.res[ss.key]
	r, hasR := m[pod]
	if ss.entry == nil || !ss.entry.has(pod) {
		return r, hasR, false
	}
	var total int32
	for _, p := range ss.entry.ps {
		if p.pod != pod {
			continue
		}
		if !hasR {
			total += p.vr
			continue
		}
		if p.vr == r {
			total += p.vr
			hasR = false
			deleted = true
			delete(m, pod)
			if len(m) == 0 {
				delete(ss.res, ss.key)
			}
			continue
		}
		total += r
	}
	return total, true, deleted
}
