package sim

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds on quantities, far below where the scheduler's int64 sums (milli-
// CPU, bytes) could overflow even over thousands of pods on one node; the
// API server itself has no such bound, but nothing real comes close.
var (
	// MaxCPU is the most CPU one quantity may say: a billion cores.
	MaxCPU = resource.MustParse("1G")
	// MaxQuantity is the most any other quantity may say: 1Pi (2^50)
	// bytes of memory or storage, or units of anything else.
	MaxQuantity = resource.MustParse("1Pi")
)

// HighestUserPriority is the largest value a PriorityClass not named
// system-… may have, as the API server enforces; SystemCriticalPriority
// is the largest any other may have. The two classes the API server
// creates itself must have their own values, as there:
// system-cluster-critical SystemCriticalPriority and system-node-critical
// SystemNodeCriticalPriority (so a cluster's classes, read back from
// `kubectl get priorityclasses -o yaml`, are accepted).
const (
	HighestUserPriority        = 1_000_000_000
	SystemCriticalPriority     = 2 * HighestUserPriority
	SystemNodeCriticalPriority = SystemCriticalPriority + 1000
)

// systemClasses are the PriorityClasses the API server creates, by name.
var systemClasses = map[string]int32{
	"system-cluster-critical": SystemCriticalPriority,
	"system-node-critical":    SystemNodeCriticalPriority,
}

// Validate checks an object of a kind simulate reads (*corev1.Pod, Node,
// Namespace, Service, *appsv1.ReplicaSet, ... as pointers) as a
// manifest's object is checked once decoded, for objects that come from
// elsewhere — a live cluster — so the same rules hold for them. It
// returns nil or the problems, each naming its field.
func Validate(obj any) error {
	errs := validateObject(obj)
	if p, ok := obj.(*corev1.Pod); ok && len(p.Spec.Containers) == 0 {
		errs = append(errs, field.Required(field.NewPath("spec", "containers"), "at least one container is required"))
	}
	return errs.ToAggregate()
}

