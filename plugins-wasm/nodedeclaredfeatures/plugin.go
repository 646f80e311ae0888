// Package nodedeclaredfeatures is kube-scheduler's NodeDeclaredFeatures
// plugin as a wasmsched policy: a pod whose spec needs node features (a
// restart rule that restarts all containers, hostNetwork with hostUsers
// false, bind mount options) fits only nodes whose status.declaredFeatures
// list them.
//
// Which spec needs which feature is the host's business: it infers the
// pod's features with kube-scheduler's own registry and sends both sides
// as bit sets (abi.Pod.RequiredFeatures, abi.Node.DeclaredFeatures), so
// the plugin stays one AND per node and follows new features without a
// rebuild.
package nodedeclaredfeatures

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's so
// existing configurations carry over.
const Name = "NodeDeclaredFeatures"

// ErrReason is the rejection reason, kube-scheduler's wording, so that
// FailedScheduling events read the same as with the stock scheduler.
const ErrReason = "node(s) didn't match Pod's required features"

// Shared statuses: every node lacking a feature costs the SDK one.
// Unresolvable because preempting pods does not give a node features.
var (
	statusMissing = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReason)
	statusSkip    = plugin.NewStatus(abi.Skip)
)

// NodeDeclaredFeatures filters out nodes lacking a feature the pod needs.
type NodeDeclaredFeatures struct{}

var (
	_ plugin.PreFilterPlugin = (*NodeDeclaredFeatures)(nil)
	_ plugin.FilterPlugin    = (*NodeDeclaredFeatures)(nil)
)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin; it takes no args, as upstream.
func New(_ *abi.Value, _ plugin.Handle) (plugin.Plugin, error) { return &NodeDeclaredFeatures{}, nil }

// Name implements plugin.Plugin.
func (*NodeDeclaredFeatures) Name() string { return Name }

// PreFilter skips the plugin for a pod that needs no feature, as
// kube-scheduler's does, so its Filter runs only for pods that need one.
func (*NodeDeclaredFeatures) PreFilter(_ *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	if pod.RequiredFeatures == 0 {
		return statusSkip
	}
	return nil
}

// Filter passes the node when it declares every feature the pod needs.
func (*NodeDeclaredFeatures) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	if pod.RequiredFeatures&^node.Node.DeclaredFeatures == 0 {
		return nil
	}
	return statusMissing
}
