package interpodaffinity

import (
	"unsafe"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// topoIndex numbers the topology domains (values) of each topology key a
// cycle uses and records, per node slot, the node's domain under each key,
// so Filter and Score find a node's domain by slice indexing (no label
// lookup, no map, no allocation). Built once per cycle by PreFilter or
// PreScore and immutable afterwards, so cloned states share it.
type topoIndex struct {
	keys []string
	// vals maps each key's values to domain indices; only the slow path
	// (nodes whose slot the index does not cover) reads it.
	vals []map[string]int32
	// ndom is the number of domains of each key.
	ndom []int32
	// dom[ki][slot] is the domain of the node in slot under keys[ki], -1
	// when the node lacks the key.
	dom [][]int32
	// bySlot: slots of the mirror's nodes are distinct, so dom is valid.
	bySlot bool
}

// keyIndex returns the index of key k, adding it if new (before build).
func (x *topoIndex) keyIndex(k string) int {
	for i := range x.keys {
		if x.keys[i] == k {
			return i
		}
	}
	x.keys = append(x.keys, k)
	return len(x.keys) - 1
}

// keyCache remembers, across cycles, the domains of one topology key per
// slot, so that building a cycle's index costs a pointer compare per
// unchanged node (a label lookup and a string compare for a replaced
// one), not a (in TinyGo, allocating) map lookup: node labels seldom
// change. Domain numbers are stable while the cache lives; the map only
// grows.
type keyCache struct {
	key  string
	m    map[string]int32
	vals []string
	dom  []int32
	// node is the NodeInfo each slot's entry was taken from: while the
	// slot holds the very same one, its entry stands without a label
	// lookup (the SDK never changes a node's labels in place).
	node []*plugin.NodeInfo
}

// build numbers the domains of every key over nodes, reusing and
// updating the plugin's caches, with its per-cycle tables from pl's
// scratch. pl.h numbers the keys (ABI v1.5), so finding a key among a
// node's labels compares numbers; a nil handle compares text.
func (x *topoIndex) build(nodes []*plugin.NodeInfo, pl *InterPodAffinity, state *plugin.CycleState) {
	caches, h := &pl.topo, pl.h
	// The mirror lists nodes by slot: slots that only increase are
	// distinct, found in the pass that finds their bound. Others are
	// checked against each other.
	size, next := 0, 0
	increasing := true
	for _, n := range nodes {
		s := int(n.Slot)
		increasing = increasing && s >= next
		next = s + 1
		size = max(size, next)
	}
	x.vals = make([]map[string]int32, len(x.keys))
	x.ndom = make([]int32, len(x.keys))
	x.dom = make([][]int32, len(x.keys))
	x.bySlot = increasing || distinctSlots(nodes, pl.doms.Make(state, size))
	for ki, k := range x.keys {
		var c *keyCache
		for _, kc := range *caches {
			if kc.key == k {
				c = kc
				break
			}
		}
		if c == nil || len(c.m) > 4*size+64 || !x.bySlot {
			if c == nil {
				c = &keyCache{key: k}
				*caches = append(*caches, c)
			}
			c.m, c.vals, c.dom, c.node = map[string]int32{}, nil, nil, nil
		}
		if len(c.dom) < size {
			vals := make([]string, size)
			dom := make([]int32, size)
			node := make([]*plugin.NodeInfo, size)
			copy(vals, c.vals)
			copy(node, c.node)
			n := copy(dom, c.dom)
			for i := n; i < size; i++ {
				dom[i] = -1
			}
			c.vals, c.dom, c.node = vals, dom, node
		}
		// Consecutive nodes often share a domain (zones): try the last
		// value before the map.
		var kid abi.StrID
		if h != nil {
			kid = h.StringID(k)
		}
		var last string
		lastD := int32(-1)
		for _, n := range nodes {
			if c.node[n.Slot] == n {
				continue
			}
			c.node[n.Slot] = n
			ls := n.Node.Labels
			j := ls.Find(k, kid)
			if j < 0 {
				c.dom[n.Slot] = -1
				continue
			}
			v := ls[j].Value
			if c.dom[n.Slot] >= 0 && sameText(c.vals[n.Slot], v) {
				continue
			}
			if lastD < 0 || v != last {
				id, ok := c.m[v]
				if !ok {
					id = int32(len(c.m))
					c.m[v] = id
				}
				last, lastD = v, id
			}
			c.vals[n.Slot], c.dom[n.Slot] = v, lastD
		}
		dom := pl.doms.Make(state, size)
		copy(dom, c.dom)
		x.vals[ki], x.ndom[ki], x.dom[ki] = c.m, int32(len(c.m)), dom
	}
}

// distinctSlots reports whether no two nodes share a slot; seen is a
// zeroed table as long as the slots' bound.
func distinctSlots(nodes []*plugin.NodeInfo, seen []int32) bool {
	for _, n := range nodes {
		if seen[n.Slot] != 0 {
			return false
		}
		seen[n.Slot] = 1
	}
	return true
}

// sameText reports a == b, at once when both are the very same bytes:
// a node's cached value is its record's own string until the node is
// replaced, and TinyGo compares strings byte by byte.
func sameText(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	return len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || a == b
}

// Domain results besides an index: the node lacks the key, or has a value
// the index has not seen (only on the slow path, for nodes outside the
// mirror).
const (
	noKey   = -1
	unknown = -2
)

// domain returns node n's domain under keys[ki] (noKey, unknown) and, when
// unknown, the value. The plugin asks it per node and term: the slot
// lookup is inlined, a node outside the index is domainOutside.
//
//go:inline
func (x *topoIndex) domain(ki int, n *plugin.NodeInfo) (int32, string) {
	if x.bySlot {
		if d := x.dom[ki]; int(n.Slot) < len(d) {
			return d[n.Slot], ""
		}
	}
	return x.domainOutside(ki, n)
}

// domainOutside is domain for a node whose slot the index does not
// cover: its label, looked up.
//
//go:noinline
func (x *topoIndex) domainOutside(ki int, n *plugin.NodeInfo) (int32, string) {
	v, ok := n.Label(x.keys[ki])
	if !ok {
		return noKey, ""
	}
	if id, ok := x.vals[ki][v]; ok && id < x.ndom[ki] {
		return id, ""
	}
	return unknown, v
}

// find returns the index of key k, -1 if the index lacks it.
func (x *topoIndex) find(k string) int {
	for i := range x.keys {
		if x.keys[i] == k {
			return i
		}
	}
	return -1
}

// topoCounts counts matches per topology pair (key, domain) of a
// topoIndex. Pairs the index does not know (key or value unseen at
// PreFilter, only possible for pods or nodes added in what-ifs) go to
// extra, per key and value. nonzero is the number of pairs with a
// non-zero count (upstream deletes pairs that drop to zero, so it is the
// size of its map).
type topoCounts struct {
	counts  [][]int64
	extra   map[string]map[string]int64
	nonzero int
}

// newTopoCounts returns zero counts for x's pairs, from pl's scratch.
func newTopoCounts(x *topoIndex, pl *InterPodAffinity, state *plugin.CycleState) topoCounts {
	c := topoCounts{counts: make([][]int64, len(x.keys))}
	for ki := range c.counts {
		c.counts[ki] = pl.counts.Make(state, int(x.ndom[ki]))
	}
	return c
}

// add adds delta to the pair of domain d of key ki, or, when d < 0, to
// pair (key, v).
func (c *topoCounts) add(ki int, d int32, key, v string, delta int64) {
	if ki >= 0 && d >= 0 {
		old := c.counts[ki][d]
		c.counts[ki][d] = old + delta
		if old == 0 || old+delta == 0 {
			c.countNonzero(old, old+delta)
		}
		return
	}
	c.addExtra(key, v, delta)
}

// countNonzero keeps nonzero as a pair's count goes from old to n.
func (c *topoCounts) countNonzero(old, n int64) {
	switch {
	case old == 0 && n != 0:
		c.nonzero++
	case old != 0 && n == 0:
		c.nonzero--
	}
}

// addExtra is add for a pair the index does not know.
//
//go:noinline
func (c *topoCounts) addExtra(key, v string, delta int64) {
	if c.extra == nil {
		c.extra = map[string]map[string]int64{}
	}
	m := c.extra[key]
	if m == nil {
		m = map[string]int64{}
		c.extra[key] = m
	}
	old := m[v]
	if old+delta == 0 {
		delete(m, v)
	} else {
		m[v] = old + delta
	}
	c.countNonzero(old, old+delta)
}

// get returns the count of the pair of domain d of key ki (d from
// topoIndex.domain; v the value when d is unknown); 0 for noKey. Filter
// asks it per node and term: a pair of the index is read inline, an
// unknown one is getExtra.
//
//go:inline
func (c *topoCounts) get(ki int, d int32, key, v string) int64 {
	if d >= 0 {
		return c.counts[ki][d]
	}
	if d == unknown && c.extra != nil {
		return c.getExtra(key, v)
	}
	return 0
}

// getExtra is get for a pair the index does not know.
//
//go:noinline
func (c *topoCounts) getExtra(key, v string) int64 { return c.extra[key][v] }

// Len is the number of pairs with a non-zero count.
func (c *topoCounts) Len() int { return c.nonzero }

// clone deep-copies the counts.
func (c *topoCounts) clone() topoCounts {
	out := topoCounts{counts: make([][]int64, len(c.counts)), nonzero: c.nonzero}
	for i, s := range c.counts {
		out.counts[i] = append([]int64(nil), s...)
	}
	if c.extra != nil {
		out.extra = make(map[string]map[string]int64, len(c.extra))
		for k, m := range c.extra {
			n := make(map[string]int64, len(m))
			for v, x := range m {
				n[v] = x
			}
			out.extra[k] = n
		}
	}
	return out
}
