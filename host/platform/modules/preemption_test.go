package modules

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// preemptionCalls runs select_victims and rank_candidates of a preemption
// plugin through the ABI, with a PDB table synced first, and returns the
// raw answers so Wasm builds and native twins can be compared.
func preemptionCalls(t *testing.T, m *Compiled, plugin string) ([]abi.NodeVictims, []int) {
	t.Helper()
	ctx := context.Background()
	pool, err := guest.Load(ctx, m.Backend, guest.PoolConfig{Name: m.Config.Name, PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close(ctx)
	c, err := pool.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Put(ctx, c)
	snap := snapshot.New()
	snap.SetNode(abi.Node{Name: "n1", AllowedPods: 10})
	snap.SetNamespace("jobs", abi.Labels{{Key: "scheduling.wasmsched.io/batch", Value: "true"}})
	snap.SetPDB(&abi.PDB{Namespace: "web", Name: "front", DisruptionsAllowed: 1,
		Selector: &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "front"}}}})
	if err := c.Sync(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if err := c.StartCycle(ctx, &abi.Pod{UID: "p", Name: "p", Namespace: "web", Priority: 100}); err != nil {
		t.Fatal(err)
	}
	idx := c.Module().Manifest().Plugin(plugin)
	if idx < 0 || !c.Module().Manifest().Plugins[idx].Points.Has(abi.PointPreemption) {
		t.Fatalf("module %q has no preemption plugin %q", m.Config.Name, plugin)
	}
	front := abi.Labels{{Key: "app", Value: "front"}}
	g := int32(1000)
	nodes := []abi.NodeCandidates{
		{Slot: 0, Pods: []abi.VictimCandidate{
			{UID: "a", Namespace: "web", Name: "a", Labels: front, Priority: 5, StartTime: 10},
			{UID: "b", Namespace: "web", Name: "b", Labels: front, Priority: 5, StartTime: 20},
			{UID: "c", Namespace: "jobs", Name: "c", Priority: 50, StartTime: 30},
			{UID: "d", Namespace: "web", Name: "d", Labels: front, Priority: 1, DisruptionGuard: &g},
		}},
		{Slot: 0},
	}
	got, err := c.SelectVictims(ctx, idx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	victims := append([]abi.NodeVictims(nil), got...)
	cands := []abi.Candidate{
		{Slot: 0, Victims: []abi.VictimCandidate{nodes[0].Pods[2]}},
		{Slot: 0, Victims: []abi.VictimCandidate{nodes[0].Pods[0], nodes[0].Pods[1]}},
	}
	order, err := c.RankCandidates(ctx, idx, cands)
	if err != nil {
		t.Fatal(err)
	}
	return victims, append([]int(nil), order...)
}

func TestDefaultPreemptionPolicyWasmMatchesItsNativeTwin(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	wasmReg, err := Load(ctx, cfg, Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer wasmReg.Close(ctx)
	nativeReg, err := Load(ctx, cfg, Options{CacheDir: t.TempDir(), NativeBuiltin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nativeReg.Close(ctx)
	const name = "DefaultPreemptionPolicy"
	wv, wo := preemptionCalls(t, wasmReg.PluginModule(name), name)
	nv, no := preemptionCalls(t, nativeReg.PluginModule(name), name)
	if !reflect.DeepEqual(wv, nv) || !reflect.DeepEqual(wo, no) {
		t.Fatalf("Wasm and native twin differ:\nwasm   %+v %v\nnative %+v %v", wv, wo, nv, no)
	}
	// kube's rules: c (50) most important, then a (earlier start) and b;
	// the budget allows one disruption, so b violates; d is guarded
	// against priority 100 and would violate, so it is not selectable.
	want := []abi.VictimChoice{{Index: 2}, {Index: 0}, {Index: 1, Violating: true}}
	if wv[0].Code != abi.Success || !reflect.DeepEqual(wv[0].Victims, want) {
		t.Fatalf("victims %+v, want %+v", wv[0], want)
	}
	if wv[1].Code != abi.UnschedulableAndUnresolvable || len(wv[1].Victims) != 0 {
		t.Fatalf("a node without pods: %+v", wv[1])
	}
	// Lowest top victim priority wins: candidate 1 (top 5) over 0 (top 50).
	if !reflect.DeepEqual(wo, []int{1, 0}) {
		t.Fatalf("rank %v", wo)
	}
}

func TestBatchPreemptionExampleLoadsFromItsFile(t *testing.T) {
	root, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	r, err := load(t, config.ModuleSpec{Name: "batch", Path: filepath.Join(root, "plugins-wasm/dist/batchpreemption.tinygo.wasm")})
	if err != nil {
		t.Fatal(err)
	}
	v, order := preemptionCalls(t, r.PluginModule("BatchFirstPreemption"), "BatchFirstPreemption")
	// The batch pod c goes last in importance (first to be removed), and
	// the candidate whose only victim is the batch pod ranks first.
	want := []abi.VictimChoice{{Index: 0}, {Index: 1, Violating: true}, {Index: 2}}
	if !reflect.DeepEqual(v[0].Victims, want) || !reflect.DeepEqual(order, []int{0, 1}) {
		t.Fatalf("victims %+v rank %v", v[0].Victims, order)
	}
}

// BenchmarkVictimSelection is the cost of the preemption policy itself,
// Wasm bundle against its native twin: one select_victims call over 500
// nodes of 4 lower-priority pods each (kube-scheduler's 10% of 5000
// nodes), with 20 PodDisruptionBudgets synced, then one rank_candidates
// over 100 candidates of 3 victims. The dry runs' filter calls are not
// included (BenchmarkPreemptionCycle in host/run/sim has the whole cycle).
func BenchmarkVictimSelection(b *testing.B) {
	ctx := context.Background()
	cfg := config.Default()
	for _, backend := range []string{"wasm", "native"} {
		b.Run("backend="+backend, func(b *testing.B) {
			reg, err := Load(ctx, cfg, Options{CacheDir: b.TempDir(), NativeBuiltin: backend == "native"})
			if err != nil {
				b.Fatal(err)
			}
			defer reg.Close(ctx)
			m := reg.PluginModule("DefaultPreemptionPolicy")
			pool, err := guest.Load(ctx, m.Backend, guest.PoolConfig{Name: m.Config.Name, PoolSize: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close(ctx)
			c, err := pool.Get(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Put(ctx, c)
			snap := snapshot.New()
			var nodes []abi.NodeCandidates
			for i := 0; i < 500; i++ {
				snap.SetNode(abi.Node{Name: fmt.Sprintf("n%04d", i), AllowedPods: 110})
				nc := abi.NodeCandidates{Slot: uint32(i)}
				for j := 0; j < 4; j++ {
					app := fmt.Sprintf("app-%d", (i*4+j)%40)
					nc.Pods = append(nc.Pods, abi.VictimCandidate{UID: fmt.Sprintf("u%d-%d", i, j), Namespace: "low",
						Name: fmt.Sprintf("p%d-%d", i, j), Labels: abi.Labels{{Key: "app", Value: app}}, Priority: int32(j), StartTime: int64(1000 + j)})
				}
				nodes = append(nodes, nc)
			}
			for k := 0; k < 20; k++ {
				snap.SetPDB(&abi.PDB{Namespace: "low", Name: fmt.Sprintf("pdb-%d", k), DisruptionsAllowed: 1,
					Selector: &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: fmt.Sprintf("app-%d", k)}}}})
			}
			if err := c.Sync(ctx, snap); err != nil {
				b.Fatal(err)
			}
			if err := c.StartCycle(ctx, &abi.Pod{UID: "p", Name: "p", Namespace: "high", Priority: 10}); err != nil {
				b.Fatal(err)
			}
			idx := m.Manifest.Plugin("DefaultPreemptionPolicy")
			var cands []abi.Candidate
			for i := 0; i < 100; i++ {
				cands = append(cands, abi.Candidate{Slot: uint32(i), Victims: nodes[i].Pods[:3]})
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.SelectVictims(ctx, idx, nodes); err != nil {
					b.Fatal(err)
				}
				if _, err := c.RankCandidates(ctx, idx, cands); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/node")
		})
	}
}
