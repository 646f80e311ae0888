package modules

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
	"github.com/wasmsched/wasmsched/plugins-wasm/evictiondefaults"
	"github.com/wasmsched/wasmsched/plugins-wasm/examples/taintviolation"
)

// The eviction policies' Wasm builds against their native twins (the
// same plugin source run as Go in the host): each scenario is synced,
// observed and asked the same questions through host/platform/guest's Client on
// both, and the answers must be identical and right.

const evGi = int64(1) << 30

// evictionClient loads a module's bytes (Wasm) or its plugins (native)
// with args and returns a client of one instance.
func evictionClient(t testing.TB, name string, bin []byte, regs []plugin.Registration, args []abi.PluginArgs) *guest.Client {
	t.Helper()
	ctx := context.Background()
	var backend guest.Backend
	if bin != nil {
		rt, err := wasm.NewRuntime(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close(ctx) })
		b, err := rt.Compile(ctx, name, bin, wasm.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		backend = b
	} else {
		backend = native.New(nil, regs...)
	}
	m, err := guest.Load(ctx, backend, guest.PoolConfig{Name: name, PoolSize: 1, Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(ctx) })
	c, err := m.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Put(ctx, c) })
	return c
}

// evPod is a pod of a scenario: requests, priority and usage (nil: no
// data).
type evPod struct {
	name     string
	prio     int32
	cpu, mem int64
	usage    *abi.Usage
	tols     []abi.Toleration
}

// evNode is a node of a scenario with its pods and observation.
type evNode struct {
	node  abi.Node
	pods  []evPod
	conds []abi.NodeCondition
	usage *abi.Usage
}

// scenario builds the snapshot and observations of nodes, and the
// candidates of each slot: every pod below system-critical priority, as
// the coordinator offers them.
func scenario(t *testing.T, nodes []evNode) (*snapshot.Snapshot, *snapshot.Observations, map[uint32][]uint32) {
	t.Helper()
	snap := snapshot.New()
	obs := snapshot.NewObservations()
	cands := map[uint32][]uint32{}
	for _, n := range nodes {
		ni := snap.SetNode(n.node)
		o := &abi.NodeObservation{Conditions: n.conds, Usage: n.usage}
		for _, p := range n.pods {
			pod := &abi.Pod{UID: p.name, Namespace: "ns", Name: p.name, NodeName: n.node.Name, Priority: p.prio, Tolerations: p.tols,
				Containers: []abi.Container{{Name: "c", Requests: abi.Resources{MilliCPU: p.cpu, Memory: p.mem}}}}
			if err := snap.AddPod(pod); err != nil {
				t.Fatal(err)
			}
			o.Pods = append(o.Pods, abi.PodObservation{QoS: abi.QoSBurstable, Usage: p.usage})
		}
		// The observation must be parallel to the node's pods as synced.
		if len(ni.Info.Pods) != len(n.pods) {
			t.Fatalf("node %s has %d pods, want %d", n.node.Name, len(ni.Info.Pods), len(n.pods))
		}
		for i := range ni.Info.Pods {
			if ni.Info.Pods[i].Name != n.pods[i].name {
				t.Fatalf("node %s pod %d is %s, want %s: observations would not be parallel", n.node.Name, i, ni.Info.Pods[i].Name, n.pods[i].name)
			}
			if ni.Info.Pods[i].Priority < abi.SystemCriticalPriority {
				cands[ni.Slot] = append(cands[ni.Slot], uint32(i))
			}
		}
		obs.Set(ni.Slot, o)
	}
	return snap, obs, cands
}

// twin runs calls against the Wasm build and the native twin of a module
// and fails unless both return the same; it returns the Wasm answer.
type twin struct {
	t      *testing.T
	wasm   *guest.Client
	native *guest.Client
}

func newTwin(t *testing.T, name string, bin []byte, regs []plugin.Registration, args []abi.PluginArgs, snap *snapshot.Snapshot, obs *snapshot.Observations) *twin {
	t.Helper()
	tw := &twin{t: t, wasm: evictionClient(t, name, bin, nil, args), native: evictionClient(t, name, nil, regs, args)}
	ctx := context.Background()
	for _, c := range []*guest.Client{tw.wasm, tw.native} {
		if err := c.Sync(ctx, snap); err != nil {
			t.Fatal(err)
		}
		if err := c.Observe(ctx, obs); err != nil {
			t.Fatal(err)
		}
	}
	return tw
}

func (tw *twin) plugin(name string) int {
	tw.t.Helper()
	i := tw.wasm.Module().Manifest().Plugin(name)
	if i < 0 || i != tw.native.Module().Manifest().Plugin(name) {
		tw.t.Fatalf("plugin %s: Wasm index %d, native %d", name, i, tw.native.Module().Manifest().Plugin(name))
	}
	return i
}

