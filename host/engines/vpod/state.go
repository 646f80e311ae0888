package vpod

// state is Knative's scheduler State for one reading of the cluster with
// a set of reservations: free capacity per ordinal, the last ordinal,
// and (through the committed cache) pending and expected vreplicas.
type state struct {
	topo     *topology
	cc       *committedCache
	capacity int32
	// free is FreeCap: len is LastOrdinal+1, an ordinal past it has the
	// whole capacity free.
	free []int32
	last int32
}

// Free is the free capacity at ordinal o.
func (s *state) Free(o int32) int32 {
	if o < 0 || int(o) >= len(s.free) {
		return s.capacity
	}
	return s.free[o]
}

// SetFree sets the free capacity at ordinal o, growing the table.
func (s *state) SetFree(o, v int32) {
	if o < 0 || o > maxOrdinal {
		return
	}
	s.free = growFree(s.free, o, s.capacity)
	s.free[o] = v
}

// freeCapacity is Σ Free over the schedulable pods, in int64 (capacity
// × pods may exceed an int32).
func (s *state) freeCapacity() int64 {
	var t int64
	for _, o := range s.topo.ordinals {
		t += int64(s.Free(o))
	}
	return t
}

func growFree(free []int32, o, capacity int32) []int32 {
	for int(o) >= len(free) {
		free = append(free, capacity)
	}
	return free
}

// tally builds the state for the committed placements in cc and the
// reservations res, as Knative v1.16.0's stateBuilder does: every
// schedulable pod has an entry; each committed placement takes its
// vreplicas, or the vpod's reservation for that pod when it differs (a
// reservation equal to the committed count is deleted from res: the
// placement was committed); reservations with no committed placement
// take theirs, whether or not their vpod is listed. Free capacity may go
// negative (overcommit).
//
// When track is non-nil, eff receives the tracked vpod's vreplicas per
// pod name for every pod it has a committed placement or a reservation
// on (its spread before the schedulable filter).
func tally(topo *topology, cc *committedCache, capacity int32, res map[Key]map[string]int32, track *Key, eff map[string]int32) *state {
	last := int32(-1)
	if n := len(topo.ordinals); n > 0 {
		last = topo.ordinals[n-1]
	}
	if m := cc.maxOrd(); m > last {
		last = m
	}
	for _, rps := range res {
		for pod := range rps {
			if o := usableOrdinal(pod); o > last {
				last = o
			}
		}
	}
	st := &state{topo: topo, cc: cc, capacity: capacity, last: last}
	st.free = make([]int32, last+1)
	for o := range st.free {
		st.free[o] = capacity
		if o < len(cc.byOrd) {
			st.free[o] -= cc.byOrd[o]
		}
	}
	if track != nil {
		if e := cc.entries[*track]; e != nil {
			for _, p := range e.ps {
				eff[p.pod] += p.vr
			}
		}
	}
	for k, rps := range res {
		if len(rps) == 0 {
			continue
		}
		tracked := track != nil && k == *track
		e := cc.entries[k]
		if e == nil {
			// Not listed: the reservations only take capacity.
			for pod, r := range rps {
				if o := usableOrdinal(pod); o >= 0 {
					st.free[o] -= r
				}
				if tracked {
					eff[pod] += r
				}
			}
			continue
		}
		// Committed placements with a reservation for their pod: the
		// reservation replaces the committed count unless equal.
		for _, p := range e.ps {
			r, ok := rps[p.pod]
			if !ok {
				continue
			}
			used := r
			if p.vr == r {
				used = p.vr
				delete(rps, p.pod)
				if len(rps) == 0 {
					delete(res, k)
				}
			}
			if d := used - p.vr; d != 0 {
				if p.ord >= 0 {
					st.free[p.ord] -= d
				}
				if tracked {
					eff[p.pod] += d
				}
			}
		}
		// Reservations without a committed placement.
		for pod, r := range rps {
			if e.has(pod) {
				continue
			}
			if o := usableOrdinal(pod); o >= 0 {
				st.free[o] -= r
			}
			if tracked {
				eff[pod] += r
			}
		}
	}
	return st
}
