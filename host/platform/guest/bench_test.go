package guest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

// backends returns the default bundle as a native twin, a TinyGo build and
// a Go build, in the order benchmarks report them.
func backends(tb testing.TB) []struct {
	name string
	b    guest.Backend
} {
	ctx := context.Background()
	rt, err := wasm.NewRuntime(tb.TempDir(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(ctx) })
	compile := func(name string, bin []byte) guest.Backend {
		b, err := rt.Compile(ctx, name, bin, wasm.Limits{})
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	return []struct {
		name string
		b    guest.Backend
	}{
		{"native", native.New(nil, defaults.Plugins()...)},
		{"tinygo", compile("default-tinygo", testwasm.TinyGoBytes(tb, testwasm.Default))},
		{"go", compile("default-go", testwasm.GoBytes(tb, testwasm.Default))},
	}
}

const benchNodes = 5000

// benchPass times scheduling passes of the given plugins over all nodes
// on one instance and reports ns/node; needFeasible fails the benchmark
// if no node fits.
func benchPass(b *testing.B, m *guest.Pool, snap *snapshot.Snapshot, all []uint32, pod *abi.Pod, plugins []int, needFeasible bool) {
	ctx := context.Background()
	c, err := m.Get(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Put(ctx, c)
	if err := c.Sync(ctx, snap); err != nil {
		b.Fatal(err)
	}
	fixtures.BenchPasses(b, c, plugins, pod, all, needFeasible)
}

// benchSets benchmarks one scheduling pass over all nodes for the whole
// bundle and, with perPlugin, for each plugin alone, reporting ns/node.
func benchSets(b *testing.B, m *guest.Pool, backend string, snap *snapshot.Snapshot, all []uint32, pod *abi.Pod, perPlugin bool) {
	sets := [][]int{nil} // nil: the whole bundle
	if perPlugin {
		for i := range m.Manifest().Plugins {
			sets = append(sets, []int{i})
		}
	}
	for _, set := range sets {
		name, plugins := "set=default", set
		if set == nil {
			for i := range m.Manifest().Plugins {
				plugins = append(plugins, i)
			}
		} else {
			name = "plugin=" + m.Manifest().Plugins[set[0]].Name
		}
		b.Run(fmt.Sprintf("%s/backend=%s", name, backend), func(b *testing.B) {
			benchPass(b, m, snap, all, pod, plugins, true)
		})
	}
}

func BenchmarkFilterScorePerNode(b *testing.B) {
	ctx := context.Background()
	snap := fixtures.Cluster(benchNodes, 2*benchNodes)
	all := fixtures.Slots(snap)
	pod := fixtures.Pod("bench", 0)
	for _, be := range backends(b) {
		m, err := guest.Load(ctx, be.b, guest.PoolConfig{Name: be.name, PoolSize: 1})
		if err != nil {
			b.Fatal(err)
		}
		benchSets(b, m, be.name, snap, all, &pod, true)
		m.Close(ctx)
	}
}

func BenchmarkMirrorDeltaSync(b *testing.B) {
	ctx := context.Background()
	for _, be := range backends(b) {
		b.Run("backend="+be.name, func(b *testing.B) {
			snap := fixtures.Cluster(benchNodes, 2*benchNodes)
			c := fixtures.SyncedClient(b, be.b, be.name, snap)
			nodes := snap.Nodes()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// One pod bound per cycle: one node changes, one node syncs.
				p := fixtures.Pod("delta", i)
				p.NodeName = nodes[i%len(nodes)].Info.Node.Name
				b.StopTimer()
				if err := snap.AddPod(&p); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := c.Sync(ctx, snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTopologyPlugins measures PodTopologySpread and InterPodAffinity
// per node at 5000 nodes, with 3000 and with 30000 existing pods: the
// per-cycle cost must not grow with the pods (pod groups make counting
// per node cost the workloads there, not the pods).
func BenchmarkTopologyPlugins(b *testing.B) {
	ctx := context.Background()
	pod := fixtures.TopologyPod("bench", 0)
	for _, pods := range []int{3000, 30000} {
		snap := fixtures.ClusterOfWorkloads(benchNodes, pods)
		all := fixtures.Slots(snap)
		for _, be := range backends(b)[:2] {
			m, err := guest.Load(ctx, be.b, guest.PoolConfig{Name: be.name, PoolSize: 1})
			if err != nil {
				b.Fatal(err)
			}
			for _, name := range []string{"PodTopologySpread", "InterPodAffinity"} {
				idx := m.Manifest().Plugin(name)
				if idx < 0 {
					b.Skipf("the bundle has no %s", name)
				}
				b.Run(fmt.Sprintf("pods=%d/plugin=%s/backend=%s", pods, name, be.name), func(b *testing.B) {
					benchPass(b, m, snap, all, &pod, []int{idx}, false)
				})
			}
			m.Close(ctx)
		}
	}
}
