package abi

import "errors"

// SyncHeader appends the start of a sync request: flags and cluster size.
// The caller then appends the upsert count, the records (NodeRecord or
// pre-encoded bytes), the delete count and the deleted slots.
func (e *Encoder) SyncHeader(flags uint8, numNodes int) {
	e.U8(flags)
	e.Uvarint(uint64(numNodes))
}

// ParseSync walks a sync request, calling upsert for each node record
// (with the record's NodeInfo bytes, aliasing b), del for each deleted
// slot, and ns for each namespace of a SyncNamespaces table (ns may be nil
// to skip them). It returns the flags and the cluster size, or the first
// error.
func ParseSync(b []byte, upsert func(slot uint32, record []byte) error, del func(slot uint32) error, ns func(Namespace) error) (flags uint8, numNodes int, err error) {
	return ParseSyncTables(b, upsert, del, ns, nil)
}

// ParseSyncTables is ParseSync that also hands each PodDisruptionBudget of
// a SyncPDBs table (ABI v1.1) to pdb; pdb may be nil to skip them.
func ParseSyncTables(b []byte, upsert func(slot uint32, record []byte) error, del func(slot uint32) error, ns func(Namespace) error, pdb func(*PDB) error) (flags uint8, numNodes int, err error) {
	return ParseSyncWith(b, SyncHandlers{Upsert: upsert, Delete: del, Namespace: ns, PDB: pdb})
}

// SyncHandlers receive the parts of a sync request, in the order they
// come; a nil handler skips its part (Upsert and Delete are required).
type SyncHandlers struct {
	// Strings (ABI v1.5) gets a SyncStrings section first: the strings
	// numbered first+1 on (first 0 starts a new table). They are copies,
	// the caller may keep them.
	Strings   func(first int, ss []string) error
	Upsert    func(slot uint32, record []byte) error
	Delete    func(slot uint32) error
	Namespace func(Namespace) error
	PDB       func(*PDB) error
}

// ParseSyncWith walks a sync request, handing each part to h, and
// returns the flags and the cluster size, or the first error.
func ParseSyncWith(b []byte, h SyncHandlers) (flags uint8, numNodes int, err error) {
	upsert, del, ns, pdb := h.Upsert, h.Delete, h.Namespace, h.PDB
	d := NewDecoder(b)
	flags = d.U8()
	numNodes = int(d.Uvarint())
	if flags&SyncStrings != 0 {
		first := d.Uvarint()
		ss := d.Strings()
		if d.Err() == nil && first > maxTableStrings {
			d.failf("string table offset")
		}
		if d.Err() == nil && h.Strings != nil {
			if err := h.Strings(int(first), ss); err != nil {
				return flags, numNodes, err
			}
		}
	}
	n := d.Count(6)
	for i := 0; i < n && d.Err() == nil; i++ {
		slot := d.U32()
		rec := d.Bytes()
		if d.Err() != nil {
			break
		}
		if err := upsert(slot, rec); err != nil {
			return flags, numNodes, err
		}
	}
	m := d.Count(4)
	for i := 0; i < m && d.Err() == nil; i++ {
		slot := d.U32()
		if d.Err() != nil {
			break
		}
		if err := del(slot); err != nil {
			return flags, numNodes, err
		}
	}
	if flags&SyncNamespaces != 0 {
		k := d.Count(2)
		for i := 0; i < k && d.Err() == nil; i++ {
			var n Namespace
			n.Name = d.String()
			n.Labels = d.Labels()
			if d.Err() == nil && ns != nil {
				if err := ns(n); err != nil {
					return flags, numNodes, err
				}
			}
		}
	}
	if flags&SyncPDBs != 0 {
		k := d.Count(5)
		for i := 0; i < k && d.Err() == nil; i++ {
			var p PDB
			d.PDB(&p)
			if d.Err() == nil && pdb != nil {
				if err := pdb(&p); err != nil {
					return flags, numNodes, err
				}
			}
		}
	}
	if d.Err() != nil {
		return flags, numNodes, d.Err()
	}
	if d.Remaining() != 0 {
		return flags, numNodes, errors.New("abi: sync request has trailing bytes")
	}
	return flags, numNodes, nil
}

