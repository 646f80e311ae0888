package abi

// NodeLists is storage for the lists of a mirror's node records — node
// labels, taints, images and their names, pod groups and their labels —
// with each kind of list kept in chunks of its own, so that the labels
// of consecutive nodes lie next to one another, as do their images, and
// so on. Plugins walk one kind of list across thousands of nodes per
// cycle: laid out by kind, those walks read memory in order, where lists
// allocated one record at a time are interleaved with everything else
// the record holds. In a TinyGo guest, whose allocator hands out memory
// in allocation order, that interleaving put a cache miss on the first
// label, image or group of nearly every node (docs/PERFORMANCE.md).
//
// Chunks are never reused: a list handed out stays valid for as long as
// anything refers to it, and a chunk is freed by the garbage collector
// once no list in it is used. Nodes replaced by later syncs leave holes
// in the chunks; the owner, which knows how much of what it took is still
// live (Taken counts what was handed out), lays the mirror out again once
// the holes outweigh the lists: Restart, then decode every node in order.
type NodeLists struct {
	labels      listChunk[Label]
	taints      listChunk[Taint]
	images      listChunk[ImageState]
	imageNames  listChunk[string]
	imageIDs    listChunk[StrID]
	groups      listChunk[PodGroup]
	groupLabels listChunk[Label]
	taken       int // elements handed out since Restart
	// sets numbers the label sets of pod groups by their StrIDs
	// (PodGroup.LabelsID), keyed by the IDs' bytes. Restart starts the
	// numbering over: every live node is decoded again after it.
	sets map[string]uint32
}

// ListSource is where a Decoder takes the lists of node records from
// (UseNodeLists). NodeLists is its one implementation; it is an
// interface so that a module that never uses NodeLists does not carry
// their code (TinyGo links the methods of a type only once it is
// converted to an interface that has them): plugins-wasm/examples/sizecheck
// keeps a small module small.
type ListSource interface {
	nodeLabels(n int) Labels
	taintList(n int) []Taint
	imageList(n int) []ImageState
	nameList(n int) []string
	idList(n int) []StrID
	groupList(n int) []PodGroup
	groupLabelList(n int) Labels
}

// labelSets is what numbers pod groups' label sets (NodeLists does). An
// interface of its own, asked for with a type assertion, so that the
// methods of ListSource (and the names of their dispatch functions, which
// spell out the interface) stay as they were for modules without lists.
type labelSets interface {
	labelSet(ls Labels) uint32
}

func (l *NodeLists) nodeLabels(n int) Labels      { return take(l, &l.labels, n) }
func (l *NodeLists) taintList(n int) []Taint      { return take(l, &l.taints, n) }
func (l *NodeLists) imageList(n int) []ImageState { return take(l, &l.images, n) }
func (l *NodeLists) nameList(n int) []string      { return take(l, &l.imageNames, n) }
func (l *NodeLists) idList(n int) []StrID         { return take(l, &l.imageIDs, n) }
func (l *NodeLists) groupList(n int) []PodGroup   { return take(l, &l.groups, n) }
func (l *NodeLists) groupLabelList(n int) Labels  { return take(l, &l.groupLabels, n) }

// maxSetLabels is the most labels of a numbered label set; a group with
// more is not numbered, and plugins match it every time.
const maxSetLabels = 6

// maxLabelSets bounds the label sets numbered between two Restarts; past
// it, new sets are not numbered.
const maxLabelSets = 1 << 16

// labelSet numbers ls, whose labels are all numbered (decoded from an
// interned record); 0 when it cannot. Equal StrIDs are equal strings for
// as long as a string table lives, and a table is replaced only with the
// whole mirror, so equal numbers in one mirror are equal label sets.
func (l *NodeLists) labelSet(ls Labels) uint32 {
	if len(ls) > maxSetLabels {
		return 0
	}
	var key [8 * maxSetLabels]byte
	n := 0
	for i := range ls {
		k, v := ls[i].KeyID, ls[i].ValueID
		if k == 0 || v == 0 {
			return 0
		}
		key[n], key[n+1], key[n+2], key[n+3] = byte(k), byte(k>>8), byte(k>>16), byte(k>>24)
		key[n+4], key[n+5], key[n+6], key[n+7] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
		n += 8
	}
	if id, ok := l.sets[aliasString(key[:n])]; ok {
		return id
	}
	if len(l.sets) >= maxLabelSets {
		return 0
	}
	if l.sets == nil {
		l.sets = make(map[string]uint32)
	}
	id := uint32(len(l.sets) + 1)
	l.sets[string(key[:n])] = id
	return id
}

// listChunk hands out runs of T from one chunk at a time; a full chunk
// is left to the lists cut from it.
type listChunk[T any] struct{ free []T }

// nodeListChunk is the number of elements of a chunk.
const nodeListChunk = 512

// take returns n zeroed elements of c whose capacity is n, so that
// appending to one list never writes into the next; nil when n is 0, as
// decoders return for empty lists.
func take[T any](l *NodeLists, c *listChunk[T], n int) []T {
	if n == 0 {
		return nil
	}
	l.taken += n
	if len(c.free) < n {
		c.free = make([]T, max(nodeListChunk, n))
	}
	s := c.free[:n:n]
	c.free = c.free[n:]
	return s
}

// UseNodeLists makes Node and NodeInfo take their lists from l (nil:
// allocate each). Lists decoded this way are capped at their length.
func (d *Decoder) UseNodeLists(l ListSource) { d.lists = l }

// Taken is the number of list elements handed out since Restart.
func (l *NodeLists) Taken() int { return l.taken }

// Restart forgets every chunk: lists decoded from now on go to fresh
// ones. The old chunks are left to the garbage collector; lists of them
// still held (a node not decoded again, a cycle's view, a plugin's
// state) stay valid and unchanged.
func (l *NodeLists) Restart() { *l = NodeLists{} }
