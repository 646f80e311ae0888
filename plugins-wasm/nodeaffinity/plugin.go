// Package nodeaffinity is kube-scheduler's NodeAffinity plugin as a
// wasmsched policy: it filters nodes by the pod's nodeSelector and required
// node affinity (plus an affinity the profile enforces) and scores them by
// the pod's preferred node affinity.
package nodeaffinity

import (
	"slices"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/nodeselector"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's so
// existing configurations carry over.
const Name = "NodeAffinity"

// Rejection reasons, kube-scheduler's wording, so FailedScheduling events
// read the same as with the stock scheduler.
const (
	// ErrReasonPod: the node fails the pod's nodeSelector or required
	// node affinity.
	ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"
	// ErrReasonEnforced: the node fails the profile's addedAffinity.
	ErrReasonEnforced = "node(s) didn't match scheduler-enforced node affinity"
	// ErrReasonConflict: every required term pins metadata.name to a set
	// of nodes and those sets are all empty, so no node can match.
	ErrReasonConflict = "pod affinity terms conflict"
)

// Unresolvable: preemption does not change node labels or names.
var (
	statusPod      = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonPod)
	statusEnforced = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonEnforced)
	statusConflict = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonConflict)
	statusSkip     = plugin.NewStatus(abi.Skip)
)

var (
	preFilterKey = plugin.NewStateKey()
	preScoreKey  = plugin.NewStateKey()
)

// NodeAffinity filters by required and scores by preferred node affinity.
type NodeAffinity struct {
	// addedRequired is the compiled addedAffinity required selector, nil
	// when unset.
	addedRequired *nodeselector.Selector
	// addedPreferred is nil when addedAffinity has no preferred terms.
	addedPreferred []nodeselector.Preferred
	// handle numbers strings for the cycle (see plugin.Handle.StringID).
	handle plugin.Handle
}

var (
	_ plugin.PreFilterPlugin = (*NodeAffinity)(nil)
	_ plugin.FilterPlugin    = (*NodeAffinity)(nil)
	_ plugin.PreScorePlugin  = (*NodeAffinity)(nil)
	_ plugin.ScorePlugin     = (*NodeAffinity)(nil)
	_ plugin.ScoreNormalizer = (*NodeAffinity)(nil)
)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin from NodeAffinityArgs (see ParseArgs).
func New(args *abi.Value, h plugin.Handle) (plugin.Plugin, error) {
	a, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	pl := &NodeAffinity{handle: h}
	if na := a.AddedAffinity; na != nil {
		if na.Required != nil {
			pl.addedRequired, _ = nodeselector.Compile(na.Required, "") // validated by ParseArgs
		}
		if len(na.Preferred) != 0 {
			pl.addedPreferred, _ = nodeselector.CompilePreferred(na.Preferred, "")
		}
	}
	return pl, nil
}

// Name implements plugin.Plugin.
func (*NodeAffinity) Name() string { return Name }

// PreFilter compiles the pod's required affinity once per cycle. A pod
// with neither nodeSelector nor required affinity, in a profile without
// addedAffinity, skips Filter. When every required term pins
// metadata.name, only the nodes those terms name can match: PreFilter
// names them (plugin.OnlyNodes), so the host filters just those, or
// rejects the pod outright when the terms leave no name.
func (pl *NodeAffinity) PreFilter(state *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	na := pod.NodeAffinity
	noRequired := na == nil || na.Required == nil
	if noRequired && pl.addedRequired == nil && len(pod.NodeSelector) == 0 {
		return statusSkip
	}
	pl.addedRequired.Number(pl.handle)
	state.Write(preFilterKey, nodeselector.ForPod(pod, pl.handle))
	if noRequired {
		return nil
	}
	names, pinned := pinnedNames(na.Required.Terms)
	switch {
	case !pinned:
		return nil
	case len(names) == 0:
		return statusConflict
	}
	return plugin.OnlyNodes(names...)
}

// pinnedNames is upstream's node-name narrowing: within a term the
// "metadata.name In" fields are ANDed (their value sets intersected), and
// the terms are ORed (their results unioned). pinned is false when some
// term has no such field, since that term allows every node name. The
// names come sorted, without duplicates.
func pinnedNames(terms []abi.NodeSelectorTerm) (names []string, pinned bool) {
	if len(terms) == 0 {
		return nil, false
	}
	for i := range terms {
		var first *abi.Requirement
		for j := range terms[i].MatchFields {
			f := &terms[i].MatchFields[j]
			if f.Key == nodeselector.ObjectNameField && f.Operator == abi.OpIn {
				first = f
				break
			}
		}
		if first == nil {
			return nil, false // this term allows every node name
		}
		for _, name := range first.Values {
			if inEveryNameField(&terms[i], name) {
				names = append(names, name)
			}
		}
	}
	sortNames(names)
	return slices.Compact(names), true
}

