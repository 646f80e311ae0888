package framework

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
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
	// Score is the chosen node's weighted total (0 when only one node
	// was feasible, which is not scored).
	Score int64
}

// Nominator lists pods nominated to a node (waiting for preemption victims
// to leave), which filters must count.
type Nominator interface {
	// HasNominatedPods is a cheap check made once per chunk of nodes.
	HasNominatedPods() bool
	NominatedPodsForNode(node string) []*abi.Pod
	// NominatedNode is where the pod with this UID is nominated; "" for
	// none. It knows a nomination before the pod's status shows it.
	NominatedNode(uid string) string
}

// cycle holds one scheduling cycle's clients, one per module.
//
// A module's client is nil once the module is down for the cycle: a
// module-wide call failed (no instance, sync, cycle start, what-if
// state) or its instance could not be replaced after a plugin broke it.
// Its Ignore plugins are then skipped for the rest of the cycle, and a
// Fail plugin fails the cycle (markDown). When one plugin's call breaks
// the instance (trap, deadline), the module is not down: the next call
// to any of its plugins gets a fresh instance brought to the same cycle
// state (client), so the module's other plugins still run.
type cycle struct {
	prof    *Profile
	clients []*guest.Client
	snap    *snapshot.Snapshot
	pod     *abi.Pod

	// down says why module i is down (nil: it is not).
	down []error
	// skip holds the plugins whose Filter this cycle skips: PreFilter
	// said Skip, failed under Ignore, or the plugin's Filter failed
	// under Ignore once (no point in trapping again on the next chunk),
	// or its module is down.
	skip map[string]bool
	// gone holds the plugins skipped at every point: their module is down
	// or the plugin failed under Ignore at PreScore/Score.
	gone map[string]bool
	// fatal is set when a module went down mid-cycle and one of its
	// plugins has failurePolicy Fail: the cycle ends with it.
	fatal error
	// prefiltered[i]: prof.preFilter[i] returned Success this cycle, so a
	// fresh instance of its module must run it again to catch up.
	prefiltered []bool

	// cycleScratch holds the buffers of the node walk and scoring, from
	// scratchPool until release.
	*cycleScratch
	sample bool // time the plugin calls of this cycle
	// rec, when the cycle is explained (CycleState.Explain), gathers
	// the cycle's answers; nil costs nothing else.
	rec *decision.Scheduling
	// scored gathers the Score plugins' replies of an explained cycle.
	scored   []scoredPlugin
	scoreBuf *[]int64 // from scoreBufs, while the cycle holds scores
	rawBuf   *[]byte  // from rawBufs, likewise
}

// cycleScratch is what a cycle fills for every node it walks or scores.
// A cycle at 5000 nodes fills a few kilobytes of them; allocated afresh
// they were a sixth of the bytes serve allocates under load, and so of
// the collector's work. The cycle takes one from scratchPool and release
// gives it back; nothing a cycle returns refers to them.
type cycleScratch struct {
	chunk     []uint32 // the chunk of nodes being filtered
	remaining []uint32 // nodes still passing in a chunk
	passed    []bool   // filterChunk's verdicts
	passIdx   []int32  // indexes of the nodes a Filter call passed
	feasible  []uint32 // the feasible nodes found so far
	totals    []int64  // the feasible nodes' weighted score totals
}

var scratchPool = sync.Pool{New: func() any { return new(cycleScratch) }}

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
	n := len(prof.modules)
	c := &cycle{prof: prof, snap: snap, pod: pod, clients: make([]*guest.Client, n), down: make([]error, n),
		skip: map[string]bool{}, prefiltered: make([]bool, len(prof.preFilter)), cycleScratch: scratchPool.Get().(*cycleScratch)}
	for i := range prof.modules {
		cl, err := c.ready(ctx, i)
		if err != nil {
			if ctx.Err() != nil {
				c.release(ctx)
				return nil, ctx.Err()
			}
			if err := c.markDown(i, err); err != nil {
				c.release(ctx)
				return nil, err
			}
			continue
		}
		c.clients[i] = cl
	}
	return c, nil
}

// ready checks out an instance of module i, synced and started on the
// cycle's pod.
func (c *cycle) ready(ctx context.Context, i int) (*guest.Client, error) {
	pool := c.prof.modules[i].pool
	cl, err := pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	if err := cl.Sync(ctx, c.snap); err != nil {
		pool.Put(ctx, cl)
		return nil, err
	}
	if err := cl.StartCycle(ctx, c.pod); err != nil {
		pool.Put(ctx, cl)
		return nil, err
	}
	return cl, nil
}

