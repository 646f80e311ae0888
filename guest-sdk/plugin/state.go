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
	// cycle numbers the cycle the state belongs to, so Scratch knows
	// when the slices it handed out are dead: Reset moves it on, clones
	// keep it. A guest's states all descend from the one it Resets, so
	// its cycles never repeat a number. 0: a state never Reset, whose
	// cycle is unknown.
	cycle uint64
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

// Reset empties the state, keeping its storage, for a new cycle: what
// plugins took from a Scratch for an earlier cycle is dead from now on.
func (c *CycleState) Reset() {
	for i := range c.data {
		c.data[i] = nil
	}
	c.cycle++
}

// Clone returns a copy with every entry cloned.
func (c *CycleState) Clone() *CycleState {
	n := &CycleState{data: make([]StateData, len(c.data)), cycle: c.cycle}
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
	dst.cycle = c.cycle
	for i, d := range dst.data {
		if d != nil {
			dst.data[i] = d.Clone()
		}
	}
}

// Scratch recycles a plugin's per-cycle slices of T. Topology plugins
// need tables as long as the cluster (a domain per node slot, counts per
// domain) in every cycle; allocated afresh they would bring TinyGo's next
// collection nearer every cycle, and each collection walks the whole
// mirror (in a guest built without a collector, they would grow its heap
// towards the instance's replacement). A Scratch hands the same storage
// out again once the cycle it was taken in is over: the SDK Resets the
// state at the start of every cycle, and nothing of an old cycle's state
// is read after that.
//
// Keep one Scratch per plugin instance (an instance serves one cycle at
// a time) and never keep what it hands out in the plugin across cycles.
type Scratch[T any] struct {
	cycle uint64
	bufs  [][]T
	next  int
}

// Make returns n zeroed Ts that stay the caller's until state's cycle
// ends. Within a cycle every call gets storage of its own; a state whose
// cycle is unknown (never Reset, as in unit tests) gets a fresh slice.
func (s *Scratch[T]) Make(state *CycleState, n int) []T {
	if state == nil || state.cycle == 0 {
		return make([]T, n)
	}
	if state.cycle != s.cycle {
		s.cycle, s.next = state.cycle, 0
	}
	if s.next == len(s.bufs) {
		s.bufs = append(s.bufs, nil)
	}
	b := s.bufs[s.next]
	if cap(b) < n {
		b = make([]T, n)
		s.bufs[s.next] = b
	} else {
		b = b[:n]
		clear(b)
	}
	s.next++
	return b[:n:n]
}
