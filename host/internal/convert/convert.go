// Package convert turns core/v1 Pods and Nodes into the ABI's scheduling
// view, once, when they enter the host (from informers or manifests). It
// applies the API defaults a scheduler relies on (a container's request
// defaults to its limit, ports to TCP, tolerations to Equal, the scheduler
// name to default-scheduler) and refuses values it cannot represent with
// an error naming the field.
package convert

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
)

// Pod converts a pod. The priority is spec.priority (the API server's
// Priority admission sets it from the priority class).
func Pod(p *corev1.Pod) (*abi.Pod, error) {
	out := &abi.Pod{
		UID:                  string(p.UID),
		Namespace:            p.Namespace,
		Name:                 p.Name,
		Labels:               labels(p.Labels),
		NodeName:             p.Spec.NodeName,
		NominatedNodeName:    p.Status.NominatedNodeName,
		SchedulerName:        p.Spec.SchedulerName,
		PreemptNever:         p.Spec.PreemptionPolicy != nil && *p.Spec.PreemptionPolicy == corev1.PreemptNever,
		Terminating:          p.DeletionTimestamp != nil,
		PriorityClassName:    p.Spec.PriorityClassName,
		PreemptedByScheduler: PreemptedByScheduler(p),
		NodeSelector:         labels(p.Spec.NodeSelector),
		Overhead:             resources(p.Spec.Overhead),
		QoS:                  QoS(p),
		Annotations:          annotationRecord(p.Annotations),
	}
	out.Static, out.Mirror = staticOrMirror(p.Annotations)
	if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
		v := *g
		out.TerminationGraceSeconds = &v
	}
	if out.SchedulerName == "" {
		out.SchedulerName = config.DefaultSchedulerName
	}
	if p.Spec.Priority != nil {
		out.Priority = *p.Spec.Priority
	}
	if p.Status.StartTime != nil {
		out.StartTime = p.Status.StartTime.UnixNano()
	}
	var err error
	if out.Containers, err = containers(p.Spec.Containers, "spec.containers", p.Spec.HostNetwork); err != nil {
		return nil, err
	}
	if out.InitContainers, err = containers(p.Spec.InitContainers, "spec.initContainers", p.Spec.HostNetwork); err != nil {
		return nil, err
	}
	out.PodLevel = podLevelRequests(p, out) // from the spec, before a resize folds in status
	for _, v := range p.Spec.Volumes {
		if v.Image != nil {
			out.ImageVolumes = append(out.ImageVolumes, v.Image.Reference)
		}
	}
	if out.RequiredFeatures, err = requiredFeatures(&p.Spec); err != nil {
		return nil, err
	}
	applyResize(p, out)
	if a := p.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			if out.NodeAffinity, err = nodeAffinity(a.NodeAffinity); err != nil {
				return nil, err
			}
		}
		if a.PodAffinity != nil {
			if out.PodAffinity, err = podAffinity(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
				a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAffinity"); err != nil {
				return nil, err
			}
		}
		if a.PodAntiAffinity != nil {
			if out.PodAntiAffinity, err = podAffinity(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
				a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAntiAffinity"); err != nil {
				return nil, err
			}
		}
	}
	for i, t := range p.Spec.Tolerations {
		f := fmt.Sprintf("spec.tolerations[%d]", i)
		tol := abi.Toleration{Key: t.Key, Value: t.Value}
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
		case corev1.TolerationOpExists:
			tol.Operator = abi.TolerationExists
		default:
			return nil, fmt.Errorf("%s.operator: unknown operator %q", f, t.Operator)
		}
		if t.Effect != "" {
			if tol.Effect, err = effect(t.Effect, f+".effect"); err != nil {
				return nil, err
			}
		}
		out.Tolerations = append(out.Tolerations, tol)
	}
	for i, c := range p.Spec.TopologySpreadConstraints {
		f := fmt.Sprintf("spec.topologySpreadConstraints[%d]", i)
		tsc := abi.TopologySpreadConstraint{MaxSkew: c.MaxSkew, TopologyKey: c.TopologyKey, MatchLabelKeys: c.MatchLabelKeys}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule, "":
		case corev1.ScheduleAnyway:
			tsc.WhenUnsatisfiable = abi.ScheduleAnyway
		default:
			return nil, fmt.Errorf("%s.whenUnsatisfiable: unknown value %q", f, c.WhenUnsatisfiable)
		}
		if c.MinDomains != nil {
			tsc.MinDomains = *c.MinDomains
		}
		if tsc.NodeAffinityPolicy, err = inclusion(c.NodeAffinityPolicy, f+".nodeAffinityPolicy"); err != nil {
			return nil, err
		}
		if tsc.NodeTaintsPolicy, err = inclusion(c.NodeTaintsPolicy, f+".nodeTaintsPolicy"); err != nil {
			return nil, err
		}
		if tsc.LabelSelector, err = labelSelector(c.LabelSelector, f+".labelSelector"); err != nil {
			return nil, err
		}
		out.TopologySpread = append(out.TopologySpread, tsc)
	}
	for _, o := range p.OwnerReferences {
		out.Owners = append(out.Owners, abi.OwnerRef{Kind: o.Kind, Name: o.Name, UID: string(o.UID),
			Controller: o.Controller != nil && *o.Controller})
	}
	return out, nil
}