// sortNames sorts names in place: a Shell sort (Knuth's gaps), because
// slices.Sort brings pdqsort's ~4 KB into the default bundle for lists
// that hold a name or two.
func sortNames(names []string) {
	gap := 1
	for gap < len(names)/3 {
		gap = 3*gap + 1
	}
	for ; gap > 0; gap /= 3 {
		for i := gap; i < len(names); i++ {
			for j := i; j >= gap && names[j] < names[j-gap]; j -= gap {
				names[j], names[j-gap] = names[j-gap], names[j]
			}
		}
	}
}

// inEveryNameField reports whether name is in every "metadata.name In"
// field of t.
func inEveryNameField(t *abi.NodeSelectorTerm, name string) bool {
	for j := range t.MatchFields {
		f := &t.MatchFields[j]
		if f.Key == nodeselector.ObjectNameField && f.Operator == abi.OpIn && !slices.Contains(f.Values, name) {
			return false
		}
	}
	return true
}

// Filter checks the profile's added affinity, then the pod's.
func (pl *NodeAffinity) Filter(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	if pl.addedRequired != nil && !pl.addedRequired.Matches(&node.Node) {
		return statusEnforced
	}
	r, ok := state.Read(preFilterKey).(*nodeselector.Required)
	if !ok {
		// PreFilter did not run (or skipped): compile once and keep it
		// for the cycle's other nodes.
		pl.addedRequired.Number(pl.handle)
		r = nodeselector.ForPod(pod, pl.handle)
		state.Write(preFilterKey, r)
	}
	if !r.Matches(&node.Node) {
		return statusPod
	}
	return nil
}

// preferredAffinity is the pod's compiled preferred terms, or the Error
// status of a term that failed to compile.
type preferredAffinity struct {
	terms []nodeselector.Preferred
	err   *plugin.Status
}

// Clone implements plugin.StateData.
func (p *preferredAffinity) Clone() plugin.StateData { return p }

// podPreferred compiles the pod's preferred terms and numbers them, with
// the profile's, for this cycle.
func (pl *NodeAffinity) podPreferred(pod *abi.Pod) ([]nodeselector.Preferred, error) {
	nodeselector.NumberPreferred(pl.addedPreferred, pl.handle)
	if pod.NodeAffinity == nil || len(pod.NodeAffinity.Preferred) == 0 {
		return nil, nil
	}
	terms, err := nodeselector.CompilePreferred(pod.NodeAffinity.Preferred, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution")
	nodeselector.NumberPreferred(terms, pl.handle)
	return terms, err
}

// PreScore compiles the pod's preferred terms. A term that fails to parse
// is an Error, as upstream; with no preferences at all Score is skipped.
func (pl *NodeAffinity) PreScore(state *plugin.CycleState, pod *abi.Pod, _ []*plugin.NodeInfo) *plugin.Status {
	terms, err := pl.podPreferred(pod)
	if err != nil {
		return plugin.AsStatus(err)
	}
	if terms == nil && pl.addedPreferred == nil {
		return statusSkip
	}
	state.Write(preScoreKey, &preferredAffinity{terms: terms})
	return nil
}

// Score sums the weights of the preferred terms (the pod's and the
// profile's) the node matches.
func (pl *NodeAffinity) Score(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	var score int64
	if pl.addedPreferred != nil {
		score = nodeselector.ScorePreferred(pl.addedPreferred, &node.Node)
	}
	p, ok := state.Read(preScoreKey).(*preferredAffinity)
	if !ok {
		// PreScore did not run (or skipped): compile once and keep the
		// result, or the error, for the cycle's other nodes.
		terms, err := pl.podPreferred(pod)
		p = &preferredAffinity{terms: terms, err: plugin.AsStatus(err)}
		state.Write(preScoreKey, p)
	}
	if p.err != nil {
		return 0, p.err
	}
	if p.terms != nil {
		score += nodeselector.ScorePreferred(p.terms, &node.Node)
	}
	return score, nil
}

// NormalizeScore scales the sums so the best node scores MaxScore.
func (*NodeAffinity) NormalizeScore(_ *plugin.CycleState, _ *abi.Pod, scores []int64) *plugin.Status {
	plugin.DefaultNormalizeScore(abi.MaxScore, false, scores)
	return nil
}
