package cache

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/convert"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// heapPod is a pod shaped like scheduler_perf's pod-default template
// (the perf driver's SchedulingBasic pods), converted the way informers
// convert pods.
func heapPod(b *testing.B, i, nodes int) *abi.Pod {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi")}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "sched-0", UID: types.UID(fmt.Sprintf("uid-%08d", i))},
		Spec: corev1.PodSpec{
			SchedulerName: "default-scheduler",
			NodeName:      fmt.Sprintf("node-%d", i%nodes),
			Containers: []corev1.Container{{
				Name:      "pause",
				Image:     "registry.k8s.io/pause:3.10.1",
				Ports:     []corev1.ContainerPort{{ContainerPort: 80}},
				Resources: corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()},
			}},
		},
	}
	ap, err := convert.Pod(p)
	if err != nil {
		b.Fatal(err)
	}
	return ap
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkLiveHeap measures what the cache and one cycle's snapshot keep
// alive for 5000 nodes and 11 000 pods (a 5000-node SchedulingBasic run's
// peak): the heap in use after a collection that the converted pods
// take alone (converted-B/pod), and that the cache and snapshot keep with
// the pods and nodes, per pod and in all (kept-B/pod, kept-MiB). The pods are added the way cycles
// interleave with informer events: the cycle's snapshot is brought up to
// date every 50 pods.
func BenchmarkLiveHeap(b *testing.B) {
	const nodes, pods = 5000, 11000
	for b.Loop() {
		b.StopTimer()
		base := liveHeap()
		pending := make([]*abi.Pod, pods)
		for i := range pending {
			pending[i] = heapPod(b, i, nodes)
		}
		converted := liveHeap()
		b.StartTimer()
		c := New(0, nil)
		snap := snapshot.New()
		for i := range nodes {
			c.AddNode(abi.Node{Name: fmt.Sprintf("node-%d", i),
				Labels:      abi.Labels{{Key: "kubernetes.io/hostname", Value: fmt.Sprintf("node-%d", i)}},
				Allocatable: abi.Resources{MilliCPU: 4000, Memory: 32 << 30}, AllowedPods: 110})
		}
		c.UpdateSnapshot(snap)
		for i, p := range pending {
			if err := c.AddPod(p); err != nil {
				b.Fatal(err)
			}
			if i%50 == 49 {
				c.UpdateSnapshot(snap)
			}
		}
		c.UpdateSnapshot(snap)
		pending = nil
		b.StopTimer()
		after := liveHeap()
		runtime.KeepAlive(c)
		runtime.KeepAlive(snap)
		b.ReportMetric(float64(converted-base)/pods, "converted-B/pod")
		b.ReportMetric(float64(after-base)/pods, "kept-B/pod")
		b.ReportMetric(float64(after-base)/(1<<20), "kept-MiB")
		b.StartTimer()
	}
}
