package convert

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
)

func TestControllerSelectorCombinesWhatSelectsThePod(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Labels: map[string]string{"app": "web", "tier": "front"}}}
	svc := func(ns string, sel map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: corev1.ServiceSpec{Selector: sel}}
	}
	rs := func(ns string, sel map[string]string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	}
	got := ControllerSelector(pod, Controllers{
		Services: []*corev1.Service{
			svc("shop", map[string]string{"app": "web"}),
			svc("other", map[string]string{"app": "web"}), // another namespace
			svc("shop", map[string]string{"app": "db"}),   // does not select the pod
			svc("shop", nil), // selects nothing
		},
		ReplicaSets: []*appsv1.ReplicaSet{rs("shop", map[string]string{"tier": "front"}), rs("shop", map[string]string{"tier": "back"})},
		StatefulSets: []*appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"},
			Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}}},
	})
	if got == nil {
		t.Fatal("no selector for a pod selected by a Service, a ReplicaSet and a StatefulSet")
	}
	if len(got.MatchLabels) != 1 || got.MatchLabels[0] != (abi.Label{Key: "app", Value: "web"}) {
		t.Errorf("matchLabels = %+v, want the Service's app=web only", got.MatchLabels)
	}
	if len(got.MatchExpressions) != 2 || got.MatchExpressions[0].Key != "tier" || got.MatchExpressions[0].Operator != abi.OpIn ||
		got.MatchExpressions[1].Key != "app" || got.MatchExpressions[1].Operator != abi.OpExists {
		t.Errorf("matchExpressions = %+v, want tier In (front) from the ReplicaSet, app Exists from the StatefulSet", got.MatchExpressions)
	}
	if sel := ControllerSelector(pod, Controllers{Services: []*corev1.Service{svc("other", map[string]string{"app": "web"})}}); sel != nil {
		t.Errorf("selector %+v from objects in another namespace", sel)
	}
	defaultNS := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	if sel := ControllerSelector(defaultNS, Controllers{Services: []*corev1.Service{svc("default", map[string]string{"app": "web"})}}); sel == nil {
		t.Error("a pod without a namespace is in default, and the default Service selects it")
	}
}
