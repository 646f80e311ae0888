package framework

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/snapshot"
)

// Thresholds of kube-scheduler's adaptive percentageOfNodesToScore.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
	basePercentageOfNodesToScore     = 50
)

// NumFeasibleNodesToFind is how many feasible nodes a cycle looks for
// before it stops filtering: all of a small cluster; otherwise the
// configured percentage, or adaptively 50% minus 1% per 125 nodes (at
// least 5%), and never fewer than 100 nodes.
func NumFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	if numAllNodes < minFeasibleNodesToFind || percentage >= 100 {
		return numAllNodes
	}
	p := int(percentage)
	if p <= 0 {
		p = basePercentageOfNodesToScore - numAllNodes/125
		if p < minFeasibleNodesPercentageToFind {
			p = minFeasibleNodesPercentageToFind
		}
	}
	n := numAllNodes * p / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// Result of a successful cycle.
type Result struct {
	Node string
	// EvaluatedNodes counts the nodes filtered; FeasibleNodes those that fit.
	EvaluatedNodes, FeasibleNodes int
	// Processed is how far the walk over nodes went, so the next cycle
	// starts after it (kube-scheduler's round-robin nextStartNodeIndex).
	Processed int
}

// Nominator lists pods nominated to a node (waiting for preemption victims
// to leave), which filters must count.
type Nominator interface {
	// HasNominatedPods is a cheap check made once per chunk of nodes.
	HasNominatedPods() bool
	NominatedPodsForNode(node string) []*abi.Pod
}

// cycle holds one scheduling cycle's clients, one per module.
type cycle struct {
	prof    *Profile
	clients []*policy.Client
	snap    *snapshot.Snapshot

	remaining []uint32 // scratch: nodes still passing in a chunk
	passed    []bool   // scratch: filterChunk's verdicts
	sample    bool     // time the plugin calls of this cycle
}

// start returns the start time of a plugin call when this cycle is timed
// (zero otherwise, sparing the clock read).
func (c *cycle) start() time.Time {
	if c.sample {
		return time.Now()
	}
	return time.Time{}
}

// observe records a plugin call begun at start that ended with code, in a
// timed cycle. One batched call over many nodes is one observation.
func (c *cycle) observe(t *metrics.PluginTimer, code abi.Code, start time.Time) {
	if c.sample {
		t.Observe(code, time.Since(start))
	}
}

// callCode is the status of a plugin call that replied code: Error if
// the call itself failed.
func callCode(code abi.Code, err error) abi.Code {
	if err != nil {
		return abi.Error
	}
	return code
}

// worstCode is the most severe verdict of a filter reply's outcomes, the
// status of a batched Filter call: Success when every node passed.
func worstCode(entries []abi.FilterEntry) abi.Code {
	worst := abi.Success
	for i := range entries {
		switch code := entries[i].Code; {
		case code == abi.Error:
			return abi.Error
		case code == abi.UnschedulableAndUnresolvable:
			worst = code
		case code == abi.Unschedulable && worst == abi.Success:
			worst = code
		}
	}
	return worst
}

func (prof *Profile) startCycle(ctx context.Context, pod *abi.Pod, snap *snapshot.Snapshot) (*cycle, error) {
	c := &cycle{prof: prof, snap: snap, clients: make([]*policy.Client, len(prof.modules))}
	for i, pm := range prof.modules {
		cl, err := pm.pool.Get(ctx)
		if err != nil {
			c.release(ctx)
			return nil, err
		}
		c.clients[i] = cl
		if err := cl.Sync(ctx, snap); err != nil {
			c.release(ctx)
			return nil, err
		}
		if err := cl.StartCycle(ctx, pod); err != nil {
			c.release(ctx)
			return nil, err
		}
	}
	return c, nil
}

func (c *cycle) release(ctx context.Context) {
	for i, cl := range c.clients {
		if cl != nil {
			c.prof.modules[i].pool.Put(ctx, cl)
			c.clients[i] = nil
		}
	}
}

