package framework

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// CanaryNodes is how many nodes a canary filters and scores: enough to
// run every code path a plugin has on real nodes, few enough that a
// reload's check takes milliseconds.
const CanaryNodes = 16

// Canary exercises, once, every Wasm plugin of the profile's new pools
// (those a reload did not carry over from the running profile) with pod
// on up to CanaryNodes nodes of snap: PreFilter, Filter, PreScore and
// Score as a cycle would call them. Unlike a cycle it ignores
// failurePolicy: a trap, a deadline, an invalid reply or an Error status
// from any plugin fails the canary, so a module that would fail in
// production never replaces one that works. Rejections are fine (a pod
// may not fit). Preemption policy plugins are loaded and initialised but
// not called (they need victims). The snapshot must not be one a cycle
// is using.
func (prof *Profile) Canary(ctx context.Context, pod *abi.Pod, snap *snapshot.Snapshot) error {
	var nodes []uint32
	for _, n := range snap.Nodes() {
		if len(nodes) == CanaryNodes {
			break
		}
		nodes = append(nodes, n.Slot)
	}
	for mi, pm := range prof.modules {
		if pm.reused {
			continue
		}
		if err := prof.canaryModule(ctx, mi, pod, snap, nodes); err != nil {
			return fmt.Errorf("canary of profile %q, module %q: %w", prof.Name, pm.mod.Config.Name, err)
		}
	}
	return nil
}

func (prof *Profile) canaryModule(ctx context.Context, mi int, pod *abi.Pod, snap *snapshot.Snapshot, nodes []uint32) (err error) {
	pool := prof.modules[mi].pool
	cl, err := pool.Get(ctx)
	if err != nil {
		return err
	}
	defer pool.Put(ctx, cl)
	if err := cl.Sync(ctx, snap); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := cl.StartCycle(ctx, pod); err != nil {
		return fmt.Errorf("cycle start: %w", err)
	}
	on := func(list []wasmPlugin) []*wasmPlugin {
		var out []*wasmPlugin
		for i := range list {
			if list[i].module == mi {
				out = append(out, &list[i])
			}
		}
		return out
	}
	fail := func(p *wasmPlugin, point string, err error) error {
		return fmt.Errorf("plugin %q at %s: %w", p.name, point, err)
	}
	skipFilter := map[string]bool{}
	for _, p := range on(prof.preFilter) {
		st, err := cl.PreFilter(ctx, p.index)
		if err == nil && st.Code == abi.Error {
			err = statusError(st)
		}
		if err != nil {
			return fail(p, "PreFilter", err)
		}
		// Skip or a rejection: a cycle would not call its Filter.
		skipFilter[p.name] = st.Code != abi.Success
	}
	feasible := append([]uint32(nil), nodes...)
	for _, p := range on(prof.filter) {
		if skipFilter[p.name] || len(feasible) == 0 {
			continue
		}
		reply, err := cl.Filter(ctx, p.index, feasible)
		if err != nil {
			return fail(p, "Filter", err)
		}
		strict := *p
		strict.ignore = false // an Error verdict fails the canary
		passed, err := prof.filterVerdicts(&strict, reply, feasible, snap, metrics.Filter, nil, func(int, *Status) {})
		if err != nil {
			return fail(p, "Filter", err)
		}
		feasible = keepPassed(feasible, passed)
	}
	if len(feasible) == 0 {
		feasible = nodes // score plugins still run, on the nodes there are
	}
	skipScore := map[string]bool{}
	for _, p := range on(prof.preScore) {
		st, err := cl.PreScore(ctx, p.index, feasible)
		if err == nil && st.Code == abi.Error {
			err = statusError(st)
		}
		if err != nil {
			return fail(p, "PreScore", err)
		}
		skipScore[p.name] = st.Code == abi.Skip
	}
	for _, p := range on(prof.score) {
		if skipScore[p.name] || len(feasible) == 0 {
			continue
		}
		if _, err := cl.Score(ctx, p.index, feasible); err != nil {
			return fail(p, "Score", err)
		}
	}
	return nil
}

// statusError is an Error status a plugin returned, as an error.
func statusError(st abi.PluginStatus) error {
	if len(st.Reasons) == 0 {
		return guest.ErrPluginError
	}
	return fmt.Errorf("%w: %s", guest.ErrPluginError, joinReasons(st.Reasons))
}
