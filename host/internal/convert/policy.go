package convert

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"

	"github.com/wasmsched/wasmsched/abi"
)

// Preemption-related conversions: PodDisruptionBudgets, the KEP-3280
// annotation of PriorityClasses, and the condition that marks a pod as a
// preemption victim.

// ReasonPreemptionByScheduler is the reason of the DisruptionTarget
// condition a scheduler sets on the victims it preempts.
const ReasonPreemptionByScheduler = "PreemptionByScheduler"

// PreemptedByScheduler reports whether the pod carries
// DisruptionTarget=True with reason PreemptionByScheduler.
func PreemptedByScheduler(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == ReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// PDB converts a PodDisruptionBudget. A selector the ABI cannot represent
// is an error naming the field; the caller decides whether to skip the
// budget (kube-scheduler ignores budgets with invalid selectors).
func PDB(p *policyv1.PodDisruptionBudget) (*abi.PDB, error) {
	sel, err := labelSelector(p.Spec.Selector, "spec.selector")
	if err != nil {
		return nil, err
	}
	out := &abi.PDB{
		Namespace:          p.Namespace,
		Name:               p.Name,
		Selector:           sel,
		DisruptionsAllowed: p.Status.DisruptionsAllowed,
	}
	for name := range p.Status.DisruptedPods {
		out.DisruptedPods = append(out.DisruptedPods, name)
	}
	sort.Strings(out.DisruptedPods)
	return out, nil
}

// DisruptionGuard reads KEP-3280's allowDisruptionByPriorityGreaterThanOrEqual
// from a PriorityClass's annotation (abi.AnnotationAllowDisruptionByPriority).
// No annotation gives nil. A value that is not a 32-bit integer, or is
// above system-cluster-critical (so that core components could no longer
// preempt), is refused with an error naming the annotation.
func DisruptionGuard(pc *schedulingv1.PriorityClass) (*int32, error) {
	raw, ok := pc.Annotations[abi.AnnotationAllowDisruptionByPriority]
	if !ok {
		return nil, nil
	}
	field := fmt.Sprintf("metadata.annotations[%s]", abi.AnnotationAllowDisruptionByPriority)
	v, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not a 32-bit integer", field, raw)
	}
	if int32(v) > abi.SystemClusterCritical {
		return nil, fmt.Errorf("%s: %d is above system-cluster-critical (%d); such a class could keep core components from preempting", field, v, abi.SystemClusterCritical)
	}
	g := int32(v)
	return &g, nil
}
