package convert

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
)

// rl builds a resource list from "cpu=1,memory=1Gi".
func rl(s string) corev1.ResourceList {
	if s == "" {
		return nil
	}
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

func ctr(req, lim string) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: rl(req), Limits: rl(lim)}}
}

func TestQoS(t *testing.T) {
	const full = "cpu=1,memory=1Gi"
	for _, tc := range []struct {
		name   string
		status corev1.PodQOSClass
		podRes *corev1.ResourceRequirements
		cs     []corev1.Container
		inits  []corev1.Container
		want   abi.QoSClass
	}{
		{name: "nothing", cs: []corev1.Container{ctr("", "")}, want: abi.QoSBestEffort},
		{name: "no containers", want: abi.QoSBestEffort},
		{name: "only zero quantities", cs: []corev1.Container{ctr("cpu=0,memory=0", "")}, want: abi.QoSBestEffort},
		{name: "only other resources", cs: []corev1.Container{ctr("ephemeral-storage=1Gi", "ephemeral-storage=1Gi")}, want: abi.QoSBestEffort},
		{name: "requests equal limits", cs: []corev1.Container{ctr(full, full)}, want: abi.QoSGuaranteed},
		{name: "limits only: requests default to them", cs: []corev1.Container{ctr("", full)}, want: abi.QoSGuaranteed},
		{name: "request below limit", cs: []corev1.Container{ctr("cpu=500m,memory=1Gi", full)}, want: abi.QoSBurstable},
		{name: "requests only", cs: []corev1.Container{ctr(full, "")}, want: abi.QoSBurstable},
		{name: "cpu limit only", cs: []corev1.Container{ctr("", "cpu=1")}, want: abi.QoSBurstable},
		{name: "explicit zero request under a limit", cs: []corev1.Container{ctr("cpu=0,memory=1Gi", full)}, want: abi.QoSBurstable},
		{name: "every container guaranteed", cs: []corev1.Container{ctr(full, full), ctr("", "cpu=2,memory=3Gi")}, want: abi.QoSGuaranteed},
		{name: "one container best effort", cs: []corev1.Container{ctr(full, full), ctr("", "")}, want: abi.QoSBurstable},
		{name: "init container counts", cs: []corev1.Container{ctr(full, full)}, inits: []corev1.Container{ctr("cpu=100m", "")}, want: abi.QoSBurstable},
		{name: "guaranteed init container", cs: []corev1.Container{ctr(full, full)}, inits: []corev1.Container{ctr("", full)}, want: abi.QoSGuaranteed},
		{name: "status wins", status: corev1.PodQOSBurstable, cs: []corev1.Container{ctr(full, full)}, want: abi.QoSBurstable},
		{name: "status best effort", status: corev1.PodQOSBestEffort, cs: []corev1.Container{ctr(full, full)}, want: abi.QoSBestEffort},
		{name: "status guaranteed", status: corev1.PodQOSGuaranteed, want: abi.QoSGuaranteed},
		{name: "unknown status is computed", status: "Premium", cs: []corev1.Container{ctr(full, full)}, want: abi.QoSGuaranteed},
		{name: "pod-level limits decide", podRes: &corev1.ResourceRequirements{Limits: rl(full)}, cs: []corev1.Container{ctr("", "")}, want: abi.QoSGuaranteed},
		{name: "pod-level requests only", podRes: &corev1.ResourceRequirements{Requests: rl(full)}, cs: []corev1.Container{ctr(full, full)}, want: abi.QoSBurstable},
		{name: "pod-level cpu limit only", podRes: &corev1.ResourceRequirements{Limits: rl("cpu=1")}, want: abi.QoSBurstable},
		{name: "pod-level empty", podRes: &corev1.ResourceRequirements{}, cs: []corev1.Container{ctr(full, full)}, want: abi.QoSBestEffort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: tc.cs, InitContainers: tc.inits, Resources: tc.podRes},
				Status: corev1.PodStatus{QOSClass: tc.status}}
			if got := QoS(p); got != tc.want {
				t.Fatalf("QoS = %v, want %v", got, tc.want)
			}
			ap, err := Pod(p)
			if err != nil {
				t.Fatal(err)
			}
			if ap.QoS != tc.want {
				t.Fatalf("Pod().QoS = %v, want %v", ap.QoS, tc.want)
			}
		})
	}
}

func TestStaticAndMirrorPods(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		annotations          map[string]string
		static, mirror, crit bool
	}{
		{"api pod", map[string]string{ConfigSourceAnnotation: "api"}, false, false, false},
		{"no annotation", nil, false, false, false},
		{"file source", map[string]string{ConfigSourceAnnotation: "file"}, true, false, true},
		{"mirror", map[string]string{ConfigSourceAnnotation: "file", ConfigMirrorAnnotation: "abc"}, true, true, true},
		{"mirror with empty value", map[string]string{ConfigMirrorAnnotation: ""}, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ap, err := Pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}})
			if err != nil {
				t.Fatal(err)
			}
			if ap.Static != tc.static || ap.Mirror != tc.mirror || ap.Critical() != tc.crit {
				t.Fatalf("static %v mirror %v critical %v, want %v %v %v", ap.Static, ap.Mirror, ap.Critical(), tc.static, tc.mirror, tc.crit)
			}
		})
	}
}

