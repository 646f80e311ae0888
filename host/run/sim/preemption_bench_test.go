package sim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/memapi"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// preemptionAsync builds scheduler_perf's PreemptionAsync shape: nodes of
// 4 CPU / 32Gi / 110 pods each running 4 low-priority pods of 900m /
// 500Mi (3.6 CPU used, so a 3-CPU high-priority pod needs 3 victims),
// `measured` default pods of 100m / 500Mi pending, and `high` pods of
// priority 10 and 3 CPU to arrive later.
func preemptionAsync(nodes, measured, high int) (*Objects, []*corev1.Pod) {
	o := schedulingBasic(nodes, 0, measured)
	pod := func(ns, name, cpu string, prio int32) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{Priority: &prio, Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("500Mi")}}}}},
		}
	}
	var low []*corev1.Pod
	for i := 0; i < 4*nodes; i++ {
		p := pod("low", fmt.Sprintf("low-%06d", i), "900m", 0)
		p.Spec.NodeName = o.Nodes[i%nodes].Name
		low = append(low, p)
	}
	o.Pods = append(low, o.Pods...)
	var arrivals []*corev1.Pod
	for i := 0; i < high; i++ {
		arrivals = append(arrivals, pod("high", fmt.Sprintf("high-%06d", i), "3", 10))
	}
	return o, arrivals
}

// BenchmarkPreemptionAsync is scheduler_perf's PreemptionAsync in the
// simulation: 5000 nodes, 20000 low-priority pods, high-priority pods
// arriving at 5/s that each preempt 3 of them, while the throughput of
// 5000 default pods is measured, with 50 ms of latency on every API write.
// Asynchronous preemption against synchronous, on the Wasm bundle (and on
// wasmtime with -tags wasmtime) and on its native twin. A run gives up after 90 s and reports the throughput
// so far. Run with -benchtime 1x.
// WASMSCHED_BENCH_MEASURED and WASMSCHED_BENCH_NODES override the sizes.
// cpu-µs/pod is the process's CPU time over the run per measured pod
// bound; it includes the preemptions, whose number grows with the run's
// length (a slower run sees more preemptors).
func BenchmarkPreemptionAsync(b *testing.B) {
	nodes, measured := 5000, 5000
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_MEASURED")); err == nil && v > 0 {
		measured = v
	}
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	objs, arrivals := preemptionAsync(nodes, measured, 1000)
	type leg struct{ mode, backend string }
	var legs []leg
	for _, mode := range []string{"async", "sync"} {
		for _, backend := range benchBackends() {
			legs = append(legs, leg{mode, backend})
		}
	}
	for _, run := range legs {
		mode := run.mode
		b.Run("mode="+mode+"/backend="+run.backend, func(b *testing.B) {
			cfg, err := config.Parse([]byte(fmt.Sprintf(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DefaultPreemption
    args: {asyncPreemption: %v}
`, mode == "async")))
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			cacheDir := b.TempDir()
			var podsPerS, preempted, arrived, recycled float64
			var cpu time.Duration
			var bound int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				opts := onBackend(run.backend, cfg, Options{CacheDir: cacheDir, Seed: 1, APILatency: 50 * time.Millisecond})
				faults := watchGuestFaults(b, &opts)
				env, err := Start(ctx, objs, opts)
				if err != nil {
					b.Fatal(err)
				}
				cpu0 := processCPU()
				b.StartTimer()
				res, err := env.RunChurn(ctx, Churn{Namespace: "measured", Measured: measured, Arrivals: arrivals,
					Every: 200 * time.Millisecond, Timeout: 90 * time.Second})
				b.StopTimer()
				cpu += processCPU() - cpu0
				bound += res.Bound
				if err != nil && !errors.Is(err, ErrChurnTimeout) {
					b.Fatal(err)
				}
				if err != nil {
					b.Logf("%s/%s: timed out after %s with %d of %d measured pods bound", run.mode, run.backend, res.Elapsed, res.Bound, measured)
				}
				faults.check()
				recycled += testmetrics.Value(b, faults.reg, "wasmsched_instances_recycled_total", nil)
				podsPerS += res.PodsPerS
				preempted += float64(res.Preempted)
				arrived += float64(res.Arrived)
				env.Close(ctx)
				b.StartTimer()
			}
			b.ReportMetric(podsPerS/float64(b.N), "pods/s")
			b.ReportMetric(arrived/float64(b.N), "preemptors")
			b.ReportMetric(preempted/float64(b.N), "victims")
			b.ReportMetric(recycled/float64(b.N), "recycles")
			if bound > 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(bound), "cpu-µs/pod")
			}
		})
	}
}

// BenchmarkPreemptionCycle measures one scheduling cycle of a 3-CPU
// high-priority pod on the PreemptionAsync cluster (5000 nodes, 4
// low-priority pods each): filters fail everywhere, then PostFilter dry
// runs 500 candidate nodes (10%, kube-scheduler's default) through the
// victim policy and the filters, ranks them and nominates the best. The
// API refuses the victim condition, so the cluster never changes between
// iterations. Wasm bundle (wazero, and wasmtime with -tags wasmtime)
// against its native twin.
func BenchmarkPreemptionCycle(b *testing.B) {
	nodes := 5000
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	objs, arrivals := preemptionAsync(nodes, 0, 200)
	for _, backend := range benchBackends() {
		b.Run("backend="+backend, func(b *testing.B) {
			ctx := context.Background()
			opts := onBackend(backend, nil, Options{CacheDir: b.TempDir(), Seed: 1,
				APIFailures: func(op memapi.Op, _ *abi.Pod) error {
					if op == memapi.OpMark {
						return memapi.ErrInternal
					}
					return nil
				}})
			faults := watchGuestFaults(b, &opts)
			env, err := Start(ctx, objs, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close(ctx)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				if err := env.AddPods(arrivals[i%len(arrivals)].DeepCopy()); err != nil && i < len(arrivals) {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := env.Scheduler.ScheduleOne(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				env.Preemption.Wait()
				faults.check()
				b.StartTimer()
			}
		})
	}
}