// Schedule runs the filter and score points for pod over snap, starting
// the node walk at start. It returns the chosen node, a *FitError when no
// node fits (after running PostFilter), or another error.
func (prof *Profile) Schedule(ctx context.Context, state *CycleState, pod *abi.Pod, snap *snapshot.Snapshot, start int, nom Nominator, rng *rand.Rand) (Result, error) {
	n := snap.NumNodes()
	if n == 0 {
		return Result{}, &FitError{Pod: pod, NumAllNodes: 0}
	}
	c, err := prof.startCycle(ctx, pod, snap)
	if err != nil {
		return Result{}, err
	}
	defer c.release(ctx)
	c.sample = state.ShouldRecordPluginMetrics()

	fit := &FitError{Pod: pod, NumAllNodes: n}
	skip, st := c.preFilter(ctx)
	if st != nil {
		if st.Code == abi.Error {
			return Result{}, fmt.Errorf("running PreFilter plugin %q: %w", st.Plugin, st.AsError())
		}
		fit.Diagnosis.PreFilterMsg = st.Message()
		for _, ni := range snap.Nodes() {
			fit.Diagnosis.AddRejection(ni.Info.Node.Name, st)
		}
		return Result{}, prof.runPostFilter(ctx, state, pod, fit, &DryRun{c: c, pod: pod, skip: skip, nom: nom})
	}

	feasible, processed, err := c.findFeasible(ctx, pod, start, skip, nom, &fit.Diagnosis)
	if err != nil {
		return Result{}, err
	}
	if len(feasible) == 0 {
		return Result{}, prof.runPostFilter(ctx, state, pod, fit, &DryRun{c: c, pod: pod, skip: skip, nom: nom})
	}
	res := Result{EvaluatedNodes: len(feasible) + len(fit.Diagnosis.NodeToStatus), FeasibleNodes: len(feasible), Processed: processed}
	if len(feasible) == 1 {
		res.Node = snap.Slot(feasible[0]).Info.Node.Name
		return res, nil
	}
	totals, err := c.score(ctx, feasible)
	if err != nil {
		return Result{}, err
	}
	res.Node = snap.Slot(feasible[selectHost(totals, rng)]).Info.Node.Name
	return res, nil
}

// preFilter runs the PreFilter plugins; it returns which plugins said Skip,
// or the first rejection or error.
func (c *cycle) preFilter(ctx context.Context) (map[string]bool, *Status) {
	skip := map[string]bool{}
	for _, p := range c.prof.preFilter {
		t0 := c.start()
		st, err := c.clients[p.module].PreFilter(ctx, p.index)
		c.observe(p.timer, callCode(st.Code, err), t0)
		if err != nil {
			if p.ignore {
				skip[p.name] = true
				continue
			}
			return nil, &Status{Code: abi.Error, Reasons: []string{err.Error()}, Plugin: p.name, Err: err}
		}
		switch st.Code {
		case abi.Success:
		case abi.Skip:
			skip[p.name] = true
		case abi.Unschedulable, abi.UnschedulableAndUnresolvable:
			return nil, &Status{Code: st.Code, Reasons: st.Reasons, Plugin: p.name}
		default:
			if p.ignore {
				skip[p.name] = true
				continue
			}
			return nil, &Status{Code: abi.Error, Reasons: st.Reasons, Plugin: p.name, Err: fmt.Errorf("%s", joinReasons(st.Reasons))}
		}
	}
	return skip, nil
}

// findFeasible walks the nodes from start, filtering them in chunks until
// enough feasible nodes are found, and records every rejection.
func (c *cycle) findFeasible(ctx context.Context, pod *abi.Pod, start int, skip map[string]bool, nom Nominator, diag *Diagnosis) (feasible []uint32, processed int, err error) {
	nodes := c.snap.Nodes()
	n := len(nodes)
	want := NumFeasibleNodesToFind(c.prof.percentage, n)
	start %= n
	walked := 0
	var chunk []uint32
	for walked < n && len(feasible) < want {
		size := max(want-len(feasible), 32)
		size = min(size, n-walked, policy.MaxBatch)
		chunk = chunk[:0]
		for i := 0; i < size; i++ {
			chunk = append(chunk, nodes[(start+walked+i)%n].Slot)
		}
		passed, err := c.filterChunk(ctx, pod, chunk, skip, nom, diag)
		if err != nil {
			return nil, 0, err
		}
		c.passed = passed
		// Keep the walk order; stop exactly at the want-th feasible node.
		for i, slot := range chunk {
			if len(feasible) == want {
				// Nodes past the cut were not needed: forget their verdicts.
				for _, rest := range chunk[i:] {
					delete(diag.NodeToStatus, c.snap.Slot(rest).Info.Node.Name)
				}
				return feasible, walked + i, nil
			}
			if passed[i] {
				feasible = append(feasible, slot)
			}
		}
		walked += size
	}
	return feasible, walked, nil
}

