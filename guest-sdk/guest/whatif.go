package guest

import (
	"errors"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// The what-if view: for the current cycle, some nodes are replaced by
// copies with pods added or removed (nominated pods, preemption victims),
// without touching the mirror. push_state saves the view and the cycle
// state; pop_state restores them. Overlay nodes are never changed after
// they are made (a further change makes a new copy), so saving the view
// is a shallow copy of the overlay map.

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
		return errors.New("push_state nested too deeply")
	}
	ov := make(map[uint32]*plugin.NodeInfo, len(g.overlay))
	for k, v := range g.overlay {
		ov[k] = v
	}
	g.saved = append(g.saved, savedView{overlay: ov, state: g.state.Clone()})
	return nil
}

func (g *Guest) popState() error {
	n := len(g.saved)
	if n == 0 {
		return errors.New("pop_state without push_state")
	}
	sv := g.saved[n-1]
	g.saved = g.saved[:n-1]
	g.overlay = sv.overlay
	g.state = *sv.state
	return nil
}

// resetView drops the view at the start of a cycle.
func (g *Guest) resetView() {
	g.overlay = nil
	g.saved = g.saved[:0]
}

// changePod applies add_pod (add true) or remove_pod to the node in slot.
func (g *Guest) changePod(slot uint32, in []byte, add bool) error {
	if !g.inited {
		return errors.New("add_pod/remove_pod before init")
	}
	if !g.havePod {
		return errors.New("add_pod/remove_pod outside a cycle")
	}
	base := g.node(slot)
	if base == nil {
		return errUnknownSlot
	}
	p := new(abi.Pod)
	d := abi.NewDecoder(in)
	d.Pod(p)
	if d.Err() != nil {
		return d.Err()
	}
	n := &plugin.NodeInfo{NodeInfo: base.NodeInfo.Clone(), Slot: slot}
	if add {
		n.AddPod(p)
	} else {
		n.RemovePod(p)
	}
	n.IndexPods()
	if g.overlay == nil {
		g.overlay = map[uint32]*plugin.NodeInfo{}
	}
	g.overlay[slot] = n
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
			return errors.New(pl.Name() + ": " + st.Message())
		}
	}
	return nil
}
