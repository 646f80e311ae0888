package plugin

// StateKey names one entry of a CycleState. Allocate keys once, at package
// level, with NewStateKey: reading an entry is then an array index, cheap
// enough to do per node.
type StateKey int

var nextStateKey StateKey

// NewStateKey returns a fresh key. Call it from package-level var
// declarations only.
func NewStateKey() StateKey {
	k := nextStateKey
	nextStateKey++
	return k
}

// StateData is what a plugin stores in the CycleState. Clone must return
// a copy that later changes to either do not affect the other: the host
// clones the state to evaluate what-ifs (preemption) in parallel.
type StateData interface {
	Clone() StateData
}

// CycleState holds per-cycle data plugins share between their extension
// points (PreFilter to Filter, PreScore to Score). It is reset at the start
// of every cycle.
type CycleState struct {
	data []StateData
}

// Read returns the entry for k, or nil. Plugins call it per node, so it
// asks TinyGo to inline it even in size-optimised builds.
//
//go:inline
func (c *CycleState) Read(k StateKey) StateData {
	if int(k) < len(c.data) {
		return c.data[k]
	}
	return nil
}

// Write stores d under k.
func (c *CycleState) Write(k StateKey, d StateData) {
	for int(k) >= len(c.data) {
		c.data = append(c.data, nil)
	}
	c.data[k] = d
}

// Reset empties the state, keeping its storage.
func (c *CycleState) Reset() {
	for i := range c.data {
		c.data[i] = nil
	}
}

// Clone returns a copy with every entry cloned.
func (c *CycleState) Clone() *CycleState {
	n := &CycleState{data: make([]StateData, len(c.data))}
	for i, d := range c.data {
		if d != nil {
			n.data[i] = d.Clone()
		}
	}
	return n
}

// CloneInto makes dst a copy of c with every entry cloned, reusing dst's
// storage: the SDK saves the state this way on every push_state of a
// what-if.
func (c *CycleState) CloneInto(dst *CycleState) {
	dst.data = append(dst.data[:0], c.data...)
	for i, d := range dst.data {
		if d != nil {
			dst.data[i] = d.Clone()
		}
	}
}
