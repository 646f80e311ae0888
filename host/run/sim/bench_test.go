package sim

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// schedulingBasic builds scheduler_perf's SchedulingBasic shape: nodes of
// 4 CPU / 32Gi / 110 pods, `placed` pods of 100m / 500Mi already bound
// round robin, and `measured` such pods pending.
func schedulingBasic(nodes, placed, measured int) *Objects {
	o := &Objects{}
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		o.Nodes = append(o.Nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("32Gi"),
				corev1.ResourcePods: resource.MustParse("110")}},
		})
	}
	pod := func(ns string, i int) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%06d", i), Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi")}}}}},
		}
	}
	for i := 0; i < placed; i++ {
		p := pod("init", i)
		p.Spec.NodeName = o.Nodes[i%nodes].Name
		o.Pods = append(o.Pods, p)
	}
	for i := 0; i < measured; i++ {
		o.Pods = append(o.Pods, pod("measured", i))
	}
	return o
}

// BenchmarkSchedulingBasic measures whole-scheduler throughput: queue,
// snapshot, mirror sync, every default filter and score plugin, assume
// and in-memory binding, for the default profile on the Wasm bundle and
// on its native twin. Run with -benchtime 1x: one op schedules all the
// measured pods, from fresh instances (the first cycle syncs the whole
// cluster into each). WASMSCHED_BENCH_NODES runs one other cluster size
// (15000: the cold start at scale). A guest call that trapped or ran into
// its deadline fails the benchmark. Besides pods/s it reports
// cpu-µs/pod, the process's CPU time per measured pod (on a shared
// machine it moves less with other load than pods/s does), and recycles,
// the instances replaced because a guest without a collector outgrew its
// memory (each costs a full mirror sync).
func BenchmarkSchedulingBasic(b *testing.B) {
	const placed, measured = 1000, 10000
	sizes := []int{500, 5000}
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_NODES")); err == nil && v > 0 {
		sizes = []int{v}
	}
	for _, nodes := range sizes {
		objs := schedulingBasic(nodes, placed, measured)
		for _, backend := range benchBackends() {
			b.Run(fmt.Sprintf("nodes=%d/backend=%s", nodes, backend), func(b *testing.B) {
				ctx := context.Background()
				cacheDir := b.TempDir()
				var cpu time.Duration
				var recycled float64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					opts := benchOptions(backend, cacheDir)
					faults := watchGuestFaults(b, &opts)
					env, err := Start(ctx, objs, opts)
					if err != nil {
						b.Fatal(err)
					}
					cpu0 := processCPU()
					b.StartTimer()
					rep, err := env.Settle(ctx)
					b.StopTimer()
					cpu += processCPU() - cpu0
					if err != nil {
						b.Fatal(err)
					}
					if rep.Cycles != measured {
						b.Fatalf("%d cycles for %d pods", rep.Cycles, measured)
					}
					faults.check()
					recycled += testmetrics.Value(b, faults.reg, "wasmsched_instances_recycled_total", nil)
					env.Close(ctx)
					b.StartTimer()
				}
				b.ReportMetric(float64(measured)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(measured*b.N), "cpu-µs/pod")
				b.ReportMetric(recycled/float64(b.N), "recycles")
			})
		}
	}
}

// BenchmarkSchedulingBasicWithEviction is SchedulingBasic (5000 nodes,
// Wasm bundle) with and without eviction rounds running every second of
// wall-clock time beside it: the three default eviction policies on the
// Wasm eviction bundle, over every node and pod, with usage for all of
// them. Nothing crosses a threshold, so the rounds cost what observing
// costs; compare pods/s of eviction=off and eviction=on of one run.
func BenchmarkSchedulingBasicWithEviction(b *testing.B) {
	const nodes, placed, measured = 5000, 1000, 10000
	objs := schedulingBasic(nodes, placed, measured)
	for _, n := range objs.Nodes {
		objs.NodeMetrics = append(objs.NodeMetrics, metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: n.Name},
			Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")}})
	}
	for _, p := range objs.Pods {
		objs.PodMetrics = append(objs.PodMetrics, metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
			Containers: []metricsv1beta1.ContainerMetrics{{Name: "pause", Usage: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("200Mi")}}}})
	}
	withEviction := config.Default()
	withEviction.Eviction = &config.Eviction{Policies: []config.EvictionPolicy{
		{Plugin: "ResourceOvercommit"}, {Plugin: "NodePressure"}, {Plugin: "UsageThreshold"}}}
	for _, mode := range []string{"off", "on"} {
		b.Run("eviction="+mode, func(b *testing.B) {
			ctx := context.Background()
			cacheDir := b.TempDir()
			cfg := config.Default()
			if mode == "on" {
				cfg = withEviction
			}
			rounds := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				opts := Options{Config: cfg, CacheDir: cacheDir, Seed: 1}
				faults := watchGuestFaults(b, &opts)
				env, err := Start(ctx, objs, opts)
				if err != nil {
					b.Fatal(err)
				}
				stop := make(chan struct{})
				done := make(chan struct{})
				go func() {
					defer close(done)
					if env.eviction == nil {
						return
					}
					t := time.NewTicker(time.Second)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							if r := env.eviction.coord.RunRound(ctx); len(r.Failures) > 0 {
								b.Errorf("round failures: %+v", r.Failures)
							}
							rounds++
						}
					}
				}()
				b.StartTimer()
				rep, err := env.Settle(ctx)
				b.StopTimer()
				close(stop)
				<-done
				if err != nil {
					b.Fatal(err)
				}
				if rep.Cycles != measured {
					b.Fatalf("%d cycles for %d pods", rep.Cycles, measured)
				}
				faults.check()
				env.Close(ctx)
				b.StartTimer()
			}
			b.ReportMetric(float64(measured)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
		})
	}
}

