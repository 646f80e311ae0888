package eviction

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// Canary runs one round of set's policies on the cluster as it is now,
// committing nothing: no pod is killed, no taint set, no threshold or
// condition state kept, no metric counted. A reload runs it before
// handing set to the coordinator, so a policy that fails on the real
// state (a trap, a timeout, an answer the host refuses) is found while
// the running set still serves. It may run alongside a round: it builds
// its own snapshot and observation tables, and takes the instances of
// pools shared with the running set in turn with it. The error names
// the policy and the call.
func (c *Coordinator) Canary(ctx context.Context, set *PolicySet, burst int) error {
	if set == nil || len(set.policies) == 0 {
		return nil
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	snap := snapshot.New()
	c.cluster.UpdateSnapshot(snap)
	var usage Usage
	if c.usage != nil {
		if u, err := c.usage.Usage(ctx); err == nil {
			usage = u
		}
	}
	all := snap.Nodes()
	req := abi.EvictionRequest{Limit: uint32(burst), Nodes: make([]abi.EvictionNode, len(all))}
	for i, ni := range all {
		// Every pod is a candidate: the canary exercises the policy, it
		// does not choose victims.
		cands := make([]uint32, len(ni.Info.Pods))
		for j := range cands {
			cands[j] = uint32(j)
		}
		req.Nodes[i] = abi.EvictionNode{Slot: ni.Slot, Candidates: cands}
	}
	tables := make([]*snapshot.Observations, len(set.keys))
	for ti := range tables {
		tables[ti] = snapshot.NewObservations()
		for _, ni := range all {
			o := observation(&ni.Info, set.keys[ti], usage)
			tables[ti].Set(ni.Slot, &o)
		}
	}
	for _, p := range set.policies {
		call := func(name abi.Func, fn func(*guest.Client) error) error {
			cl, err := p.pool.Get(ctx)
			if err != nil {
				return fmt.Errorf("eviction policy %s: canary %s: %w", p.Plugin, name, err)
			}
			defer p.pool.Put(ctx, cl)
			if err := cl.Sync(ctx, snap); err != nil {
				return fmt.Errorf("eviction policy %s: canary %s: sync: %w", p.Plugin, name, err)
			}
			if err := cl.Observe(ctx, tables[p.table]); err != nil {
				return fmt.Errorf("eviction policy %s: canary %s: observe: %w", p.Plugin, name, err)
			}
			if err := fn(cl); err != nil {
				return fmt.Errorf("eviction policy %s: canary %s: %w", p.Plugin, name, err)
			}
			return nil
		}
		if p.points.Has(abi.PointEvictPods) {
			if err := call(abi.FuncEvictPods, func(cl *guest.Client) error {
				_, err := cl.EvictPods(ctx, p.index, &req)
				return err
			}); err != nil {
				return err
			}
		}
		if p.points.Has(abi.PointEvictionThreshold) {
			var rs []abi.ThresholdResult
			if err := call(abi.FuncThresholdMet, func(cl *guest.Client) (err error) {
				rs, err = cl.ThresholdMet(ctx, p.index, &req)
				return err
			}); err != nil {
				return err
			}
			// Ask for the victims of every node whose threshold is met,
			// as a round past the grace period would.
			top := abi.TopEvictionRequest{Limit: uint32(burst)}
			for i := range min(len(rs), len(all)) {
				if rs[i].Met == abi.NotMet {
					continue
				}
				cands := rs[i].Candidates
				if len(cands) == 0 {
					cands = req.Nodes[i].Candidates
				}
				topN := uint32(0)
				if rs[i].Met == abi.HardMet {
					topN = 1
				}
				top.Nodes = append(top.Nodes, abi.TopEvictionNode{Slot: all[i].Slot, TopN: topN, Scope: rs[i].Scope, Candidates: cands})
			}
			if len(top.Nodes) > 0 {
				if err := call(abi.FuncTopEvictionPods, func(cl *guest.Client) error {
					_, err := cl.TopEvictionPods(ctx, p.index, &top)
					return err
				}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
