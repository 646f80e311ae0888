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
	// level is the view level the copy was made at (Guest.level then);
	// while it is the current level, the copy is changed in place.
	level uint64
	free  bool // on the free list
}

type savedView struct {
	overlay map[uint32]*viewNode
	state   plugin.CycleState // its storage is reused by later pushes
	level   uint64
}

// maxViewDepth bounds nested push_state calls.
const maxViewDepth = 64

// node returns the node in slot as the current view has it, or nil.
func (g *Guest) node(slot uint32) *plugin.NodeInfo {
	if n, ok := g.overlay[slot]; ok {
		return &n.ni
	}
	if int(slot) < len(g.mirror.nodes) {
		return g.mirror.nodes[slot]
	}
	return nil
}

// nextLevel starts a new view level: every existing copy now may be held
// by a saved view, so the next change to a node copies it.
func (g *Guest) nextLevel() {
	g.levels++
	g.level = g.levels
}

func (g *Guest) pushState() error {
	if len(g.saved) == maxViewDepth {
		return newError("push_state nested too deeply")
	}
	ov := g.takeMap()
	for k, v := range g.overlay {
		ov[k] = v
	}
	n := len(g.saved)
	if n == cap(g.saved) {
		g.saved = append(g.saved, savedView{})
	}
	g.saved = g.saved[:n+1]
	sv := &g.saved[n]
	sv.overlay, sv.level = ov, g.level
	g.cycle.state.CloneInto(&sv.state)
	g.nextLevel()
	return nil
}

func (g *Guest) popState() error {
	n := len(g.saved)
	if n == 0 {
		return newError("pop_state without push_state")
	}
	sv := &g.saved[n-1]
	// Copies made at this level are in no saved view: they go back to the
	// pool with the map.
	for _, v := range g.overlay {
		if v.level == g.level {
			g.freeView(v)
		}
	}
	g.putMap(g.overlay)
	g.overlay, sv.overlay = sv.overlay, nil
	// The saved state becomes the current one; the current one's storage
	// stays in the slot for the next push.
	g.cycle.state, sv.state = sv.state, g.cycle.state
	// Back at the saved level: its copies are in no other saved view
	// (shallower ones were saved before it began, deeper ones are gone),
	// so they are changed in place again.
	g.level = sv.level
	g.saved = g.saved[:n-1]
	return nil
}

// resetView drops the view at the start of a cycle, and with it every
// pod edits carried: their storage is handed out again.
func (g *Guest) resetView() {
	g.slab.Reset()
	g.dropMap(g.overlay)
	g.overlay = nil
	for i := range g.saved {
		g.dropMap(g.saved[i].overlay)
		g.saved[i].overlay = nil
	}
	g.saved = g.saved[:0]
	g.nextLevel()
}

// dropMap frees every copy in m and pools m.
func (g *Guest) dropMap(m map[uint32]*viewNode) {
	if m == nil {
		return
	}
	for _, v := range m {
		g.freeView(v)
	}
	g.putMap(m)
}

func (g *Guest) takeMap() map[uint32]*viewNode {
	if n := len(g.maps); n > 0 {
		m := g.maps[n-1]
		g.maps = g.maps[:n-1]
		return m
	}
	return map[uint32]*viewNode{}
}

func (g *Guest) putMap(m map[uint32]*viewNode) {
	if m == nil {
		return
	}
	clear(m)
	g.maps = append(g.maps, m)
}

func (g *Guest) freeView(v *viewNode) {
	if !v.free {
		v.free = true
		g.views = append(g.views, v)
	}
}

var errNoNode error = &guestError{"unknown node slot"}

// editable returns the copy of the node in slot that the current level
// may change in place, making it (from the pool) if needed.
func (g *Guest) editable(slot uint32) (*viewNode, error) {
	ov, inView := g.overlay[slot]
	if inView && ov.level == g.level {
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
	if n := len(g.views); n > 0 {
		v = g.views[n-1]
		g.views[n-1] = nil
		g.views = g.views[:n-1]
	} else {
		v = new(viewNode)
	}
	v.copyOf(base, removed)
	v.level, v.free = g.level, false
	if g.overlay == nil {
		g.overlay = g.takeMap()
	}
	g.overlay[slot] = v
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
