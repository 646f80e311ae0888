package convert

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
)

func reqs(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func convertPod(t *testing.T, p *corev1.Pod) *abi.Pod {
	t.Helper()
	p.Name, p.Namespace = "p", "default"
	ap, err := Pod(p)
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// An explicit zero request is kept apart from a missing one, so scoring
// substitutes its defaults only for the missing (kube-scheduler's
// NonMissingContainerRequests).
func TestZeroRequestIsNotMissing(t *testing.T) {
	p := convertPod(t, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
		{Name: "zero", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "0", "memory", "0")}},
		{Name: "limit", Resources: corev1.ResourceRequirements{Limits: reqs("cpu", "0")}},
		{Name: "missing"},
	}}})
	if g := p.Containers[0].Given; g != abi.GivesCPU|abi.GivesMemory {
		t.Errorf("explicit zeros: Given = %v", g)
	}
	if g := p.Containers[1].Given; g != abi.GivesCPU {
		t.Errorf("a zero limit defaults the request: Given = %v, want CPU", g)
	}
	if g := p.Containers[2].Given; g != 0 {
		t.Errorf("missing: Given = %v", g)
	}
	nz := abi.PodNonZeroRequests(p)
	if nz.MilliCPU != abi.DefaultMilliCPURequest || nz.Memory != 2*abi.DefaultMemoryRequest {
		t.Errorf("non-zero requests = %d m, %d bytes; want the defaults once for CPU (the missing container) and twice for memory", nz.MilliCPU, nz.Memory)
	}
}

func TestPodLevelRequests(t *testing.T) {
	cases := []struct {
		name      string
		spec      corev1.PodSpec
		wantNil   bool
		wantCPU   int64
		wantMem   int64
		wantGiven abi.RequestFlags
	}{
		{name: "none", spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, wantNil: true},
		{name: "requests", spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: reqs("cpu", "2", "memory", "1Gi")},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "100m")}}}},
			wantCPU: 2000, wantMem: 1 << 30, wantGiven: abi.GivesCPU | abi.GivesMemory},
		{name: "only what pod-level resources may set", spec: corev1.PodSpec{Resources: &corev1.ResourceRequirements{Requests: reqs("example.com/gpu", "1")},
			Containers: []corev1.Container{{Name: "c"}}}, wantNil: true},
		{name: "limits default requests: from the containers where they request", spec: corev1.PodSpec{
			Resources:  &corev1.ResourceRequirements{Limits: reqs("cpu", "4", "memory", "2Gi")},
			Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "300m")}}, {Name: "b", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "200m")}}}},
			wantCPU: 500, wantMem: 2 << 30, wantGiven: abi.GivesCPU | abi.GivesMemory},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := convertPod(t, &corev1.Pod{Spec: c.spec})
			if c.wantNil {
				if p.PodLevel != nil {
					t.Fatalf("PodLevel = %+v, want nil", p.PodLevel)
				}
				return
			}
			pl := p.PodLevel
			if pl == nil || pl.Requests.MilliCPU != c.wantCPU || pl.Requests.Memory != c.wantMem || pl.Given != c.wantGiven {
				t.Fatalf("PodLevel = %+v, want cpu %d memory %d given %v", pl, c.wantCPU, c.wantMem, c.wantGiven)
			}
			if r := abi.PodRequests(p); r.MilliCPU != c.wantCPU || r.Memory != c.wantMem {
				t.Errorf("PodRequests = %d m, %d bytes; the pod-level requests should replace the containers'", r.MilliCPU, r.Memory)
			}
		})
	}
}

func TestInPlaceResizeCounts(t *testing.T) {
	running := func(cond *corev1.PodCondition) *corev1.Pod {
		p := &corev1.Pod{
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
				{Name: "app", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "2", "memory", "1Gi")}},
				{Name: "plain"},
			}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Resources: &corev1.ResourceRequirements{Requests: reqs("cpu", "500m", "memory", "2Gi")}, AllocatedResources: reqs("cpu", "1")},
				{Name: "plain"},
			}},
		}
		if cond != nil {
			p.Status.Conditions = []corev1.PodCondition{*cond}
		}
		return p
	}
	// Resize under way: the larger of spec (2 CPU, 1Gi), actuated
	// (500m, 2Gi) and allocated (1 CPU).
	p := convertPod(t, running(nil))
	if r := p.Containers[0].Requests; r.MilliCPU != 2000 || r.Memory != 2<<30 {
		t.Errorf("resizing: requests %d m, %d bytes; want 2000 m, 2Gi", r.MilliCPU, r.Memory)
	}
	if p.Containers[1].Given != 0 || p.Containers[1].Requests.MilliCPU != 0 {
		t.Errorf("a container whose status has no resources keeps its spec: %+v", p.Containers[1])
	}
	// Infeasible: spec is ignored; actuated and allocated count.
	p = convertPod(t, running(&corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible,
		LastTransitionTime: metav1.Now()}))
	if r := p.Containers[0].Requests; r.MilliCPU != 1000 || r.Memory != 2<<30 {
		t.Errorf("infeasible: requests %d m, %d bytes; want 1000 m, 2Gi", r.MilliCPU, r.Memory)
	}
	// Deferred is not Infeasible: spec still counts.
	p = convertPod(t, running(&corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred}))
	if r := p.Containers[0].Requests; r.MilliCPU != 2000 {
		t.Errorf("deferred: cpu %d m, want 2000 m", r.MilliCPU)
	}
}

