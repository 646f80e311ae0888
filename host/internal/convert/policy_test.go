package convert

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
)

func TestDisruptionGuardAnnotation(t *testing.T) {
	class := func(v string, set bool) *schedulingv1.PriorityClass {
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 100}
		if set {
			pc.Annotations = map[string]string{abi.AnnotationAllowDisruptionByPriority: v}
		}
		return pc
	}
	for _, tc := range []struct {
		name, value string
		set         bool
		want        *int32
		err         string
	}{
		{name: "absent"},
		{name: "plain", value: "1000", set: true, want: ptr(1000)},
		{name: "negative", value: "-5", set: true, want: ptr(-5)},
		{name: "exactly system-cluster-critical", value: "2000000000", set: true, want: ptr(2000000000)},
		{name: "above system-cluster-critical", value: "2000000001", set: true, err: "above system-cluster-critical"},
		{name: "not a number", value: "high", set: true, err: `"high" is not a 32-bit integer`},
		{name: "overflows int32", value: "99999999999", set: true, err: "not a 32-bit integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DisruptionGuard(class(tc.value, tc.set))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), abi.AnnotationAllowDisruptionByPriority) {
					t.Fatalf("err = %v, want one naming the annotation and containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func ptr(v int32) *int32 { return &v }

func TestPDBConversion(t *testing.T) {
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "front"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "front"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 2, DisruptedPods: map[string]metav1.Time{"b": {}, "a": {}}},
	}
	got, err := PDB(p)
	if err != nil {
		t.Fatal(err)
	}
	want := &abi.PDB{Namespace: "web", Name: "front", Selector: &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "front"}}},
		DisruptionsAllowed: 2, DisruptedPods: []string{"a", "b"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	p.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "Gt", Values: []string{"1"}}}
	if _, err := PDB(p); err == nil || !strings.Contains(err.Error(), "spec.selector.matchExpressions[0].operator") {
		t.Fatalf("bad selector: err = %v", err)
	}
}

func TestPodPreemptionFields(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "v", UID: "u"}, Spec: corev1.PodSpec{PriorityClassName: "low",
		Containers: []corev1.Container{{Name: "c"}}}}
	ap, err := Pod(p)
	if err != nil || ap.PreemptedByScheduler || ap.PriorityClassName != "low" {
		t.Fatalf("plain pod: %+v %v", ap, err)
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI"}}
	if ap, _ := Pod(p); ap.PreemptedByScheduler {
		t.Fatal("another disruption reason counted as preemption by the scheduler")
	}
	p.Status.Conditions[0].Reason = ReasonPreemptionByScheduler
	if ap, _ := Pod(p); !ap.PreemptedByScheduler {
		t.Fatal("DisruptionTarget=True/PreemptionByScheduler not seen")
	}
}
