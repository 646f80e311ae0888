package convert

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/wasmsched/wasmsched/abi"
)

// Controllers are the objects in a pod's namespace whose selectors make up
// its default spread selector. Callers pass what they have: the
// simulation its manifests, serve its informers' listers.
type Controllers struct {
	Services     []*corev1.Service
	ReplicaSets  []*appsv1.ReplicaSet
	StatefulSets []*appsv1.StatefulSet
}

// ControllerSelector combines the selectors of the Services, ReplicaSets
// and StatefulSets in the pod's namespace that select it, as
// kube-scheduler's default spread constraints do: services' selectors are
// merged as labels, controllers' selectors are ANDed as requirements. It
// returns nil when nothing selects the pod, so the default constraints
// do not apply.
func ControllerSelector(p *corev1.Pod, c Controllers) *abi.LabelSelector {
	podLabels := k8slabels.Set(p.Labels)
	ns := namespaceOrDefault(p.Namespace)
	merged := map[string]string{}
	var exprs []abi.Requirement
	found := false
	for _, svc := range c.Services {
		if namespaceOrDefault(svc.Namespace) != ns || len(svc.Spec.Selector) == 0 {
			continue
		}
		if k8slabels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			found = true
			for k, v := range svc.Spec.Selector {
				merged[k] = v
			}
		}
	}
	addController := func(ctrlNS string, sel *metav1.LabelSelector) {
		if namespaceOrDefault(ctrlNS) != ns || sel == nil {
			return
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || s.Empty() || !s.Matches(podLabels) {
			return
		}
		as, err := labelSelector(sel, "spec.selector")
		if err != nil {
			return
		}
		found = true
		for _, l := range as.MatchLabels {
			exprs = append(exprs, abi.Requirement{Key: l.Key, Operator: abi.OpIn, Values: []string{l.Value}})
		}
		exprs = append(exprs, as.MatchExpressions...)
	}
	for _, rs := range c.ReplicaSets {
		addController(rs.Namespace, rs.Spec.Selector)
	}
	for _, ss := range c.StatefulSets {
		addController(ss.Namespace, ss.Spec.Selector)
	}
	if !found {
		return nil
	}
	out := &abi.LabelSelector{MatchExpressions: exprs}
	for k, v := range merged {
		out.MatchLabels = append(out.MatchLabels, abi.Label{Key: k, Value: v})
	}
	sort.Slice(out.MatchLabels, func(i, j int) bool { return out.MatchLabels[i].Key < out.MatchLabels[j].Key })
	return out
}

func namespaceOrDefault(ns string) string {
	if ns == "" {
		return corev1.NamespaceDefault
	}
	return ns
}
