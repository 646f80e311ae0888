package modules

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

// BenchmarkKnativeStep is one vpod_step of Knative's README policy over
// 100 adapter pods on 9 nodes in 3 zones, the vpod present on 10 pods:
// the per-vreplica cost of the guest side, Wasm (wazero; and wasmtime
// with -tags wasmtime) against the native twin. cpu-ns/op is the
// process's CPU time per step (user and system).
func BenchmarkKnativeStep(b *testing.B) {
	topo := &abi.VPodTopology{Generation: 1, StatefulSet: "adapter", Capacity: 10, Replicas: 100, Zones: []string{"a", "b", "c"}}
	for n := 0; n < 9; n++ {
		topo.Nodes = append(topo.Nodes, abi.VPodNode{Name: fmt.Sprintf("node-%d", n), Zone: uint32(n % 3)})
	}
	step := &abi.VPodStep{Policy: 1, Topology: 1, Namespace: "ns", Name: "src", VReplicas: 20}
	nodes, zones := map[uint32]int32{}, map[uint32]int32{}
	for i := 0; i < 100; i++ {
		topo.Pods = append(topo.Pods, abi.VPodPod{Ordinal: int32(i), Node: uint32(i % 9)})
		step.Free = append(step.Free, int32(i%7))
		if i%10 == 0 {
			step.PodSpread = append(step.PodSpread, abi.VPodCount{Index: uint32(i), VReplicas: 2})
			nodes[uint32(i%9)] += 2
			zones[uint32(i%9%3)] += 2
		}
		step.Candidates = append(step.Candidates, uint32(i))
	}
	step.NodeSpread, step.ZoneSpread = countsOf(nodes), countsOf(zones)
	for _, backend := range stepBackends() {
		b.Run("backend="+backend, func(b *testing.B) {
			var c *guest.Client
			switch backend {
			case "native":
				c = evictionClient(b, config.BuiltinKnativeModule, nil, knativedefaults.Plugins(), nil)
			case "wasm":
				c = evictionClient(b, config.BuiltinKnativeModule, dist.KnativeWasm, nil, nil)
			default:
				c = runtimeClient(b, backend, config.BuiltinKnativeModule, dist.KnativeWasm)
			}
			m := c.Module().Manifest()
			skew := knativeArgs(`{"MaxSkew": 2}`)
			pol := &abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{
				vpodEntry(b, m, "PodFitsResources", abi.VPodPredicate, ""),
				vpodEntry(b, m, "NoMaxResourceCount", abi.VPodPredicate, knativeArgs(`{"NumPartitions": 100}`)),
				vpodEntry(b, m, "EvenPodSpread", abi.VPodPredicate, skew),
				vpodEntry(b, m, "AvailabilityZonePriority", abi.VPodPriority, skew),
				vpodEntry(b, m, "LowestOrdinalPriority", abi.VPodPriority, ""),
			}}
			ctx := context.Background()
			if _, err := c.EnsureVPodPolicy(ctx, pol); err != nil {
				b.Fatal(err)
			}
			if err := c.VPodTopology(ctx, topo); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			t := processCPU()
			for i := 0; i < b.N; i++ {
				if _, err := c.VPodStep(ctx, pol, step); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-t).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// stepBackends are the backends BenchmarkKnativeStep compares: the Wasm
// build on wazero ("wasm"), the native twin, and the Wasm build on
// wasmtime when this test binary has that runtime (-tags wasmtime).
func stepBackends() []string {
	backends := []string{"wasm", "native"}
	if slices.Contains(Runtimes(), config.RuntimeWasmtime) {
		backends = append(backends, config.RuntimeWasmtime)
	}
	return backends
}

// runtimeClient compiles bin on the named runtime of this binary and
// returns a client of one instance.
func runtimeClient(tb testing.TB, runtime, name string, bin []byte) *guest.Client {
	tb.Helper()
	ctx := context.Background()
	newCompiler, ok := runtimes[runtime]
	if !ok {
		tb.Fatalf("this test binary has no %s runtime", runtime)
	}
	comp, err := newCompiler(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { comp.Close(ctx) })
	backend, err := comp.Compile(ctx, name, bin, wasm.Limits{})
	if err != nil {
		tb.Fatal(err)
	}
	m, err := guest.Load(ctx, backend, guest.PoolConfig{Name: name, PoolSize: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close(ctx) })
	c, err := m.Get(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Put(ctx, c) })
	return c
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
