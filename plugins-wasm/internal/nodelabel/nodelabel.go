// Package nodelabel remembers, per node slot and across cycles, the value
// each node has under a few label keys (topology keys), so plugins that
// look a key up on every node in every cycle pay a pointer compare
// instead of a label search. In a Wasm guest that search was the largest
// cost of topology spreading after allocation: a call per node whose
// first load, from a list of another node, mostly misses the cache.
//
// An entry is valid while the node in its slot is the very NodeInfo it
// was taken from: the SDK never changes a node's labels in place (a sync
// decodes a changed node into a new NodeInfo; a what-if copy edits only
// pods), so a NodeInfo's labels are those it was cached with.
package nodelabel

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Cache holds the keys a plugin asked for. The zero value is empty.
type Cache struct {
	keys []*Key
}

// maxKeys bounds the keys cached at once; a plugin asking for more (pods
// with many distinct topology keys) starts the cache over.
const maxKeys = 8

// maxSlot bounds the slots cached (the SDK's own bound on the mirror).
const maxSlot = 1 << 22

// Key is the cache of one label key.
type Key struct {
	name    string
	id      abi.StrID
	entries []entry
}

// entry is what a node had under the key; one entry per slot, so that
// the hit path touches one cache line.
type entry struct {
	node  *plugin.NodeInfo
	value string
	id    abi.StrID
	has   bool
}

// Key returns the cache of key name, which this cycle numbers id (see
// plugin.Handle.StringID; 0 compares text). Call it in every cycle that
// uses the key: numbers are only valid in the cycle they were looked up.
func (c *Cache) Key(name string, id abi.StrID) *Key {
	for _, k := range c.keys {
		if k.name == name {
			k.id = id
			return k
		}
	}
	if len(c.keys) == maxKeys {
		c.keys = c.keys[:0]
	}
	k := &Key{name: name, id: id}
	c.keys = append(c.keys, k)
	return k
}

// Value returns node ni's value under the key, its StrID (0 when not
// numbered) and whether the node has the key.
//
//go:inline
func (k *Key) Value(ni *plugin.NodeInfo) (string, abi.StrID, bool) {
	if s := int(ni.Slot); s < len(k.entries) {
		if e := &k.entries[s]; e.node == ni {
			return e.value, e.id, e.has
		}
	}
	return k.fill(ni)
}

// Has reports whether node ni has the key.
//
//go:inline
func (k *Key) Has(ni *plugin.NodeInfo) bool {
	if s := int(ni.Slot); s < len(k.entries) {
		if e := &k.entries[s]; e.node == ni {
			return e.has
		}
	}
	_, _, ok := k.fill(ni)
	return ok
}

// fill looks the key up on ni and caches the answer. Out of line (and
// called from two places, so that binaryen does not inline it either),
// so that the hit paths carry no allocation: in TinyGo, no GC frame.
//
//go:noinline
func (k *Key) fill(ni *plugin.NodeInfo) (string, abi.StrID, bool) {
	ls := ni.Node.Labels
	e := entry{node: ni}
	if j := ls.Find(k.name, k.id); j >= 0 {
		e.value, e.id, e.has = ls[j].Value, ls[j].ValueID, true
	}
	s := int(ni.Slot)
	if s >= maxSlot {
		return e.value, e.id, e.has
	}
	if s >= len(k.entries) {
		k.entries = append(k.entries, make([]entry, s+1-len(k.entries))...)
	}
	k.entries[s] = e
	return e.value, e.id, e.has
}