// Finished reports whether a pod has run to completion (phase Succeeded
// or Failed). kube-scheduler's informer lists pods without those phases:
// a finished pod holds nothing on its node and is never scheduled, so
// every way wasmsched reads pods leaves them out.
func Finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Node converts a node. Allocatable falls back to capacity, as the kubelet
// reports it when it reserves nothing.
func Node(n *corev1.Node) (*abi.Node, error) {
	alloc := n.Status.Allocatable
	if len(alloc) == 0 {
		alloc = n.Status.Capacity
	}
	out := &abi.Node{
		Name:          n.Name,
		Labels:        labels(n.Labels),
		Unschedulable: n.Spec.Unschedulable,
		Allocatable:   resources(alloc),
		Conditions:    nodeConditions(n.Status.Conditions),
	}
	if q, ok := alloc[corev1.ResourcePods]; ok {
		out.AllowedPods = q.Value()
	}
	for i, t := range n.Spec.Taints {
		e, err := effect(t.Effect, fmt.Sprintf("spec.taints[%d].effect", i))
		if err != nil {
			return nil, err
		}
		if e == abi.EffectAll {
			return nil, fmt.Errorf("spec.taints[%d].effect: a taint needs an effect", i)
		}
		out.Taints = append(out.Taints, abi.Taint{Key: t.Key, Value: t.Value, Effect: e})
	}
	for _, img := range n.Status.Images {
		out.Images = append(out.Images, abi.ImageState{Names: img.Names, Size: img.SizeBytes})
	}
	var err error
	if out.DeclaredFeatures, err = declaredFeatures(n.Status.DeclaredFeatures); err != nil {
		return nil, fmt.Errorf("status.declaredFeatures: %w", err)
	}
	return out, nil
}

func labels(m map[string]string) abi.Labels {
	if len(m) == 0 {
		return nil
	}
	ls := make(abi.Labels, 0, len(m))
	for k, v := range m {
		ls = append(ls, abi.Label{Key: k, Value: v})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Key < ls[j].Key })
	return ls
}

// resources converts a resource list: cpu in millicores, everything else
// in its base unit.
func resources(rl corev1.ResourceList) abi.Resources {
	var r abi.Resources
	for name, q := range rl {
		switch name {
		case corev1.ResourceCPU:
			r.MilliCPU = q.MilliValue()
		case corev1.ResourceMemory:
			r.Memory = q.Value()
		case corev1.ResourceEphemeralStorage:
			r.EphemeralStorage = q.Value()
		case corev1.ResourcePods:
			// node capacity for pods; carried in Node.AllowedPods
		default:
			r.Add(string(name), q.Value())
		}
	}
	return r
}

// containers converts a pod's containers. With hostNetwork every
// container port is a host port (the API defaults hostPort to
// containerPort), so host-network pods conflict on their ports.
func containers(cs []corev1.Container, field string, hostNetwork bool) ([]abi.Container, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	out := make([]abi.Container, 0, len(cs))
	for i, c := range cs {
		req := requestsOf(&c)
		ac := abi.Container{Name: c.Name, Image: c.Image, Requests: resources(req), Given: given(req),
			RestartAlways: c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways}
		for j, p := range c.Ports {
			if p.HostPort == 0 && hostNetwork {
				p.HostPort = p.ContainerPort
			}
			if p.HostPort == 0 {
				continue
			}
			hp := abi.HostPort{IP: p.HostIP, Port: p.HostPort}
			switch p.Protocol {
			case "", corev1.ProtocolTCP:
			case corev1.ProtocolUDP:
				hp.Protocol = abi.ProtocolUDP
			case corev1.ProtocolSCTP:
				hp.Protocol = abi.ProtocolSCTP
			default:
				return nil, fmt.Errorf("%s[%d].ports[%d].protocol: unknown protocol %q", field, i, j, p.Protocol)
			}
			ac.Ports = append(ac.Ports, hp)
		}
		out = append(out, ac)
	}
	return out, nil
}

func effect(e corev1.TaintEffect, field string) (abi.TaintEffect, error) {
	switch e {
	case "":
		return abi.EffectAll, nil
	case corev1.TaintEffectNoSchedule:
		return abi.EffectNoSchedule, nil
	case corev1.TaintEffectPreferNoSchedule:
		return abi.EffectPreferNoSchedule, nil
	case corev1.TaintEffectNoExecute:
		return abi.EffectNoExecute, nil
	}
	return 0, fmt.Errorf("%s: unknown effect %q", field, e)
}

