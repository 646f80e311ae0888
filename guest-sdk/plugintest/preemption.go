package plugintest

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Preemption policies (ABI v1.1, plugin.PreemptionPlugin) are tested on
// nodes built with MakeNode and AddPod and a preemptor built with
// MakePod().Priority(...):
//
//	victims, st := plugintest.Preempt(t, p, preemptor, node)

// VictimCandidatesOf returns what the host offers a preemption policy on
// node for preemptor: the node's pods of lower priority than the
// preemptor, in the node's order, and for each its index in node.Pods.
// DisruptionGuard is left nil (set it on the result for a pod whose
// PriorityClass carries the KEP-3280 guard).
func VictimCandidatesOf(preemptor *abi.Pod, node *plugin.NodeInfo) ([]abi.VictimCandidate, []int) {
	var cands []abi.VictimCandidate
	var at []int
	for i := range node.Pods {
		p := &node.Pods[i]
		if p.Priority >= preemptor.Priority {
			continue
		}
		cands = append(cands, abi.VictimCandidate{UID: p.UID, Namespace: p.Namespace, Name: p.Name,
			Labels: p.Labels, Priority: p.Priority, StartTime: p.StartTime})
		at = append(at, i)
	}
	return cands, at
}

// RunSelectVictims runs p's SelectVictims and checks the answer as the
// host does: a code other than Success, Unschedulable,
// UnschedulableAndUnresolvable or Error, or a victim index out of range
// or repeated, fails the test (the host fails the plugin's call). It
// returns the choices (most important first) and the status; a status
// that is not Success makes the node no candidate.
func RunSelectVictims(tb testing.TB, p plugin.Plugin, preemptor *abi.Pod, node *plugin.NodeInfo, cands []abi.VictimCandidate) ([]abi.VictimChoice, *plugin.Status) {
	tb.Helper()
	pp, ok := p.(plugin.PreemptionPlugin)
	if !ok {
		tb.Fatalf("plugin %s is no plugin.PreemptionPlugin", p.Name())
	}
	out, st := pp.SelectVictims(&plugin.CycleState{}, preemptor, node, cands, nil)
	if !st.IsSuccess() {
		switch st.Code() {
		case abi.Unschedulable, abi.UnschedulableAndUnresolvable, abi.Error:
		default:
			tb.Errorf("plugin %s: SelectVictims returned code %s: not a SelectVictims verdict", p.Name(), st.Code())
		}
		return nil, st
	}
	seen := map[uint32]bool{}
	for _, v := range out {
		if int(v.Index) >= len(cands) || seen[v.Index] {
			tb.Errorf("plugin %s: SelectVictims: victim index %d is out of range or repeated (%d candidates): the host fails the call", p.Name(), v.Index, len(cands))
			return nil, plugin.NewStatus(abi.Error, "invalid victim index")
		}
		seen[v.Index] = true
	}
	return out, st
}

// RunRankCandidates runs p's RankCandidates and checks the answer as the
// host does: indexes in range, not repeated, and at least one when there
// are candidates; anything else, or a failing status, fails the test. The
// host preempts on the first node of the answer.
func RunRankCandidates(tb testing.TB, p plugin.Plugin, preemptor *abi.Pod, cands []abi.Candidate) []int {
	tb.Helper()
	pp, ok := p.(plugin.PreemptionPlugin)
	if !ok {
		tb.Fatalf("plugin %s is no plugin.PreemptionPlugin", p.Name())
	}
	out, st := pp.RankCandidates(&plugin.CycleState{}, preemptor, cands, nil)
	if !st.IsSuccess() {
		tb.Fatalf("plugin %s: RankCandidates failed: %s %s", p.Name(), st.Code(), st.Message())
	}
	seen := map[int]bool{}
	for _, i := range out {
		if i < 0 || i >= len(cands) || seen[i] {
			tb.Fatalf("plugin %s: RankCandidates: candidate index %d is out of range or repeated (%d candidates)", p.Name(), i, len(cands))
		}
		seen[i] = true
	}
	if len(cands) > 0 && len(out) == 0 {
		tb.Fatalf("plugin %s: RankCandidates ranked no candidate: the host fails the call", p.Name())
	}
	return out
}

// Preempt runs the host's dry run of preemptor on one node with policy p:
// it offers the lower-priority pods (VictimCandidatesOf), asks
// SelectVictims, removes every chosen pod, and, if the preemptor then
// fits, gives pods back one at a time — those whose removal would violate
// a PodDisruptionBudget first, then the others, each group in the
// policy's order — keeping each one back while the preemptor still fits.
// It returns the names of the pods left to evict, in the policy's order,
// and nil; or no victims and the reason the node is no candidate (the
// policy's rejection, no victims chosen, or the preemptor not fitting).
// Fitting here is what NodeResourcesFit checks (CPU, memory, pod count);
// the host re-runs every filter of the profile.
func Preempt(tb testing.TB, p plugin.Plugin, preemptor *abi.Pod, node *plugin.NodeInfo) ([]string, *plugin.Status) {
	tb.Helper()
	cands, at := VictimCandidatesOf(preemptor, node)
	choices, st := RunSelectVictims(tb, p, preemptor, node, cands)
	if !st.IsSuccess() {
		return nil, st
	}
	if len(choices) == 0 {
		return nil, plugin.NewStatus(abi.UnschedulableAndUnresolvable, "no victims chosen")
	}
	removed := make([]bool, len(node.Pods))
	for _, c := range choices {
		removed[at[c.Index]] = true
	}
	if !fitsWithout(preemptor, node, removed) {
		return nil, plugin.NewStatus(abi.Unschedulable, "the preemptor does not fit even without the victims")
	}
	for _, violating := range []bool{true, false} {
		for _, c := range choices {
			if c.Violating != violating {
				continue
			}
			i := at[c.Index]
			removed[i] = false
			if !fitsWithout(preemptor, node, removed) {
				removed[i] = true
			}
		}
	}
	var names []string
	for _, c := range choices {
		if removed[at[c.Index]] {
			names = append(names, node.Pods[at[c.Index]].Name)
		}
	}
	return names, nil
}

// fitsWithout reports whether preemptor fits node's allocatable CPU,
// memory and pod count with the removed pods gone.
func fitsWithout(preemptor *abi.Pod, node *plugin.NodeInfo, removed []bool) bool {
	want := abi.PodRequests(preemptor)
	var cpu, mem, pods int64
	for i := range node.Pods {
		if removed[i] {
			continue
		}
		r := abi.PodRequests(&node.Pods[i])
		cpu, mem, pods = cpu+r.MilliCPU, mem+r.Memory, pods+1
	}
	a := node.Node.Allocatable
	// As NodeResourcesFit: a resource the preemptor does not request
	// never stops it.
	if want.MilliCPU > 0 && cpu+want.MilliCPU > a.MilliCPU {
		return false
	}
	if want.Memory > 0 && mem+want.Memory > a.Memory {
		return false
	}
	return node.Node.AllowedPods <= 0 || pods+1 <= node.Node.AllowedPods
}
