package podtopologyspread

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Per-slot domain markers (negative domain indices).
const (
	domNoLabel int32 = -1 // the node lacks the topology key
	domNone    int32 = -2 // the node's value is no counted domain
	domPending int32 = -3 // resolved after the PreFilter walk
)

// slotTable maps a node's slot to what PreFilter/PreScore saw of it.
// owners[slot] is the NodeInfo seen there; a node that is not its slot's
// owner (unseen, or a duplicate slot) takes the slow path.
type slotTable struct {
	owners []*plugin.NodeInfo
}

// slotBuf takes a state's per-slot slices from the plugin's scratch:
// storage recycled from cycle to cycle (plugin.Scratch), fresh within
// one, so states cloned in a cycle may share them.
type slotBuf struct {
	state  *plugin.CycleState
	owners *plugin.Scratch[*plugin.NodeInfo]
	dom    *plugin.Scratch[int32]
	// size is the slot bound the last table found, the next one's guess.
	size *int
}

func (pl *PodTopologySpread) slotBuf(state *plugin.CycleState) slotBuf {
	return slotBuf{state: state, owners: &pl.owners, dom: &pl.dom, size: &pl.slotSize}
}

// table maps the nodes' slots to them, in one pass over the nodes when
// the slot bound is guessed right: the last table's, or past the last
// node's slot (the mirror lists nodes by slot). A table longer than the
// nodes' slots only holds more empty entries.
func (b slotBuf) table(nodes []*plugin.NodeInfo) slotTable {
	n := *b.size
	if len(nodes) > 0 {
		n = max(n, int(nodes[len(nodes)-1].Slot)+1)
	}
	owners := b.owners.Make(b.state, n)
	top := 0
	for _, ni := range nodes {
		s := int(ni.Slot)
		if s >= len(owners) {
			return b.tableSized(nodes)
		}
		owners[s] = ni
		top = max(top, s+1)
	}
	*b.size = top
	return slotTable{owners: owners}
}

// tableSized is table when the guessed bound was short: the bound first,
// then the table.
func (b slotBuf) tableSized(nodes []*plugin.NodeInfo) slotTable {
	n := 0
	for _, ni := range nodes {
		n = max(n, int(ni.Slot)+1)
	}
	t := slotTable{owners: b.owners.Make(b.state, n)}
	for _, ni := range nodes {
		t.owners[ni.Slot] = ni
	}
	*b.size = n
	return t
}

// doms returns k slices of n domain entries (zeroed).
func (b slotBuf) doms(k, n int) [][]int32 {
	all := b.dom.Make(b.state, k*n)
	out := make([][]int32, k)
	for i := range out {
		out[i] = all[i*n : (i+1)*n : (i+1)*n]
	}
	return out
}

// slot returns the node's slot, or -1 when the table has no data for it.
//
//go:inline
func (t *slotTable) slot(ni *plugin.NodeInfo) int {
	if s := int(ni.Slot); s < len(t.owners) && t.owners[s] == ni {
		return s
	}
	return -1
}

// lookupDomain finds value v among vals by a linear scan (slow path, no
// allocation).
func lookupDomain(vals []string, v string) int32 {
	for d := range vals {
		if vals[d] == v {
			return int32(d)
		}
	}
	return domNone
}

// domainIndex numbers topology values. Lookups scan the values while
// there are few (zones: no allocation); past smallDomains a map takes over
// (TinyGo allocates on string-keyed map lookups). Values numbered by the
// mirror's string table (abi.StrID) are found by number: the index keys
// by number when its first value was numbered, and compares every value
// with abi.SameString in the unlikely case of a value of the other kind.
type domainIndex struct {
	vals     []string
	ids      []abi.StrID // the values' numbers, when numbered
	numbered bool
	m        map[string]int32
	mid      map[abi.StrID]int32
}

const smallDomains = 32

// usable reports whether id is a number the index can key by.
func usable(id abi.StrID) bool { return id != 0 && id != abi.StrAbsent }

// find returns the domain of value v (numbered id), if numbered yet. The
// common case (few values, numbered) is a scan of numbers inlined into
// the per-node loops; the rest is findSlow.
//
//go:inline
func (x *domainIndex) find(v string, id abi.StrID) (int32, bool) {
	if x.numbered && x.mid == nil && usable(id) {
		for d, xid := range x.ids {
			if xid == id {
				return int32(d), true
			}
		}
		return 0, false
	}
	return x.findSlow(v, id)
}