// guestFaults counts a run's guest traps and deadlines (the metrics
// Start is given), so a benchmark fails when a call lost its instance
// rather than report the speed of a run that dropped work.
type guestFaults struct {
	b   *testing.B
	reg *prometheus.Registry
}

// watchGuestFaults gives opts metrics of their own to count guest faults
// in.
func watchGuestFaults(b *testing.B, opts *Options) *guestFaults {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		b.Fatal(err)
	}
	opts.Metrics = m
	return &guestFaults{b: b, reg: reg}
}

// check fails the benchmark if any guest call trapped or ran into its
// deadline.
func (g *guestFaults) check() {
	g.b.Helper()
	traps := testmetrics.Value(g.b, g.reg, "wasmsched_guest_traps_total", nil)
	deadlines := testmetrics.Value(g.b, g.reg, "wasmsched_guest_deadline_exceeded_total", nil)
	if traps+deadlines > 0 {
		g.b.Fatalf("guest calls failed: %v traps, %v deadlines exceeded", traps, deadlines)
	}
}

// benchBackends are the backends a binary can compare: the default
// bundle on wazero ("wasm", in every build), as a native twin, and on wasmtime when the
// test binary has it (go test -tags wasmtime).
func benchBackends() []string {
	backends := []string{"wasm", "native"}
	if slices.Contains(modules.Runtimes(), config.RuntimeWasmtime) {
		backends = append(backends, "wasmtime")
	}
	return backends
}

// benchOptions runs the default profile on one of benchBackends.
func benchOptions(backend, cacheDir string) Options {
	return onBackend(backend, nil, Options{CacheDir: cacheDir, Seed: 1})
}

// onBackend sets opts to run cfg (nil: the default configuration) with
// the builtin default bundle on one of benchBackends.
func onBackend(backend string, cfg *config.Configuration, opts Options) Options {
	opts.NativeBuiltin = backend == "native"
	if backend == "wasm" {
		// wazero even in a binary with wasmtime, whose default it is.
		opts.Runtime = config.RuntimeWazero
	}
	if backend == "wasmtime" {
		if cfg == nil {
			cfg = config.Default()
		}
		c := *cfg
		c.Modules = append([]config.ModuleSpec{{Name: config.BuiltinDefaultModule, Runtime: config.RuntimeWasmtime}}, cfg.Modules...)
		cfg = &c
	}
	opts.Config = cfg
	return opts
}

// BenchmarkSchedulingBasicExplain is SchedulingBasic at 5000 nodes on the
// Wasm bundle with decision records off and on (every cycle's record kept
// in a ring of decision.DefaultRingSize, as serve keeps them for
// /debug/explain), rounds alternated so both see the same machine:
// compare pods/s of explain=off and explain=on of one run.
// WASMSCHED_BENCH_ROUNDS sets the rounds (default 3).
func BenchmarkSchedulingBasicExplain(b *testing.B) {
	const nodes, placed, measured = 5000, 1000, 10000
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	objs := schedulingBasic(nodes, placed, measured)
	cacheDir := b.TempDir()
	for r := 1; r <= rounds; r++ {
		for _, on := range []bool{false, true} {
			mode := "off"
			if on {
				mode = "on"
			}
			b.Run(fmt.Sprintf("round=%d/explain=%s", r, mode), func(b *testing.B) {
				ctx := context.Background()
				var cpu time.Duration
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					opts := benchOptions("wasm", cacheDir)
					var ring *decision.Ring
					if on {
						ring = decision.NewRing(decision.DefaultRingSize)
						opts.Decisions = ring
					}
					env, err := Start(ctx, objs, opts)
					if err != nil {
						b.Fatal(err)
					}
					cpu0 := processCPU()
					b.StartTimer()
					rep, err := env.Settle(ctx)
					b.StopTimer()
					cpu += processCPU() - cpu0
					if err != nil {
						b.Fatal(err)
					}
					if rep.Cycles != measured {
						b.Fatalf("%d cycles for %d pods", rep.Cycles, measured)
					}
					if on {
						if _, held, added, _ := ring.Stats(); added != measured || held != decision.DefaultRingSize {
							b.Fatalf("ring got %d records, holds %d", added, held)
						}
					}
					env.Close(ctx)
					b.StartTimer()
				}
				b.ReportMetric(float64(measured)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(measured*b.N), "cpu-µs/pod")
			})
		}
	}
}

// processCPU is the CPU time (user and system) the process has used: on
// a shared machine it moves less with other load than wall time does.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
