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
	g.current = p.Name()
	defer func() { g.current = "" }()
	g.dec.Reset(in, false)
	if fn == abi.FuncRankCandidates {
		cands := g.dec.RankCandidatesRequest()
		if err := g.dec.Err(); err != nil {
			return err
		}
		order, st := p.RankCandidates(&g.state, &g.pod, cands, nil)
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
		g.enc.RankCandidatesReply(order)
		return nil
	}
	nodes := g.dec.SelectVictimsRequest()
	if err := g.dec.Err(); err != nil {
		return err
	}
	replies := make([]abi.NodeVictims, len(nodes))
	var buf []abi.VictimChoice
	for i := range nodes {
		var ni *plugin.NodeInfo
		if s := nodes[i].Slot; int(s) < len(g.nodes) {
			ni = g.nodes[s]
		}
		victims, st := p.SelectVictims(&g.state, &g.pod, ni, nodes[i].Pods, buf[:0])
		replies[i].Code = st.Code()
		replies[i].Reasons = st.Reasons()
		if st.IsSuccess() {
			for _, v := range victims {
				if int(v.Index) >= len(nodes[i].Pods) {
					return newError(p.Name() + ": victim index out of range")
				}
			}
			replies[i].Victims = append([]abi.VictimChoice(nil), victims...)
		}
		buf = victims
	}
	g.enc.SelectVictimsReply(replies)
	return nil
}