func (tw *twin) thresholdMet(plugin int, req *abi.EvictionRequest) []abi.ThresholdResult {
	tw.t.Helper()
	ctx := context.Background()
	w, err := tw.wasm.ThresholdMet(ctx, plugin, req)
	if err != nil {
		tw.t.Fatalf("wasm: %v", err)
	}
	n, err := tw.native.ThresholdMet(ctx, plugin, req)
	if err != nil {
		tw.t.Fatalf("native: %v", err)
	}
	if !reflect.DeepEqual(w, n) {
		tw.t.Fatalf("threshold_met differs:\nwasm   %+v\nnative %+v", w, n)
	}
	return w
}

func (tw *twin) top(plugin int, req *abi.TopEvictionRequest) []abi.TopEvictionPods {
	tw.t.Helper()
	ctx := context.Background()
	w, err := tw.wasm.TopEvictionPods(ctx, plugin, req)
	if err != nil {
		tw.t.Fatalf("wasm: %v", err)
	}
	n, err := tw.native.TopEvictionPods(ctx, plugin, req)
	if err != nil {
		tw.t.Fatalf("native: %v", err)
	}
	if !reflect.DeepEqual(w, n) {
		tw.t.Fatalf("top_eviction_pods differs:\nwasm   %+v\nnative %+v", w, n)
	}
	return w
}

func (tw *twin) evictPods(plugin int, req *abi.EvictionRequest) []abi.NodeEvictPods {
	tw.t.Helper()
	ctx := context.Background()
	w, err := tw.wasm.EvictPods(ctx, plugin, req)
	if err != nil {
		tw.t.Fatalf("wasm: %v", err)
	}
	n, err := tw.native.EvictPods(ctx, plugin, req)
	if err != nil {
		tw.t.Fatalf("native: %v", err)
	}
	if !reflect.DeepEqual(w, n) {
		tw.t.Fatalf("evict_pods differs:\nwasm   %+v\nnative %+v", w, n)
	}
	return w
}

// allNodes asks about every slot of cands plus a slot no node holds.
func allNodes(cands map[uint32][]uint32, slots int) *abi.EvictionRequest {
	req := &abi.EvictionRequest{Limit: 3}
	for s := 0; s < slots; s++ {
		req.Nodes = append(req.Nodes, abi.EvictionNode{Slot: uint32(s), Candidates: cands[uint32(s)]})
	}
	req.Nodes = append(req.Nodes, abi.EvictionNode{Slot: 99})
	return req
}

// args are a plugin's args given as JSON, converted as the host converts
// a configuration's.
func args(t *testing.T, plugin, js string) abi.PluginArgs {
	t.Helper()
	v, err := config.ArgsValue(json.RawMessage(js))
	if err != nil {
		t.Fatal(err)
	}
	return abi.PluginArgs{Name: plugin, Args: v}
}

// The scenario of the default policies: slot 0 overcommitted on CPU by
// requests, 1 under memory pressure, 2 over 90% memory usage, 3 nearly
// overcommitted (soft), 4 calm.
func evictionScenario(t *testing.T) (*snapshot.Snapshot, *snapshot.Observations, map[uint32][]uint32) {
	alloc := abi.Resources{MilliCPU: 4000, Memory: 8 * evGi}
	use := func(cpu, mem int64) *abi.Usage { return &abi.Usage{MilliCPU: cpu, Memory: mem, Timestamp: 1} }
	return scenario(t, []evNode{
		{node: abi.Node{Name: "over", Allocatable: alloc}, pods: []evPod{
			{name: "web", prio: 100, cpu: 500},
			{name: "batch-a", prio: 0, cpu: 2000},
			{name: "batch-b", prio: 0, cpu: 3000},
			{name: "kube-proxy", prio: 2000001000, cpu: 1000}, // critical: not a candidate, not counted
		}, usage: use(1000, evGi)},
		{node: abi.Node{Name: "pressure", Allocatable: alloc}, pods: []evPod{
			{name: "cache", prio: 0, mem: evGi, usage: use(10, 3*evGi)},
			{name: "db", prio: 0, mem: 2 * evGi, usage: use(10, evGi)},
			{name: "new", prio: 10, mem: evGi},
		}, conds: []abi.NodeCondition{{Type: "Ready", Status: abi.ConditionTrue}, {Type: "MemoryPressure", Status: abi.ConditionTrue}}},
		{node: abi.Node{Name: "hot", Allocatable: alloc}, pods: []evPod{
			{name: "p", prio: 0, mem: evGi, usage: use(10, 2*evGi)},
			{name: "q", prio: 0, mem: evGi, usage: use(10, 4*evGi)},
			{name: "r", prio: -1, mem: evGi},
		}, usage: use(2000, 7*evGi+evGi/2)},
		{node: abi.Node{Name: "soft", Allocatable: alloc}, pods: []evPod{
			{name: "s1", prio: 5, cpu: 2000},
			{name: "s2", prio: 5, cpu: 1000},
			{name: "s3", prio: 1, cpu: 500},
		}, usage: use(500, evGi)},
		{node: abi.Node{Name: "calm", Allocatable: alloc}, pods: []evPod{{name: "idle", cpu: 100, mem: evGi, usage: use(1, 1)}},
			conds: []abi.NodeCondition{{Type: "MemoryPressure", Status: abi.ConditionFalse}}},
	})
}

