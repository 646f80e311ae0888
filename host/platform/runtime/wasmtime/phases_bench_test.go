//go:build wasmtime

package wasmtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

// BenchmarkRuntimesTopologyPhases is RuntimesTopology split by extension
// point: StartCycle, PreFilter, Filter, PreScore and Score are called one
// by one and each is charged the CPU time of the benchmark's thread
// (locked to it; clock_gettime of CLOCK_THREAD_CPUTIME_ID), reported per
// node of the cluster. Thread CPU time is what a shared, loaded machine
// disturbs least, and the split shows which pass the Wasm build loses
// in (docs/PERFORMANCE.md, "Topology plugins"). The variants are the
// native twin and the committed TinyGo build on wasmtime and wazero;
// WASMSCHED_BENCH_WASM adds the default-bundle builds it lists (paths
// separated by spaces) on wasmtime, so a candidate build is compared
// with the committed one in one process.
func BenchmarkRuntimesTopologyPhases(b *testing.B) {
	ctx := context.Background()
	pod := fixtures.TopologyPod("bench", 0)
	vs := phaseVariants(b)
	for _, pods := range []int{3000, 30000} {
		snap := fixtures.ClusterOfWorkloads(benchNodes, pods)
		all := fixtures.Slots(snap)
		for _, v := range vs {
			c := fixtures.SyncedClient(b, v.b, v.name, snap)
			for _, name := range []string{"PodTopologySpread", "InterPodAffinity"} {
				p := c.Module().Manifest().Plugin(name)
				if p < 0 {
					b.Fatalf("the bundle has no %s", name)
				}
				b.Run(fmt.Sprintf("pods=%d/plugin=%s/backend=%s", pods, name, v.name), func(b *testing.B) {
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					var spent [5]time.Duration
					feasible := make([]uint32, 0, len(all))
					for i := 0; i < b.N; i++ {
						t0 := threadCPU(b)
						if err := c.StartCycle(ctx, &pod); err != nil {
							b.Fatal(err)
						}
						t1 := threadCPU(b)
						if st, err := c.PreFilter(ctx, p); err != nil || st.Code == abi.Skip {
							b.Fatal(st, err)
						}
						t2 := threadCPU(b)
						r, err := c.Filter(ctx, p, all)
						if err != nil {
							b.Fatal(err)
						}
						t3 := threadCPU(b)
						feasible = feasible[:0]
						for j, ix := range r.Indexes {
							if ix == 0 {
								feasible = append(feasible, all[j])
							}
						}
						t4 := threadCPU(b)
						if st, err := c.PreScore(ctx, p, feasible); err != nil || st.Code == abi.Skip {
							b.Fatal(st, err)
						}
						t5 := threadCPU(b)
						if _, err := c.Score(ctx, p, feasible); err != nil {
							b.Fatal(err)
						}
						t6 := threadCPU(b)
						spent[0] += t1 - t0
						spent[1] += t2 - t1
						spent[2] += t3 - t2
						spent[3] += t5 - t4
						spent[4] += t6 - t5
					}
					per := float64(b.N) * float64(len(all))
					for i, unit := range []string{"start-ns/node", "prefilter-ns/node", "filter-ns/node", "prescore-ns/node", "score-ns/node"} {
						b.ReportMetric(float64(spent[i].Nanoseconds())/per, unit)
					}
				})
			}
		}
	}
}

// phaseVariants is the native twin, the committed TinyGo build on both
// runtimes and the builds WASMSCHED_BENCH_WASM names on wasmtime.
func phaseVariants(tb testing.TB) []variant {
	ctx := context.Background()
	wz, wt := bothRuntimes(tb)
	vs := []variant{{"native", native.New(nil, defaults.Plugins()...)}}
	add := func(name string, be guest.Backend, closer func(context.Context) error) {
		tb.Cleanup(func() { closer(ctx) })
		vs = append(vs, variant{name, be})
	}
	bin := testwasm.TinyGoBytes(tb, testwasm.Default)
	tbk, err := wt.Compile(ctx, "default-tinygo", bin, wasm.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	add("tinygo-wasmtime", tbk, tbk.Close)
	zb, err := wz.Compile(ctx, "default-tinygo", bin, wasm.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	add("tinygo-wazero", zb, zb.Close)
	for _, path := range strings.Fields(os.Getenv("WASMSCHED_BENCH_WASM")) {
		extra, err := os.ReadFile(path)
		if err != nil {
			tb.Fatalf("WASMSCHED_BENCH_WASM: %v", err)
		}
		name := strings.TrimSuffix(filepath.Base(path), ".wasm")
		be, err := wt.Compile(ctx, name, extra, wasm.Limits{})
		if err != nil {
			tb.Fatalf("WASMSCHED_BENCH_WASM %s: %v", path, err)
		}
		add(name+"-wasmtime", be, be.Close)
	}
	return vs
}

// threadCPU is the CPU time the calling thread has used; the benchmark
// fails where the clock cannot be read.
func threadCPU(tb testing.TB) time.Duration {
	t, ok := fixtures.ThreadCPUTime()
	if !ok {
		tb.Fatal("no per-thread CPU clock")
	}
	return t
}
