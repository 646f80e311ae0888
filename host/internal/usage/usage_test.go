package usage

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/wasmsched/wasmsched/abi"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

func use(cpu, mem string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if cpu != "" {
		out[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

func nodeMetrics(name, cpu, mem string) metricsv1beta1.NodeMetrics {
	return metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: name}, Timestamp: metav1.NewTime(t0),
		Window: metav1.Duration{Duration: 30 * time.Second}, Usage: use(cpu, mem)}
}

func podMetrics(ns, name string, containers ...metricsv1beta1.ContainerMetrics) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Timestamp: metav1.NewTime(t0),
		Window: metav1.Duration{Duration: 30 * time.Second}, Containers: containers}
}

func ctr(name, cpu, mem string) metricsv1beta1.ContainerMetrics {
	return metricsv1beta1.ContainerMetrics{Name: name, Usage: use(cpu, mem)}
}

func TestStaticLookups(t *testing.T) {
	s, err := StaticFrom(
		[]metricsv1beta1.NodeMetrics{nodeMetrics("n1", "1500m", "2Gi"), nodeMetrics("idle", "0", "0")},
		[]metricsv1beta1.PodMetrics{
			podMetrics("team", "web", ctr("app", "250m", "100Mi"), ctr("sidecar", "50m", "28Mi")),
			podMetrics("", "loose", ctr("app", "1", "1Mi")),
		})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := s.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := snap.Node("n1"); got == nil || *got != (abi.Usage{MilliCPU: 1500, Memory: 2 << 30, Timestamp: t0.UnixNano()}) {
		t.Fatalf("node n1 = %+v", got)
	}
	// A measured zero is data; a missing node is not.
	if got := snap.Node("idle"); got == nil || got.MilliCPU != 0 || got.Memory != 0 {
		t.Fatalf("idle node = %+v, want a zero usage", got)
	}
	if got := snap.Node("absent"); got != nil {
		t.Fatalf("absent node = %+v, want nil", got)
	}
	if got := snap.Pod("team", "web"); got == nil || *got != (abi.Usage{MilliCPU: 300, Memory: 128 << 20, Timestamp: t0.UnixNano()}) {
		t.Fatalf("pod team/web = %+v (want the containers' sum)", got)
	}
	if got := snap.Pod("default", "loose"); got == nil || got.MilliCPU != 1000 {
		t.Fatalf("pod without namespace = %+v, want it in default", got)
	}
	if snap.Pod("other", "web") != nil || snap.Pod("team", "api") != nil {
		t.Fatal("a pod without metrics has usage")
	}
	// Lookups hand out copies: a policy's scribbles stay its own.
	snap.Node("n1").MilliCPU = 1
	if snap.Node("n1").MilliCPU != 1500 {
		t.Fatal("a lookup aliases the snapshot")
	}
	if n, p := snap.Len(); n != 2 || p != 2 {
		t.Fatalf("Len = %d, %d", n, p)
	}

	var none *Snapshot
	if none.Node("n1") != nil || none.Pod("a", "b") != nil {
		t.Fatal("a nil snapshot has data")
	}
	empty, _ := NewStatic(nil).Usage(context.Background())
	if empty == nil || empty.Node("n1") != nil {
		t.Fatalf("NewStatic(nil) = %+v", empty)
	}
}

func TestStaticFromRefusesBadDocuments(t *testing.T) {
	ok := nodeMetrics("n1", "1", "1Gi")
	for _, tc := range []struct {
		name  string
		nodes []metricsv1beta1.NodeMetrics
		pods  []metricsv1beta1.PodMetrics
		want  string
	}{
		{"duplicate node", []metricsv1beta1.NodeMetrics{ok, ok}, nil, "NodeMetrics n1: defined twice"},
		{"unnamed node", []metricsv1beta1.NodeMetrics{ok, nodeMetrics("", "1", "1")}, nil, "NodeMetrics #2: metadata.name must not be empty"},
		{"node without memory", []metricsv1beta1.NodeMetrics{nodeMetrics("n2", "1", "")}, nil, "NodeMetrics n2: usage: memory is missing"},
		{"node without usage", []metricsv1beta1.NodeMetrics{nodeMetrics("n2", "", "")}, nil, "NodeMetrics n2: usage: neither cpu nor memory"},
		{"negative cpu", []metricsv1beta1.NodeMetrics{nodeMetrics("n2", "-1", "1")}, nil, "NodeMetrics n2: usage: cpu -1 is outside"},
		{"huge memory", []metricsv1beta1.NodeMetrics{nodeMetrics("n2", "1", "10Ei")}, nil, "NodeMetrics n2: usage: memory"},
		{"pod without containers", nil, []metricsv1beta1.PodMetrics{podMetrics("a", "p")}, "PodMetrics a/p: containers: no container has usage"},
		{"container without cpu", nil, []metricsv1beta1.PodMetrics{podMetrics("a", "p", ctr("x", "1", "1"), ctr("y", "", "1"))}, "PodMetrics a/p: containers[1] (y).usage: cpu is missing"},
		{"duplicate pod", nil, []metricsv1beta1.PodMetrics{podMetrics("", "p", ctr("x", "1", "1")), podMetrics("default", "p", ctr("x", "1", "1"))}, "PodMetrics default/p: defined twice"},
		{"pod sum too large", nil, []metricsv1beta1.PodMetrics{podMetrics("a", "p", ctr("x", "1", "1Ei"), ctr("y", "1", "1Ei"))}, "PodMetrics a/p: containers: the sum of the usage is beyond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := StaticFrom(tc.nodes, tc.pods)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestUnsetTimestampIsZero(t *testing.T) {
	m := nodeMetrics("n", "1", "1")
	m.Timestamp = metav1.Time{}
	u, err := NodeUsage(&m)
	if err != nil || u.Timestamp != 0 {
		t.Fatalf("usage = %+v, %v; want timestamp 0", u, err)
	}
}
