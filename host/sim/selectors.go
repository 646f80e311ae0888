package sim

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/convert"
)

// controllerSelector combines the selectors of the Services, ReplicaSets
// and StatefulSets in the pod's namespace that select it, as
// kube-scheduler's default spread constraints do (services' selectors
// merged as labels, controllers' selectors ANDed as requirements). It
// returns nil when nothing selects the pod.
func controllerSelector(p *corev1.Pod, objs *Objects) *abi.LabelSelector {
	podLabels := labels.Set(p.Labels)
	merged := map[string]string{}
	var exprs []abi.Requirement
	found := false
	for _, svc := range objs.Services {
		if svc.Namespace != p.Namespace || len(svc.Spec.Selector) == 0 {
			continue
		}
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			found = true
			for k, v := range svc.Spec.Selector {
				merged[k] = v
			}
		}
	}
	addController := func(ns string, sel *metav1.LabelSelector) {
		if ns != p.Namespace || sel == nil {
			return
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || s.Empty() || !s.Matches(podLabels) {
			return
		}
		as, err := convert.LabelSelector(sel, "spec.selector")
		if err != nil {
			return
		}
		found = true
		for _, l := range as.MatchLabels {
			exprs = append(exprs, abi.Requirement{Key: l.Key, Operator: abi.OpIn, Values: []string{l.Value}})
		}
		exprs = append(exprs, as.MatchExpressions...)
	}
	for _, rs := range objs.ReplicaSets {
		addController(namespaceOf(rs.Namespace), rs.Spec.Selector)
	}
	for _, ss := range objs.StatefulSets {
		addController(namespaceOf(ss.Namespace), ss.Spec.Selector)
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

func namespaceOf(ns string) string {
	if ns == "" {
		return corev1.NamespaceDefault
	}
	return ns
}

// namespaces lists every namespace the simulation knows, with the label
// the API server puts on each (kubernetes.io/metadata.name), including
// the implicit ones pods live in without a Namespace object.
func namespaces(objs *Objects, pods []*abi.Pod) []abi.Namespace {
	byName := map[string]abi.Labels{}
	for _, ns := range objs.Namespaces {
		l := map[string]string{}
		for k, v := range ns.Labels {
			l[k] = v
		}
		l[corev1.LabelMetadataName] = ns.Name
		byName[ns.Name] = sortedLabels(l)
	}
	for _, p := range pods {
		if _, ok := byName[p.Namespace]; !ok {
			byName[p.Namespace] = abi.Labels{{Key: corev1.LabelMetadataName, Value: p.Namespace}}
		}
	}
	out := make([]abi.Namespace, 0, len(byName))
	for n, l := range byName {
		out = append(out, abi.Namespace{Name: n, Labels: l})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sortedLabels(m map[string]string) abi.Labels {
	out := make(abi.Labels, 0, len(m))
	for k, v := range m {
		out = append(out, abi.Label{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
