// Package tainttoleration is kube-scheduler's TaintToleration plugin as a
// wasmsched policy: NoSchedule and NoExecute taints a pod does not tolerate
// rule a node out, and PreferNoSchedule taints it does not tolerate make the
// node score lower.
package tainttoleration

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's so
// existing configurations carry over.
const Name = "TaintToleration"

// ErrReasonUntolerated is the rejection reason, kube-scheduler v1.35's
// wording: one reason for every untolerated NoSchedule/NoExecute taint,
// so a summary counts the nodes rejected by taints in one entry
// ("3 node(s) had untolerated taint(s)") rather than one per taint.
const ErrReasonUntolerated = "node(s) had untolerated taint(s)"

// statusUntolerated is shared by every rejected node: the SDK reports
// them all at the cost of one (UnschedulableAndUnresolvable: preempting
// pods does not remove taints).
var statusUntolerated = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonUntolerated)

// preScoreKey holds the pod's tolerations that can tolerate a
// PreferNoSchedule taint.
var preScoreKey = plugin.NewStateKey()

// TaintToleration filters by NoSchedule/NoExecute taints and scores by
// PreferNoSchedule taints.
type TaintToleration struct{}

var (
	_ plugin.FilterPlugin    = (*TaintToleration)(nil)
	_ plugin.PreScorePlugin  = (*TaintToleration)(nil)
	_ plugin.ScorePlugin     = (*TaintToleration)(nil)
	_ plugin.ScoreNormalizer = (*TaintToleration)(nil)
)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin; it takes no args, as upstream.
func New(_ *abi.Value, _ plugin.Handle) (plugin.Plugin, error) { return &TaintToleration{}, nil }

// Name implements plugin.Plugin.
func (*TaintToleration) Name() string { return Name }

// Filter rejects the node if any NoSchedule or NoExecute taint is not
// tolerated by one of the pod's tolerations.
func (pl *TaintToleration) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	taints := node.Node.Taints
	for i := range taints {
		t := &taints[i]
		if t.Effect != abi.EffectNoSchedule && t.Effect != abi.EffectNoExecute {
			continue
		}
		if !tolerates(pod.Tolerations, t) {
			return statusUntolerated
		}
	}
	return nil
}

func tolerates(tols []abi.Toleration, t *abi.Taint) bool {
	for i := range tols {
		if tols[i].ToleratesTaint(t) {
			return true
		}
	}
	return false
}

// preScoreState is immutable once written, so Clone shares it.
type preScoreState struct {
	tolerations []abi.Toleration
}

// Clone implements plugin.StateData.
func (s *preScoreState) Clone() plugin.StateData { return s }

// PreScore keeps only the tolerations that can tolerate a PreferNoSchedule
// taint (effect empty or PreferNoSchedule), so Score scans fewer.
func (*TaintToleration) PreScore(state *plugin.CycleState, pod *abi.Pod, _ []*plugin.NodeInfo) *plugin.Status {
	var s preScoreState
	for i := range pod.Tolerations {
		if e := pod.Tolerations[i].Effect; e == abi.EffectAll || e == abi.EffectPreferNoSchedule {
			s.tolerations = append(s.tolerations, pod.Tolerations[i])
		}
	}
	state.Write(preScoreKey, &s)
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod does not
// tolerate: the more, the worse (NormalizeScore reverses the scale).
func (*TaintToleration) Score(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	tols := pod.Tolerations // same answer, only slower, without PreScore
	if s, ok := state.Read(preScoreKey).(*preScoreState); ok {
		tols = s.tolerations
	}
	var n int64
	taints := node.Node.Taints
	for i := range taints {
		if taints[i].Effect == abi.EffectPreferNoSchedule && !tolerates(tols, &taints[i]) {
			n++
		}
	}
	return n, nil
}

// NormalizeScore maps counts onto [0, MaxScore] with the fewest intolerable
// taints scoring highest, as upstream.
func (*TaintToleration) NormalizeScore(_ *plugin.CycleState, _ *abi.Pod, scores []int64) *plugin.Status {
	plugin.DefaultNormalizeScore(abi.MaxScore, true, scores)
	return nil
}
