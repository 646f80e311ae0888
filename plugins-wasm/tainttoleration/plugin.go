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

// ErrReasonUntoleratedPrefix starts the rejection reason, which names the
// first untolerated NoSchedule/NoExecute taint as kube-scheduler does:
// "node(s) had untolerated taint {KEY: VALUE}" (see UntoleratedReason).
const ErrReasonUntoleratedPrefix = "node(s) had untolerated taint {"

// UntoleratedReason is the rejection reason for taint t, kube-scheduler's
// fmt.Sprintf("node(s) had untolerated taint {%s: %s}", key, value).
func UntoleratedReason(t *abi.Taint) string {
	return ErrReasonUntoleratedPrefix + t.Key + ": " + t.Value + "}"
}

// maxCachedStatuses bounds the per-taint status cache: a cluster with more
// distinct untolerated taints than this rebuilds it rather than growing the
// guest's heap without limit.
const maxCachedStatuses = 1024

// preScoreKey holds the pod's tolerations that can tolerate a
// PreferNoSchedule taint.
var preScoreKey = plugin.NewStateKey()

// TaintToleration filters by NoSchedule/NoExecute taints and scores by
// PreferNoSchedule taints.
type TaintToleration struct {
	// statuses caches the rejection status per taint key and value (the
	// effect does not change it), so that the nodes rejected by one taint
	// share one status and Filter allocates only the first time it meets
	// a taint. It is keyed by a hash of key and value because TinyGo's
	// string-keyed maps allocate on every lookup; a hit is confirmed
	// against the status's reason. Safe without a lock: a guest runs one
	// call at a time and builds its own plugin objects.
	statuses map[uint64]*plugin.Status
}

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
// tolerated by one of the pod's tolerations, naming the first such taint
// (UnschedulableAndUnresolvable: preempting pods does not remove taints).
func (pl *TaintToleration) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	taints := node.Node.Taints
	for i := range taints {
		t := &taints[i]
		if t.Effect != abi.EffectNoSchedule && t.Effect != abi.EffectNoExecute {
			continue
		}
		if !tolerates(pod.Tolerations, t) {
			return pl.untolerated(t)
		}
	}
	return nil
}

// untolerated returns the shared rejection status for taint t, building it
// the first time t is seen.
func (pl *TaintToleration) untolerated(t *abi.Taint) *plugin.Status {
	h := taintHash(t)
	if st := pl.statuses[h]; st != nil && namesTaint(st.Reasons()[0], t) {
		return st
	}
	st := plugin.NewStatus(abi.UnschedulableAndUnresolvable, UntoleratedReason(t))
	if pl.statuses == nil {
		pl.statuses = map[uint64]*plugin.Status{}
	} else if len(pl.statuses) >= maxCachedStatuses {
		clear(pl.statuses)
	}
	pl.statuses[h] = st // a hash collision replaces the other taint's entry
	return st
}

// taintHash is FNV-1a over the taint's key, a byte no key holds, and its
// value.
func taintHash(t *abi.Taint) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(t.Key); i++ {
		h = (h ^ uint64(t.Key[i])) * prime
	}
	h = (h ^ 0xff) * prime
	for i := 0; i < len(t.Value); i++ {
		h = (h ^ uint64(t.Value[i])) * prime
	}
	return h
}

// namesTaint reports whether reason, built by UntoleratedReason, names t:
// its length fixes where the key and the value lie, so comparing those two
// is enough (the fixed parts are not compared again).
func namesTaint(reason string, t *abi.Taint) bool {
	const p = len(ErrReasonUntoleratedPrefix)
	k := p + len(t.Key)
	return len(reason) == k+len(": ")+len(t.Value)+len("}") &&
		reason[p:k] == t.Key && reason[k+2:len(reason)-1] == t.Value
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
