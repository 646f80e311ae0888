package vpod

import "math"

// committedCache keeps the committed placements of every listed vpod,
// parsed, and their totals per ordinal. It is refreshed from each listing
// and only re-parses vpods whose ResourceVersion changed (or that have
// none), so building a state costs O(vpods + reservations) rather than
// O(every placement). Not safe for concurrent use.
type committedCache struct {
	entries map[Key]*committedVPod
	// byOrd is Σ committed vreplicas per ordinal; cntOrd the number of
	// placements per ordinal (a placement of 0 vreplicas still counts
	// toward LastOrdinal).
	byOrd, cntOrd []int32
	// pending is Σ max(0, vreplicas − placed); expected is Σ vreplicas.
	pending, expected int64
	round             uint64
	// bad is called once per refresh for a placement whose pod name has
	// no usable ordinal.
	bad func(k Key, pod string)
}

// committedVPod is one vpod's committed placements as last listed.
type committedVPod struct {
	rv        string
	vreplicas int32
	// refused: the vpod wants more than MaxVReplicas, which Schedule
	// refuses; its placements still take capacity, but its wish is no
	// demand (pending 0, expected what it has placed).
	refused bool
	ps      []cplace
	total   int32
	seen    uint64
	names   map[string]int // pod name → number of placements naming it; built on demand
}

// cplace is a parsed committed placement; ord is -1 when the pod name has
// no usable ordinal.
type cplace struct {
	pod string
	ord int32
	vr  int32
}

func newCommittedCache() *committedCache {
	return &committedCache{entries: map[Key]*committedVPod{}}
}

// pendingOf is Knative's pendingFromVPod (0 for a refused vpod).
func (c *committedVPod) pendingOf() int32 {
	if c.refused {
		return 0
	}
	if p := c.vreplicas - c.total; p > 0 {
		return p
	}
	return 0
}

// has reports whether a committed placement names pod.
func (c *committedVPod) has(pod string) bool {
	if c.names == nil {
		c.names = make(map[string]int, len(c.ps))
		for _, p := range c.ps {
			c.names[p.pod]++
		}
	}
	return c.names[pod] > 0
}

// usableOrdinal parses a placement's ordinal, -1 when it is unparsable or
// above maxOrdinal.
func usableOrdinal(pod string) int32 {
	o := ordinalOf(pod)
	if o < 0 || o > maxOrdinal {
		return -1
	}
	return o
}

// refresh brings the cache up to date with a listing.
func (cc *committedCache) refresh(vpods []VPod) {
	cc.round++
	for i := range vpods {
		v := &vpods[i]
		e := cc.entries[v.Key]
		if e != nil && e.seen != cc.round && v.ResourceVersion != "" && e.rv == v.ResourceVersion {
			e.seen = cc.round
			continue
		}
		if e != nil {
			cc.remove(e)
		}
		e = &committedVPod{rv: v.ResourceVersion, vreplicas: v.VReplicas, refused: v.VReplicas > MaxVReplicas, seen: cc.round, ps: make([]cplace, len(v.Placements))}
		for j, p := range v.Placements {
			o := usableOrdinal(p.PodName)
			if o < 0 && cc.bad != nil {
				cc.bad(v.Key, p.PodName)
			}
			e.ps[j] = cplace{pod: p.PodName, ord: o, vr: p.VReplicas}
			e.total = addSat32(e.total, p.VReplicas)
		}
		cc.add(e)
		cc.entries[v.Key] = e
	}
	for k, e := range cc.entries {
		if e.seen != cc.round {
			cc.remove(e)
			delete(cc.entries, k)
		}
	}
}

func (cc *committedCache) add(e *committedVPod) {
	for _, p := range e.ps {
		if p.ord < 0 {
			continue
		}
		for int(p.ord) >= len(cc.byOrd) {
			cc.byOrd = append(cc.byOrd, 0)
			cc.cntOrd = append(cc.cntOrd, 0)
		}
		cc.byOrd[p.ord] += p.vr
		cc.cntOrd[p.ord]++
	}
	cc.pending += int64(e.pendingOf())
	cc.expected += e.expectedOf()
}

// expectedOf is what the vpod adds to the expected vreplicas: its count,
// or what it has placed when it is refused.
func (c *committedVPod) expectedOf() int64 {
	if c.refused {
		return int64(c.total)
	}
	return int64(c.vreplicas)
}

// addSat32 is int32 addition that saturates: placements listing more
// than an int32 holds count as MaxInt32 rather than wrapping negative.
func addSat32(a, b int32) int32 {
	s := int64(a) + int64(b)
	switch {
	case s > math.MaxInt32:
		return math.MaxInt32
	case s < math.MinInt32:
		return math.MinInt32
	}
	return int32(s)
}

func (cc *committedCache) remove(e *committedVPod) {
	for _, p := range e.ps {
		if p.ord < 0 {
			continue
		}
		cc.byOrd[p.ord] -= p.vr
		cc.cntOrd[p.ord]--
	}
	cc.pending -= int64(e.pendingOf())
	cc.expected -= e.expectedOf()
}

// maxOrd is the highest ordinal any committed placement names, or -1.
func (cc *committedCache) maxOrd() int32 {
	for o := len(cc.cntOrd) - 1; o >= 0; o-- {
		if cc.cntOrd[o] > 0 {
			return int32(o)
		}
	}
	return -1
}
