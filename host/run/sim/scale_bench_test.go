package sim

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/run/memapi"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// Benchmarks at kube-scheduler's largest scale-test size, 15 000 nodes
// (scheduler_perf's SchedulingBasic and SchedulingDaemonset/15000Nodes).
// Besides pods/s each reports the process's peak RSS over the run
// (peak-RSS-MiB: VmHWM, reset before each variant, so a variant does not
// inherit the one before) and the cold start (cold-start-ms: from Start,
// which loads and compiles the modules from an empty cache, to the first
// binding, which follows the first cycle's full mirror sync), and how
// long the last quarter of the bindings took against the first
// (last/first-quarter). Run with
// -benchtime 1x; the variants of one run alternate Wasm and native.

const scaleNodes = 15000

// BenchmarkSchedulingBasic15000 is SchedulingBasic at 15 000 nodes with
// 15 000 and 30 000 measured pods: per-pod time (ns/pod) that grows with
// the pod count would be a per-cycle cost that follows the pods.
func BenchmarkSchedulingBasic15000(b *testing.B) {
	const placed = 1000
	for _, measured := range []int{scaleNodes, 2 * scaleNodes} {
		objs := schedulingBasic(scaleNodes, placed, measured)
		for _, backend := range benchBackends() {
			b.Run(fmt.Sprintf("pods=%d/backend=%s", measured, backend), func(b *testing.B) {
				benchAtScale(b, objs, backend, measured)
			})
		}
	}
}

// BenchmarkSchedulingDaemonset is scheduler_perf's SchedulingDaemonset:
// one pod per node, each pinned to its node the way the DaemonSet
// controller pins them (a required node affinity on the metadata.name
// field, no spec.nodeName), on nodes that already run 1000 pods.
func BenchmarkSchedulingDaemonset(b *testing.B) {
	nodes := scaleNodes
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	objs := schedulingDaemonset(nodes, 1000)
	for _, backend := range benchBackends() {
		b.Run(fmt.Sprintf("nodes=%d/backend=%s", nodes, backend), func(b *testing.B) {
			benchAtScale(b, objs, backend, nodes)
		})
	}
}

// schedulingDaemonset is SchedulingBasic's cluster with one pending pod
// per node, pinned to it by a required node affinity on metadata.name.
func schedulingDaemonset(nodes, placed int) *Objects {
	o := schedulingBasic(nodes, placed, nodes)
	for i, p := range o.Pods[placed:] {
		p.Name = fmt.Sprintf("ds-%06d", i)
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{o.Nodes[i].Name}}},
			}}},
		}}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "node.kubernetes.io/unschedulable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	return o
}

// benchAtScale schedules every pending pod of objs from fresh instances
// and an empty compile cache per op, and reports pods/s, ns/pod, the
// cold start and the peak RSS.
func benchAtScale(b *testing.B, objs *Objects, backend string, measured int) {
	ctx := context.Background()
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSS(b)
	var cold time.Duration
	var growth, recycled float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		opts := benchOptions(backend, b.TempDir())
		faults := watchGuestFaults(b, &opts)
		var mu sync.Mutex
		var binds []time.Time
		opts.APIFailures = func(op memapi.Op, _ *abi.Pod) error {
			if op == memapi.OpBind {
				mu.Lock()
				binds = append(binds, time.Now())
				mu.Unlock()
			}
			return nil
		}
		start := time.Now()
		env, err := Start(ctx, objs, opts)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := env.Settle(ctx)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Cycles != measured {
			b.Fatalf("%d cycles for %d pods", rep.Cycles, measured)
		}
		if len(binds) < 8 {
			b.Fatalf("%d pods bound", len(binds))
		}
		cold += binds[0].Sub(start)
		q := len(binds) / 4
		first, last := binds[q].Sub(binds[0]), binds[len(binds)-1].Sub(binds[len(binds)-1-q])
		growth += float64(last) / float64(first)
		faults.check()
		recycled += testmetrics.Value(b, faults.reg, "wasmsched_instances_recycled_total", nil)
		env.Close(ctx)
		b.StartTimer()
	}
	b.ReportMetric(float64(measured)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(measured*b.N), "ns/pod")
	b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "cold-start-ms")
	// The last quarter of the bindings against the first, in one run: a
	// per-cycle cost that follows the pods already bound makes it > 1.
	b.ReportMetric(growth/float64(b.N), "last/first-quarter")
	// Instances replaced because a guest without a collector ran out of
	// memory: each replacement costs a full mirror sync.
	b.ReportMetric(recycled/float64(b.N), "recycles")
	if hwm, ok := peakRSS(); ok {
		b.ReportMetric(float64(hwm)/(1<<20), "peak-RSS-MiB")
	}
}

// resetPeakRSS resets the process's VmHWM (Linux: writing 5 to
// /proc/self/clear_refs), so the next peakRSS is this variant's. Where
// that is not possible the peak is the process's so far, and the log
// says so.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Logf("peak RSS not reset (%v): it includes the variants before", err)
	}
}

// peakRSS is VmHWM from /proc/self/status, in bytes.
func peakRSS() (int64, bool) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, false
			}
			return kb << 10, true
		}
	}
	return 0, false
}
