// Package nodeunschedulable is kube-scheduler's NodeUnschedulable plugin as
// a wasmsched policy: cordoned nodes (spec.unschedulable) take only pods
// that tolerate the node.kubernetes.io/unschedulable:NoSchedule taint.
package nodeunschedulable

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's so
// existing configurations carry over.
const Name = "NodeUnschedulable"

// ErrReasonUnschedulable is the rejection reason, kube-scheduler's wording,
// so FailedScheduling events read the same as with the stock scheduler.
const ErrReasonUnschedulable = "node(s) were unschedulable"

// TaintNodeUnschedulable is the taint key a cordoned node is treated as
// carrying: a pod tolerating it may land on cordoned nodes (DaemonSets do).
const TaintNodeUnschedulable = "node.kubernetes.io/unschedulable"

// Shared so that every cordoned node costs the SDK one status.
// Unresolvable: preemption does not uncordon nodes.
var statusUnschedulable = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonUnschedulable)

// The taint a cordon stands for; package-level so Filter takes its address
// without allocating.
var unschedulableTaint = abi.Taint{Key: TaintNodeUnschedulable, Effect: abi.EffectNoSchedule}

// NodeUnschedulable filters out cordoned nodes.
type NodeUnschedulable struct{}

var _ plugin.FilterPlugin = (*NodeUnschedulable)(nil)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin; it takes no args, as upstream.
func New(_ *abi.Value, _ plugin.Handle) (plugin.Plugin, error) { return &NodeUnschedulable{}, nil }

// Name implements plugin.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

// Filter rejects a cordoned node unless the pod tolerates the
// unschedulable taint. Schedulable nodes, the common case, cost one load.
func (*NodeUnschedulable) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	if !node.Node.Unschedulable {
		return nil
	}
	for i := range pod.Tolerations {
		if pod.Tolerations[i].ToleratesTaint(&unschedulableTaint) {
			return nil
		}
	}
	return statusUnschedulable
}
