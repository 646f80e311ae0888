package guest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

// Benchmark-only: where the Wasm/native gap comes from.
//
// Both entry points run one scheduling pass of the whole default set over
// benchNodes nodes (as BenchmarkFilterScorePerNode does) on the native
// twin and the committed TinyGo build through package wasm (instrumented,
// as in production). WASMSCHED_PERF_WASM adds more builds
// (comma-separated paths, e.g. TinyGo builds with other flags);
// WASMSCHED_PERF_BARE=1 also runs every build on a bare wazero runtime,
// without the loop-check instrumentation and with it.
//
// BenchmarkPerfGap reports each variant as a sub-benchmark
// (WASMSCHED_PERF_PLUGINS=1 adds one per plugin):
//
//	go test -run '^$' -bench PerfGap -benchtime 40x -count 3 ./host/platform/guest/
//
// TestPerfInterleaved (skipped unless WASMSCHED_PERF_ROUNDS is set) runs
// the variants round-robin and prints, per variant, the median over rounds
// of its time relative to the native twin's in the same round: on a noisy
// machine that is far steadier than comparing sub-benchmarks run seconds
// apart. WASMSCHED_PERF_PLUGIN=Name runs that plugin alone;
// WASMSCHED_PERF_PASSES sets the passes per variant and round (10).
//
//	WASMSCHED_PERF_ROUNDS=30 go test -run PerfInterleaved -v ./host/platform/guest/

type perfVariant struct {
	name string
	be   guest.Backend
}

func perfVariants(tb testing.TB) []perfVariant {
	ctx := context.Background()
	rt, err := wasm.NewRuntime("", nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(ctx) })
	bare := os.Getenv("WASMSCHED_PERF_BARE") != ""
	var vs []perfVariant
	add := func(name string, bin []byte) {
		inst, err := rt.Compile(ctx, name, bin, wasm.Limits{})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { inst.Close(ctx) })
		vs = append(vs, perfVariant{name, inst})
		if bare {
			be, err := newBareBackend(ctx, bin)
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { be.Close(ctx) })
			vs = append(vs, perfVariant{name + "/bare", be})
			// The instrumented module on the bare runtime: the loop checks'
			// cost alone, without package wasm's per-call deadline.
			ibin, err := wasm.Instrument(bin)
			if err != nil {
				tb.Fatal(err)
			}
			ibe, err := newBareBackend(ctx, ibin)
			if err != nil {
				tb.Fatal(err)
			}
			tb.Cleanup(func() { ibe.Close(ctx) })
			vs = append(vs, perfVariant{name + "/bare+checks", ibe})
		}
	}
	vs = append(vs, perfVariant{"native", native.New(nil, defaults.Plugins()...)})
	add("tinygo", testwasm.TinyGoBytes(tb, testwasm.Default))
	if extra := os.Getenv("WASMSCHED_PERF_WASM"); extra != "" {
		for _, p := range strings.Split(extra, ",") {
			bin, err := os.ReadFile(p)
			if err != nil {
				tb.Fatal(err)
			}
			add(strings.TrimSuffix(filepath.Base(p), ".wasm"), bin)
		}
	}
	return vs
}

func BenchmarkPerfGap(b *testing.B) {
	ctx := context.Background()
	vs := perfVariants(b)
	snap := fixtures.Cluster(benchNodes, 2*benchNodes)
	all := fixtures.Slots(snap)
	pod := fixtures.Pod("bench", 0)
	for _, v := range vs {
		m, err := guest.Load(ctx, v.be, guest.PoolConfig{Name: v.name, PoolSize: 1})
		if err != nil {
			b.Fatal(err)
		}
		benchSets(b, m, v.name, snap, all, &pod, os.Getenv("WASMSCHED_PERF_PLUGINS") != "")
		m.Close(ctx)
	}
}

