package framework

import "github.com/wasmsched/wasmsched/host/engines/scheduling/queue"

// PluginEvents says, for kube-scheduler's default plugins, which cluster
// events may make a pod they rejected schedulable, so the queue retries a
// parked pod only when it could help. Plugins not listed (custom modules)
// are retried on every event.
var PluginEvents = map[string][]queue.ClusterEvent{
	"NodeUnschedulable": {{Resource: queue.Node, Action: queue.Add | queue.UpdateNodeTaint}},
	"NodeName":          {{Resource: queue.Node, Action: queue.Add}},
	"TaintToleration": {{Resource: queue.Node, Action: queue.Add | queue.UpdateNodeTaint},
		{Resource: queue.UnscheduledPod, Action: queue.UpdatePodToleration}},
	"NodeAffinity": {{Resource: queue.Node, Action: queue.Add | queue.UpdateNodeLabel}},
	"NodePorts": {{Resource: queue.Node, Action: queue.Add},
		{Resource: queue.AssignedPod, Action: queue.Delete}},
	"NodeResourcesFit": {{Resource: queue.Node, Action: queue.Add | queue.UpdateNodeAllocatable},
		{Resource: queue.AssignedPod, Action: queue.Delete | queue.UpdatePodScaleDown}},
	"PodTopologySpread": {{Resource: queue.Node, Action: queue.Add | queue.Delete | queue.UpdateNodeLabel | queue.UpdateNodeTaint},
		{Resource: queue.AssignedPod, Action: queue.Add | queue.Delete | queue.UpdatePodLabel}},
	// DefaultPreemption gates a preemptor while its victims are removed:
	// an assigned pod's deletion may be the last victim leaving.
	"DefaultPreemption": {{Resource: queue.AssignedPod, Action: queue.Delete}},
	"InterPodAffinity": {{Resource: queue.Node, Action: queue.Add | queue.UpdateNodeLabel},
		{Resource: queue.AssignedPod, Action: queue.Add | queue.Delete | queue.UpdatePodLabel},
		{Resource: "Namespace", Action: queue.Add | queue.UpdateOther}},
	// A pending pod's spec fields the plugin reads are immutable, so only
	// nodes can make it pass.
	"NodeDeclaredFeatures": {{Resource: queue.Node, Action: queue.Add | queue.UpdateNodeDeclaredFeature}},
}
