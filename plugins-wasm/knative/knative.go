// Package knative holds the ten predicates and priorities of Knative
// Eventing v1.16.0's vpod scheduler (pkg/scheduler/plugins), the plugins
// of the knative bundle (plugins-wasm/cmd/knative) that the host's vpod
// engine runs at every vreplica placement or removal step:
//
//   - predicates: PodFitsResources, NoMaxResourceCount{NumPartitions},
//     EvenPodSpread{MaxSkew};
//   - priorities: EvenPodSpread (the same plugin), AvailabilityNodePriority,
//     AvailabilityZonePriority, LowestOrdinalPriority (placement), and
//     RemoveWithEvenPodSpreadPriority, RemoveWithAvailabilityNodePriority,
//     RemoveWithAvailabilityZonePriority, RemoveWithHighestOrdinalPriority
//     (descheduling).
//
// They follow v1.16.0's behaviour, quirks included, with one deliberate
// change: scores are signed. Knative's "MaxUint64 − penalty" wraps
// around once weighted and summed in uint64; here a score is −penalty
// (LowestOrdinalPriority −ordinal, RemoveWithHighestOrdinalPriority
// +ordinal), and the host sums weighted scores in int64. MaxSkew only
// counts in EvenPodSpread's predicate: the priorities decode it (bad args
// fail them) but, as in Knative, only logged it.
//
// Args are Knative's: a JSON string holding an object (see
// plugin.DecodeKnativeArgs). Each step's cost is O(pods + nodes + zones)
// plus a sort of the vpod's spread values, not O(pods × pods).
package knative

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Plugin names, as Knative's policies spell them.
const (
	PodFitsResourcesName                   = "PodFitsResources"
	NoMaxResourceCountName                 = "NoMaxResourceCount"
	EvenPodSpreadName                      = "EvenPodSpread"
	AvailabilityNodePriorityName           = "AvailabilityNodePriority"
	AvailabilityZonePriorityName           = "AvailabilityZonePriority"
	LowestOrdinalPriorityName              = "LowestOrdinalPriority"
	RemoveWithEvenPodSpreadPriorityName    = "RemoveWithEvenPodSpreadPriority"
	RemoveWithAvailabilityNodePriorityName = "RemoveWithAvailabilityNodePriority"
	RemoveWithAvailabilityZonePriorityName = "RemoveWithAvailabilityZonePriority"
	RemoveWithHighestOrdinalPriorityName   = "RemoveWithHighestOrdinalPriority"
)

// named is the base of every plugin here: a name and nothing else, since
// the args come per policy entry.
type named string

func (n named) Name() string { return string(n) }

// registration makes a plugin's registration. Vpod plugins take their
// args per policy entry, so module-level args (pluginConfig) are refused
// rather than silently ignored.
func registration(p plugin.Plugin) plugin.Registration {
	name := p.Name()
	return plugin.Registration{Name: name, New: func(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
		if !args.IsNull() {
			return nil, errModuleArgs
		}
		return p, nil
	}}
}

type argsErr struct{ msg string }

func (e *argsErr) Error() string { return e.msg }

var errModuleArgs error = &argsErr{"vpod plugins take their args from each policy entry, not from module args"}

// maxSkewArgs decodes {"MaxSkew": int32}, the args of the spread plugins.
func maxSkewArgs(raw []byte) (int32, error) {
	var skew int32
	err := plugin.DecodeKnativeArgs(raw, plugin.Int32Arg("MaxSkew", &skew))
	return skew, err
}

// Reasons, as Knative's plugins give them.
var (
	errFullCapacity   = plugin.NewStatus(abi.Unschedulable, "pod at full capacity")
	errUnevenSpread   = plugin.NewStatus(abi.Unschedulable, "pod will cause an uneven spread")
	errPartitionCount = plugin.NewStatus(abi.Unschedulable, "pod increases total # of pods beyond partition count")
)

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
