package guest

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
)

// SelectVictims asks a preemption plugin which pods to remove on each of
// the nodes (ABI v1.1 FuncSelectVictims). The reply is checked: one
// answer per node, victim indexes in range and not repeated. It reuses
// the client's buffers: valid until the next call.
func (c *Client) SelectVictims(ctx context.Context, plugin int, nodes []abi.NodeCandidates) ([]abi.NodeVictims, error) {
	c.enc.Reset()
	c.enc.SelectVictimsRequest(nodes)
	body, err := c.run(ctx, abi.FuncSelectVictims, plugin, c.enc.B)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	c.victims = c.dec.SelectVictimsReply(c.victims, nodes)
	if err := c.replyErr(abi.FuncSelectVictims, plugin); err != nil {
		return nil, err
	}
	if len(c.victims) != len(nodes) {
		return nil, c.brokenReply(abi.FuncSelectVictims, plugin, fmt.Errorf("%d answers for %d nodes", len(c.victims), len(nodes)))
	}
	for i := range c.victims {
		guestTexts(c.victims[i].Reasons, noReasonText)
		if code := c.victims[i].Code; code != abi.Success && code != abi.Unschedulable && code != abi.UnschedulableAndUnresolvable {
			return nil, &CallError{Module: c.module.name, Func: abi.FuncSelectVictims, Plugin: c.pluginName(plugin),
				Err: fmt.Errorf("node slot %d: %w", nodes[i].Slot, checkStatusCode(abi.FuncSelectVictims, code, c.victims[i].Reasons))}
		}
		seen := make(map[uint32]bool, len(c.victims[i].Victims))
		for _, v := range c.victims[i].Victims {
			if int(v.Index) >= len(nodes[i].Pods) || seen[v.Index] {
				return nil, &CallError{Module: c.module.name, Func: abi.FuncSelectVictims, Plugin: c.pluginName(plugin),
					Err: fmt.Errorf("node slot %d: victim index %d is out of range or repeated", nodes[i].Slot, v.Index)}
			}
			seen[v.Index] = true
		}
	}
	return c.victims, nil
}

// RankCandidates asks a preemption plugin to order the candidate nodes,
// best first (ABI v1.1 FuncRankCandidates). The reply is checked: indexes
// in range, not repeated, at least one.
func (c *Client) RankCandidates(ctx context.Context, plugin int, cands []abi.Candidate) ([]int, error) {
	c.enc.Reset()
	c.enc.RankCandidatesRequest(cands)
	body, err := c.run(ctx, abi.FuncRankCandidates, plugin, c.enc.B)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	c.rank = c.dec.RankCandidatesReply(c.rank, len(cands))
	if err := c.replyErr(abi.FuncRankCandidates, plugin); err != nil {
		return nil, err
	}
	seen := make(map[int]bool, len(c.rank))
	for _, i := range c.rank {
		if i >= len(cands) || seen[i] {
			return nil, &CallError{Module: c.module.name, Func: abi.FuncRankCandidates, Plugin: c.pluginName(plugin),
				Err: fmt.Errorf("candidate index %d is out of range or repeated", i)}
		}
		seen[i] = true
	}
	if len(cands) > 0 && len(c.rank) == 0 {
		return nil, &CallError{Module: c.module.name, Func: abi.FuncRankCandidates, Plugin: c.pluginName(plugin), Err: fmt.Errorf("no candidate ranked")}
	}
	return c.rank, nil
}
