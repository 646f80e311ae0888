package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// preemptionCall runs FuncSelectVictims or FuncRankCandidates on a
// preemption plugin for the cycle's pod.
func (g *Guest) preemptionCall(fn abi.Func, arg uint32, in []byte) error {
	pl, err := g.cyclePlugin(fn, arg)
	if err != nil {
		return err
	}
	p, ok := pl.(plugin.PreemptionPlugin)
	if !ok {
		return newError(pl.Name() + " is not a preemption plugin")
	}
	g.cycle.current = p.Name()
	defer func() { g.cycle.current = "" }()
	// The candidates decode into storage reused from call to call, their
	// strings aliasing the input: valid for this call only, which is what
	// PreemptionPlugin promises a plugin.
	g.codec.dec.Reset(in, true)
	if g.victims == nil {
		g.victims = new(victimCall)
	}
	vc := g.victims
	if fn == abi.FuncRankCandidates {
		cands := g.codec.dec.RankCandidatesRequestInto(&vc.scratch)
		if err := g.codec.dec.Err(); err != nil {
			return err
		}
		order, st := p.RankCandidates(&g.cycle.state, &g.cycle.pod, cands, vc.order[:0])
		vc.order = order
		if !st.IsSuccess() {
			return newError(st.Message())
		}
		for _, i := range order {
			if i < 0 || i >= len(cands) {
				return newError(p.Name() + ": candidate index out of range")
			}
		}
		if len(cands) > 0 && len(order) == 0 {
			return newError(p.Name() + ": ranked no candidate")
		}
		g.codec.enc.RankCandidatesReply(order)
		return nil
	}
	nodes := g.codec.dec.SelectVictimsRequestInto(&vc.scratch)
	if err := g.codec.dec.Err(); err != nil {
		return err
	}
	// Every node's choices go into one array; the replies slice it once it
	// has stopped growing.
	vc.replies = vc.replies[:0]
	vc.chosen = vc.chosen[:0]
	vc.ends = vc.ends[:0]
	for i := range nodes {
		var ni *plugin.NodeInfo
		if s := nodes[i].Slot; int(s) < len(g.mirror.nodes) {
			ni = g.mirror.nodes[s]
		}
		start := len(vc.chosen)
		victims, st := p.SelectVictims(&g.cycle.state, &g.cycle.pod, ni, nodes[i].Pods, vc.chosen[start:])
		r := abi.NodeVictims{Code: st.Code(), Reasons: st.Reasons()}
		if st.IsSuccess() {
			for _, v := range victims {
				if int(v.Index) >= len(nodes[i].Pods) {
					return newError(p.Name() + ": victim index out of range")
				}
			}
			vc.chosen = append(vc.chosen[:start], victims...)
		}
		vc.replies = append(vc.replies, r)
		vc.ends = append(vc.ends, len(vc.chosen))
	}
	start := 0
	for i := range vc.replies {
		vc.replies[i].Victims = vc.chosen[start:vc.ends[i]]
		start = vc.ends[i]
	}
	g.codec.enc.SelectVictimsReply(vc.replies)
	return nil
}

// victimCall is what the preemption calls reuse from call to call.
type victimCall struct {
	scratch abi.VictimScratch
	replies []abi.NodeVictims
	chosen  []abi.VictimChoice
	ends    []int
	order   []int
}
