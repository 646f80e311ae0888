package parity

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGenerateIsDeterministic: a seed names a case, so a reported seed
// reproduces the mismatch.
func TestGenerateIsDeterministic(t *testing.T) {
	for _, f := range Families {
		a, err := Generate(f, 42).YAML()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(f, 42).YAML()
		if !bytes.Equal(a, b) {
			t.Errorf("family %s: seed 42 gave two different cases", f.Name)
		}
		c, _ := Generate(f, 43).YAML()
		if bytes.Equal(a, c) {
			t.Errorf("family %s: seeds 42 and 43 gave the same case", f.Name)
		}
	}
}

// TestGeneratedObjectsAreValid: every generated object passes
// kube-apiserver's own validation, so a mismatch is never about an
// object no cluster would hold.
func TestGeneratedObjectsAreValid(t *testing.T) {
	for _, f := range Families {
		for seed := uint64(1); seed <= 100; seed++ {
			c := Generate(f, seed)
			for _, o := range c.objects() {
				classes := map[string]*schedulingv1.PriorityClass{}
				for _, pc := range c.PriorityClasses {
					classes[pc.Name] = pc
				}
				if err := admit(o.DeepCopyObject(), classes); err != nil {
					t.Errorf("family %s seed %d: %v", f.Name, seed, err)
				}
			}
		}
	}
}

// twoNodes is a hand-made case: node-small has 1 CPU, node-big 4; the
// pending pod asks for cpu.
func twoNodes(cpu string) *Case {
	pending := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "pending", Namespace: "default", UID: "uid-pending"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("100Mi")}}}}},
	}
	return &Case{Seed: 7, Family: "manual", Nodes: []*corev1.Node{fixedNode("node-small", "1"), fixedNode("node-big", "4")}, Pending: pending}
}

// fixedNode is a node with cpu CPUs and 8Gi of memory.
func fixedNode(name, cpu string) *corev1.Node {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelHostname: name}},
		Status:     corev1.NodeStatus{Capacity: rl, Allocatable: rl.DeepCopy()},
	}
}

// TestUpstreamSide checks the upstream harness on cases whose answers are
// known: the only node with room, and kube-scheduler's own message.
func TestUpstreamSide(t *testing.T) {
	ctx := context.Background()
	up, err := RunUpstream(ctx, twoNodes("1500m"))
	if err != nil {
		t.Fatal(err)
	}
	if up.Message != "" || len(up.Top) != 1 || up.Top[0] != "node-big" {
		t.Errorf("1500m: got top %v message %q, want [node-big]", up.Top, up.Message)
	}
	up, err = RunUpstream(ctx, twoNodes("500m"))
	if err != nil {
		t.Fatal(err)
	}
	if len(up.Scores) != 2 || up.Top[0] != "node-big" {
		t.Errorf("500m: got top %v scores %+v, want both scored and node-big best", up.Top, up.Scores)
	}
	up, err = RunUpstream(ctx, twoNodes("8"))
	if err != nil {
		t.Fatal(err)
	}
	want := "0/2 nodes are available: 2 Insufficient cpu. "
	if !strings.HasPrefix(up.Message, want) || !strings.Contains(up.Message, "preemption: ") {
		t.Errorf("8 CPUs: message %q, want it to start %q and carry preemption's", up.Message, want)
	}
}

// TestWasmschedSide checks the wasmsched runner on the same cases.
func TestWasmschedSide(t *testing.T) {
	ctx := context.Background()
	ws, err := NewWasmsched(ctx, *flagNative)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(ctx)
	r, err := ws.Place(ctx, twoNodes("1500m"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Node != "node-big" {
		t.Errorf("1500m: got %+v, want node-big", r)
	}
	r, err = ws.Place(ctx, twoNodes("8"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Node != "" || !strings.HasPrefix(r.Message, "0/2 nodes are available: 2 Insufficient cpu.") {
		t.Errorf("8 CPUs: got %+v, want unschedulable for cpu", r)
	}
}

// TestCompare checks the verdicts: a node among the best passes, ties
// included; anything else is a mismatch of the right kind.
func TestCompare(t *testing.T) {
	c := twoNodes("1")
	placed := &Upstream{Top: []string{"a", "b"}}
	noFit := &Upstream{Message: "0/2 nodes are available: 2 Insufficient cpu. no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."}
	for _, tc := range []struct {
		name string
		up   *Upstream
		ws   *Result
		want string // "" for no mismatch
	}{
		{"tie member", placed, &Result{Node: "b", Status: "Scheduled"}, ""},
		{"outside top", placed, &Result{Node: "c", Status: "Scheduled"}, KindPlacement},
		{"not placed", placed, &Result{Status: "Unschedulable", Message: "x"}, KindOnlyUpstreamPlaced},
		{"placed anyway", noFit, &Result{Node: "a", Status: "Scheduled"}, KindOnlyWasmschedPlaced},
		{"same words", noFit, &Result{Status: "Unschedulable", Message: noFit.Message}, ""},
		{"DRA text only", noFit, &Result{Status: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."}, KindMessageDRA},
		{"other words", noFit, &Result{Status: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient memory."}, KindMessage},
		{"refused", placed, &Result{Status: "Refused", Message: "bad"}, KindRefused},
	} {
		m := Compare(c, tc.up, tc.ws)
		got := ""
		if m != nil {
			got = m.Kind
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
