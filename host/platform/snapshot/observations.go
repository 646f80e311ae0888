package snapshot

import (
	"bytes"

	"github.com/wasmsched/wasmsched/abi"
)

// Observations is the eviction view of every node (ABI v1.2): for each
// slot, the encoded NodeObservation (conditions, usage, and per pod its
// QoS, flags, annotations and usage) stamped with a version. Eviction
// policies' instances keep a copy per slot; FuncObserve sends them only
// the records whose version is newer than what they have.
//
// It is kept apart from the node mirror on purpose: usage changes with
// every metrics scrape, and scheduling instances (which never read it)
// must not resync a node for that. A record is parallel to the node's
// mirrored pods, so whoever fills it must build it from the same
// snapshot the policies' mirrors are synced from.
//
// Not safe for concurrent mutation; the eviction coordinator builds it
// once per round and then only reads it.
type Observations struct {
	version uint64
	recs    []observation
}

type observation struct {
	rec     []byte
	version uint64
	set     bool
}

// NewObservations returns an empty table.
func NewObservations() *Observations { return &Observations{} }

// Set records a node's observation, with a new version only if its
// encoding differs from the slot's current one.
func (o *Observations) Set(slot uint32, obs *abi.NodeObservation) {
	for int(slot) >= len(o.recs) {
		o.recs = append(o.recs, observation{})
	}
	r := &o.recs[slot]
	e := abi.Encoder{B: make([]byte, 0, len(r.rec))}
	e.NodeObservation(obs)
	if r.set && bytes.Equal(r.rec, e.B) {
		return
	}
	o.version++
	r.rec, r.version, r.set = e.B, o.version, true
}

// Delete forgets a slot's observation (its node is gone; the guest drops
// its copy with the node). A node taking the slot later is sent afresh.
func (o *Observations) Delete(slot uint32) {
	if int(slot) < len(o.recs) {
		o.recs[slot] = observation{}
	}
}

// Version is the newest version stamped on any record.
func (o *Observations) Version() uint64 { return o.version }

// Len is the number of slots with an observation.
func (o *Observations) Len() int {
	n := 0
	for i := range o.recs {
		if o.recs[i].set {
			n++
		}
	}
	return n
}

// EncodeSince appends the FuncObserve request for a guest that has every
// record up to version since (0: none, and the guest drops what it has).
func (o *Observations) EncodeSince(e *abi.Encoder, since uint64) {
	var flags uint8
	if since == 0 {
		flags |= abi.ObserveReset
	}
	e.U8(flags)
	n := 0
	for i := range o.recs {
		if o.recs[i].set && o.recs[i].version > since {
			n++
		}
	}
	e.Uvarint(uint64(n))
	for i := range o.recs {
		if r := &o.recs[i]; r.set && r.version > since {
			e.U32(uint32(i))
			e.Bytes(r.rec)
		}
	}
}