// ParseSlots reads a SlotList into dst (reusing its storage).
func ParseSlots(b []byte, dst []uint32) ([]uint32, error) {
	d := NewDecoder(b)
	n := int(d.U32())
	if d.Err() != nil || n > d.Remaining()/4 {
		return dst[:0], errors.New("abi: slot list truncated")
	}
	dst = dst[:0]
	for i := 0; i < n; i++ {
		dst = append(dst, d.U32())
	}
	return dst, nil
}

// FilterReply is the body of a filter reply: per node an index into
// Entries, 1-based (0 means the node passed).
type FilterReply struct {
	Indexes []uint16
	Entries []FilterEntry
}

// FilterReply appends a filter reply body.
func (e *Encoder) FilterReply(r *FilterReply) {
	e.U32(uint32(len(r.Indexes)))
	for _, ix := range r.Indexes {
		e.U16(ix)
	}
	e.Uvarint(uint64(len(r.Entries)))
	for i := range r.Entries {
		e.U8(uint8(r.Entries[i].Code))
		e.Strings(r.Entries[i].Reasons)
	}
}

// filterReply names the reply in a LimitError.
const filterReply = "filter reply"

// FilterReply reads a filter reply body to a call over nodes nodes into
// r, reusing its slices, and checks that every index refers to an entry.
// It holds at most one verdict and one entry per node sent, and each
// entry at most MaxReasons reasons (see LimitError).
func (d *Decoder) FilterReply(r *FilterReply, nodes int) {
	n := d.u32CountUpTo(2, top(nodes, filterReply, "verdicts", "nodes sent"))
	r.Indexes = r.Indexes[:0]
	maxIx := uint16(0)
	for i := 0; i < n; i++ {
		ix := d.U16()
		maxIx = max(maxIx, ix)
		r.Indexes = append(r.Indexes, ix)
	}
	m := d.countUpTo(2, top(nodes, filterReply, "entries", "nodes sent"))
	r.Entries = r.Entries[:0]
	for i := 0; i < m; i++ {
		var en FilterEntry
		en.Code = Code(d.U8())
		en.Reasons = d.reasons(filterReply, "entry", int64(i+1))
		r.Entries = append(r.Entries, en)
	}
	if d.Err() == nil && int(maxIx) > len(r.Entries) {
		d.failf("filter reply index refers to a missing entry")
	}
}

// ScoreReply reads a score reply body to a call over nodes nodes into
// dst (reusing its storage): at most one score per node sent (see
// LimitError).
func (d *Decoder) ScoreReply(dst []int64, nodes int) []int64 {
	n := d.u32CountUpTo(8, top(nodes, "score reply", "scores", "nodes sent"))
	dst = dst[:0]
	for i := 0; i < n; i++ {
		dst = append(dst, int64(d.U64()))
	}
	return dst
}

// RawScores reads the scores before normalisation that follow a score
// reply's scores when the request carried ScoreRaw (v1.8): exactly nodes
// u64s, any int64 values (a raw score has no bounds).
func (d *Decoder) RawScores(dst []int64, nodes int) []int64 {
	dst = dst[:0]
	if nodes > d.Remaining()/8 {
		d.failf("score reply lacks raw scores")
		return dst
	}
	for i := 0; i < nodes; i++ {
		dst = append(dst, int64(d.U64()))
	}
	return dst
}

// ScoreReply appends a score reply body: the scores and, when raw is not
// nil (the request carried ScoreRaw), the scores before normalisation, one
// per score.
func (e *Encoder) ScoreReply(scores, raw []int64) {
	e.U32(uint32(len(scores)))
	for _, v := range scores {
		e.U64(uint64(v))
	}
	for _, v := range raw {
		e.U64(uint64(v))
	}
}