func podNames(snap *snapshot.Snapshot, slot uint32, idx []uint32) string {
	var s []string
	for _, i := range idx {
		s = append(s, snap.Slot(slot).Info.Pods[i].Name)
	}
	return strings.Join(s, ",")
}

func TestResourceOvercommitWasmMatchesItsNativeTwin(t *testing.T) {
	snap, obs, cands := evictionScenario(t)
	tw := newTwin(t, "eviction", dist.EvictionWasm, evictiondefaults.Plugins(),
		[]abi.PluginArgs{args(t, "ResourceOvercommit", `{"softRate": 0.8, "gracePeriodSeconds": 10}`)}, snap, obs)
	pl := tw.plugin("ResourceOvercommit")
	rs := tw.thresholdMet(pl, allNodes(cands, 5))
	// over: 500+2000+3000 = 5500m of 4000m (kube-proxy's 1000m not
	// counted); soft: 3500m > 0.8 × 4000m.
	if r := rs[0]; r.Met != abi.HardMet || r.Scope != "cpu" || r.ObservedValue != 5500 || r.ThresholdValue != 4000 || r.GracePeriodSeconds != 10 {
		t.Errorf("over: %+v", r)
	}
	if r := rs[3]; r.Met != abi.SoftMet || r.Scope != "cpu" || r.ObservedValue != 3500 || r.ThresholdValue != 3200 {
		t.Errorf("soft: %+v", r)
	}
	for _, i := range []int{1, 2, 4, 5} {
		if rs[i].Met != abi.NotMet {
			t.Errorf("node %d: %+v, want NotMet", i, rs[i])
		}
	}
	top := tw.top(pl, &abi.TopEvictionRequest{Limit: 3, Nodes: []abi.TopEvictionNode{
		{Slot: 0, TopN: 1, Scope: "cpu", Candidates: cands[0]},
		{Slot: 3, TopN: 0, Scope: "cpu", Candidates: cands[3]},
	}})
	// Hard: the lowest priority, largest request. Soft: keep s1, s2
	// (3000m ≤ 3200m), name s3.
	if got := podNames(snap, 0, top[0].Pods); got != "batch-b" {
		t.Errorf("hard victim %s, want batch-b", got)
	}
	if got := podNames(snap, 3, top[1].Pods); got != "s3" {
		t.Errorf("soft victims %s, want s3", got)
	}
}

func TestNodePressureWasmMatchesItsNativeTwin(t *testing.T) {
	snap, obs, cands := evictionScenario(t)
	tw := newTwin(t, "eviction", dist.EvictionWasm, evictiondefaults.Plugins(),
		[]abi.PluginArgs{args(t, "NodePressure", `{"effects": ["NoSchedule", "NoExecute"]}`)}, snap, obs)
	pl := tw.plugin("NodePressure")
	rs := tw.thresholdMet(pl, allNodes(cands, 5))
	want := &abi.EvictionCondition{Kind: abi.ConditionNodeKind, Name: "MemoryPressure", Effects: []abi.TaintEffect{abi.EffectNoSchedule, abi.EffectNoExecute}, Met: true}
	if r := rs[1]; r.Met != abi.HardMet || r.Scope != "memory" || !reflect.DeepEqual(r.Condition, want) {
		t.Errorf("pressure: %+v %+v", r, r.Condition)
	}
	for _, i := range []int{0, 2, 3, 4, 5} {
		if rs[i].Met != abi.NotMet || rs[i].Condition != nil {
			t.Errorf("node %d: %+v, want NotMet", i, rs[i])
		}
	}
	top := tw.top(pl, &abi.TopEvictionRequest{Limit: 3, Nodes: []abi.TopEvictionNode{
		{Slot: 1, TopN: 1, Scope: "memory", Candidates: cands[1]},
		{Slot: 1, TopN: 1, Scope: "memory", Candidates: []uint32{1, 2}},
	}})
	// cache uses 2Gi more than it requests; with it gone, db (with data,
	// under its request) goes before new (higher priority, no data).
	if a, b := podNames(snap, 1, top[0].Pods), podNames(snap, 1, top[1].Pods); a != "cache" || b != "db" {
		t.Errorf("victims %s and %s, want cache and db", a, b)
	}
}

