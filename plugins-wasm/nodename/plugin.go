// Package nodename is kube-scheduler's NodeName plugin as a wasmsched
// policy: a pod that names its node (spec.nodeName) fits only that node.
package nodename

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's so
// existing configurations carry over.
const Name = "NodeName"

// ErrReason is the rejection reason, kube-scheduler's wording, so that
// FailedScheduling events read the same as with the stock scheduler.
const ErrReason = "node(s) didn't match the requested node name"

// One shared status: the SDK reports every mismatching node at the cost of
// one. Unresolvable because preempting pods cannot change a node's name.
var statusMismatch = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReason)

// NodeName filters out every node but the one the pod names.
type NodeName struct{}

var _ plugin.FilterPlugin = (*NodeName)(nil)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin; it takes no args, as upstream.
func New(_ *abi.Value, _ plugin.Handle) (plugin.Plugin, error) { return &NodeName{}, nil }

// Name implements plugin.Plugin.
func (*NodeName) Name() string { return Name }

// Filter passes the node when the pod names no node or names this one.
func (*NodeName) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	if pod.NodeName == "" || pod.NodeName == node.Node.Name {
		return nil
	}
	return statusMismatch
}
