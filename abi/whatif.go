package abi

// Batched view edits (ABI v1.5). A preemption dry run changes the what-if
// view hundreds of times per node batch: every victim removed, given back
// one at a time, removed again when the preemptor no longer fits. One
// add_pod or remove_pod call per change made the boundary crossings and
// the decoding of whole pods most of the dry run's cost in Wasm.
// FuncEditView carries any number of changes, to any nodes, in one call,
// and names pods the guest already holds by UID, so most changes decode no
// pod at all.

// FuncEditView (ABI v1.5): arg 0; input = a ViewEdits; applies the edits,
// in order, to the cycle's what-if view, as add_pod and remove_pod would
// (aggregates, PreFilter extensions). Replies OK, or an error naming the
// first edit that could not be applied; the edits before it stay applied
// (the host restores the view with pop_state, or the next cycle drops it).
const FuncEditView Func = 22

// EditOp is what one ViewEdit does.
type EditOp uint8

const (
	// EditRemove takes off the node a pod that is on it in the current
	// view (mirrored in the node record, added, or restored), named by
	// UID: nothing is decoded.
	EditRemove EditOp = 1
	// EditRemovePod takes off the node a pod the node record does not
	// carry (a module that mirrors no pods, or not this one): the pod
	// travels whole, as in remove_pod.
	EditRemovePod EditOp = 2
	// EditAdd puts a pod that is not on the node onto it (a nominated
	// pod), as add_pod.
	EditAdd EditOp = 3
	// EditRestore puts back a pod that an EditRemove or EditRemovePod took
	// off the same node earlier in this cycle and that no edit has put
	// back since, named by UID: the guest kept it, so nothing is decoded.
	EditRestore EditOp = 4

	editOpMax = EditRestore
)

// String names the op for error messages.
func (o EditOp) String() string {
	switch o {
	case EditRemove:
		return "remove"
	case EditRemovePod:
		return "remove_pod"
	case EditAdd:
		return "add"
	case EditRestore:
		return "restore"
	}
	return "op(" + Itoa(int64(o)) + ")"
}

// HasPod reports whether the op carries a whole pod (else a UID).
func (o EditOp) HasPod() bool { return o == EditRemovePod || o == EditAdd }

// ViewEdit is one change to a node of the what-if view. UID is set for the
// ops that name a pod (EditRemove, EditRestore), Pod for those that carry
// one (EditRemovePod, EditAdd).
type ViewEdit struct {
	Slot uint32
	Op   EditOp
	UID  string
	Pod  *Pod
}

// ViewEdits appends the input of FuncEditView:
//
//	ViewEdits = list<(slot u32, op u8, uid string | pod bytes<Pod>)>
//
// A carried pod is length-prefixed (uvarint byte count, then exactly that
// many bytes of Pod), so a guest can keep the bytes and decode them in
// place, or skip them.
func (e *Encoder) ViewEdits(edits []ViewEdit) {
	e.Uvarint(uint64(len(edits)))
	for i := range edits {
		e.ViewEdit(&edits[i])
	}
}

// ViewEdit appends one edit of a ViewEdits (after its count).
func (e *Encoder) ViewEdit(v *ViewEdit) {
	e.U32(v.Slot)
	e.U8(uint8(v.Op))
	if v.Op.HasPod() {
		e.lengthPrefixed(func() { e.Pod(v.Pod) })
		return
	}
	e.String(v.UID)
}

// RawViewEdit is one edit as a guest reads it: the carried pod, if any,
// left as its encoded bytes (aliasing the input) to decode as it likes.
type RawViewEdit struct {
	Slot uint32
	Op   EditOp
	UID  string
	Pod  []byte
}

// ViewEditsCount reads the count of a ViewEdits.
func (d *Decoder) ViewEditsCount() int { return d.Count(6) }

// RawViewEdit reads one edit of a ViewEdits (after its count). An unknown
// op is an error; a carried pod is not decoded.
func (d *Decoder) RawViewEdit(v *RawViewEdit) {
	v.Slot = d.U32()
	v.Op = EditOp(d.U8())
	v.UID, v.Pod = "", nil
	if d.err != nil {
		return
	}
	if v.Op < EditRemove || v.Op > editOpMax {
		d.off--
		d.failf("unknown view edit op")
		return
	}
	if v.Op.HasPod() {
		v.Pod = d.Bytes()
		return
	}
	v.UID = d.String()
}

// DecodePod decodes the whole of b, a carried pod's bytes, into p with the
// decoder's settings (aliasing, the writer's minor version); trailing
// bytes are an error.
func (d *Decoder) DecodePod(b []byte, p *Pod) error {
	sub := Decoder{b: b, alias: d.alias, peer: d.peer}
	sub.Pod(p)
	if sub.err == nil && sub.Remaining() != 0 {
		sub.failf("trailing bytes after pod")
	}
	return sub.err
}

// ViewEdits reads a whole ViewEdits into dst (reusing its storage),
// decoding carried pods: for tests and for guests that prefer plain
// values to RawViewEdit.
func (d *Decoder) ViewEdits(dst []ViewEdit) []ViewEdit {
	n := d.ViewEditsCount()
	dst = dst[:0]
	var raw RawViewEdit
	for i := 0; i < n && d.err == nil; i++ {
		d.RawViewEdit(&raw)
		if d.err != nil {
			break
		}
		v := ViewEdit{Slot: raw.Slot, Op: raw.Op, UID: raw.UID}
		if raw.Op.HasPod() {
			v.Pod = new(Pod)
			if err := d.DecodePod(raw.Pod, v.Pod); err != nil {
				d.Fail(err)
				break
			}
		}
		dst = append(dst, v)
	}
	if d.err != nil {
		return dst[:0]
	}
	return dst
}
