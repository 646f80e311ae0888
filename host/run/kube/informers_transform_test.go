package kube

import (
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/host/internal/convert"
)

// TestDropUnreadKeepsWhatTheSchedulerReads: the informers' transform drops
// managedFields and the node status fields nothing reads, and a node
// converts to the same abi.Node before and after it, also one whose
// allocatable is empty (convert.Node then reads capacity, which stays).
func TestDropUnreadKeepsWhatTheSchedulerReads(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
	for _, alloc := range []corev1.ResourceList{rl, nil} {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}, ManagedFields: mf},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{
				Capacity: rl.DeepCopy(), Allocatable: alloc.DeepCopy(),
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
				Images:     []corev1.ContainerImage{{Names: []string{"pause"}, SizeBytes: 1 << 20}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.37.2", OSImage: "linux"},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			},
		}
		before, err := convert.Node(n)
		if err != nil {
			t.Fatal(err)
		}
		out, err := dropUnread(n.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		s := out.(*corev1.Node)
		if s.ManagedFields != nil || s.Status.NodeInfo.KubeletVersion != "" || s.Status.Addresses != nil {
			t.Errorf("allocatable %v: managedFields, nodeInfo or addresses kept: %+v", alloc != nil, s)
		}
		if (s.Status.Capacity == nil) != (alloc != nil) {
			t.Errorf("allocatable %v: capacity kept %v, want it kept only without allocatable", alloc != nil, s.Status.Capacity != nil)
		}
		after, err := convert.Node(s)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(before, after) {
			t.Errorf("allocatable %v: converted node changed:\nbefore %+v\nafter  %+v", alloc != nil, before, after)
		}
	}

	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ManagedFields: mf, Annotations: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	want := p.DeepCopy()
	want.ManagedFields = nil
	out, err := dropUnread(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("pod: only managedFields should go:\ngot  %+v\nwant %+v", out, want)
	}
	// a tombstone passes through untouched
	tomb := "not an object"
	if out, err := dropUnread(tomb); err != nil || out != tomb {
		t.Errorf("non-object: %v, %v", out, err)
	}
}

// TestCompactPodChangesNothingReadable: a pod after the transform is
// the decoded one without the container fields and status nothing reads,
// and converts the same (its in-place resize included); its repeated
// strings are shared across pods, and a container's limits share its
// requests' map only when they say the same.
func TestCompactPodChangesNothingReadable(t *testing.T) {
	rl := func(cpu, mem string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	}
	mk := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: string([]byte("ns")),
				Labels:          map[string]string{string([]byte("app")): string([]byte("web"))},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs"}}},
			Spec: corev1.PodSpec{
				NodeName: string([]byte("node-1")), SchedulerName: "default-scheduler", RestartPolicy: corev1.RestartPolicyAlways,
				Containers: []corev1.Container{
					{Name: "same", Image: string([]byte("pause")), Resources: corev1.ResourceRequirements{Requests: rl("100m", "1Gi"), Limits: rl("100m", "1Gi")},
						Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}},
					{Name: "burst", Image: "pause", Resources: corev1.ResourceRequirements{Requests: rl("100m", "1Gi"), Limits: rl("200m", "1Gi")}},
					{Name: "format", Image: "pause", Resources: corev1.ResourceRequirements{Requests: rl("1", "1Gi"), Limits: rl("1000m", "1Gi")}},
					{Name: "fewer", Image: "pause", Resources: corev1.ResourceRequirements{
						Requests: rl("1", "1Gi"), Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
				},
				Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable,
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
		}
	}
	a, b := mk("a"), mk("b")
	want := a.DeepCopy()
	c0 := &a.Spec.Containers[0]
	c0.Command, c0.Args, c0.WorkingDir = []string{"/pause"}, []string{"-v"}, "/"
	c0.Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	c0.EnvFrom = []corev1.EnvFromSource{{Prefix: "X"}}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	c0.LivenessProbe, c0.ReadinessProbe, c0.StartupProbe = probe, probe, probe
	c0.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	a.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Command: []string{"sh"}}}}
	want.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}}
	// A resized container: its status resources count, and stay.
	started := true
	status := func(full bool) []corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: "same", Ready: true, RestartCount: 2, Started: &started,
			AllocatedResources: rl("300m", "1Gi"), Resources: &corev1.ResourceRequirements{Requests: rl("300m", "1Gi")}}
		if full {
			cs.Image, cs.ImageID, cs.ContainerID = "pause", "sha256:1", "containerd://1"
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
		}
		return []corev1.ContainerStatus{cs}
	}
	a.Status.ContainerStatuses, want.Status.ContainerStatuses = status(true), status(false)
	// An empty security context means what none means; a set one stays.
	a.Spec.SecurityContext = &corev1.PodSecurityContext{}
	a.Spec.Containers[1].SecurityContext = &corev1.SecurityContext{}
	uid := int64(1000)
	b.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid}
	// Another pod's tolerations differ in their seconds only.
	c := mk("c")
	secs := int64(300)
	c.Spec.Tolerations[0].TolerationSeconds = &secs
	before, err := convert.Pod(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{a, b, c} {
		if _, err := dropUnread(p); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("pod changed:\ngot  %+v\nwant %+v", a, want)
	}
	after, err := convert.Pod(a)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("converted pod changed:\nbefore %+v\nafter  %+v", before, after)
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	if !same(a.Namespace, b.Namespace) || !same(a.Spec.NodeName, b.Spec.NodeName) || !same(a.Spec.Containers[0].Image, b.Spec.Containers[0].Image) {
		t.Error("repeated strings not shared across pods")
	}
	for ka, va := range a.Labels {
		for kb, vb := range b.Labels {
			if !same(ka, kb) || !same(va, vb) {
				t.Error("label keys and values not shared across pods")
			}
		}
	}
	shared := func(r corev1.ResourceRequirements) bool {
		return reflect.ValueOf(r.Limits).UnsafePointer() == reflect.ValueOf(r.Requests).UnsafePointer()
	}
	for i, wantShared := range []bool{true, false, false, false} {
		if c := a.Spec.Containers[i]; shared(c.Resources) != wantShared {
			t.Errorf("container %s: limits share requests = %v, want %v", c.Name, !wantShared, wantShared)
		}
	}
	// Equal lists of different pods are one map, unequal ones are not.
	sameMap := func(x, y corev1.ResourceList) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	ca, cb := a.Spec.Containers, b.Spec.Containers
	if !sameMap(ca[1].Resources.Requests, cb[1].Resources.Requests) || !sameMap(ca[1].Resources.Limits, cb[1].Resources.Limits) {
		t.Error("equal resource lists of two pods not shared")
	}
	if &a.Spec.Tolerations[0] != &b.Spec.Tolerations[0] || &a.Spec.Tolerations[0] == &c.Spec.Tolerations[0] {
		t.Error("equal tolerations not shared, or unequal ones shared")
	}
	if b.Spec.SecurityContext == nil || *b.Spec.SecurityContext.RunAsUser != 1000 {
		t.Error("a set security context was dropped")
	}
	if sameMap(ca[1].Resources.Limits, ca[2].Resources.Limits) {
		t.Error("200m and 1 share a map")
	}
	if sameMap(ca[2].Resources.Requests, ca[2].Resources.Limits) || !reflect.DeepEqual(ca[2].Resources.Limits, want.Spec.Containers[2].Resources.Limits) {
		t.Error("1 and 1000m share a map")
	}
}
