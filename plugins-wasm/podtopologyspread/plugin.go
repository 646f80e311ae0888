// Package podtopologyspread is kube-scheduler's PodTopologySpread plugin as
// a wasmsched policy: DoNotSchedule constraints filter nodes by the skew
// the pod would cause, ScheduleAnyway constraints score nodes so pods
// spread over topology domains.
//
// Matching pods are counted per node from NodeInfo.PodGroups (pods grouped
// by namespace and label set), so the cost grows with the number of
// distinct label sets on a node, not with its pods.
package podtopologyspread

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/nodelabel"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/nodeselector"
)

// Name is the plugin's name in a profile.
const Name = "PodTopologySpread"

// Rejection reasons, kube-scheduler's wording.
const (
	// ErrReasonConstraintsNotMatch: the skew would exceed maxSkew.
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	// ErrReasonNodeLabelNotMatch: the node lacks a topology key.
	ErrReasonNodeLabelNotMatch = ErrReasonConstraintsNotMatch + " (missing required label)"
)

var (
	statusNotMatch = plugin.NewStatus(abi.Unschedulable, ErrReasonConstraintsNotMatch)
	statusNoLabel  = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
	statusSkip     = plugin.NewStatus(abi.Skip)
	// Missing cycle state (an Error), shared so Filter/Score never allocate.
	statusNoPreFilter = plugin.NewStatus(abi.Error, "PodTopologySpread: PreFilter state missing")
	statusNoPreScore  = plugin.NewStatus(abi.Error, "PodTopologySpread: PreScore state missing")
)

var (
	preFilterKey = plugin.NewStateKey()
	preScoreKey  = plugin.NewStateKey()
)

// PodTopologySpread filters and scores by topology spread constraints.
type PodTopologySpread struct {
	h                  plugin.Handle
	defaultConstraints []abi.TopologySpreadConstraint
	systemDefaulted    bool
	// Per-slot tables of PreFilter and PreScore, recycled across cycles.
	owners plugin.Scratch[*plugin.NodeInfo]
	dom    plugin.Scratch[int32]
	scores plugin.Scratch[int64]
	// slotSize is the slot bound of the last slot table (slotBuf.table).
	slotSize int
	// keys caches the nodes' values of topology keys across cycles.
	keys nodelabel.Cache
	// Selector answers per label set, for PreFilter's constraints and
	// PreScore's (one memo per constraint, begun when compiled).
	filterMemos, scoreMemos plugin.LabelMemos
}

var (
	_ plugin.PreFilterPlugin     = (*PodTopologySpread)(nil)
	_ plugin.FilterPlugin        = (*PodTopologySpread)(nil)
	_ plugin.PreFilterExtensions = (*PodTopologySpread)(nil)
	_ plugin.PreScorePlugin      = (*PodTopologySpread)(nil)
	_ plugin.ScorePlugin         = (*PodTopologySpread)(nil)
	_ plugin.ScoreNormalizer     = (*PodTopologySpread)(nil)
)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin from PodTopologySpreadArgs (see ParseArgs).
func New(args *abi.Value, h plugin.Handle) (plugin.Plugin, error) {
	a, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	pl := &PodTopologySpread{h: h}
	if a.DefaultingType == SystemDefaulting {
		pl.defaultConstraints = systemDefaultConstraints
		pl.systemDefaulted = true
	} else {
		pl.defaultConstraints = a.DefaultConstraints
	}
	return pl, nil
}

// Name implements plugin.Plugin.
func (*PodTopologySpread) Name() string { return Name }

// constraint is a compiled topology spread constraint.
type constraint struct {
	maxSkew    int32
	key        string
	topo       *nodelabel.Key // nodes' values of key (numbered for the cycle), cached across cycles
	sel        plugin.Selector
	minDomains int32
	// required is the pod's nodeSelector and required node affinity,
	// compiled once, when nodeAffinityPolicy is Honor (the default).
	required    *nodeselector.Required
	honorTaints bool // nodeTaintsPolicy (default Ignore)
	selfMatch   bool // the selector matches the incoming pod
	// memo remembers sel's answers per pod group label set this cycle.
	memo plugin.MemoRef
}

// constraintsFor compiles the pod's constraints of the given action, or
// the default ones (with the pod's controller selector) when the pod has
// none.
func (pl *PodTopologySpread) constraintsFor(pod *abi.Pod, action abi.WhenUnsatisfiable) ([]constraint, error) {
	var cons []constraint
	var err error
	if len(pod.TopologySpread) > 0 {
		cons, err = compileConstraints(pod.TopologySpread, pod, action, nil, pl.h, &pl.keys)
	} else if cs := pod.ControllerSelector; cs != nil && (len(cs.MatchLabels) > 0 || len(cs.MatchExpressions) > 0) {
		cons, err = compileConstraints(pl.defaultConstraints, pod, action, cs, pl.h, &pl.keys)
	}
	memos := &pl.filterMemos
	if action == abi.ScheduleAnyway {
		memos = &pl.scoreMemos
	}
	for i := range cons {
		cons[i].memo = memos.Begin(i)
	}
	return cons, err
}

