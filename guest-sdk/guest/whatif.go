package guest

import (
	"unsafe"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// The what-if view: for the current cycle, some nodes are replaced by
// copies with pods added or removed (nominated pods, preemption victims),
// without touching the mirror. push_state saves the view and the cycle
// state; pop_state restores them. Overlay nodes are never changed after
// they are made while a saved view may hold them (a further change makes a
// new copy), so saving the view is a shallow copy of the overlay map.
// Copies made at the current level (since the push_state that began it)
// belong to no saved view and are changed in place: preemption's
// dry runs change a node many times between one push and its pop, and a
// copy per change would be most of their cost.
//
// Nothing here allocates in steady state: copies, maps, and the bytes and
// lists of the pods edits carry (abi.Slab) come from pools that each cycle
// reuses, so a dry run does not make TinyGo's collector walk the whole
// mirror again and again.

// viewNode is a node of the what-if view: a copy of a mirror node with
// pods added or removed, and the pods edits took off it in this cycle and
// did not put back (edit_view's restore puts them back without decoding).
type viewNode struct {
	ni      plugin.NodeInfo
	removed []abi.Pod
	// level is the view level the copy was made at (whatIfView.level then);
	// while it is the current level, the copy is changed in place.
	level uint64
	free  bool // on the free list
}

// whatIfView is the cycle's what-if view and the pools it draws on. The
// host's preemption dry runs and nominated pods put every module with a
// Filter plugin under a view, so unlike the eviction, vpod and victim
// state it is held by value: a pointer made on first use would cost every
// such module its checks and allocation.
type whatIfView struct {
	overlay map[uint32]*viewNode // the nodes the view changed, by slot
	saved   []savedView
	level   uint64                 // the current view level's id
	levels  uint64                 // ids handed out so far
	views   []*viewNode            // free copies, reused
	maps    []map[uint32]*viewNode // free overlay maps, reused
	slab    abi.Slab               // the pods edits carried, until the cycle ends
	scratch abi.Pod                // a pod being added or removed
}

// savedView is a view push_state saved, with the cycle state then.
type savedView struct {
	overlay map[uint32]*viewNode
	state   plugin.CycleState // its storage is reused by later pushes
	level   uint64
}

// maxViewDepth bounds nested push_state calls.
const maxViewDepth = 64

// node returns the node in slot as the current view has it, or nil.
func (g *Guest) node(slot uint32) *plugin.NodeInfo {
	if n, ok := g.view.overlay[slot]; ok {
		return &n.ni
	}
	if int(slot) < len(g.mirror.nodes) {
		return g.mirror.nodes[slot]
	}
	return nil
}

// nextLevel starts a new view level: every existing copy now may be held
// by a saved view, so the next change to a node copies it.
func (w *whatIfView) nextLevel() {
	w.levels++
	w.level = w.levels
}

func (g *Guest) pushState() error {
	w := &g.view
	if len(w.saved) == maxViewDepth {
		return newError("push_state nested too deeply")
	}
	ov := w.takeMap()
	for k, v := range w.overlay {
		ov[k] = v
	}
	n := len(w.saved)
	if n == cap(w.saved) {
		w.saved = append(w.saved, savedView{})
	}
	w.saved = w.saved[:n+1]
	sv := &w.saved[n]
	sv.overlay, sv.level = ov, w.level
	g.cycle.state.CloneInto(&sv.state)
	w.nextLevel()
	return nil
}

func (g *Guest) popState() error {
	w := &g.view
	if len(w.saved) == 0 {
		return newError("pop_state without push_state")
	}
	n := len(w.saved)
	sv := &w.saved[n-1]
	// Copies made at this level are in no saved view: they go back to the
	// pool with the map.
	for _, c := range w.overlay {
		if c.level == w.level {
			w.freeView(c)
		}
	}
	w.putMap(w.overlay)
	w.overlay, sv.overlay = sv.overlay, nil
	// The saved state becomes the current one; the current one's storage
	// stays in the slot for the next push.
	g.cycle.state, sv.state = sv.state, g.cycle.state
	// Back at the saved level: its copies are in no other saved view
	// (shallower ones were saved before it began, deeper ones are gone),
	// so they are changed in place again.
	w.level = sv.level
	w.saved = w.saved[:n-1]
	return nil
}

// resetView drops the view at the start of a cycle, and with it every
// pod edits carried: their storage is handed out again.
func (g *Guest) resetView() { g.view.reset() }

// reset empties the view, keeping its pools.
func (w *whatIfView) reset() {
	w.slab.Reset()
	w.dropMap(w.overlay)
	w.overlay = nil
	for i := range w.saved {
		w.dropMap(w.saved[i].overlay)
		w.saved[i].overlay = nil
	}
	w.saved = w.saved[:0]
	w.nextLevel()
}

// dropMap frees every copy in m and pools m.
func (w *whatIfView) dropMap(m map[uint32]*viewNode) {
	if m == nil {
		return
	}
	for _, v := range m {
		w.freeView(v)
	}
	w.putMap(m)
}

func (w *whatIfView) takeMap() map[uint32]*viewNode {
	if n := len(w.maps); n > 0 {
		m := w.maps[n-1]
		w.maps = w.maps[:n-1]
		return m
	}
	return map[uint32]*viewNode{}
}

func (w *whatIfView) putMap(m map[uint32]*viewNode) {
	if m == nil {
		return
	}
	clear(m)
	w.maps = append(w.maps, m)
}

func (w *whatIfView) freeView(v *viewNode) {
	if !v.free {
		v.free = true
		w.views = append(w.views, v)
	}
}

var errNoNode error = &guestError{"unknown node slot"}

// editable returns the copy of the node in slot that the current level
// may change in place, making it (from the pool) if needed.
func (g *Guest) editable(slot uint32) (*viewNode, error) {
	w := &g.view
	ov, inView := w.overlay[slot]
	if inView && ov.level == w.level {
		return ov, nil
	}
	var base *plugin.NodeInfo
	var removed []abi.Pod
	if inView {
		base, removed = &ov.ni, ov.removed
	} else if int(slot) < len(g.mirror.nodes) {
		base = g.mirror.nodes[slot]
	}
	if base == nil {
		return nil, errNoNode
	}
	var v *viewNode
	if n := len(w.views); n > 0 {
		v = w.views[n-1]
		w.views[n-1] = nil
		w.views = w.views[:n-1]
	} else {
		v = new(viewNode)
	}
	v.copyOf(base, removed)
	v.level, v.free = w.level, false
	if w.overlay == nil {
		w.overlay = w.takeMap()
	}
	w.overlay[slot] = v
	return v, nil
}

// copyOf makes v a copy of base (and its removed pods) in v's own arrays,
// which AddPod and RemovePodOwned then change in place.
func (v *viewNode) copyOf(base *plugin.NodeInfo, removed []abi.Pod) {
	own := &v.ni
	scal, nzScal := own.Requested.Scalars[:0], own.NonZeroRequested.Scalars[:0]
	ports, pods, groups := own.UsedPorts[:0], own.Pods[:0], own.PodGroups[:0]
	aff, anti := own.PodsWithAffinity[:0], own.PodsWithRequiredAntiAffinity[:0]
	copy(unsafe.Slice(&v.ni, 1), unsafe.Slice(base, 1)) // one memory copy (see copyPod)
	v.ni.Requested.Scalars = append(scal, base.Requested.Scalars...)
	v.ni.NonZeroRequested.Scalars = append(nzScal, base.NonZeroRequested.Scalars...)
	v.ni.UsedPorts = append(ports, base.UsedPorts...)
	v.ni.Pods = append(pods, base.Pods...)
	v.ni.PodGroups = append(groups, base.PodGroups...)
	v.ni.PodsWithAffinity, v.ni.PodsWithRequiredAntiAffinity = aff, anti
	v.ni.IndexPods() // they point into Pods, now v's own
	v.removed = append(v.removed[:0], removed...)
}

// changePod applies add_pod (add true) or remove_pod to the node in slot:
// the same work as edit_view's add and remove_pod edits, one at a time.
func (g *Guest) changePod(slot uint32, in []byte, add bool) error {
	if err := g.canEdit(); err != nil {
		return err
	}
	e := abi.RawViewEdit{Slot: slot, Op: abi.EditRemovePod, Pod: in}
	if add {
		e.Op = abi.EditAdd
	}
	return g.applyEdit(&e)
}

// namedExt is a plugin with PreFilter extensions.
type namedExt struct {
	name string
	ext  plugin.PreFilterExtensions
}

// tellExtensions tells every plugin with PreFilter extensions that p was
// added to (or removed from) n, so state computed in PreFilter follows.
func (g *Guest) tellExtensions(p *abi.Pod, n *viewNode, add bool) error {
	for _, e := range g.exts {
		var st *plugin.Status
		if add {
			st = e.ext.AddPod(&g.cycle.state, &g.cycle.pod, p, &n.ni)
		} else {
			st = e.ext.RemovePod(&g.cycle.state, &g.cycle.pod, p, &n.ni)
		}
		if !st.IsSuccess() {
			return newError(e.name + ": " + st.Message())
		}
	}
	return nil
}
