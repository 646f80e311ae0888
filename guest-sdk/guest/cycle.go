package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// cycle is the scheduling cycle under way: the pod the host is placing,
// decoded once and numbered against the mirror's string table, and the
// CycleState its plugins share from PreFilter to Score. It is what every
// per-plugin call runs against.
type cycle struct {
	pod     abi.Pod
	havePod bool // pod holds the cycle's pod: a cycle began and decoded
	state   plugin.CycleState
	// current names the plugin being run, by any call, for log lines.
	current string
}

// startCycle decodes the cycle's pod and starts its cycle: a fresh
// CycleState and no what-if view.
func (g *Guest) startCycle(in []byte) error {
	g.codec.dec.Reset(in, false)
	g.codec.dec.CycleRequest(&g.cycle.pod)
	if err := g.codec.dec.Err(); err != nil {
		g.cycle.havePod = false
		return err
	}
	g.cycle.havePod = true
	g.mirror.numberPod(&g.cycle.pod)
	g.cycle.state.Reset()
	g.resetView()
	return nil
}

// cyclePlugin checks that a per-plugin call fn may run now (after init,
// inside a cycle) and returns the plugin it addresses.
func (g *Guest) cyclePlugin(fn abi.Func, arg uint32) (plugin.Plugin, error) {
	return g.pluginAt(fn, arg, true)
}

// pluginAt checks that a per-plugin call fn may run now (after init, and
// inside a cycle if inCycle) and returns the plugin it addresses.
func (g *Guest) pluginAt(fn abi.Func, arg uint32, inCycle bool) (plugin.Plugin, error) {
	if !g.inited {
		return nil, newError(fn.String() + " before init")
	}
	if inCycle && !g.cycle.havePod {
		return nil, newError(fn.String() + " outside a cycle")
	}
	if int(arg) >= len(g.plugins) {
		return nil, newError("plugin index out of range")
	}
	return g.plugins[arg], nil
}

func (g *Guest) pluginCall(fn abi.Func, arg uint32, in []byte) error {
	p, err := g.cyclePlugin(fn, arg)
	if err != nil {
		return err
	}
	g.cycle.current = p.Name()
	defer func() { g.cycle.current = "" }()
	var st *plugin.Status
	switch fn {
	case abi.FuncPreFilter:
		pf, ok := p.(plugin.PreFilterPlugin)
		if !ok {
			return newError(p.Name() + " is not a PreFilter plugin")
		}
		st = pf.PreFilter(&g.cycle.state, &g.cycle.pod)
	case abi.FuncPreScore:
		ps, ok := p.(plugin.PreScorePlugin)
		if !ok {
			return newError(p.Name() + " is not a PreScore plugin")
		}
		if err := g.loadBatch(in); err != nil {
			return err
		}
		st = ps.PreScore(&g.cycle.state, &g.cycle.pod, g.batch.nodes)
	case abi.FuncFilter:
		f, ok := p.(plugin.FilterPlugin)
		if !ok {
			return newError(p.Name() + " is not a Filter plugin")
		}
		if err := g.loadBatch(in); err != nil {
			return err
		}
		return g.filter(f)
	case abi.FuncScore:
		s, ok := p.(plugin.ScorePlugin)
		if !ok {
			return newError(p.Name() + " is not a Score plugin")
		}
		if err := g.loadBatch(in); err != nil {
			return err
		}
		// An optional flags byte follows the slots (v1.8).
		at := 4 + 4*len(g.batch.nodes)
		return g.score(s, len(in) > at && in[at]&abi.ScoreRaw != 0)
	}
	reply := abi.PluginStatus{Code: st.Code(), Reasons: st.Reasons()}
	if fn == abi.FuncPreFilter {
		reply.Nodes, reply.Narrowed = st.Narrowed()
	}
	g.codec.enc.PluginStatus(&reply)
	return nil
}

// running names the plugin being run for log lines until the returned
// function is called.
func (g *Guest) running(name string) func() {
	g.cycle.current = name
	return func() { g.cycle.current = "" }
}