// findSlow is find past the inlined case: maps, text, mixed kinds. It
// answers every case, so cold paths call it directly rather than carry an
// inlined copy of find.
//
//go:noinline
func (x *domainIndex) findSlow(v string, id abi.StrID) (int32, bool) {
	if len(x.vals) == 0 {
		return 0, false
	}
	switch {
	case x.numbered && usable(id):
		if x.mid != nil {
			d, ok := x.mid[id]
			return d, ok
		}
		for d := range x.ids {
			if x.ids[d] == id {
				return int32(d), true
			}
		}
		return 0, false
	case !x.numbered && id == 0:
		if x.m != nil {
			d, ok := x.m[v]
			return d, ok
		}
		for d := range x.vals {
			if x.vals[d] == v {
				return int32(d), true
			}
		}
		return 0, false
	}
	for d := range x.vals {
		var xid abi.StrID
		if x.numbered {
			xid = x.ids[d]
		}
		if abi.SameString(x.vals[d], xid, v, id) {
			return int32(d), true
		}
	}
	return 0, false
}

// add numbers a value find did not find.
func (x *domainIndex) add(v string, id abi.StrID) int32 {
	d := int32(len(x.vals))
	if d == 0 {
		x.numbered = usable(id)
	}
	x.vals = append(x.vals, v)
	if x.numbered {
		x.ids = append(x.ids, id) // a value of the other kind adds 0: found by SameString
	}
	switch {
	case x.numbered && x.mid != nil:
		if usable(id) {
			x.mid[id] = d
		}
	case !x.numbered && x.m != nil:
		x.m[v] = d
	case len(x.vals) > smallDomains && x.numbered:
		x.mid = make(map[abi.StrID]int32, 2*len(x.vals))
		for j, w := range x.ids {
			if usable(w) {
				x.mid[w] = int32(j)
			}
		}
	case len(x.vals) > smallDomains:
		x.m = make(map[string]int32, 2*len(x.vals))
		for j, w := range x.vals {
			x.m[w] = int32(j)
		}
	}
	return d
}

// preFilterState holds, per DoNotSchedule constraint, the matching pod
// count of every domain (topology value) and the global minimum.
type preFilterState struct {
	cons  []constraint // shared, immutable
	slots slotTable    // shared, immutable
	// vals[i][d] is the topology value of domain d of constraint i;
	// nodeDom[i][slot] the node's domain index or a dom* marker. Shared,
	// immutable (AddPod/RemovePod never add domains).
	vals    [][]string
	nodeDom [][]int32
	counts  [][]int32 // deep-copied by Clone
	// limits[i] is the most matching pods a node's domain of constraint
	// i may hold: maxSkew + the global minimum - 1 if the pod matches
	// itself (Filter compares one number per node); deep-copied by Clone.
	limits []int64
}

// Clone implements plugin.StateData: counts and minimums are copied,
// since AddPod/RemovePod change them on the copy.
func (s *preFilterState) Clone() plugin.StateData {
	c := &preFilterState{cons: s.cons, slots: s.slots, vals: s.vals, nodeDom: s.nodeDom,
		counts: make([][]int32, len(s.counts)), limits: append([]int64(nil), s.limits...)}
	for i := range s.counts {
		c.counts[i] = append([]int32(nil), s.counts[i]...)
	}
	return c
}

// recomputeLimit sets limits[i] from constraint i's counts: the global
// minimum is the least count over its domains, or 0 when there are fewer
// domains than minDomains (none: nothing to be skewed against).
func (s *preFilterState) recomputeLimit(i int) {
	m := int32(1<<31 - 1)
	for _, n := range s.counts[i] {
		m = min(m, n)
	}
	c := &s.cons[i]
	if len(s.counts[i]) < int(c.minDomains) {
		m = 0
	}
	limit := int64(c.maxSkew) + int64(m)
	if c.selfMatch {
		limit--
	}
	s.limits[i] = limit
}

// domain is the node's domain index of constraint i, or domNoLabel /
// domNone. Filter calls it per node: the slot lookup is inlined, a node
// PreFilter did not see is domainUnseen.
//
//go:inline
func (s *preFilterState) domain(i int, ni *plugin.NodeInfo) int32 {
	if sl := s.slots.slot(ni); sl >= 0 {
		return s.nodeDom[i][sl]
	}
	return s.domainUnseen(i, ni)
}

// domainUnseen is domain for a node PreFilter did not see.
//
//go:noinline
func (s *preFilterState) domainUnseen(i int, ni *plugin.NodeInfo) int32 {
	v, _, ok := s.cons[i].value(ni)
	if !ok {
		return domNoLabel
	}
	return lookupDomain(s.vals[i], v)
}

