package kube

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkInformerPodHeap measures what the pod informer's cache keeps
// per pod: 11 000 pods shaped like scheduler_perf's pod-default template
// as the API server returns them bound (its defaults, the two default
// tolerations, the PodScheduled condition), decoded from protobuf as a
// watch decodes them, with and without the transform (dropUnread): the
// heap in use after a collection, per pod.
func BenchmarkInformerPodHeap(b *testing.B) {
	const pods = 11000
	grace, prio := int64(30), int32(0)
	never := corev1.PreemptLowerPriority
	secs := int64(300)
	wire := make([][]byte, pods)
	for i := range wire {
		rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi")}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "sched-0", UID: types.UID(fmt.Sprintf("0c7d6e1e-0000-4000-8000-%012d", i)),
				ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.Now()},
			Spec: corev1.PodSpec{
				SchedulerName: "default-scheduler", NodeName: fmt.Sprintf("perf-node-%d", i%5000),
				RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: &grace,
				Priority: &prio, PreemptionPolicy: &never, SecurityContext: &corev1.PodSecurityContext{},
				Containers: []corev1.Container{{
					Name: "pause", Image: "registry.k8s.io/pause:3.10.1",
					Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
					Resources:                corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()},
					TerminationMessagePath:   corev1.TerminationMessagePathDefault,
					TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
				}},
				Tolerations: []corev1.Toleration{
					{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
					{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs},
				},
			},
			Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSGuaranteed,
				Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}},
		}
		var err error
		if wire[i], err = p.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
	for _, transform := range []bool{false, true} {
		b.Run(fmt.Sprintf("transform=%v", transform), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				base := liveHeap()
				b.StartTimer()
				kept := make([]*corev1.Pod, pods)
				for i, w := range wire {
					p := &corev1.Pod{}
					if err := p.Unmarshal(w); err != nil {
						b.Fatal(err)
					}
					if transform {
						if _, err := dropUnread(p); err != nil {
							b.Fatal(err)
						}
					}
					kept[i] = p
				}
				b.StopTimer()
				b.ReportMetric(float64(liveHeap()-base)/pods, "kept-B/pod")
				runtime.KeepAlive(kept)
				b.StartTimer()
			}
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