// validateObject checks obj as the API server's validation would on
// create, for the fields a simulation reads: names and labels, resources,
// ports, tolerations and taints, affinity, spread constraints, priority
// classes and disruption budgets. kube-apiserver's pkg/apis/core/validation
// cannot be imported cheaply, so this rebuilds the checks a scheduler
// depends on from apimachinery's helpers, with the same field paths.
func validateObject(obj any) field.ErrorList {
	meta := field.NewPath("metadata")
	switch o := obj.(type) {
	case *corev1.Pod:
		errs := objectMeta(&o.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
		return append(errs, podSpec(&o.Spec, field.NewPath("spec"))...)
	case *corev1.Node:
		errs := objectMeta(&o.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
		errs = append(errs, taints(o.Spec.Taints, field.NewPath("spec", "taints"))...)
		status := field.NewPath("status")
		errs = append(errs, resourceList(o.Status.Capacity, status.Child("capacity"))...)
		return append(errs, resourceList(o.Status.Allocatable, status.Child("allocatable"))...)
	case *corev1.Namespace:
		return objectMeta(&o.ObjectMeta, false, apivalidation.NameIsDNSLabel, meta)
	case *corev1.Service:
		errs := objectMeta(&o.ObjectMeta, true, apivalidation.NameIsDNS1035Label, meta)
		spec := field.NewPath("spec")
		errs = append(errs, metavalidation.ValidateLabels(o.Spec.Selector, spec.Child("selector"))...)
		for i, p := range o.Spec.Ports {
			pp := spec.Child("ports").Index(i)
			errs = append(errs, portNumber(int64(p.Port), false, pp.Child("port"))...)
			errs = append(errs, portNumber(int64(p.NodePort), true, pp.Child("nodePort"))...)
			errs = append(errs, protocol(p.Protocol, pp.Child("protocol"))...)
			if p.TargetPort.Type == intstr.Int {
				errs = append(errs, portNumber(int64(p.TargetPort.IntVal), true, pp.Child("targetPort"))...)
			} else {
				errs = append(errs, portName(p.TargetPort.StrVal, pp.Child("targetPort"))...)
			}
		}
		return errs
	case *schedulingv1.PriorityClass:
		errs := objectMeta(&o.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
		limit := int32(HighestUserPriority)
		if strings.HasPrefix(o.Name, "system-") {
			limit = SystemCriticalPriority
		}
		if want, ok := systemClasses[o.Name]; ok {
			if o.Value != want {
				errs = append(errs, field.Invalid(field.NewPath("value"), o.Value, fmt.Sprintf("%s is the API server's own class; its value is %d", o.Name, want)))
			}
		} else if o.Value > limit {
			errs = append(errs, field.Invalid(field.NewPath("value"), o.Value, fmt.Sprintf("must not be greater than %d", limit)))
		}
		if p := o.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
			errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
		return errs
	case *policyv1.PodDisruptionBudget:
		errs := objectMeta(&o.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
		spec := field.NewPath("spec")
		if o.Spec.MinAvailable != nil && o.Spec.MaxUnavailable != nil {
			errs = append(errs, field.Invalid(spec, o.Spec, "minAvailable and maxUnavailable cannot be both set"))
		}
		errs = append(errs, intOrPercent(o.Spec.MinAvailable, spec.Child("minAvailable"))...)
		errs = append(errs, intOrPercent(o.Spec.MaxUnavailable, spec.Child("maxUnavailable"))...)
		return append(errs, metavalidation.ValidateLabelSelector(o.Spec.Selector, metavalidation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
	case *appsv1.Deployment:
		return workload(&o.ObjectMeta, &o.Spec.Template)
	case *appsv1.ReplicaSet:
		return workload(&o.ObjectMeta, &o.Spec.Template)
	case *appsv1.StatefulSet:
		return workload(&o.ObjectMeta, &o.Spec.Template)
	}
	return nil
}

// objectMeta validates metadata; a namespaced object with no namespace is
// checked as if in "default", where the simulation puts it.
func objectMeta(m *metav1.ObjectMeta, namespaced bool, name apivalidation.ValidateNameFunc, path *field.Path) field.ErrorList {
	if namespaced && m.Namespace == "" {
		c := *m
		c.Namespace = corev1.NamespaceDefault
		m = &c
	}
	return apivalidation.ValidateObjectMeta(m, namespaced, name, path)
}

func workload(m *metav1.ObjectMeta, t *corev1.PodTemplateSpec) field.ErrorList {
	errs := objectMeta(m, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	tmpl := field.NewPath("spec", "template")
	errs = append(errs, metavalidation.ValidateLabels(t.Labels, tmpl.Child("metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, tmpl.Child("metadata", "annotations"))...)
	if len(t.Spec.Containers) == 0 {
		return errs // validateWorkload says so, in its words
	}
	return append(errs, podSpec(&t.Spec, tmpl.Child("spec"))...)
}

func podSpec(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for _, list := range []struct {
		name string
		cs   []corev1.Container
	}{{"initContainers", s.InitContainers}, {"containers", s.Containers}} {
		for i := range list.cs {
			errs = append(errs, container(&list.cs[i], names, path.Child(list.name).Index(i))...)
		}
	}
	if s.Resources != nil {
		errs = append(errs, requirements(s.Resources, path.Child("resources"))...)
	}
	errs = append(errs, resourceList(s.Overhead, path.Child("overhead"))...)
	errs = append(errs, metavalidation.ValidateLabels(s.NodeSelector, path.Child("nodeSelector"))...)
	for _, f := range []struct{ name, value string }{{"nodeName", s.NodeName}, {"schedulerName", s.SchedulerName}, {"priorityClassName", s.PriorityClassName}} {
		if f.value != "" {
			for _, msg := range validation.IsDNS1123Subdomain(f.value) {
				errs = append(errs, field.Invalid(path.Child(f.name), f.value, msg))
			}
		}
	}
	errs = append(errs, tolerations(s.Tolerations, path.Child("tolerations"))...)
	if a := s.Affinity; a != nil {
		ap := path.Child("affinity")
		errs = append(errs, nodeAffinity(a.NodeAffinity, ap.Child("nodeAffinity"))...)
		if a.PodAffinity != nil {
			errs = append(errs, podAffinity(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, ap.Child("podAffinity"))...)
		}
		if a.PodAntiAffinity != nil {
			errs = append(errs, podAffinity(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, ap.Child("podAntiAffinity"))...)
		}
	}
	return append(errs, spreadConstraints(s.TopologySpreadConstraints, path.Child("topologySpreadConstraints"))...)
}

func container(c *corev1.Container, names map[string]bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	np := path.Child("name")
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(np, ""))
	case names[c.Name]:
		errs = append(errs, field.Duplicate(np, c.Name))
	default:
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(np, c.Name, msg))
		}
	}
	names[c.Name] = true
	if strings.TrimSpace(c.Image) != c.Image {
		errs = append(errs, field.Invalid(path.Child("image"), c.Image, "must not have leading or trailing whitespace"))
	}
	errs = append(errs, requirements(&c.Resources, path.Child("resources"))...)
	for i, p := range c.Ports {
		pp := path.Child("ports").Index(i)
		errs = append(errs, portNumber(int64(p.ContainerPort), false, pp.Child("containerPort"))...)
		errs = append(errs, portNumber(int64(p.HostPort), true, pp.Child("hostPort"))...)
		errs = append(errs, protocol(p.Protocol, pp.Child("protocol"))...)
		if p.Name != "" {
			errs = append(errs, portName(p.Name, pp.Child("name"))...)
		}
	}
	return errs
}

// resourceList checks names and quantities: non-negative, as the API
// server requires, and within MaxCPU / MaxQuantity.
// requirements checks a container's or the pod's (pod-level) requests
// and limits: valid quantities, and no request above its limit.
func requirements(r *corev1.ResourceRequirements, rp *field.Path) field.ErrorList {
	errs := resourceList(r.Requests, rp.Child("requests"))
	errs = append(errs, resourceList(r.Limits, rp.Child("limits"))...)
	for name, req := range r.Requests {
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(rp.Child("requests").Key(string(name)), req.String(),
				fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		}
	}
	return errs
}

func resourceList(rl corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, q := range rl {
		p := path.Key(string(name))
		errs = append(errs, resourceName(string(name), p)...)
		limit := MaxQuantity
		if name == corev1.ResourceCPU {
			limit = MaxCPU
		}
		switch {
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(p, q.String(), "must be greater than or equal to 0"))
		case q.Cmp(limit) > 0:
			errs = append(errs, field.Invalid(p, q.String(), fmt.Sprintf("must be at most %s", limit.String())))
		}
	}
	return errs
}

func resourceName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	if len(errs) > 0 || strings.Contains(name, "/") {
		return errs
	}
	switch corev1.ResourceName(name) {
	case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods, corev1.ResourceStorage:
		return nil
	}
	if strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(name, corev1.ResourceAttachableVolumesPrefix) {
		return nil
	}
	return field.ErrorList{field.Invalid(path, name, "must be a standard resource type or fully qualified (e.g. example.com/gpu)")}
}

func portNumber(port int64, zeroOK bool, path *field.Path) field.ErrorList {
	if port == 0 && zeroOK {
		return nil
	}
	if port < 1 || port > 65535 {
		return field.ErrorList{field.Invalid(path, port, validation.InclusiveRangeError(1, 65535))}
	}
	return nil
}

func portName(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortName(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

func protocol(p corev1.Protocol, path *field.Path) field.ErrorList {
	switch p {
	case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		return nil
	}
	return field.ErrorList{field.NotSupported(path, p, []corev1.Protocol{corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP})}
}

func labelKey(key string, path *field.Path) field.ErrorList {
	return metavalidation.ValidateLabelName(key, path)
}

func labelValue(v string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func effect(e corev1.TaintEffect, emptyOK bool, path *field.Path) field.ErrorList {
	if e == "" && emptyOK {
		return nil
	}
	for _, ok := range taintEffects {
		if e == ok {
			return nil
		}
	}
	if e == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	return field.ErrorList{field.NotSupported(path, e, taintEffects)}
}

func taints(ts []corev1.Taint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]int{}
	for i, t := range ts {
		p := path.Index(i)
		if t.Key == "" {
			errs = append(errs, field.Required(p.Child("key"), ""))
		} else {
			errs = append(errs, labelKey(t.Key, p.Child("key"))...)
		}
		errs = append(errs, labelValue(t.Value, p.Child("value"))...)
		errs = append(errs, effect(t.Effect, false, p.Child("effect"))...)
		id := t.Key + "\x00" + string(t.Effect)
		if j, dup := seen[id]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("taint key %q and effect %q (also spec.taints[%d])", t.Key, t.Effect, j)))
		}
		seen[id] = i
	}
	return errs
}

func tolerations(ts []corev1.Toleration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range ts {
		p := path.Index(i)
		if t.Key != "" {
			errs = append(errs, labelKey(t.Key, p.Child("key"))...)
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if t.Key == "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when key is empty"))
			}
			errs = append(errs, labelValue(t.Value, p.Child("value"))...)
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "value must be empty when operator is Exists"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		errs = append(errs, effect(t.Effect, true, p.Child("effect"))...)
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be NoExecute when tolerationSeconds is set"))
		}
	}
	return errs
}