// markDown takes module i out of the cycle after a module-wide failure:
// its instance goes back to the pool (discarded if broken) and its
// plugins are skipped for the rest of the cycle if they are all Ignore
// (each failure counted and logged); otherwise the returned error fails
// the cycle, naming the Fail plugin.
func (c *cycle) markDown(i int, err error) error {
	if cl := c.clients[i]; cl != nil {
		c.prof.modules[i].pool.Put(context.Background(), cl)
		c.clients[i] = nil
	}
	c.down[i] = err
	plugins := c.prof.modulePlugins(i)
	for _, p := range plugins {
		if !p.ignore {
			c.fatal = fmt.Errorf("plugin %q (failurePolicy Fail) cannot run: %w", p.name, err)
			return c.fatal
		}
	}
	if c.gone == nil {
		c.gone = map[string]bool{}
	}
	point := moduleWidePoint(err)
	for _, p := range plugins {
		c.skip[p.name], c.gone[p.name] = true, true
		c.prof.ignoredFailure(p.name, point, err)
	}
	return nil
}

// client returns module i's instance for the next plugin call of the
// main cycle. If a plugin's call broke the instance, it is replaced by a
// fresh one, synced, started on the pod and taken through the PreFilter
// calls of the module's plugins that succeeded so far; if that fails the
// module is down (markDown). The error is the reason the module cannot
// serve the call.
func (c *cycle) client(ctx context.Context, i int) (*guest.Client, error) {
	cl := c.clients[i]
	if cl == nil {
		return nil, c.down[i]
	}
	if !cl.Broken() {
		return cl, nil
	}
	pool := c.prof.modules[i].pool
	pool.Put(ctx, cl) // discarded: its slot is free for the replacement
	c.clients[i] = nil
	fresh, err := c.ready(ctx, i)
	if err == nil {
		for k, p := range c.prof.preFilter {
			if p.module != i || !c.prefiltered[k] {
				continue
			}
			st, perr := fresh.PreFilter(ctx, p.index)
			if perr == nil && st.Code != abi.Success {
				perr = fmt.Errorf("PreFilter plugin %q said %s on a fresh instance after %s before", p.name, st.Code, abi.Success)
			}
			if perr != nil {
				pool.Put(ctx, fresh)
				err = perr
				break
			}
		}
	}
	if err != nil {
		err = fmt.Errorf("replacing a lost instance of module %q: %w", c.prof.modules[i].mod.Config.Name, err)
		if ferr := c.markDown(i, err); ferr != nil {
			return nil, ferr
		}
		return nil, err
	}
	c.clients[i] = fresh
	return fresh, nil
}

func (c *cycle) release(ctx context.Context) {
	for i, cl := range c.clients {
		if cl != nil {
			c.prof.modules[i].pool.Put(ctx, cl)
			c.clients[i] = nil
		}
	}
	if c.cycleScratch != nil {
		scratchPool.Put(c.cycleScratch)
		c.cycleScratch = nil
	}
}

// Schedule runs the filter and score points for pod over snap, starting
// the node walk at start. It returns the chosen node, a *FitError when no
// node fits (after running PostFilter), or another error.
func (prof *Profile) Schedule(ctx context.Context, state *CycleState, pod *abi.Pod, snap *snapshot.Snapshot, start int, nom Nominator, rng *rand.Rand) (Result, error) {
	if state.explain == nil {
		return prof.schedule(ctx, state, pod, snap, start, nom, rng)
	}
	t0 := time.Now()
	res, err := prof.schedule(ctx, state, pod, snap, start, nom, rng)
	explainOutcome(state.explain, prof.Name, pod, t0, res, err)
	return res, err
}

