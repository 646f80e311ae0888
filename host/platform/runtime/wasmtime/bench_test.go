//go:build wasmtime

package wasmtime_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasmtime"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

// Benchmarks comparing the runtimes on the default bundle, in one run so
// that their ratios are measured on the same (noisy, shared) machine.
// Each parent benchmark runs its variants in turn, so with -count N the
// variants alternate; take the median of the N runs of each:
//
//	go test -tags wasmtime -run '^$' -bench 'PerNode|Interrupt|ModuleWideCall' -benchtime 40x -count 3 ./host/platform/runtime/wasmtime/
//	go test -tags wasmtime -run '^$' -bench 'Compile' -benchtime 3x -count 3 ./host/platform/runtime/wasmtime/
//
// WASMSCHED_BENCH_PLUGINS=1 adds a sub-benchmark per plugin to PerNode.

const benchNodes = 5000

// variant is one way to run the default bundle.
type variant struct {
	name string
	b    guest.Backend
}

// bothRuntimes starts wazero and wasmtime, each caching in a temporary
// directory and closed when tb ends.
func bothRuntimes(tb testing.TB) (*wasm.Runtime, *wasmtime.Runtime) {
	ctx := context.Background()
	wz, err := wasm.NewRuntime(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { wz.Close(ctx) })
	wt, err := wasmtime.NewRuntime(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { wt.Close(ctx) })
	return wz, wt
}

