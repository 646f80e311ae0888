package vpod

import (
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const (
	// UnschedulableAnnotation marks an adapter pod that must take no new
	// vreplicas (it is being evicted); the value is parsed like
	// strconv.ParseBool.
	UnschedulableAnnotation = "eventing.knative.dev/unschedulable"
	// ZoneLabel is the node label naming its zone.
	ZoneLabel = "topology.kubernetes.io/zone"
	// UnknownZone is the zone of a node without ZoneLabel.
	UnknownZone = "unknown"
	// unreachableTaint makes a node unschedulable for vreplicas with the
	// NoExecute or NoSchedule effect.
	unreachableTaint = "node.kubernetes.io/unreachable"
	// maxOrdinal bounds the ordinals the engine keeps free capacity for.
	// Knative would grow its free-capacity table to any parsed ordinal
	// (and index out of range on an unparsable one); a placement naming
	// a higher ordinal is logged and left out of the capacity tally
	// instead of costing gigabytes.
	maxOrdinal = 1<<16 - 1
	// badOrdinal is what an unparsable pod name yields (as in Knative).
	badOrdinal = math.MaxInt32
)

// podName is the name of the StatefulSet's pod of that ordinal.
func podName(statefulSet string, ordinal int32) string {
	return statefulSet + "-" + strconv.Itoa(int(ordinal))
}

// ordinalOf parses the ordinal after the last '-' of a pod name, as
// Knative does; an unparsable name gives badOrdinal.
func ordinalOf(name string) int32 {
	o, err := strconv.ParseInt(name[strings.LastIndexByte(name, '-')+1:], 10, 32)
	if err != nil {
		return badOrdinal
	}
	return int32(o)
}

// podUnschedulable: the pod is marked for eviction or not bound to a node.
func podUnschedulable(p *corev1.Pod) bool {
	if v, ok := p.Annotations[UnschedulableAnnotation]; ok {
		if b, err := strconv.ParseBool(v); err == nil && b {
			return true
		}
	}
	return p.Spec.NodeName == ""
}

// nodeUnschedulable: the node is cordoned or unreachable.
func nodeUnschedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.Key == unreachableTaint && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == corev1.TaintEffectNoSchedule) {
			return true
		}
	}
	return false
}

// nodeZone is the node's zone label, or UnknownZone.
func nodeZone(n *corev1.Node) string {
	if z := n.Labels[ZoneLabel]; z != "" {
		return z
	}
	return UnknownZone
}

// TotalVReplicas sums the vreplicas of placements (Knative's
// GetTotalVReplicas): what a vpod has placed.
func TotalVReplicas(ps []Placement) int32 {
	var t int32
	for _, p := range ps {
		t += p.VReplicas
	}
	return t
}
