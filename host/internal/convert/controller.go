package convert

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmsched/wasmsched/abi"
)

// Controllers are the objects in a pod's namespace its default spread
// selector is made of. Callers pass what they have: the simulation its
// manifests, serve its informers' listers.
type Controllers struct {
	Services               []*corev1.Service
	ReplicationControllers []*corev1.ReplicationController
	ReplicaSets            []*appsv1.ReplicaSet
	StatefulSets           []*appsv1.StatefulSet
}

// The controller kinds whose selectors join a pod's default spread
// selector, by the group/version/kind of the pod's controller reference.
var (
	kindRC = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	kindRS = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	kindSS = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// ControllerSelector is the selector kube-scheduler's default topology
// spread constraints count pods with (its helper.DefaultSelector): the
// selectors of the Services in the pod's namespace that select it, merged
// as labels, and the selector of the pod's *controller* (the one owner
// reference marked controller, if it is a ReplicationController, whose
// selector merges as labels too, or a ReplicaSet or StatefulSet, whose
// selector's requirements are ANDed). Other owners, and controllers that
// merely select the pod, do not count. It returns nil when that leaves
// nothing to select by, so the default constraints do not apply.
func ControllerSelector(p *corev1.Pod, c Controllers) *abi.LabelSelector {
	podLabels := k8slabels.Set(p.Labels)
	ns := namespaceOrDefault(p.Namespace)
	merged := map[string]string{}
	for _, svc := range c.Services {
		// A nil selector selects nothing; an empty one everything (and
		// adds no label).
		if namespaceOrDefault(svc.Namespace) != ns || svc.Spec.Selector == nil {
			continue
		}
		if k8slabels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			for k, v := range svc.Spec.Selector {
				merged[k] = v
			}
		}
	}
	var exprs []abi.Requirement
	if owner := metav1.GetControllerOfNoCopy(p); owner != nil {
		if gv, err := schema.ParseGroupVersion(owner.APIVersion); err == nil {
			switch gv.WithKind(owner.Kind) {
			case kindRC:
				if rc := named(c.ReplicationControllers, ns, owner.Name); rc != nil {
					for k, v := range rc.Spec.Selector {
						merged[k] = v
					}
				}
			case kindRS:
				if rs := named(c.ReplicaSets, ns, owner.Name); rs != nil {
					exprs = requirementsOf(rs.Spec.Selector)
				}
			case kindSS:
				if ss := named(c.StatefulSets, ns, owner.Name); ss != nil {
					exprs = requirementsOf(ss.Spec.Selector)
				}
			}
		}
	}
	if len(merged) == 0 && len(exprs) == 0 {
		return nil
	}
	out := &abi.LabelSelector{MatchExpressions: exprs}
	for k, v := range merged {
		out.MatchLabels = append(out.MatchLabels, abi.Label{Key: k, Value: v})
	}
	sort.Slice(out.MatchLabels, func(i, j int) bool { return out.MatchLabels[i].Key < out.MatchLabels[j].Key })
	return out
}

// named finds the object called name in namespace ns.
func named[T metav1.Object](objs []T, ns, name string) T {
	var zero T
	for _, o := range objs {
		if o.GetName() == name && namespaceOrDefault(o.GetNamespace()) == ns {
			return o
		}
	}
	return zero
}

// requirementsOf turns a controller's selector into requirements: its
// matchLabels as In requirements, then its expressions. A nil or invalid
// selector adds none.
func requirementsOf(sel *metav1.LabelSelector) []abi.Requirement {
	if sel == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(sel); err != nil {
		return nil
	}
	as, err := labelSelector(sel, "spec.selector")
	if err != nil {
		return nil
	}
	var out []abi.Requirement
	for _, l := range as.MatchLabels {
		out = append(out, abi.Requirement{Key: l.Key, Operator: abi.OpIn, Values: []string{l.Value}})
	}
	return append(out, as.MatchExpressions...)
}

func namespaceOrDefault(ns string) string {
	if ns == "" {
		return corev1.NamespaceDefault
	}
	return ns
}