func inclusion(p *corev1.NodeInclusionPolicy, field string) (abi.InclusionPolicy, error) {
	if p == nil {
		return abi.PolicyUnset, nil
	}
	switch *p {
	case corev1.NodeInclusionPolicyHonor:
		return abi.PolicyHonor, nil
	case corev1.NodeInclusionPolicyIgnore:
		return abi.PolicyIgnore, nil
	}
	return 0, fmt.Errorf("%s: unknown policy %q", field, *p)
}

func operator(op string, field string, nodeSelector bool) (abi.Operator, error) {
	switch op {
	case "In":
		return abi.OpIn, nil
	case "NotIn":
		return abi.OpNotIn, nil
	case "Exists":
		return abi.OpExists, nil
	case "DoesNotExist":
		return abi.OpDoesNotExist, nil
	case "Gt":
		if nodeSelector {
			return abi.OpGt, nil
		}
	case "Lt":
		if nodeSelector {
			return abi.OpLt, nil
		}
	}
	return 0, fmt.Errorf("%s: unknown operator %q", field, op)
}

func nodeSelectorTerm(t corev1.NodeSelectorTerm, field string) (abi.NodeSelectorTerm, error) {
	var out abi.NodeSelectorTerm
	for i, r := range t.MatchExpressions {
		op, err := operator(string(r.Operator), fmt.Sprintf("%s.matchExpressions[%d].operator", field, i), true)
		if err != nil {
			return out, err
		}
		out.MatchExpressions = append(out.MatchExpressions, abi.Requirement{Key: r.Key, Operator: op, Values: r.Values})
	}
	for i, r := range t.MatchFields {
		op, err := operator(string(r.Operator), fmt.Sprintf("%s.matchFields[%d].operator", field, i), true)
		if err != nil {
			return out, err
		}
		out.MatchFields = append(out.MatchFields, abi.Requirement{Key: r.Key, Operator: op, Values: r.Values})
	}
	return out, nil
}

func nodeAffinity(a *corev1.NodeAffinity) (*abi.NodeAffinity, error) {
	const f = "spec.affinity.nodeAffinity"
	out := &abi.NodeAffinity{}
	if req := a.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		out.Required = &abi.NodeSelector{}
		for i, t := range req.NodeSelectorTerms {
			at, err := nodeSelectorTerm(t, fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d]", f, i))
			if err != nil {
				return nil, err
			}
			out.Required.Terms = append(out.Required.Terms, at)
		}
	}
	for i, p := range a.PreferredDuringSchedulingIgnoredDuringExecution {
		at, err := nodeSelectorTerm(p.Preference, fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d].preference", f, i))
		if err != nil {
			return nil, err
		}
		out.Preferred = append(out.Preferred, abi.PreferredSchedulingTerm{Weight: p.Weight, Term: at})
	}
	return out, nil
}

// LabelSelector converts a metav1.LabelSelector; field names it in errors.
func LabelSelector(s *metav1.LabelSelector, field string) (*abi.LabelSelector, error) {
	return labelSelector(s, field)
}

func labelSelector(s *metav1.LabelSelector, field string) (*abi.LabelSelector, error) {
	if s == nil {
		return nil, nil
	}
	out := &abi.LabelSelector{MatchLabels: labels(s.MatchLabels)}
	for i, r := range s.MatchExpressions {
		op, err := operator(string(r.Operator), fmt.Sprintf("%s.matchExpressions[%d].operator", field, i), false)
		if err != nil {
			return nil, err
		}
		out.MatchExpressions = append(out.MatchExpressions, abi.Requirement{Key: r.Key, Operator: op, Values: r.Values})
	}
	return out, nil
}

func podAffinityTerm(t corev1.PodAffinityTerm, field string) (abi.PodAffinityTerm, error) {
	out := abi.PodAffinityTerm{Namespaces: t.Namespaces, TopologyKey: t.TopologyKey,
		MatchLabelKeys: t.MatchLabelKeys, MismatchLabelKeys: t.MismatchLabelKeys}
	var err error
	if out.LabelSelector, err = labelSelector(t.LabelSelector, field+".labelSelector"); err != nil {
		return out, err
	}
	if out.NamespaceSelector, err = labelSelector(t.NamespaceSelector, field+".namespaceSelector"); err != nil {
		return out, err
	}
	return out, nil
}

func podAffinity(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm, field string) (*abi.PodAffinity, error) {
	out := &abi.PodAffinity{}
	for i, t := range req {
		at, err := podAffinityTerm(t, fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", field, i))
		if err != nil {
			return nil, err
		}
		out.Required = append(out.Required, at)
	}
	for i, w := range pref {
		at, err := podAffinityTerm(w.PodAffinityTerm, fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d].podAffinityTerm", field, i))
		if err != nil {
			return nil, err
		}
		out.Preferred = append(out.Preferred, abi.WeightedPodAffinityTerm{Weight: w.Weight, Term: at})
	}
	return out, nil
}