func TestPerfInterleaved(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("WASMSCHED_PERF_ROUNDS"))
	if rounds <= 0 {
		t.Skip("set WASMSCHED_PERF_ROUNDS to run")
	}
	passes, _ := strconv.Atoi(os.Getenv("WASMSCHED_PERF_PASSES"))
	if passes <= 0 {
		passes = 10
	}
	ctx := context.Background()
	vs := perfVariants(t)
	snap := fixtures.Cluster(benchNodes, 2*benchNodes)
	all := fixtures.Slots(snap)
	pod := fixtures.Pod("bench", 0)
	type run struct {
		c       *guest.Client
		plugins []int
		ns      []float64 // per round, ns/node
	}
	runs := make([]*run, len(vs))
	for i, v := range vs {
		m, err := guest.Load(ctx, v.be, guest.PoolConfig{Name: v.name, PoolSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(ctx)
		c, err := m.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Sync(ctx, snap); err != nil {
			t.Fatal(err)
		}
		r := &run{c: c}
		only := os.Getenv("WASMSCHED_PERF_PLUGIN")
		for p, info := range m.Manifest().Plugins {
			if only == "" || info.Name == only {
				r.plugins = append(r.plugins, p)
			}
		}
		if len(r.plugins) == 0 {
			t.Fatalf("no plugin %q", only)
		}
		runs[i] = r
	}
	feasible := make([]uint32, 0, len(all))
	for round := 0; round < rounds; round++ {
		for i := range runs {
			r := runs[(i+round)%len(runs)]
			start := time.Now()
			for k := 0; k < passes; k++ {
				if n, err := fixtures.Pass(ctx, r.c, r.plugins, &pod, all, feasible); err != nil || n == 0 {
					t.Fatal(n, err)
				}
			}
			r.ns = append(r.ns, float64(time.Since(start).Nanoseconds())/float64(passes)/benchNodes)
		}
	}
	median := func(x []float64) float64 {
		x = append([]float64(nil), x...)
		sort.Float64s(x)
		return x[len(x)/2]
	}
	nat := runs[0].ns
	for i, r := range runs {
		ratios := make([]float64, rounds)
		for k := range ratios {
			ratios[k] = r.ns[k] / nat[k]
		}
		if os.Getenv("WASMSCHED_PERF_SERIES") != "" {
			t.Logf("%s: %.0f", vs[i].name, r.ns)
		}
		t.Logf("%-24s ns/node median %7.1f min %7.1f   ratio to native (same round): median %.2f", vs[i].name, median(r.ns), slices.Min(r.ns), median(ratios))
	}
}

// bareBackend runs a module on wazero with no instrumentation, no
// deadline and no sandbox beyond WASI defaults: a lower bound for what
// the Wasm build can cost.
type bareBackend struct {
	rt       wazero.Runtime
	compiled wazero.CompiledModule
}

func newBareBackend(ctx context.Context, bin []byte) (*bareBackend, error) {
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithMemoryLimitPages(wasm.DefaultMemoryBytes/(64<<10)))
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		return nil, err
	}
	if _, err := rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(bareLog),
		[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).Export(abi.ImportLog).
		Instantiate(ctx); err != nil {
		return nil, err
	}
	c, err := rt.CompileModule(ctx, bin)
	if err != nil {
		return nil, err
	}
	return &bareBackend{rt: rt, compiled: c}, nil
}

// bareLog prints guest log lines when WASMSCHED_PERF_LOG is set.
func bareLog(_ context.Context, mod api.Module, stack []uint64) {
	if os.Getenv("WASMSCHED_PERF_LOG") == "" {
		return
	}
	if msg, ok := mod.Memory().Read(api.DecodeU32(stack[1]), api.DecodeU32(stack[2])); ok {
		fmt.Fprintln(os.Stderr, "guest:", string(msg))
	}
}

func (b *bareBackend) Close(ctx context.Context) error { return b.rt.Close(ctx) }

func (b *bareBackend) NewInstance(ctx context.Context) (guest.Instance, error) {
	mod, err := b.rt.InstantiateModule(ctx, b.compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
	if err != nil {
		return nil, err
	}
	if f := mod.ExportedFunction("_initialize"); f != nil {
		if _, err := f.Call(ctx); err != nil {
			return nil, err
		}
	}
	return &bareInstance{
		mod:     mod,
		mem:     mod.Memory(),
		version: mod.ExportedFunction(abi.ExportABIVersion),
		input:   mod.ExportedFunction(abi.ExportInput),
		call:    mod.ExportedFunction(abi.ExportCall),
		stack:   make([]uint64, 3),
	}, nil
}

type bareInstance struct {
	mod                  api.Module
	mem                  api.Memory
	version, input, call api.Function
	stack                []uint64
}

func (i *bareInstance) ABIVersion(ctx context.Context) (uint32, error) {
	err := i.version.CallWithStack(ctx, i.stack)
	return api.DecodeU32(i.stack[0]), err
}

func (i *bareInstance) Input(ctx context.Context, n int) ([]byte, error) {
	i.stack[0] = api.EncodeU32(uint32(n))
	if err := i.input.CallWithStack(ctx, i.stack); err != nil {
		return nil, err
	}
	buf, ok := i.mem.Read(api.DecodeU32(i.stack[0]), uint32(n))
	if !ok {
		return nil, fmt.Errorf("input buffer outside memory")
	}
	return buf, nil
}

func (i *bareInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	i.stack[0], i.stack[1], i.stack[2] = api.EncodeU32(uint32(fn)), api.EncodeU32(arg), api.EncodeU32(uint32(n))
	if err := i.call.CallWithStack(ctx, i.stack); err != nil {
		return nil, err
	}
	packed := i.stack[0]
	reply, ok := i.mem.Read(uint32(packed>>32), uint32(packed))
	if !ok {
		return nil, fmt.Errorf("reply outside memory")
	}
	return reply, nil
}

func (i *bareInstance) Close(ctx context.Context) error { return i.mod.Close(ctx) }
