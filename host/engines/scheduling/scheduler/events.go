package scheduler

import (
	"reflect"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
)

// The On* methods are how cluster changes reach the scheduler, from
// informers or from the simulation. Each updates the cache (for bound
// pods and nodes) or the queue (for pods waiting to be scheduled), then
// retries the parked pods the change may help.

// OnNodeAdd records a new node.
func (s *Scheduler) OnNodeAdd(n *abi.Node) {
	s.cache.AddNode(*n)
	s.queue.MoveAllToActiveOrBackoffQueue(queue.NodeAdd, nil)
}

// OnNodeUpdate records a changed node; the event says what changed, so
// only pods rejected for a reason that change can fix are retried.
func (s *Scheduler) OnNodeUpdate(old, n *abi.Node) {
	s.cache.AddNode(*n)
	var act queue.ActionType
	if !reflect.DeepEqual(old.Allocatable, n.Allocatable) || old.AllowedPods != n.AllowedPods {
		act |= queue.UpdateNodeAllocatable
	}
	if !reflect.DeepEqual(old.Labels, n.Labels) {
		act |= queue.UpdateNodeLabel
	}
	if !reflect.DeepEqual(old.Taints, n.Taints) || old.Unschedulable != n.Unschedulable {
		act |= queue.UpdateNodeTaint
	}
	if old.DeclaredFeatures != n.DeclaredFeatures {
		act |= queue.UpdateNodeDeclaredFeature
	}
	if act == 0 {
		return
	}
	s.queue.MoveAllToActiveOrBackoffQueue(queue.ClusterEvent{Resource: queue.Node, Action: act, Label: "NodeUpdate"}, nil)
}

// OnNodeDelete forgets a node.
func (s *Scheduler) OnNodeDelete(name string) {
	if err := s.cache.RemoveNode(name); err != nil {
		s.log.Debug("node delete", "node", name, "error", err)
	}
}

// Responsible reports whether a profile of this scheduler schedules pod.
func (s *Scheduler) Responsible(pod *abi.Pod) bool {
	return s.set.Load().byName[pod.SchedulerName] != nil
}

// OnPodAdd records a pod: a bound one in the cache, a pending one of our
// profiles in the queue. Pending pods of other schedulers are left alone.
func (s *Scheduler) OnPodAdd(pod *abi.Pod) {
	pod = s.withGuard(pod)
	if pod.NodeName != "" {
		if err := s.cache.AddPod(pod); err != nil {
			s.log.Debug("pod add", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		}
		s.queue.MoveAllToActiveOrBackoffQueue(queue.ClusterEvent{Resource: queue.AssignedPod, Action: queue.Add, Label: "AssignedPodAdd"}, nil)
		return
	}
	if !s.Responsible(pod) {
		return
	}
	if err := s.queue.Add(pod); err != nil {
		s.log.Warn("queue pod", "pod", pod.Namespace+"/"+pod.Name, "error", err)
	}
}

// OnPodUpdate records a changed pod. A pod that just got bound confirms
// its assumption (or is added to the cache) and leaves the queue.
func (s *Scheduler) OnPodUpdate(old, pod *abi.Pod) {
	old, pod = s.withGuard(old), s.withGuard(pod)
	switch {
	case pod.NodeName != "" && old.NodeName == "":
		s.queue.Delete(pod)
		s.OnPodAdd(pod)
	case pod.NodeName != "":
		if err := s.cache.UpdatePod(pod); err != nil {
			s.log.Debug("pod update", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		}
		var act queue.ActionType
		if !reflect.DeepEqual(old.Labels, pod.Labels) {
			act |= queue.UpdatePodLabel
		}
		if !reflect.DeepEqual(abi.PodRequests(old), abi.PodRequests(pod)) {
			act |= queue.UpdatePodScaleDown
		}
		if act != 0 {
			s.queue.MoveAllToActiveOrBackoffQueue(queue.ClusterEvent{Resource: queue.AssignedPod, Action: act, Label: "AssignedPodUpdate"}, nil)
		}
	case s.Responsible(pod):
		if err := s.queue.Update(old, pod); err != nil {
			s.log.Debug("queue update", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		}
	default:
		s.queue.Delete(pod) // its schedulerName moved away from us
	}
}

// OnPodDelete forgets a pod; a bound one frees its node's capacity.
func (s *Scheduler) OnPodDelete(pod *abi.Pod) {
	if pod.NodeName != "" {
		if err := s.cache.RemovePod(pod); err != nil {
			s.log.Debug("pod delete", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		}
		s.queue.MoveAllToActiveOrBackoffQueue(queue.AssignedPodDelete, nil)
		return
	}
	s.queue.Delete(pod)
}

// NamespaceEvent is a namespace added or relabelled: it can change which
// pods an affinity term's namespaceSelector covers.
var NamespaceEvent = queue.ClusterEvent{Resource: "Namespace", Action: queue.Add | queue.UpdateOther, Label: "NamespaceChange"}

// OnNamespace records a namespace's labels.
func (s *Scheduler) OnNamespace(name string, labels abi.Labels) {
	s.cache.SetNamespace(name, labels)
	s.queue.MoveAllToActiveOrBackoffQueue(NamespaceEvent, nil)
}

// OnNamespaceDelete forgets a namespace.
func (s *Scheduler) OnNamespaceDelete(name string) { s.cache.RemoveNamespace(name) }