func TestUsageThresholdWasmMatchesItsNativeTwin(t *testing.T) {
	snap, obs, cands := evictionScenario(t)
	tw := newTwin(t, "eviction", dist.EvictionWasm, evictiondefaults.Plugins(),
		[]abi.PluginArgs{args(t, "UsageThreshold", `{"cpu": 0.4}`)}, snap, obs)
	pl := tw.plugin("UsageThreshold")
	rs := tw.thresholdMet(pl, allNodes(cands, 5))
	// hot: 7.5Gi of 8Gi > 0.9; its 2000m is also over 0.4 × 4000m but
	// memory is checked first. The others: no usage data (pressure) or
	// under both.
	if r := rs[2]; r.Met != abi.HardMet || r.Scope != "memory" || r.ObservedValue != float64(7*evGi+evGi/2) {
		t.Errorf("hot: %+v", r)
	}
	for _, i := range []int{0, 1, 3, 4, 5} {
		if rs[i].Met != abi.NotMet {
			t.Errorf("node %d: %+v, want NotMet", i, rs[i])
		}
	}
	top := tw.top(pl, &abi.TopEvictionRequest{Limit: 2, Nodes: []abi.TopEvictionNode{
		{Slot: 2, TopN: 1, Scope: "memory", Candidates: cands[2]},
		{Slot: 2, TopN: 1, Scope: "memory", Candidates: []uint32{2}},
		{Slot: 42, TopN: 1, Scope: "memory"},
	}})
	// q exceeds its request most; r has no data and goes only alone.
	if a, b := podNames(snap, 2, top[0].Pods), podNames(snap, 2, top[1].Pods); a != "q" || b != "r" || len(top[2].Pods) != 0 {
		t.Errorf("victims %q, %q, %v; want q, r and none", a, b, top[2].Pods)
	}
}

func TestTaintViolationExampleWasmMatchesItsNativeTwin(t *testing.T) {
	snap, obs, cands := scenario(t, []evNode{
		{node: abi.Node{Name: "gpu-1", Taints: []abi.Taint{
			{Key: "eviction.wasmsched.io/MemoryPressure", Effect: abi.EffectNoSchedule},
			{Key: "dedicated", Value: "gpu", Effect: abi.EffectNoSchedule},
		}}, pods: []evPod{{name: "web", prio: 100}, {name: "batch", prio: 0},
			{name: "trainer", prio: 0, tols: []abi.Toleration{{Key: "dedicated", Value: "gpu", Effect: abi.EffectNoSchedule}}}}},
		{node: abi.Node{Name: "plain"}, pods: []evPod{{name: "api"}}},
		{node: abi.Node{Name: "pressured", Taints: []abi.Taint{{Key: "eviction.wasmsched.io/MemoryPressure", Effect: abi.EffectNoSchedule}}},
			pods: []evPod{{name: "cache"}}},
	})
	tw := newTwin(t, "taintviolation", testwasm.TinyGoBytes(t, testwasm.TaintViolation), []plugin.Registration{taintviolation.Registration}, nil, snap, obs)
	pl := tw.plugin(taintviolation.Name)
	rs := tw.evictPods(pl, allNodes(cands, 3))
	if len(rs) != 4 {
		t.Fatalf("%d answers for 4 nodes", len(rs))
	}
	got := rs[0].Pods
	if len(got) != 2 || podNames(snap, 0, []uint32{got[0].Pod, got[1].Pod}) != "batch,web" || !got[0].Force ||
		got[0].Reason != "pod does not tolerate taint dedicated=gpu:NoSchedule on node gpu-1" {
		t.Errorf("gpu-1: %+v, want batch then web, forced, for dedicated=gpu", got)
	}
	// The coordinator's own pressure taint never makes the policy evict.
	if len(rs[1].Pods) != 0 || len(rs[2].Pods) != 0 || len(rs[3].Pods) != 0 {
		t.Errorf("plain, pressured, missing: %+v %+v %+v", rs[1], rs[2], rs[3])
	}
	// The limit keeps the lowest priority.
	one := tw.evictPods(pl, &abi.EvictionRequest{Limit: 1, Nodes: []abi.EvictionNode{{Slot: 0, Candidates: cands[0]}}})
	if len(one[0].Pods) != 1 || podNames(snap, 0, []uint32{one[0].Pods[0].Pod}) != "batch" {
		t.Errorf("limit 1: %+v", one[0].Pods)
	}
}