func TestFinished(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]bool{corev1.PodSucceeded: true, corev1.PodFailed: true, corev1.PodRunning: false, corev1.PodPending: false, "": false} {
		if got := Finished(&corev1.Pod{Status: corev1.PodStatus{Phase: phase}}); got != want {
			t.Errorf("Finished(%q) = %v, want %v", phase, got, want)
		}
	}
}

// With hostNetwork the API defaults every hostPort to its containerPort,
// so two host-network pods with the same port cannot share a node.
func TestHostNetworkPortsAreHostPorts(t *testing.T) {
	ports := []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
	p := convertPod(t, &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c", Ports: ports}}}})
	got := abi.PodHostPorts(p)
	if len(got) != 2 || got[0].Port != 8080 || got[1].Port != 53 || got[1].Protocol != abi.ProtocolUDP {
		t.Fatalf("host ports = %+v, want 8080/TCP and 53/UDP", got)
	}
	p = convertPod(t, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: ports}}}})
	if got := abi.PodHostPorts(p); len(got) != 0 {
		t.Fatalf("without hostNetwork: host ports = %+v, want none", got)
	}
}

// A status the API does not validate like spec (negative resources)
// never lowers what a pod holds.
func TestNegativeStatusResourcesCountAsNothing(t *testing.T) {
	p := convertPod(t, &corev1.Pod{
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{
			Conditions:        []corev1.PodCondition{{Type: corev1.PodResizePending, Reason: corev1.PodReasonInfeasible}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{Requests: reqs("cpu", "-5")}}},
		},
	})
	if r := abi.PodRequests(p); r.MilliCPU < 0 {
		t.Fatalf("requests %d m: a negative status made the pod give CPU back", r.MilliCPU)
	}
}

// Image volumes' references reach the ABI pod, in the spec's order, for
// ImageLocality (kube-scheduler v1.37 scores them as images).
func TestImageVolumesAreCarried(t *testing.T) {
	p := convertPod(t, &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "app:1"}}, Volumes: []corev1.Volume{
		{Name: "model", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.example/model:v2"}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "data", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "data"}}},
	}}})
	if len(p.ImageVolumes) != 2 || p.ImageVolumes[0] != "registry.example/model:v2" || p.ImageVolumes[1] != "data" {
		t.Fatalf("image volumes = %q", p.ImageVolumes)
	}
}

// kube-scheduler v1.37 takes the largest of the whole pod's spec,
// actuated and allocated totals, not each container's largest; and
// while a resize is Infeasible a container with no status resources
// and nothing allocated counts nothing, sidecars included.
func TestResizeTakesTheLargestPodTotal(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	// a: spec 1 CPU, actuated 2; b: spec 2, actuated 1. Per pod: spec 3,
	// actuated 3, so 3 CPU (each container's largest would make 4).
	p := convertPod(t, &corev1.Pod{
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{
			{Name: "a", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "1")}},
			{Name: "b", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "2")}},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "a", Resources: &corev1.ResourceRequirements{Requests: reqs("cpu", "2")}},
			{Name: "b", Resources: &corev1.ResourceRequirements{Requests: reqs("cpu", "1")}},
		}},
	})
	if r := abi.PodRequests(p); r.MilliCPU != 3000 {
		t.Errorf("cross-container resize: %d m, want 3000 m", r.MilliCPU)
	}
	// Infeasible: the app container counts its status (1500m, 1408Mi);
	// the sidecars, with no status, count nothing.
	p = convertPod(t, &corev1.Pod{
		Spec: corev1.PodSpec{NodeName: "n1",
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "0", "memory", "1792Mi")}}},
			InitContainers: []corev1.Container{
				{Name: "s1", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "1250m", "memory", "1Gi")}},
				{Name: "s2", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: reqs("cpu", "750m", "memory", "1Gi")}},
			}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", Resources: &corev1.ResourceRequirements{Requests: reqs("cpu", "1500m", "memory", "1408Mi")}},
			}},
	})
	if r := abi.PodRequests(p); r.MilliCPU != 1500 || r.Memory != 1408<<20 {
		t.Errorf("infeasible with sidecars: %d m, %d Mi; want 1500 m, 1408 Mi", r.MilliCPU, r.Memory>>20)
	}
}
