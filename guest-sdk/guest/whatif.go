package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// The what-if view: for the current cycle, some nodes are replaced by
// copies with pods added or removed (nominated pods, preemption victims),
// without touching the mirror. push_state saves the view and the cycle
// state; pop_state restores them. Overlay nodes are never changed after
// they are made while a saved view may hold them (a further change makes a
// new copy), so saving the view is a shallow copy of the overlay map.
// Copies made since the last push_state belong to no saved view and are
// changed in place: preemption's dry runs change a node many times between
// one push and its pop, and a copy per change would be most of their cost.

type savedView struct {
	overlay map[uint32]*plugin.NodeInfo
	state   *plugin.CycleState
}

// maxViewDepth bounds nested push_state calls.
const maxViewDepth = 64

// node returns the node in slot as the current view has it, or nil.
func (g *Guest) node(slot uint32) *plugin.NodeInfo {
	if n, ok := g.overlay[slot]; ok {
		return n
	}
	if int(slot) < len(g.nodes) {
		return g.nodes[slot]
	}
	return nil
}

func (g *Guest) pushState() error {
	if len(g.saved) == maxViewDepth {
		return newError("push_state nested too deeply")
	}
	ov := make(map[uint32]*plugin.NodeInfo, len(g.overlay))
	for k, v := range g.overlay {
		ov[k] = v
	}
	g.saved = append(g.saved, savedView{overlay: ov, state: g.state.Clone()})
	clear(g.fresh) // every overlay node is now held by the saved view too
	return nil
}

func (g *Guest) popState() error {
	n := len(g.saved)
	if n == 0 {
		return newError("pop_state without push_state")
	}
	sv := g.saved[n-1]
	g.saved = g.saved[:n-1]
	g.overlay = sv.overlay
	g.state = *sv.state
	clear(g.fresh) // restored nodes may be held by shallower saved views
	return nil
}

// resetView drops the view at the start of a cycle.
func (g *Guest) resetView() {
	g.overlay = nil
	g.saved = g.saved[:0]
	clear(g.fresh)
}

// changePod applies add_pod (add true) or remove_pod to the node in slot.
func (g *Guest) changePod(slot uint32, in []byte, add bool) error {
	if !g.inited {
		return newError("add_pod/remove_pod before init")
	}
	if !g.havePod {
		return newError("add_pod/remove_pod outside a cycle")
	}
	base := g.node(slot)
	if base == nil {
		return errUnknownSlot
	}
	// A removed pod is only read during this call: decode it into scratch
	// space with strings aliasing the input. An added pod is kept.
	var p *abi.Pod
	var d abi.Decoder
	if add {
		p = new(abi.Pod)
		d.Reset(in, false)
	} else {
		p = &g.scratch
		d.Reset(in, true)
	}
	d.Pod(p)
	if d.Err() != nil {
		return d.Err()
	}
	g.numberPod(p)
	n := base
	if !g.fresh[slot] {
		n = &plugin.NodeInfo{NodeInfo: base.NodeInfo.Clone(), Slot: slot}
		if g.overlay == nil {
			g.overlay = map[uint32]*plugin.NodeInfo{}
		}
		if g.fresh == nil {
			g.fresh = map[uint32]bool{}
		}
		g.overlay[slot] = n
		g.fresh[slot] = true
	}
	if add {
		n.AddPod(p)
	} else {
		n.RemovePod(p)
	}
	n.IndexPods()
	for _, pl := range g.plugins {
		ext, ok := pl.(plugin.PreFilterExtensions)
		if !ok {
			continue
		}
		var st *plugin.Status
		if add {
			st = ext.AddPod(&g.state, &g.pod, p, n)
		} else {
			st = ext.RemovePod(&g.state, &g.pod, p, n)
		}
		if !st.IsSuccess() {
			return newError(pl.Name() + ": " + st.Message())
		}
	}
	return nil
}