// runtimes returns the default bundle on every backend: the native twin,
// the TinyGo and the Go (wasip1) builds on wazero and on wasmtime.
func runtimes(tb testing.TB) []variant {
	ctx := context.Background()
	wz, wt := bothRuntimes(tb)
	tinygo, gobuild := testwasm.TinyGoBytes(tb, testwasm.Default), testwasm.GoBytes(tb, testwasm.Default)
	vs := []variant{{"native", native.New(nil, defaults.Plugins()...)}}
	for _, build := range []struct {
		name string
		bin  []byte
	}{{"tinygo", tinygo}, {"go", gobuild}} {
		zb, err := wz.Compile(ctx, "default-"+build.name, build.bin, wasm.Limits{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { zb.Close(ctx) })
		tbk, err := wt.Compile(ctx, "default-"+build.name, build.bin, wasm.Limits{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { tbk.Close(ctx) })
		vs = append(vs, variant{build.name + "-wazero", zb}, variant{build.name + "-wasmtime", tbk})
	}
	return vs
}

// benchCluster is the per-node benchmarks' cluster (as host/platform/guest's
// BenchmarkFilterScorePerNode): 5000 nodes, 10000 pods, and the pod.
func benchCluster() (*snapshot.Snapshot, []uint32, abi.Pod) {
	snap := fixtures.Cluster(benchNodes, 2*benchNodes)
	all := fixtures.Slots(snap)
	return snap, all, fixtures.Pod("bench", 0)
}

// BenchmarkRuntimesPerNode is host/platform/guest's BenchmarkFilterScorePerNode
// on every runtime: the whole default set per node (and, with
// WASMSCHED_BENCH_PLUGINS=1, each plugin alone).
func BenchmarkRuntimesPerNode(b *testing.B) {
	snap, all, pod := benchCluster()
	for _, v := range runtimes(b) {
		c := fixtures.SyncedClient(b, v.b, v.name, snap)
		plugins := c.Module().Manifest().Plugins
		var everyPlugin []int
		for p := range plugins {
			everyPlugin = append(everyPlugin, p)
		}
		b.Run("set=default/backend="+v.name, func(b *testing.B) { fixtures.BenchPasses(b, c, everyPlugin, &pod, all, false) })
		if os.Getenv("WASMSCHED_BENCH_PLUGINS") == "" {
			continue
		}
		for p, info := range plugins {
			b.Run(fmt.Sprintf("plugin=%s/backend=%s", info.Name, v.name), func(b *testing.B) {
				fixtures.BenchPasses(b, c, []int{p}, &pod, all, false)
			})
		}
	}
}

// BenchmarkRuntimesTopology is host/platform/guest's BenchmarkTopologyPlugins on
// every runtime's TinyGo build: PodTopologySpread and InterPodAffinity
// alone over 5000 nodes running 3000 and 30 000 pods of workloads with
// spread constraints and (anti-)affinity, for a pod that has both. The
// per-node cost must not follow the pod count; the ratios to native are
// the topology row of docs/PERFORMANCE.md.
func BenchmarkRuntimesTopology(b *testing.B) {
	pod := fixtures.TopologyPod("bench", 0)
	vs := runtimes(b)
	for _, pods := range []int{3000, 30000} {
		snap := fixtures.ClusterOfWorkloads(benchNodes, pods)
		all := fixtures.Slots(snap)
		for _, v := range vs {
			if v.name != "native" && !strings.HasPrefix(v.name, "tinygo-") {
				continue // the Go build: see RuntimesPerNode
			}
			c := fixtures.SyncedClient(b, v.b, v.name, snap)
			for _, name := range []string{"PodTopologySpread", "InterPodAffinity"} {
				idx := c.Module().Manifest().Plugin(name)
				if idx < 0 {
					b.Fatalf("the bundle has no %s", name)
				}
				b.Run(fmt.Sprintf("pods=%d/plugin=%s/backend=%s", pods, name, v.name), func(b *testing.B) {
					fixtures.BenchPasses(b, c, []int{idx}, &pod, all, false)
				})
			}
		}
	}
}

// BenchmarkInterrupt compares wasmtime's two ways of bounding a call —
// epoch interruption and fuel — on the TinyGo build of the default set,
// per node, with wazero (its own instrumentation) for scale.
func BenchmarkInterrupt(b *testing.B) {
	ctx := context.Background()
	snap, all, pod := benchCluster()
	bin := testwasm.TinyGoBytes(b, testwasm.Default)
	var vs []variant
	for _, mode := range []wasmtime.Interrupt{wasmtime.InterruptEpoch, wasmtime.InterruptFuel} {
		rt, err := wasmtime.NewRuntimeWithOptions("", nil, wasmtime.Options{Interrupt: mode})
		if err != nil {
			b.Fatal(err)
		}
		defer rt.Close(ctx)
		be, err := rt.Compile(ctx, "default", bin, wasm.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		defer be.Close(ctx)
		vs = append(vs, variant{"wasmtime-" + mode.String(), be})
	}
	wz, err := wasm.NewRuntime("", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer wz.Close(ctx)
	zb, err := wz.Compile(ctx, "default", bin, wasm.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	defer zb.Close(ctx)
	vs = append(vs, variant{"wazero", zb})
	for _, v := range vs {
		c := fixtures.SyncedClient(b, v.b, v.name, snap)
		var plugins []int
		for p := range c.Module().Manifest().Plugins {
			plugins = append(plugins, p)
		}
		b.Run("set=default/interrupt="+v.name, func(b *testing.B) { fixtures.BenchPasses(b, c, plugins, &pod, all, false) })
	}
}

// BenchmarkModuleWideCall measures what one module-wide call costs on
// each backend, guest work included but small: PushState+PopState (two
// calls without input), StartCycle (Input and Call with the encoded pod)
// and NodeResourcesFit's PreFilter (one call). Each sub-benchmark has a
// fresh instance: the Go build's heap grows with every call until it runs
// out of memory after some 10^5-10^6 calls (on either runtime).
func BenchmarkModuleWideCall(b *testing.B) {
	ctx := context.Background()
	snap, _, pod := benchCluster()
	fresh := func(b *testing.B, v variant) *guest.Client {
		c := fixtures.SyncedClient(b, v.b, v.name, snap)
		if err := c.StartCycle(ctx, &pod); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		return c
	}
	for _, v := range runtimes(b) {
		b.Run("call=PushState+PopState/backend="+v.name, func(b *testing.B) {
			c := fresh(b, v)
			for i := 0; i < b.N; i++ {
				if err := c.PushState(ctx); err != nil {
					b.Fatal(err)
				}
				if err := c.PopState(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("call=StartCycle/backend="+v.name, func(b *testing.B) {
			c := fresh(b, v)
			for i := 0; i < b.N; i++ {
				if err := c.StartCycle(ctx, &pod); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("call=PreFilter/backend="+v.name, func(b *testing.B) {
			c := fresh(b, v)
			fit := c.Module().Manifest().Plugin("NodeResourcesFit")
			if fit < 0 {
				b.Fatal("the default bundle has no NodeResourcesFit")
			}
			for i := 0; i < b.N; i++ {
				if _, err := c.PreFilter(ctx, fit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompile measures compiling the default bundle on each runtime:
// cold (an empty cache), from the on-disk cache (a fresh Runtime over a
// warm directory), and from the runtime's memory (the same Runtime
// again). Making and closing runtimes is not timed.
func BenchmarkCompile(b *testing.B) {
	ctx := context.Background()
	type rt interface {
		compile(name string, bin []byte) (guest.Backend, error)
		close()
	}
	makers := map[string]func(dir string) rt{
		"wazero": func(dir string) rt {
			r, err := wasm.NewRuntime(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			return wazeroRT{r}
		},
		"wasmtime": func(dir string) rt {
			r, err := wasmtime.NewRuntime(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			return wasmtimeRT{r}
		},
	}
	builds := []struct {
		name string
		bin  []byte
	}{{"tinygo", testwasm.TinyGoBytes(b, testwasm.Default)}, {"go", testwasm.GoBytes(b, testwasm.Default)}}
	for _, build := range builds {
		for _, runtime := range []string{"wazero", "wasmtime"} {
			mk := makers[runtime]
			timed := func(b *testing.B, r rt) {
				b.StartTimer()
				be, err := r.compile("default", build.bin)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				be.Close(ctx)
			}
			b.Run(fmt.Sprintf("build=%s/cache=none/runtime=%s", build.name, runtime), func(b *testing.B) {
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					r := mk(b.TempDir())
					timed(b, r)
					r.close()
				}
			})
			warm := b.TempDir()
			r := mk(warm)
			if _, err := r.compile("default", build.bin); err != nil {
				b.Fatal(err)
			}
			r.close()
			b.Run(fmt.Sprintf("build=%s/cache=disk/runtime=%s", build.name, runtime), func(b *testing.B) {
				b.StopTimer()
				for i := 0; i < b.N; i++ {
					r := mk(warm)
					timed(b, r)
					r.close()
				}
			})
			b.Run(fmt.Sprintf("build=%s/cache=memory/runtime=%s", build.name, runtime), func(b *testing.B) {
				b.StopTimer()
				r := mk(warm)
				defer r.close()
				be, err := r.compile("default", build.bin) // into the runtime's memory
				if err != nil {
					b.Fatal(err)
				}
				be.Close(ctx)
				for i := 0; i < b.N; i++ {
					timed(b, r)
				}
			})
		}
	}
}

type wazeroRT struct{ r *wasm.Runtime }

func (w wazeroRT) compile(name string, bin []byte) (guest.Backend, error) {
	return w.r.Compile(context.Background(), name, bin, wasm.Limits{})
}
func (w wazeroRT) close() { w.r.Close(context.Background()) }

type wasmtimeRT struct{ r *wasmtime.Runtime }

func (w wasmtimeRT) compile(name string, bin []byte) (guest.Backend, error) {
	return w.r.Compile(context.Background(), name, bin, wasm.Limits{})
}
func (w wasmtimeRT) close() { w.r.Close(context.Background()) }