// PreFilter counts matching pods per domain over all nodes, once per
// cycle, and records every node's domain by slot. A pod without
// DoNotSchedule constraints skips Filter.
func (pl *PodTopologySpread) PreFilter(state *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	cons, err := pl.constraintsFor(pod, abi.DoNotSchedule)
	if err != nil {
		return plugin.AsStatus(err)
	}
	if len(cons) == 0 {
		return statusSkip
	}
	all := pl.h.Nodes()
	buf := pl.slotBuf(state)
	slots := buf.table(all)
	s := &preFilterState{cons: cons, slots: slots, vals: make([][]string, len(cons)),
		nodeDom: buf.doms(len(cons), len(slots.owners)), counts: make([][]int32, len(cons)), limits: make([]int64, len(cons))}
	domains := make([]domainIndex, len(cons))
	pending := false
	// Constraints outside, nodes inside: a pod has one or two constraints
	// of an action, and in Wasm every loop entry costs an interruption
	// check, so the per-node body runs without an inner loop.
	for i := range cons {
		c := &cons[i]
		nodeDom := s.nodeDom[i]
		dx := &domains[i]
		for _, ni := range all {
			sl := ni.Slot
			v, vid, ok := c.value(ni)
			if !ok {
				nodeDom[sl] = domNoLabel
				continue
			}
			// One constraint is its own eligibility: the lookup above
			// answered whether the node has the key.
			if (len(cons) > 1 && !hasAllKeys(ni, cons)) || !c.includes(pod, &ni.Node) {
				nodeDom[sl] = domPending
				pending = true
				continue
			}
			d, ok := dx.find(v, vid)
			if !ok {
				d = dx.add(v, vid)
				s.counts[i] = append(s.counts[i], 0)
			}
			nodeDom[sl] = d
			s.counts[i][d] += countMatching(&ni.NodeInfo, c, pod)
		}
	}
	if pending { // nodes not counted still belong to a domain by value
		for _, ni := range all {
			if s.slots.owners[ni.Slot] != ni {
				continue // a duplicate slot: the owner's entry counts
			}
			for i := range cons {
				if s.nodeDom[i][ni.Slot] != domPending {
					continue
				}
				v, vid, _ := cons[i].value(ni)
				d, ok := domains[i].findSlow(v, vid) // rare: not inlined
				if !ok {
					d = domNone
				}
				s.nodeDom[i][ni.Slot] = d
			}
		}
	}
	for i := range cons {
		s.vals[i] = domains[i].vals
		s.recomputeLimit(i)
	}
	state.Write(preFilterKey, s)
	return nil
}

// Filter: for each DoNotSchedule constraint, the node must have the
// topology key, and count(domain) + selfMatch - globalMin <= maxSkew.
// Per node it only indexes the slices PreFilter filled.
func (pl *PodTopologySpread) Filter(state *plugin.CycleState, pod *abi.Pod, ni *plugin.NodeInfo) *plugin.Status {
	s, ok := state.Read(preFilterKey).(*preFilterState)
	if !ok {
		return statusNoPreFilter
	}
	for i := range s.cons {
		d := s.domain(i, ni)
		if d == domNoLabel {
			return statusNoLabel
		}
		var n int32
		if d >= 0 {
			n = s.counts[i][d]
		}
		if int64(n) > s.limits[i] {
			return statusNotMatch
		}
	}
	return nil
}

// AddPod counts a pod the host adds (a nominated pod) on node.
func (pl *PodTopologySpread) AddPod(state *plugin.CycleState, podToSchedule, podToAdd *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	pl.update(state, podToSchedule, podToAdd, node, 1)
	return nil
}

// RemovePod uncounts a pod the host removes (a preemption victim).
func (pl *PodTopologySpread) RemovePod(state *plugin.CycleState, podToSchedule, podToRemove *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	pl.update(state, podToSchedule, podToRemove, node, -1)
	return nil
}

func (pl *PodTopologySpread) update(state *plugin.CycleState, pod, other *abi.Pod, ni *plugin.NodeInfo, delta int32) {
	s, ok := state.Read(preFilterKey).(*preFilterState)
	if !ok || other.Namespace != pod.Namespace || !hasAllKeys(ni, s.cons) {
		return
	}
	for i := range s.cons {
		c := &s.cons[i]
		if !c.sel.Matches(other.Labels) || !c.includes(pod, &ni.Node) {
			continue
		}
		d := s.domain(i, ni)
		if d < 0 {
			continue // a node PreFilter did not see; upstream would add a domain
		}
		s.counts[i][d] += delta
		s.recomputeLimit(i)
	}
}
