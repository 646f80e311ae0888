package convert

import (
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
)

func TestControllerSelectorIsServicesAndTheControllerOwner(t *testing.T) {
	ctrl := func(kind, apiVersion, name string) metav1.OwnerReference {
		yes := true
		return metav1.OwnerReference{Kind: kind, APIVersion: apiVersion, Name: name, Controller: &yes}
	}
	pod := func(owners ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Labels: map[string]string{"app": "web", "tier": "front"}, OwnerReferences: owners}}
	}
	svc := func(ns string, sel map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns}, Spec: corev1.ServiceSpec{Selector: sel}}
	}
	rs := func(name string, sel map[string]string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}}}
	}
	objs := Controllers{
		Services: []*corev1.Service{
			svc("shop", map[string]string{"app": "web"}),
			svc("other", map[string]string{"app": "web"}), // another namespace
			svc("shop", map[string]string{"app": "db"}),   // does not select the pod
			svc("shop", nil), // selects nothing
		},
		// web-1 selects the pod but does not own it: upstream ignores it.
		ReplicaSets: []*appsv1.ReplicaSet{rs("web-1", map[string]string{"app": "web"}), rs("web-2", map[string]string{"tier": "front"})},
		StatefulSets: []*appsv1.StatefulSet{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"},
			Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}}}},
		ReplicationControllers: []*corev1.ReplicationController{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "old"},
			Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"tier": "front"}}}},
	}
	cases := []struct {
		name       string
		pod        *corev1.Pod
		wantLabels []abi.Label
		wantExprs  []string // key/operator
	}{
		{name: "Services only: no controller owner", pod: pod(),
			wantLabels: []abi.Label{{Key: "app", Value: "web"}}},
		{name: "the owning ReplicaSet, not the other one that selects the pod", pod: pod(ctrl("ReplicaSet", "apps/v1", "web-2")),
			wantLabels: []abi.Label{{Key: "app", Value: "web"}}, wantExprs: []string{"tier/0"}},
		{name: "the owning StatefulSet", pod: pod(ctrl("StatefulSet", "apps/v1", "db")),
			wantLabels: []abi.Label{{Key: "app", Value: "web"}}, wantExprs: []string{"app/2"}},
		{name: "a ReplicationController merges as labels", pod: pod(ctrl("ReplicationController", "v1", "old")),
			wantLabels: []abi.Label{{Key: "app", Value: "web"}, {Key: "tier", Value: "front"}}},
		{name: "an owner that is not the controller", pod: func() *corev1.Pod {
			p := pod(ctrl("ReplicaSet", "apps/v1", "web-2"))
			p.OwnerReferences[0].Controller = nil
			return p
		}(), wantLabels: []abi.Label{{Key: "app", Value: "web"}}},
		{name: "a controller of another group", pod: pod(ctrl("ReplicaSet", "example.com/v1", "web-2")),
			wantLabels: []abi.Label{{Key: "app", Value: "web"}}},
		{name: "a controller that is gone", pod: pod(ctrl("ReplicaSet", "apps/v1", "gone")),
			wantLabels: []abi.Label{{Key: "app", Value: "web"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ControllerSelector(c.pod, objs)
			if got == nil {
				t.Fatal("no selector")
			}
			if !reflect.DeepEqual(got.MatchLabels, abi.Labels(c.wantLabels)) {
				t.Errorf("matchLabels = %+v, want %+v", got.MatchLabels, c.wantLabels)
			}
			var exprs []string
			for _, e := range got.MatchExpressions {
				exprs = append(exprs, fmt.Sprintf("%s/%d", e.Key, e.Operator))
			}
			if !reflect.DeepEqual(exprs, c.wantExprs) {
				t.Errorf("matchExpressions = %v, want %v", exprs, c.wantExprs)
			}
		})
	}
	if sel := ControllerSelector(pod(), Controllers{Services: []*corev1.Service{svc("other", map[string]string{"app": "web"})}}); sel != nil {
		t.Errorf("selector %+v from objects in another namespace", sel)
	}
	if sel := ControllerSelector(pod(), Controllers{ReplicaSets: objs.ReplicaSets}); sel != nil {
		t.Errorf("selector %+v from ReplicaSets that select the pod without owning it", sel)
	}
	defaultNS := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	if sel := ControllerSelector(defaultNS, Controllers{Services: []*corev1.Service{svc("default", map[string]string{"app": "web"})}}); sel == nil {
		t.Error("a pod without a namespace is in default, and the default Service selects it")
	}
}