// compileConstraints compiles and numbers (h, for this cycle) the
// constraints of the given action; nodes' values of their topology keys
// are looked up through keys.
func compileConstraints(in []abi.TopologySpreadConstraint, pod *abi.Pod, action abi.WhenUnsatisfiable, override *abi.LabelSelector, h plugin.Handle, keys *nodelabel.Cache) ([]constraint, error) {
	var out []constraint
	var required *nodeselector.Required // shared by the constraints that honor it
	for i := range in {
		c := &in[i]
		if c.WhenUnsatisfiable != action {
			continue
		}
		ls := c.LabelSelector
		if override != nil {
			ls = override
		}
		ls = mergeMatchLabelKeys(ls, c.MatchLabelKeys, pod.Labels)
		sel, err := plugin.NewSelector(ls)
		if err != nil {
			return nil, err
		}
		sel.Number(h)
		md := c.MinDomains
		if md <= 0 {
			md = 1
		}
		var req *nodeselector.Required
		if c.NodeAffinityPolicy != abi.PolicyIgnore && hasRequiredNodes(pod) {
			if required == nil {
				required = nodeselector.ForPod(pod, h)
			}
			req = required
		}
		out = append(out, constraint{
			maxSkew:     c.MaxSkew,
			key:         c.TopologyKey,
			topo:        keys.Key(c.TopologyKey, stringID(h, c.TopologyKey)),
			sel:         sel,
			minDomains:  md,
			required:    req,
			honorTaints: c.NodeTaintsPolicy == abi.PolicyHonor,
			selfMatch:   sel.Matches(pod.Labels),
		})
	}
	return out, nil
}

// stringID numbers s for the cycle, or 0 without a handle.
func stringID(h plugin.Handle, s string) abi.StrID {
	if h == nil {
		return 0
	}
	return h.StringID(s)
}

// value is the node's value of the constraint's topology key, with its
// number, and whether the node has the key.
//
//go:inline
func (c *constraint) value(ni *plugin.NodeInfo) (string, abi.StrID, bool) {
	return c.topo.Value(ni)
}

// mergeMatchLabelKeys ANDs "key In [value]" into ls for every key the pod
// has a label for. A nil selector (matches nothing) stays nil, as
// upstream's merge keeps labels.Nothing().
func mergeMatchLabelKeys(ls *abi.LabelSelector, keys []string, podLabels abi.Labels) *abi.LabelSelector {
	if ls == nil || len(keys) == 0 {
		return ls
	}
	var merged *abi.LabelSelector
	for _, k := range keys {
		v, ok := podLabels.Get(k)
		if !ok {
			continue
		}
		if merged == nil {
			merged = &abi.LabelSelector{
				MatchLabels:      ls.MatchLabels,
				MatchExpressions: append([]abi.Requirement(nil), ls.MatchExpressions...),
			}
		}
		merged.MatchExpressions = append(merged.MatchExpressions,
			abi.Requirement{Key: k, Operator: abi.OpIn, Values: []string{v}})
	}
	if merged == nil {
		return ls
	}
	return merged
}

// hasAllKeys reports whether the node has every constraint's topology key.
//
//go:inline
func hasAllKeys(ni *plugin.NodeInfo, cs []constraint) bool {
	for i := range cs {
		if !cs[i].topo.Has(ni) {
			return false
		}
	}
	return true
}

// hasRequiredNodes reports whether the pod restricts its nodes (a
// nodeSelector or required node affinity); a pod that does not includes
// every node under nodeAffinityPolicy Honor, so its constraints keep no
// node selector to ask per node.
func hasRequiredNodes(pod *abi.Pod) bool {
	return len(pod.NodeSelector) > 0 || (pod.NodeAffinity != nil && pod.NodeAffinity.Required != nil)
}

// includes applies the constraint's node inclusion policies. PreFilter
// and PreScore ask it per node: a constraint without any (the usual
// case) answers inline.
//
//go:inline
func (c *constraint) includes(pod *abi.Pod, node *abi.Node) bool {
	if c.required == nil && !c.honorTaints {
		return true
	}
	return c.includesNode(pod, node)
}

// includesNode is includes for a constraint with inclusion policies.
func (c *constraint) includesNode(pod *abi.Pod, node *abi.Node) bool {
	if c.required != nil && !c.required.Matches(node) {
		return false
	}
	if c.honorTaints && !taintsTolerated(pod, node) {
		return false
	}
	return true
}

// countMatching counts the node's pods in the namespace of pod that the
// constraint's selector matches, one selector match per pod group label
// set and cycle (the constraint's memo). An empty selector counts
// nothing, as upstream's countPodsMatchSelector. It is called per node:
// its parameters fit in registers (docs/PERFORMANCE.md, calls in Wasm),
// and a node without pods answers inline.
//
//go:inline
func countMatching(ni *abi.NodeInfo, c *constraint, pod *abi.Pod) int32 {
	if len(ni.PodGroups) == 0 {
		return 0
	}
	return countGroups(ni, c, pod)
}

// countGroups is countMatching for a node with pods, inlined too: a
// call per node costs Wasm a prologue and an interruption check.
//
//go:inline
func countGroups(ni *abi.NodeInfo, c *constraint, pod *abi.Pod) int32 {
	if c.sel.Empty() {
		return 0
	}
	var n int32
	for i := range ni.PodGroups {
		g := &ni.PodGroups[i]
		if abi.SameString(g.Namespace, g.NamespaceID, pod.Namespace, pod.NamespaceID) && c.sel.MatchesGroup(g, c.memo) {
			n += g.Count
		}
	}
	return n
}
