package eviction

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/kubename"
)

// NodePressureName is the plugin's name in an eviction profile.
const NodePressureName = "NodePressure"

// NodePressureRegistration lets a module register the plugin.
var NodePressureRegistration = plugin.Registration{Name: NodePressureName, New: NewNodePressure}

// NodePressure acts on the pressure conditions kubelet reports on a node
// (MemoryPressure, DiskPressure, PIDPressure): while one is True the
// threshold is HardMet, the node is tainted with the condition (so the
// scheduler stops adding pods), and the coordinator evicts one pod per
// round, ranked as kubelet ranks them under memory pressure. It is the
// cluster-level counterpart of kubelet's own eviction: it moves pods off
// a node kubelet says is struggling before kubelet has to kill them.
type NodePressure struct {
	conditions []string
	effects    []abi.TaintEffect
	grace      int64
	rank       ranking
}

var _ plugin.ThresholdPlugin = (*NodePressure)(nil)

// NewNodePressure builds the plugin from its args: conditions (node
// condition types, default MemoryPressure, DiskPressure and PIDPressure),
// effects (the taint effects the condition puts on the node, default
// NoSchedule) and gracePeriodSeconds (default 0).
func NewNodePressure(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	if err := argparse.Map(args, "", "conditions", "effects", "gracePeriodSeconds"); err != nil {
		return nil, err
	}
	pl := &NodePressure{}
	var err error
	if pl.conditions, err = stringsArg(args, "conditions", []string{"MemoryPressure", "DiskPressure", "PIDPressure"}); err != nil {
		return nil, err
	}
	for i, c := range pl.conditions {
		// The condition's name becomes the name part of a taint key
		// (eviction.wasmsched.io/<name>), so it must be one.
		if !kubename.IsQualifiedName(c) || hasSlash(c) {
			return nil, argparse.Invalid(argparse.Index("conditions", i), argparse.Quote(c),
				"must be 1-63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit")
		}
	}
	effects, err := stringsArg(args, "effects", []string{"NoSchedule"})
	if err != nil {
		return nil, err
	}
	for i, e := range effects {
		eff, ok := parseEffect(e)
		if !ok {
			return nil, argparse.Invalid(argparse.Index("effects", i), argparse.Quote(e), "must be NoSchedule, PreferNoSchedule or NoExecute")
		}
		pl.effects = append(pl.effects, eff)
	}
	if pl.grace, err = graceArg(args); err != nil {
		return nil, err
	}
	return pl, nil
}

func hasSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

func parseEffect(s string) (abi.TaintEffect, bool) {
	for _, e := range [...]abi.TaintEffect{abi.EffectNoSchedule, abi.EffectPreferNoSchedule, abi.EffectNoExecute} {
		if s == e.String() {
			return e, true
		}
	}
	return 0, false
}

// Name implements plugin.Plugin.
func (*NodePressure) Name() string { return NodePressureName }

// pressureScope is the scope of a pressure condition: the resource under
// pressure, or the condition type for conditions kubelet does not define.
func pressureScope(condition string) string {
	switch condition {
	case "MemoryPressure":
		return abi.ResourceMemory
	case "DiskPressure":
		return abi.ResourceEphemeralStorage
	case "PIDPressure":
		return "pids"
	}
	return condition
}

// ThresholdMet is HardMet while one of the conditions (the first, in the
// order of the conditions arg) is True on the node, with that condition
// reported so the node is tainted; NotMet otherwise, and when the host
// sent no conditions.
func (pl *NodePressure) ThresholdMet(node *plugin.EvictionNode) abi.ThresholdResult {
	for _, want := range pl.conditions {
		for _, c := range node.Obs.Conditions {
			if c.Type != want || c.Status != abi.ConditionTrue {
				continue
			}
			return abi.ThresholdResult{Met: abi.HardMet, Scope: pressureScope(want), GracePeriodSeconds: pl.grace,
				Condition: &abi.EvictionCondition{Kind: abi.ConditionNodeKind, Name: want, Effects: pl.effects, Met: true}}
		}
	}
	return abi.ThresholdResult{}
}

// GetTopEvictionPods ranks the candidates as kubelet does under memory
// pressure (its rankMemoryPressure): pods using more memory than they
// request first, then lower priority, then the larger excess of usage
// over request, then name. Memory ranks every scope: the host measures
// only CPU and memory, and memory is what a pressured node lacks. A pod
// with no usage data never counts as exceeding its request and, among
// otherwise equal pods, comes after those with data. A hard query takes
// topN; a soft one, which NodePressure never causes, one.
func (pl *NodePressure) GetTopEvictionPods(node *plugin.EvictionNode, topN int, _ string, candidates []uint32, limit int) ([]uint32, *int64) {
	rs := pl.rank.candidates(node, candidates, memoryRequest, memoryUsage)
	sortRanked(rs, func(a, b *ranked) bool {
		if ea, eb := a.hasUsage && a.over() > 0, b.hasUsage && b.over() > 0; ea != eb {
			return ea
		}
		if a.pod.Priority != b.pod.Priority {
			return a.pod.Priority < b.pod.Priority
		}
		if a.hasUsage != b.hasUsage {
			return a.hasUsage
		}
		if a.hasUsage && a.over() != b.over() {
			return a.over() > b.over()
		}
		return byName(a, b)
	})
	return pl.rank.firstN(rs, wanted(topN, limit)), nil
}