func (prof *Profile) schedule(ctx context.Context, state *CycleState, pod *abi.Pod, snap *snapshot.Snapshot, start int, nom Nominator, rng *rand.Rand) (Result, error) {
	n := snap.NumNodes()
	if state.explain != nil {
		state.explain.NumNodes = n
	}
	if n == 0 {
		return Result{}, &FitError{Pod: pod, NumAllNodes: 0}
	}
	c, err := prof.startCycle(ctx, pod, snap)
	if err != nil {
		return Result{}, err
	}
	defer c.release(ctx)
	c.sample = state.ShouldRecordPluginMetrics()
	c.rec = state.explain

	fit := &FitError{Pod: pod, NumAllNodes: n}
	pre, err := c.preFilter(ctx)
	if err != nil {
		return Result{}, err
	}
	if st := pre.reject; st != nil {
		fit.Diagnosis.PreFilterMsg = st.Message()
		fit.Diagnosis.preFilterUnresolvable = st.Code == abi.UnschedulableAndUnresolvable
		for _, ni := range snap.Nodes() {
			fit.Diagnosis.AddRejection(ni.Info.Node.Name, st)
		}
		for _, name := range pre.narrowers {
			fit.Diagnosis.UnschedulablePlugins[name] = struct{}{}
		}
		c.explainFilter(&fit.Diagnosis, 0, 0)
		return Result{}, prof.runPostFilter(ctx, state, pod, fit, &DryRun{c: c, pod: pod, skip: c.skip, nom: nom})
	}

	// A pod nominated to a node (preemption made room there) gets that
	// node without scoring if it passes the filters, as in kube-scheduler
	// (evaluateNominatedNode): the room was made for it.
	if node, ok := c.nominatedFits(ctx, pod, nom, &fit.Diagnosis); ok {
		if c.rec != nil {
			c.rec.NominatedNodePassed = true
			c.explainFilter(&fit.Diagnosis, 1, 1)
		}
		return Result{Node: node, EvaluatedNodes: 1, FeasibleNodes: 1}, nil
	}

	nodes := snap.Nodes()
	if pre.only != nil {
		nodes = narrowed(nodes, pre.only)
		// The plugins named are the narrowers and, as kube-scheduler's
		// diagnosis shares one set between them, the plugins that
		// rejected the nominated node just tried.
		list := slices.Clone(pre.narrowers)
		for n := range fit.Diagnosis.UnschedulablePlugins {
			list = append(list, n)
		}
		slices.Sort(list)
		list = slices.Compact(list)
		fit.Diagnosis.Absent = NewStatus(abi.UnschedulableAndUnresolvable,
			fmt.Sprintf("node(s) didn't satisfy plugin(s) [%s]", strings.Join(list, " ")))
		if c.rec != nil {
			c.rec.NarrowedTo = len(nodes)
		}
	}
	feasible, processed, err := c.findFeasible(ctx, pod, nodes, start, nom, &fit.Diagnosis)
	if err != nil {
		return Result{}, err
	}
	if c.rec != nil {
		c.explainFilter(&fit.Diagnosis, len(feasible)+len(fit.Diagnosis.NodeToStatus), len(feasible))
	}
	if len(feasible) == 0 {
		return Result{}, prof.runPostFilter(ctx, state, pod, fit, &DryRun{c: c, pod: pod, skip: c.skip, nom: nom})
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
	best := selectHost(totals, rng)
	res.Node, res.Score = snap.Slot(feasible[best]).Info.Node.Name, totals[best]
	if c.rec != nil {
		c.explainScores(feasible, totals, best)
	}
	return res, nil
}

// nominatedFits runs the filters (with the pods nominated there) on the
// node the pod is nominated to (its status, else the nominator's record,
// which knows of a nomination this scheduler made before the pod's
// status shows it), if that node exists, and reports
// whether it passed. A node that fails keeps its verdict in diag, as in
// kube-scheduler, even when a PreFilter's narrowing then leaves it out of
// the walk (the full walk overwrites it otherwise).
func (c *cycle) nominatedFits(ctx context.Context, pod *abi.Pod, nom Nominator, diag *Diagnosis) (string, bool) {
	name := pod.NominatedNodeName
	if name == "" && nom != nil {
		name = nom.NominatedNode(pod.UID)
	}
	if name == "" {
		return "", false
	}
	ni := c.snap.Get(name)
	if ni == nil {
		return "", false
	}
	passed, err := c.filterChunk(ctx, pod, []uint32{ni.Slot}, nom, diag)
	if err != nil || !passed[0] {
		// An error here is met again, and reported, by the full walk.
		return "", false
	}
	return name, true
}

// narrowed keeps, in walk order, the nodes whose names are in only.
func narrowed(nodes []*snapshot.NodeInfo, only map[string]struct{}) []*snapshot.NodeInfo {
	out := make([]*snapshot.NodeInfo, 0, len(only))
	for _, ni := range nodes {
		if _, ok := only[ni.Info.Node.Name]; ok {
			out = append(out, ni)
		}
	}
	return out
}

// preFilterOutcome is what the PreFilter point decided.
type preFilterOutcome struct {
	// reject is the status every node gets when PreFilter rejected the
	// pod; nil when it may go on.
	reject *Status
	// only, when not nil, holds the names of the only nodes to filter:
	// the intersection of what the narrowing plugins named.
	only map[string]struct{}
	// narrowers are the plugins that narrowed, sorted.
	narrowers []string
}

// preFilter runs the PreFilter plugins, recording in c.skip which said
// Skip (or failed under Ignore, which counts as Skip), as kube-scheduler
// does: an UnschedulableAndUnresolvable verdict ends the point at once;
// after an Unschedulable one the other plugins still run (preemption may
// follow, and may need their state) and the last such verdict is the
// point's; narrowing plugins' node sets are intersected, and an empty
// intersection rejects the pod. It returns the error of a plugin that
// failed under Fail.
func (c *cycle) preFilter(ctx context.Context) (preFilterOutcome, error) {
	var out preFilterOutcome
	var unschedulable *Status
	at := &pluginPoint{name: metrics.PreFilter, skip: c.skip}
	if c.rec != nil {
		c.rec.PreFilter = make([]decision.PreFilterVerdict, 0, len(c.prof.preFilter))
	}
	for k := range c.prof.preFilter {
		p := &c.prof.preFilter[k]
		var st abi.PluginStatus
		ran, err := c.runPlugin(ctx, at, p, func(cl *guest.Client) (err error) {
			t0 := c.start()
			st, err = cl.PreFilter(ctx, p.index)
			c.observe(p.timer, callCode(st.Code, err), t0)
			return err
		})
		if err != nil {
			return out, err
		}
		if !ran {
			c.skip[p.name] = true // a failure under Ignore counts as Skip
			if c.rec != nil {
				c.rec.PreFilter = append(c.rec.PreFilter, decision.PreFilterVerdict{Plugin: p.name, Code: notRunCode, Nodes: -1})
			}
			continue
		}
		if c.rec != nil {
			v := decision.PreFilterVerdict{Plugin: p.name, Code: st.Code.String(), Reasons: slices.Clone(st.Reasons), Nodes: -1}
			if st.Narrowed && st.Code == abi.Success {
				v.Nodes = len(st.Nodes)
			}
			c.rec.PreFilter = append(c.rec.PreFilter, v)
		}
		switch st.Code {
		case abi.Success:
			c.prefiltered[k] = true
		case abi.Skip:
			c.skip[p.name] = true
			continue
		case abi.Unschedulable:
			unschedulable = &Status{Code: st.Code, Reasons: st.Reasons, Plugin: p.name}
			continue
		default: // UnschedulableAndUnresolvable: the client refuses any other code
			out.reject = &Status{Code: st.Code, Reasons: st.Reasons, Plugin: p.name}
			return out, nil
		}
		if !st.Narrowed {
			continue
		}
		out.narrowers = append(out.narrowers, p.name)
		slices.Sort(out.narrowers)
		out.only = intersectNames(out.only, st.Nodes)
		if len(out.only) == 0 {
			msg := fmt.Sprintf("node(s) didn't satisfy plugin(s) [%s] simultaneously", strings.Join(out.narrowers, " "))
			if len(out.narrowers) == 1 {
				msg = "node(s) didn't satisfy plugin " + out.narrowers[0]
			}
			out.reject = NewStatus(abi.UnschedulableAndUnresolvable, msg)
			return out, nil
		}
	}
	out.reject = unschedulable
	return out, nil
}

// intersectNames narrows set (nil: every node) to the names listed.
func intersectNames(set map[string]struct{}, names []string) map[string]struct{} {
	next := make(map[string]struct{}, len(names))
	for _, n := range names {
		if _, ok := set[n]; set == nil || ok {
			next[n] = struct{}{}
		}
	}
	return next
}

// findFeasible walks nodes from start, filtering them in chunks until
// enough feasible nodes are found, and records every rejection.
func (c *cycle) findFeasible(ctx context.Context, pod *abi.Pod, nodes []*snapshot.NodeInfo, start int, nom Nominator, diag *Diagnosis) (feasible []uint32, processed int, err error) {
	n := len(nodes)
	if n == 0 {
		return nil, 0, nil
	}
	want := NumFeasibleNodesToFind(c.prof.percentage, n)
	next := start % n // the walk's next node
	walked := 0
	feasible = c.feasible[:0]
	defer func() {
		if feasible != nil { // nil: an error returned
			c.feasible = feasible[:0]
		}
	}()
	for walked < n && len(feasible) < want {
		size := max(want-len(feasible), 32)
		size = min(size, n-walked, guest.MaxBatch)
		chunk := c.chunk[:0]
		for range size {
			chunk = append(chunk, nodes[next].Slot)
			if next++; next == n {
				next = 0
			}
		}
		c.chunk = chunk
		passed, err := c.filterChunk(ctx, pod, chunk, nom, diag)
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

// filterVerdicts applies one Filter reply over slots (the nodes the call
// covered): it appends to passed the index in slots of each node that
// passed and returns it, and calls onReject with the index and status of
// each rejected node. A node the plugin answered Error for passes under
// Ignore (the failure counted once per call) and fails the cycle under
// Fail. Passing nodes are returned as indexes rather than reported through
// a callback because this runs for every node of every filter in a cycle.
func (prof *Profile) filterVerdicts(p *wasmPlugin, reply *abi.FilterReply, slots []uint32, snap *snapshot.Snapshot,
	point string, passed []int32, onReject func(i int, st *Status)) ([]int32, error) {
	var statuses []*Status
	counted := false
	for i, ix := range reply.Indexes {
		if ix == 0 {
			passed = append(passed, int32(i))
			continue
		}
		e := reply.Entries[ix-1]
		if e.Code == abi.Error {
			err := nodeError(snap.Slot(slots[i]).Info.Node.Name, e.Reasons)
			if !p.ignore {
				return passed, err
			}
			if !counted {
				counted = true
				prof.ignoredFailure(p.name, point, err)
			}
			passed = append(passed, int32(i))
			continue
		}
		if statuses == nil {
			statuses = make([]*Status, len(reply.Entries))
		}
		if statuses[ix-1] == nil {
			statuses[ix-1] = &Status{Code: e.Code, Reasons: append([]string(nil), e.Reasons...), Plugin: p.name}
		}
		onReject(i, statuses[ix-1])
	}
	return passed, nil
}

// keepPassed keeps, in place and in order, the elements of s at the
// indexes passed (ascending, as filterVerdicts returns them, so every write
// trails its read).
func keepPassed[T any](s []T, passed []int32) []T {
	for k, i := range passed {
		s[k] = s[i]
	}
	return s[:len(passed)]
}

// nodeError is a plugin's Error verdict on one node.
func nodeError(node string, reasons []string) error {
	if len(reasons) == 0 {
		return fmt.Errorf("on node %q: %w (no reason given)", node, guest.ErrPluginError)
	}
	return fmt.Errorf("on node %q: %w: %s", node, guest.ErrPluginError, joinReasons(reasons))
}

// filterChunk runs every filter plugin over a chunk of nodes, each plugin
// over the nodes the previous ones let through, and reports which passed
// (passed[i] for chunk[i]).
func (c *cycle) filterChunk(ctx context.Context, pod *abi.Pod, chunk []uint32, nom Nominator, diag *Diagnosis) ([]bool, error) {
	remaining := append(c.remaining[:0], chunk...)
	defer func() { c.remaining = remaining[:0] }()
	at := &pluginPoint{name: metrics.Filter, skip: c.skip}
	for k := range c.prof.filter {
		p := &c.prof.filter[k]
		if len(remaining) == 0 {
			continue
		}
		var reply *abi.FilterReply
		ran, err := c.runPlugin(ctx, at, p, func(cl *guest.Client) (err error) {
			reply, err = c.timedFilter(ctx, cl, p, remaining)
			return err
		})
		if err != nil {
			return nil, err
		}
		if !ran {
			c.skip[p.name] = true // the nodes pass it, now and for the rest of the cycle
			continue
		}
		c.passIdx, err = c.prof.filterVerdicts(p, reply, remaining, c.snap, metrics.Filter, c.passIdx[:0],
			func(i int, st *Status) { diag.AddRejection(c.snap.Slot(remaining[i]).Info.Node.Name, st) })
		if err != nil {
			return nil, fmt.Errorf("running Filter plugin %q: %w", p.name, err)
		}
		remaining = keepPassed(remaining, c.passIdx)
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
		if err := c.checkNominated(ctx, pod, chunk, passed, nom, diag); err != nil {
			return nil, err
		}
	}
	return passed, nil
}

// score runs PreScore and Score and returns each feasible node's weighted
// total. A plugin that fails under Ignore adds nothing (its Score is
// skipped after a failed PreScore).
func (c *cycle) score(ctx context.Context, feasible []uint32) ([]int64, error) {
	totals := slices.Grow(c.totals[:0], len(feasible))[:len(feasible)]
	clear(totals)
	c.totals = totals
	var skip map[string]bool // the PreScore plugins that said Skip, rarely any
	at := &pluginPoint{name: metrics.PreScore}
	for k := range c.prof.preScore {
		p := &c.prof.preScore[k]
		var st abi.PluginStatus
		ran, err := c.runPlugin(ctx, at, p, func(cl *guest.Client) (err error) {
			t0 := c.start()
			st, err = cl.PreScore(ctx, p.index, feasible)
			c.observe(p.timer, callCode(st.Code, err), t0)
			return err
		})
		if err != nil {
			return nil, err
		}
		if !ran || st.Code == abi.Skip { // else Success: the client refuses other codes
			if skip == nil {
				skip = map[string]bool{}
			}
			skip[p.name] = true
			if c.rec != nil {
				c.rec.ScoreSkipped = append(c.rec.ScoreSkipped, p.name)
			}
		}
	}
	at = &pluginPoint{name: metrics.Score, skip: skip}
	for k := range c.prof.score {
		p := &c.prof.score[k]
		var scores []int64
		var raw guest.RawScores
		ran, err := c.runPlugin(ctx, at, p, func(cl *guest.Client) (err error) {
			t0 := c.start()
			// Only a normalising plugin's raw scores differ from its
			// scores: the others are not asked to send them twice.
			if c.rec != nil && p.points.Has(abi.PointNormalizeScore) {
				scores, raw, err = cl.ScoreWithRaw(ctx, p.index, feasible)
			} else {
				scores, err = cl.Score(ctx, p.index, feasible)
			}
			c.observe(p.timer, callCode(abi.Success, err), t0)
			return err
		})
		if err != nil {
			return nil, err
		}
		if !ran {
			continue
		}
		for i, s := range scores {
			totals[i] += s * p.weight
		}
		if c.rec != nil {
			c.keepScores(p, scores, raw)
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
// found no node, as kube-scheduler's RunPostFilterPlugins does: the first
// that succeeds (nominating a node or not) ends the point, its message
// becoming the FitError's PostFilter message, and so does an
// UnschedulableAndUnresolvable verdict, whose message becomes the
// FitError's PostFilter message; the reasons of the plugins that said
// Unschedulable are joined into it. An Error status makes the cycle's
// failure an error, retried after backoff (upstream keeps such a pod
// unschedulable, where only a cluster event or the five-minute flush
// retries it; an API error in preemption is worth retrying sooner).
func (prof *Profile) runPostFilter(ctx context.Context, state *CycleState, pod *abi.Pod, fit *FitError, dr *DryRun) error {
	var reasons []string
	for _, p := range prof.postFilter {
		node, st := p.PostFilter(ctx, state, pod, fit, dr)
		switch {
		case st.IsSuccess():
			// What a nominating plugin says ends the FailedScheduling
			// text, as kube-scheduler v1.37 prints it ("preemption: found
			// a potential placement for pod on node n1, preempting 1
			// victims").
			if m := st.Message(); m != "" {
				fit.Diagnosis.PostFilterMsg = m
			}
			if node == "" {
				return fit
			}
			sn, ok := p.(SelfNominating)
			return &NominatedError{FitError: fit, Node: node, Recorded: ok && sn.NominatesItself()}
		case st.Code == abi.Error:
			if m := st.Message(); m != "" {
				fit.Diagnosis.PostFilterMsg = m
			}
			return fmt.Errorf("running PostFilter plugin %q: %w", p.Name(), st.AsError())
		case st.Code == abi.UnschedulableAndUnresolvable:
			fit.Diagnosis.PostFilterMsg = st.Message()
			return fit
		}
		reasons = append(reasons, st.Reasons...)
	}
	if len(reasons) > 0 {
		fit.Diagnosis.PostFilterMsg = strings.Join(reasons, ", ")
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

// timedFilter runs one Filter call on slots, observing its duration (and
// worst verdict) in the plugin's timer when this cycle samples metrics.
func (c *cycle) timedFilter(ctx context.Context, cl *guest.Client, p *wasmPlugin, slots []uint32) (*abi.FilterReply, error) {
	t0 := c.start()
	reply, err := cl.Filter(ctx, p.index, slots)
	if err != nil {
		c.observe(p.timer, abi.Error, t0)
	} else if c.sample {
		c.observe(p.timer, worstCode(reply.Entries), t0)
	}
	return reply, err
}
