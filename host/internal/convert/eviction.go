package convert

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/abi"
)

// Annotations that mark static and mirror pods (kubelet's
// ConfigSourceAnnotationKey and ConfigMirrorAnnotationKey).
const (
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	ConfigMirrorAnnotation = "kubernetes.io/config.mirror"
	// ConfigSourceAPI is the config source of a pod created through the
	// API server, the only kind that is not static.
	ConfigSourceAPI = "api"
	// LastAppliedAnnotation is kubectl's copy of the whole applied
	// object: large, and of no use to an eviction policy.
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
)

// MaxAnnotationValue bounds the values kept in abi.Pod.Annotations, in
// bytes: an annotation with a longer value (kubectl's last-applied
// configuration, say) keeps its key with an empty value. Every key is
// kept, whatever the pod carries: the host decides on keys (the eviction
// coordinator's skip annotations, static and mirror pods), so a bound on
// their number would let a pod hide a protection annotation behind
// others. The keys and the values kept are strings shared with the source
// object, so the list itself is all the record costs; what a guest sees
// of annotations is bounded where its copy is made (the eviction
// observation: only the keys its manifest names).
const MaxAnnotationValue = 1024

// QoS is the pod's QoS class as Kubernetes' GetPodQOS gives it:
// status.qosClass when the kubelet has set it, else computed from the
// spec (see computeQoS).
func QoS(p *corev1.Pod) abi.QoSClass {
	switch p.Status.QOSClass {
	case corev1.PodQOSGuaranteed:
		return abi.QoSGuaranteed
	case corev1.PodQOSBurstable:
		return abi.QoSBurstable
	case corev1.PodQOSBestEffort:
		return abi.QoSBestEffort
	}
	return computeQoS(p)
}

// computeQoS follows Kubernetes' ComputePodQOS (PodLevelResources on, its
// default since 1.34), with the API server's defaulting of requests to
// limits applied first, since manifests in a simulation never went
// through it. Only positive cpu and memory quantities count. Pod-level
// resources, when the pod has them, decide alone; otherwise the requests
// and limits of every container and init container are summed:
//   - nothing requested or limited: BestEffort;
//   - every container limits both cpu and memory, and the summed requests
//     equal the summed limits for the same resources: Guaranteed;
//   - anything else: Burstable.
func computeQoS(p *corev1.Pod) abi.QoSClass {
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	if r := p.Spec.Resources; r != nil {
		addQoS(req, withDefaultRequests(r.Requests, r.Limits))
		if len(r.Limits) > 0 && !addQoS(lim, r.Limits) {
			guaranteed = false
		}
	} else {
		for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
			for i := range cs {
				r := &cs[i].Resources
				addQoS(req, withDefaultRequests(r.Requests, r.Limits))
				if !addQoS(lim, r.Limits) {
					guaranteed = false
				}
			}
		}
	}
	if len(req) == 0 && len(lim) == 0 {
		return abi.QoSBestEffort
	}
	if !guaranteed || len(req) != len(lim) {
		return abi.QoSBurstable
	}
	for name, r := range req {
		if l, ok := lim[name]; !ok || l.Cmp(r) != 0 {
			return abi.QoSBurstable
		}
	}
	return abi.QoSGuaranteed
}

// addQoS adds the positive cpu and memory quantities of rl to sum and
// says whether rl had both.
func addQoS(sum, rl corev1.ResourceList) (cpuAndMemory bool) {
	n := 0
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		q, ok := rl[name]
		if !ok || q.Sign() <= 0 {
			continue
		}
		n++
		s := sum[name] // the zero Quantity when absent
		s.Add(q)
		sum[name] = s
	}
	return n == 2
}

// withDefaultRequests is requests with each limit standing in for a
// missing request, as the API server defaults them.
func withDefaultRequests(requests, limits corev1.ResourceList) corev1.ResourceList {
	if len(limits) == 0 {
		return requests
	}
	out := make(corev1.ResourceList, len(limits)+len(requests))
	for k, v := range limits {
		out[k] = v
	}
	for k, v := range requests {
		out[k] = v
	}
	return out
}

// staticOrMirror reads kubelet's config annotations: a static pod came
// from a file or URL (source other than "api"); a mirror pod is its copy
// in the API server.
func staticOrMirror(annotations map[string]string) (static, mirror bool) {
	src, ok := annotations[ConfigSourceAnnotation]
	_, mirror = annotations[ConfigMirrorAnnotation]
	return ok && src != ConfigSourceAPI, mirror
}

// annotationRecord is the host's record of a pod's annotations: every
// key, sorted, values over MaxAnnotationValue bytes (and kubectl's
// last-applied configuration, of no use to a policy) emptied. No key is
// ever dropped: host decisions test keys, and a dropped key would be a
// protection lost.
func annotationRecord(m map[string]string) abi.Labels {
	if len(m) == 0 {
		return nil
	}
	ls := make(abi.Labels, 0, len(m))
	for k, v := range m {
		if len(v) > MaxAnnotationValue || k == LastAppliedAnnotation {
			v = ""
		}
		ls = append(ls, abi.Label{Key: k, Value: v})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Key < ls[j].Key })
	return ls
}

// nodeConditions converts status.conditions, sorted by type. Heartbeat
// times are left out: they change on every status update and would make
// every node look changed.
func nodeConditions(cs []corev1.NodeCondition) []abi.NodeCondition {
	if len(cs) == 0 {
		return nil
	}
	out := make([]abi.NodeCondition, len(cs))
	for i, c := range cs {
		out[i] = abi.NodeCondition{Type: string(c.Type), Status: conditionStatus(c.Status)}
		if !c.LastTransitionTime.IsZero() {
			out[i].LastTransition = c.LastTransitionTime.UnixNano()
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// conditionStatus maps True and False; anything else is Unknown.
func conditionStatus(s corev1.ConditionStatus) abi.ConditionStatus {
	switch s {
	case corev1.ConditionTrue:
		return abi.ConditionTrue
	case corev1.ConditionFalse:
		return abi.ConditionFalse
	}
	return abi.ConditionUnknown
}