func nodeAffinity(na *corev1.NodeAffinity, path *field.Path) field.ErrorList {
	if na == nil {
		return nil
	}
	var errs field.ErrorList
	if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		rp := path.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		if len(r.NodeSelectorTerms) == 0 {
			errs = append(errs, field.Required(rp, "must have at least one node selector term"))
		}
		for i := range r.NodeSelectorTerms {
			errs = append(errs, nodeSelectorTerm(&r.NodeSelectorTerms[i], rp.Index(i))...)
		}
	}
	for i, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		pp := path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		errs = append(errs, weight(p.Weight, pp.Child("weight"))...)
		errs = append(errs, nodeSelectorTerm(&p.Preference, pp.Child("preference"))...)
	}
	return errs
}

func weight(w int32, path *field.Path) field.ErrorList {
	if w < 1 || w > 100 {
		return field.ErrorList{field.Invalid(path, w, validation.InclusiveRangeError(1, 100))}
	}
	return nil
}

func nodeSelectorTerm(t *corev1.NodeSelectorTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, r := range t.MatchExpressions {
		p := path.Child("matchExpressions").Index(i)
		errs = append(errs, labelKey(r.Key, p.Child("key"))...)
		vp := p.Child("values")
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				errs = append(errs, field.Required(vp, "must be specified when `operator` is 'In' or 'NotIn'"))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				errs = append(errs, field.Forbidden(vp, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				errs = append(errs, field.Required(vp, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
			} else if _, err := strconv.ParseInt(r.Values[0], 10, 64); err != nil {
				errs = append(errs, field.Invalid(vp.Index(0), r.Values[0], "must be an integer when `operator` is 'Lt' or 'Gt'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator, []corev1.NodeSelectorOperator{
				corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
				corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt}))
		}
	}
	for i, r := range t.MatchFields {
		p := path.Child("matchFields").Index(i)
		if r.Key != "metadata.name" {
			errs = append(errs, field.NotSupported(p.Child("key"), r.Key, []string{"metadata.name"}))
		}
		if r.Operator != corev1.NodeSelectorOpIn && r.Operator != corev1.NodeSelectorOpNotIn {
			errs = append(errs, field.NotSupported(p.Child("operator"), r.Operator, []corev1.NodeSelectorOperator{corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn}))
		} else if len(r.Values) != 1 {
			errs = append(errs, field.Required(p.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	}
	return errs
}

func podAffinity(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range req {
		errs = append(errs, podAffinityTerm(&req[i], path.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i := range pref {
		p := path.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		errs = append(errs, weight(pref[i].Weight, p.Child("weight"))...)
		errs = append(errs, podAffinityTerm(&pref[i].PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func podAffinityTerm(t *corev1.PodAffinityTerm, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	opts := metavalidation.LabelSelectorValidationOptions{}
	errs = append(errs, metavalidation.ValidateLabelSelector(t.LabelSelector, opts, path.Child("labelSelector"))...)
	errs = append(errs, metavalidation.ValidateLabelSelector(t.NamespaceSelector, opts, path.Child("namespaceSelector"))...)
	for i, ns := range t.Namespaces {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(path.Child("namespaces").Index(i), ns, msg))
		}
	}
	if t.TopologyKey == "" {
		errs = append(errs, field.Required(path.Child("topologyKey"), "can not be empty"))
	} else {
		errs = append(errs, labelKey(t.TopologyKey, path.Child("topologyKey"))...)
	}
	for i, k := range t.MatchLabelKeys {
		errs = append(errs, labelKey(k, path.Child("matchLabelKeys").Index(i))...)
	}
	for i, k := range t.MismatchLabelKeys {
		errs = append(errs, labelKey(k, path.Child("mismatchLabelKeys").Index(i))...)
	}
	return errs
}

func spreadConstraints(cs []corev1.TopologySpreadConstraint, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := path.Index(i)
		if c.MaxSkew <= 0 {
			errs = append(errs, field.Invalid(p.Child("maxSkew"), c.MaxSkew, "must be greater than zero"))
		}
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		} else {
			errs = append(errs, labelKey(c.TopologyKey, p.Child("topologyKey"))...)
		}
		switch c.WhenUnsatisfiable {
		case corev1.DoNotSchedule, corev1.ScheduleAnyway:
		default:
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable, []corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "must be greater than 0"))
			} else if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), *c.MinDomains, "can only use minDomains if whenUnsatisfiable=DoNotSchedule"))
			}
		}
		errs = append(errs, metavalidation.ValidateLabelSelector(c.LabelSelector, metavalidation.LabelSelectorValidationOptions{}, p.Child("labelSelector"))...)
		for j, k := range c.MatchLabelKeys {
			errs = append(errs, labelKey(k, p.Child("matchLabelKeys").Index(j))...)
		}
		for _, pol := range []struct {
			name string
			v    *corev1.NodeInclusionPolicy
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if pol.v != nil && *pol.v != corev1.NodeInclusionPolicyHonor && *pol.v != corev1.NodeInclusionPolicyIgnore {
				errs = append(errs, field.NotSupported(p.Child(pol.name), *pol.v, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore}))
			}
		}
	}
	return errs
}

// intOrPercent checks a PodDisruptionBudget count: a non-negative integer
// or a percentage from 0% to 100%.
func intOrPercent(v *intstr.IntOrString, path *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return field.ErrorList{field.Invalid(path, v.IntVal, "must be greater than or equal to 0")}
		}
		return nil
	}
	if msgs := validation.IsValidPercent(v.StrVal); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(path, v.StrVal, strings.Join(msgs, "; "))}
	}
	n, _ := strconv.Atoi(strings.TrimSuffix(v.StrVal, "%"))
	if n > 100 {
		return field.ErrorList{field.Invalid(path, v.StrVal, "must not be greater than 100%")}
	}
	return nil
}