// filterChunk runs every filter plugin over a chunk of nodes, each plugin
// over the nodes the previous ones let through, and reports which passed
// (passed[i] for chunk[i]).
func (c *cycle) filterChunk(ctx context.Context, pod *abi.Pod, chunk []uint32, skip map[string]bool, nom Nominator, diag *Diagnosis) ([]bool, error) {
	remaining := append(c.remaining[:0], chunk...)
	defer func() { c.remaining = remaining[:0] }()
	for _, p := range c.prof.filter {
		if skip[p.name] || len(remaining) == 0 {
			continue
		}
		t0 := c.start()
		reply, err := c.clients[p.module].Filter(ctx, p.index, remaining)
		if err != nil {
			c.observe(p.timer, abi.Error, t0)
			if p.ignore {
				continue
			}
			return nil, fmt.Errorf("running Filter plugin %q: %w", p.name, err)
		}
		if c.sample {
			c.observe(p.timer, worstCode(reply.Entries), t0)
		}
		kept := remaining[:0]
		statuses := make([]*Status, len(reply.Entries))
		for i, ix := range reply.Indexes {
			if ix == 0 {
				kept = append(kept, remaining[i])
				continue
			}
			e := reply.Entries[ix-1]
			if e.Code == abi.Error {
				if p.ignore {
					kept = append(kept, remaining[i])
					continue
				}
				return nil, fmt.Errorf("running Filter plugin %q on node %q: %s", p.name, c.snap.Slot(remaining[i]).Info.Node.Name, joinReasons(e.Reasons))
			}
			if statuses[ix-1] == nil {
				statuses[ix-1] = &Status{Code: e.Code, Reasons: append([]string(nil), e.Reasons...), Plugin: p.name}
			}
			diag.AddRejection(c.snap.Slot(remaining[i]).Info.Node.Name, statuses[ix-1])
		}
		remaining = kept
	}
	// remaining keeps chunk order, so one merge pass marks the passed nodes.
	passed := c.passed[:0]
	j := 0
	for _, slot := range chunk {
		ok := j < len(remaining) && remaining[j] == slot
		if ok {
			j++
		}
		passed = append(passed, ok)
	}
	if nom != nil && nom.HasNominatedPods() {
		if err := c.checkNominated(ctx, pod, chunk, passed, skip, nom, diag); err != nil {
			return nil, err
		}
	}
	return passed, nil
}

// score runs PreScore and Score and returns each feasible node's weighted
// total.
func (c *cycle) score(ctx context.Context, feasible []uint32) ([]int64, error) {
	totals := make([]int64, len(feasible))
	skip := map[string]bool{}
	for _, p := range c.prof.preScore {
		t0 := c.start()
		st, err := c.clients[p.module].PreScore(ctx, p.index, feasible)
		c.observe(p.timer, callCode(st.Code, err), t0)
		if err != nil || (st.Code != abi.Success && st.Code != abi.Skip) {
			if p.ignore {
				skip[p.name] = true
				continue
			}
			if err == nil {
				err = fmt.Errorf("%s", joinReasons(st.Reasons))
			}
			return nil, fmt.Errorf("running PreScore plugin %q: %w", p.name, err)
		}
		if st.Code == abi.Skip {
			skip[p.name] = true
		}
	}
	for _, p := range c.prof.score {
		if skip[p.name] {
			continue
		}
		t0 := c.start()
		scores, err := c.clients[p.module].Score(ctx, p.index, feasible)
		c.observe(p.timer, callCode(abi.Success, err), t0)
		if err != nil {
			if p.ignore {
				continue
			}
			return nil, fmt.Errorf("running Score plugin %q: %w", p.name, err)
		}
		for i, s := range scores {
			totals[i] += s * p.weight
		}
	}
	return totals, nil
}

// selectHost picks the highest total, breaking ties uniformly at random by
// reservoir sampling, as kube-scheduler does.
func selectHost(totals []int64, rng *rand.Rand) int {
	best, ties := 0, 1
	for i := 1; i < len(totals); i++ {
		switch {
		case totals[i] > totals[best]:
			best, ties = i, 1
		case totals[i] == totals[best]:
			ties++
			if rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// runPostFilter runs the PostFilter plugins (preemption) after a cycle
// found no node. The first that nominates a node ends the point; an Error
// status makes the cycle's failure an error (retried after backoff)
// rather than unschedulable, as in kube-scheduler.
func (prof *Profile) runPostFilter(ctx context.Context, state *CycleState, pod *abi.Pod, fit *FitError, dr *DryRun) error {
	for _, p := range prof.postFilter {
		node, st := p.PostFilter(ctx, state, pod, fit, dr)
		if st != nil && st.Message() != "" {
			fit.Diagnosis.PostFilterMsg = st.Message()
		}
		if st != nil && st.Code == abi.Error {
			return fmt.Errorf("running PostFilter plugin %q: %w", p.Name(), st.AsError())
		}
		if st.IsSuccess() && node != "" {
			sn, ok := p.(SelfNominating)
			return &NominatedError{FitError: fit, Node: node, Recorded: ok && sn.NominatesItself()}
		}
	}
	return fit
}

// NominatedError is a FitError after which PostFilter nominated the pod
// to a node (preemption made, or is making, room there).
type NominatedError struct {
	*FitError
	Node string
	// Recorded: the plugin already put the nomination in the nominator
	// and on the pod (async preemption must, before its goroutine starts).
	Recorded bool
}

func (e *NominatedError) Unwrap() error { return e.FitError }

func joinReasons(rs []string) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += r
	}
	return s
}
