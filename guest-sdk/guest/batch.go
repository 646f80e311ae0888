package guest

import "github.com/wasmsched/wasmsched/guest-sdk/plugin"

// batchCache is what a Filter, PreScore or Score call reuses: the nodes
// of its batch and the reply's storage, so that running a plugin over
// thousands of nodes allocates nothing in steady state.
type batchCache struct {
	nodes []*plugin.NodeInfo // the call's batch
	// The last slot list resolved against the mirror alone (no what-if
	// view), and its nodes: the host sends the very same list to every
	// plugin of a stage (all Score plugins get the feasible nodes), so a
	// repeat is compared, eight bytes at a time, instead of resolved
	// again. A sync drops it (forget).
	lastSlots []byte
	lastNodes []*plugin.NodeInfo
	scores    []int64
	// A Filter reply's distinct outcomes, by status and by code and
	// message (entryIndex).
	byStatus map[*plugin.Status]uint16
	byText   map[string]uint16
	entries  []*plugin.Status
}

// forget drops the last resolved list: the mirror's nodes may be
// replaced, and the cache holds none of them.
func (b *batchCache) forget() {
	clear(b.lastNodes)
	b.lastSlots, b.lastNodes = b.lastSlots[:0], b.lastNodes[:0]
}

// loadBatch resolves a SlotList into mirror nodes, reading the fixed-width
// slots directly: this runs once per plugin call over thousands of nodes,
// so it must not allocate (beyond growing the batch once), and a list the
// same as the last one resolved outside a what-if view is copied from it.
func (g *Guest) loadBatch(in []byte) error {
	if len(in) < 4 {
		return errSlotList
	}
	n := int(le32(in))
	if n < 0 || n > (len(in)-4)/4 {
		return errSlotList
	}
	if cap(g.batch.nodes) < n {
		g.batch.nodes = make([]*plugin.NodeInfo, n)
	}
	g.batch.nodes = g.batch.nodes[:n]
	slots := in[4 : 4+4*n]
	overlay := g.view.overlay // the nodes the what-if view changed
	if len(overlay) == 0 {
		if n > 0 && len(g.batch.lastNodes) == n && sameBytes(slots, g.batch.lastSlots) {
			copy(g.batch.nodes, g.batch.lastNodes) // a copy: plugins may reorder the batch
			return nil
		}
	}
	if !resolveSlots(g.batch.nodes, g.mirror.nodes, slots) {
		g.batch.nodes = g.batch.nodes[:0]
		return errUnknownSlot
	}
	if len(overlay) == 0 {
		g.batch.lastSlots = append(g.batch.lastSlots[:0], slots...)
		g.batch.lastNodes = append(g.batch.lastNodes[:0], g.batch.nodes...)
		return nil
	}
	// Nodes changed in the what-if view replace their mirror copies.
	for i := range g.batch.nodes {
		if ov, ok := overlay[le32(slots[4*i:])]; ok {
			g.batch.nodes[i] = &ov.ni
		}
	}
	return nil
}

// resolveSlots fills batch with the nodes of the little-endian u32 slots,
// reporting false if one names no node. It is kept out of line and free of
// allocations, so that TinyGo's GC bookkeeping (a shadow-stack store for
// every pointer a function that may allocate loads) stays out of its loop.
//
//go:noinline
func resolveSlots(batch, nodes []*plugin.NodeInfo, slots []byte) bool {
	slots = slots[:4*len(batch)]
	for i := range batch {
		b := slots[4*i : 4*i+4]
		s := uint(b[0]) | uint(b[1])<<8 | uint(b[2])<<16 | uint(b[3])<<24
		if s >= uint(len(nodes)) {
			return false
		}
		ni := nodes[s]
		if ni == nil {
			return false
		}
		batch[i] = ni
	}
	return true
}

// sameBytes reports whether a and b hold the same bytes, comparing eight
// at a time (TinyGo's string compare goes byte by byte).
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	i := 0
	for ; i+8 <= len(a); i += 8 {
		if le64(a[i:i+8]) != le64(b[i:i+8]) {
			return false
		}
	}
	for ; i < len(a); i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(le32(b)) | uint64(le32(b[4:]))<<32
}

func le32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

var (
	errSlotList    error = &guestError{"slot list truncated"}
	errUnknownSlot error = &guestError{"batch names unknown node slot"}
)

// maxEntries is the most distinct filter outcomes one reply can carry
// (u16 indexes, 0 meaning pass).
const maxEntries = 1<<16 - 1