func TestPodAnnotationValuesAreBounded(t *testing.T) {
	ann := map[string]string{
		LastAppliedAnnotation: `{"kind":"Pod"}`,
		"b/long":              strings.Repeat("x", MaxAnnotationValue+1),
		"b/limit":             strings.Repeat("y", MaxAnnotationValue),
		"a/short":             "1",
	}
	ap, err := Pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: ann}})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, l := range ap.Annotations {
		keys = append(keys, l.Key)
	}
	// A value over the bound is emptied, its key kept (skip keys see it);
	// so is kubectl's last-applied configuration, whatever its size.
	if strings.Join(keys, ",") != "a/short,b/limit,b/long,"+LastAppliedAnnotation || ap.Annotations[0].Value != "1" ||
		len(ap.Annotations[1].Value) != MaxAnnotationValue || ap.Annotations[2].Value != "" || ap.Annotations[3].Value != "" {
		t.Fatalf("annotations = %q", keys)
	}
}

// The host record keeps every annotation key, sorted, however
// many the pod carries, so no decision taken on it (a skip annotation, a
// static or mirror pod) can miss a key sorted after many others.
func TestPodAnnotationsKeepEveryKey(t *testing.T) {
	const n = 1000
	many := map[string]string{"zz.example/keep": "", ConfigMirrorAnnotation: "x"}
	for i := 0; i < n; i++ {
		many[fmt.Sprintf("a/k%04d", i)] = "v"
	}
	ap, err := Pod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: many}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ap.Annotations) != n+2 || ap.Annotations[0].Key != "a/k0000" || ap.Annotations[n+1].Key != "zz.example/keep" {
		t.Fatalf("%d annotations, first %q last %q", len(ap.Annotations), ap.Annotations[0].Key, ap.Annotations[len(ap.Annotations)-1].Key)
	}
	for i := 1; i < len(ap.Annotations); i++ {
		if ap.Annotations[i-1].Key >= ap.Annotations[i].Key {
			t.Fatalf("annotations not sorted at %d: %q, %q", i, ap.Annotations[i-1].Key, ap.Annotations[i].Key)
		}
	}
	if _, ok := ap.Annotations.Get(ConfigMirrorAnnotation); !ok || !ap.Mirror || !ap.Critical() {
		t.Fatalf("mirror annotation after %d others: kept %v, mirror %v", n, ok, ap.Mirror)
	}
	if ap, err = Pod(&corev1.Pod{}); err != nil || ap.Annotations != nil {
		t.Fatalf("annotations = %v, %v; want nil", ap.Annotations, err)
	}
}

func TestTerminationGraceIsCopied(t *testing.T) {
	g := int64(45)
	p := &corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &g}}
	ap, err := Pod(p)
	if err != nil {
		t.Fatal(err)
	}
	g = 1
	if ap.TerminationGraceSeconds == nil || *ap.TerminationGraceSeconds != 45 {
		t.Fatalf("grace = %v, want 45 (not aliased)", ap.TerminationGraceSeconds)
	}
	if ap, _ := Pod(&corev1.Pod{}); ap.TerminationGraceSeconds != nil {
		t.Fatalf("unset grace = %d, want nil", *ap.TerminationGraceSeconds)
	}
}

func TestNodeConditions(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	node := func(heartbeat time.Time) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0), LastHeartbeatTime: metav1.NewTime(heartbeat)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(heartbeat)},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, LastTransitionTime: metav1.NewTime(t0.Add(time.Second))},
			{Type: "Custom", Status: "Maybe"},
		}}}
	}
	an, err := Node(node(t0))
	if err != nil {
		t.Fatal(err)
	}
	want := []abi.NodeCondition{
		{Type: "Custom", Status: abi.ConditionUnknown},
		{Type: "DiskPressure", Status: abi.ConditionUnknown, LastTransition: t0.Add(time.Second).UnixNano()},
		{Type: "MemoryPressure", Status: abi.ConditionFalse},
		{Type: "Ready", Status: abi.ConditionTrue, LastTransition: t0.UnixNano()},
	}
	if !reflect.DeepEqual(an.Conditions, want) {
		t.Fatalf("conditions = %+v\nwant %+v", an.Conditions, want)
	}
	later, err := Node(node(t0.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(later.Conditions, an.Conditions) {
		t.Fatal("a heartbeat changed the converted conditions")
	}
	if an, _ := Node(&corev1.Node{}); an.Conditions != nil {
		t.Fatalf("no conditions = %+v", an.Conditions)
	}
}
