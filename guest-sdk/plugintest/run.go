package plugintest

import (
	"slices"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// New builds a plugin from its registration with args given as JSON (the
// data model of the YAML pluginConfig; "" for no args) and a Handle (nil
// gives an empty Handle whose NumNodes is 0). A factory error fails the
// test, as the host would refuse the profile.
func New(tb testing.TB, reg plugin.Registration, argsJSON string, h plugin.Handle) plugin.Plugin {
	tb.Helper()
	if h == nil {
		h = &Handle{}
	}
	p, err := reg.New(Args(tb, argsJSON), h)
	if err != nil {
		tb.Fatalf("plugin %s: args %s: %v", reg.Name, argsJSON, err)
	}
	if p.Name() != reg.Name {
		tb.Fatalf("plugin registered as %q calls itself %q: the host refuses a mismatch", reg.Name, p.Name())
	}
	return p
}

// RunFilter runs p's PreFilter (if it has one) and Filter for pod against
// each node, in one cycle, and returns one status per node: nil where the
// node passes. As in the host: a PreFilter Skip passes every node without
// calling Filter; any other PreFilter failure is the verdict for every node;
// a PreFilter that names the only nodes it can pass (plugin.OnlyNodes)
// gives the others the host's UnschedulableAndUnresolvable
// "node(s) didn't satisfy plugin(s) [Name]" without calling Filter;
// a Filter status other than Success, Unschedulable,
// UnschedulableAndUnresolvable or Error fails the test (the host would
// report it as an Error of the plugin).
func RunFilter(tb testing.TB, p plugin.Plugin, pod *abi.Pod, nodes ...*plugin.NodeInfo) []*plugin.Status {
	tb.Helper()
	f, ok := p.(plugin.FilterPlugin)
	if !ok {
		tb.Fatalf("plugin %s has no Filter", p.Name())
	}
	state := &plugin.CycleState{}
	out := make([]*plugin.Status, len(nodes))
	skip, reject, only := preFilter(tb, p, state, pod)
	if skip {
		return out
	}
	for i, n := range nodes {
		if reject != nil {
			out[i] = reject
			continue
		}
		if only != nil && !slices.Contains(only, n.Name()) {
			out[i] = plugin.NewStatus(abi.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) ["+p.Name()+"]")
			continue
		}
		st := f.Filter(state, pod, n)
		if st.IsSuccess() {
			continue
		}
		switch st.Code() {
		case abi.Unschedulable, abi.UnschedulableAndUnresolvable, abi.Error:
			out[i] = st
		default:
			tb.Errorf("plugin %s: Filter on node %s returned code %s: not a Filter verdict", p.Name(), n.Name(), st.Code())
			out[i] = plugin.NewStatus(abi.Error, "invalid filter code "+st.Code().String())
		}
	}
	return out
}

// preFilter runs p's PreFilter if it has one: skip is true for Skip,
// reject is the status every node gets when PreFilter fails the pod, and
// only, when not nil, the nodes a narrowing Success (plugin.OnlyNodes)
// named.
func preFilter(tb testing.TB, p plugin.Plugin, state *plugin.CycleState, pod *abi.Pod) (skip bool, reject *plugin.Status, only []string) {
	tb.Helper()
	pf, ok := p.(plugin.PreFilterPlugin)
	if !ok {
		return false, nil, nil
	}
	st := pf.PreFilter(state, pod)
	switch {
	case st.IsSuccess():
		if names, narrowed := st.Narrowed(); narrowed {
			if len(names) == 0 {
				return false, plugin.NewStatus(abi.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin "+p.Name()), nil
			}
			return false, nil, names
		}
		return false, nil, nil
	case st.IsSkip():
		return true, nil, nil
	case st.Code() == abi.Unschedulable, st.Code() == abi.UnschedulableAndUnresolvable, st.Code() == abi.Error:
		return false, st, nil
	}
	tb.Errorf("plugin %s: PreFilter returned code %s: not a PreFilter verdict", p.Name(), st.Code())
	return false, plugin.NewStatus(abi.Error, "invalid prefilter code "+st.Code().String()), nil
}

// RunScore runs p's PreFilter (if any: it may prepare state the scores
// use), PreScore (if any) and Score for pod on each node — all treated as
// feasible — then NormalizeScore (if any), and returns the final scores.
// As in the host: a PreScore Skip leaves every score at 0; a failing
// PreScore, Score or NormalizeScore, or a final score outside
// [0, abi.MaxScore], fails the test (the host reports an Error).
func RunScore(tb testing.TB, p plugin.Plugin, pod *abi.Pod, nodes ...*plugin.NodeInfo) []int64 {
	tb.Helper()
	s, ok := p.(plugin.ScorePlugin)
	if !ok {
		tb.Fatalf("plugin %s has no Score", p.Name())
	}
	state := &plugin.CycleState{}
	scores := make([]int64, len(nodes))
	if _, reject, _ := preFilter(tb, p, state, pod); reject != nil {
		tb.Fatalf("plugin %s: PreFilter rejected the pod (%s), so the host would not score it", p.Name(), reject.Message())
	}
	if ps, ok := p.(plugin.PreScorePlugin); ok {
		st := ps.PreScore(state, pod, nodes)
		if st.IsSkip() {
			return scores
		}
		if !st.IsSuccess() {
			tb.Fatalf("plugin %s: PreScore failed: %s %s", p.Name(), st.Code(), st.Message())
		}
	}
	for i, n := range nodes {
		v, st := s.Score(state, pod, n)
		if !st.IsSuccess() {
			tb.Fatalf("plugin %s: Score on node %s failed: %s %s", p.Name(), n.Name(), st.Code(), st.Message())
		}
		scores[i] = v
	}
	if norm, ok := p.(plugin.ScoreNormalizer); ok {
		if st := norm.NormalizeScore(state, pod, scores); !st.IsSuccess() {
			tb.Fatalf("plugin %s: NormalizeScore failed: %s %s", p.Name(), st.Code(), st.Message())
		}
	}
	for i, v := range scores {
		if v < 0 || v > abi.MaxScore {
			tb.Errorf("plugin %s: score %d for node %s is outside [0, %d]: the host reports an Error", p.Name(), v, nodes[i].Name(), abi.MaxScore)
		}
	}
	return scores
}

// Schedule runs the filter plugins among plugins (all of them, as the host
// runs every enabled Filter) and then the score plugins with their weights
// on the nodes that passed, and returns the name of the node with the
// highest weighted total (the first of equals: the host breaks ties at
// random) and, per node, the first failing status (nil where it passed).
// weights[i] belongs to plugins[i]; a missing weight is 1. Node "" means no
// node passed.
func Schedule(tb testing.TB, pod *abi.Pod, nodes []*plugin.NodeInfo, plugins []plugin.Plugin, weights ...int64) (string, []*plugin.Status) {
	tb.Helper()
	verdicts := make([]*plugin.Status, len(nodes))
	for _, p := range plugins {
		if _, ok := p.(plugin.FilterPlugin); !ok {
			continue
		}
		for i, st := range RunFilter(tb, p, pod, nodes...) {
			if verdicts[i] == nil && st != nil {
				verdicts[i] = st
			}
		}
	}
	var feasible []*plugin.NodeInfo
	for i, n := range nodes {
		if verdicts[i] == nil {
			feasible = append(feasible, n)
		}
	}
	if len(feasible) == 0 {
		return "", verdicts
	}
	totals := make([]int64, len(feasible))
	for k, p := range plugins {
		if _, ok := p.(plugin.ScorePlugin); !ok {
			continue
		}
		w := int64(1)
		if k < len(weights) {
			w = weights[k]
		}
		for i, v := range RunScore(tb, p, pod, feasible...) {
			totals[i] += w * v
		}
	}
	best := 0
	for i := range totals {
		if totals[i] > totals[best] {
			best = i
		}
	}
	return feasible[best].Name(), verdicts
}