func (g *Guest) filter(f plugin.FilterPlugin) error {
	if g.batch.byStatus == nil {
		g.batch.byStatus = map[*plugin.Status]uint16{}
		g.batch.byText = map[string]uint16{}
	}
	clear(g.batch.byStatus)
	clear(g.batch.byText)
	g.batch.entries = g.batch.entries[:0]

	batch := g.batch.nodes
	g.codec.enc.U32(uint32(len(batch)))
	at := len(g.codec.enc.B)
	g.codec.enc.B = grow(g.codec.enc.B, 2*len(batch))
	out := g.codec.enc.B[at : at+2*len(batch)]
	state, pod := &g.cycle.state, &g.cycle.pod
	// Plugins return shared statuses, so consecutive failing nodes mostly
	// return the very same one: remember the last to skip the maps.
	var last *plugin.Status
	var lastIx uint16
	for i, n := range batch {
		st := f.Filter(state, pod, n)
		if st == nil {
			continue // index 0, already zero
		}
		if st != last {
			ix, err := g.entryIndex(st)
			if err != nil {
				return err
			}
			last, lastIx = st, ix
		}
		if lastIx != 0 {
			o := out[2*i : 2*i+2]
			o[0] = byte(lastIx)
			o[1] = byte(lastIx >> 8)
		}
	}
	g.codec.enc.Uvarint(uint64(len(g.batch.entries)))
	for _, st := range g.batch.entries {
		g.codec.enc.U8(uint8(st.Code()))
		g.codec.enc.Strings(st.Reasons())
	}
	return nil
}

// entryIndex returns the reply entry of a filter status: 0 for success,
// else the index of the entry with the same code and message, added if
// new.
func (g *Guest) entryIndex(st *plugin.Status) (uint16, error) {
	if st.IsSuccess() {
		return 0, nil
	}
	ix, ok := g.batch.byStatus[st]
	if ok {
		return ix, nil
	}
	key := string(rune('0'+st.Code())) + "\x00" + st.Message()
	if ix, ok = g.batch.byText[key]; !ok {
		if len(g.batch.entries) == maxEntries {
			return 0, newError("more distinct filter reasons than one reply can carry")
		}
		g.batch.entries = append(g.batch.entries, st)
		ix = uint16(len(g.batch.entries))
		g.batch.byText[key] = ix
	}
	g.batch.byStatus[st] = ix
	return ix, nil
}

// grow extends b by n zero bytes, reusing its capacity.
func grow(b []byte, n int) []byte {
	b = extend(b, n)
	clear(b[len(b)-n:])
	return b
}

// extend extends b by n bytes, reusing its capacity; the new bytes are
// left as they were.
func extend(b []byte, n int) []byte {
	l := len(b)
	if cap(b)-l < n {
		nb := make([]byte, l, 2*(l+n))
		copy(nb, b)
		b = nb
	}
	return b[:l+n]
}

// score runs s over the batch and writes the reply: the scores after
// NormalizeScore and, with raw (the host records the decision), the
// scores before it, written out before NormalizeScore changes them in
// place.
func (g *Guest) score(s plugin.ScorePlugin, raw bool) error {
	batch := g.batch.nodes
	if cap(g.batch.scores) < len(batch) {
		g.batch.scores = make([]int64, len(batch))
	}
	scores := g.batch.scores[:len(batch)]
	g.batch.scores = scores
	state, pod := &g.cycle.state, &g.cycle.pod
	for i, n := range batch {
		v, st := s.Score(state, pod, n)
		if st != nil && !st.IsSuccess() {
			return newError("score node " + n.Name() + ": " + st.Message())
		}
		scores[i] = v
	}
	size := 8 * len(scores)
	if raw {
		size *= 2
	}
	g.codec.enc.U32(uint32(len(scores)))
	at := len(g.codec.enc.B)
	g.codec.enc.B = extend(g.codec.enc.B, size)
	if raw {
		putScores(g.codec.enc.B[at+8*len(scores):], scores)
	}
	if norm, ok := s.(plugin.ScoreNormalizer); ok {
		if st := norm.NormalizeScore(state, pod, scores); !st.IsSuccess() {
			return newError("normalize: " + st.Message())
		}
	}
	putScores(g.codec.enc.B[at:], scores)
	return nil
}

// putScores writes scores as little-endian u64s into out, which holds
// exactly 8 bytes per score. Out of line and allocation-free, like
// resolveSlots.
//
//go:noinline
func putScores(out []byte, scores []int64) {
	out = out[:8*len(scores)]
	for i, v := range scores {
		o := out[8*i : 8*i+8]
		o[0] = byte(v)
		o[1] = byte(v >> 8)
		o[2] = byte(v >> 16)
		o[3] = byte(v >> 24)
		o[4] = byte(v >> 32)
		o[5] = byte(v >> 40)
		o[6] = byte(v >> 48)
		o[7] = byte(v >> 56)
	}
}
