package eviction

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"

	clocktesting "k8s.io/utils/clock/testing"
)

// A fake eviction module speaks the ABI in Go, so tests decide each
// answer per node (by name) and can make a call trap or reply garbage.

// view is what a fake policy sees of a node: the mirrored node and its
// observation, with the offered candidates.
type view struct {
	node       *abi.NodeInfo
	obs        *abi.NodeObservation
	candidates []uint32
}

// podIndex finds a pod of the node by name (-1 if absent).
func (v *view) podIndex(name string) uint32 {
	for i := range v.node.Pods {
		if v.node.Pods[i].Name == name {
			return uint32(i)
		}
	}
	return 1 << 30
}

type fakePolicy struct {
	name      string
	points    abi.Point
	evictPods func(v *view) abi.NodeEvictPods
	threshold func(v *view) abi.ThresholdResult
	top       func(v *view, n *abi.TopEvictionNode) abi.TopEvictionPods
	// raw replaces the reply body of a function; trap makes it fail.
	raw  map[abi.Func][]byte
	trap map[abi.Func]bool
}

type fakeModule struct {
	mu       sync.Mutex
	policies []*fakePolicy
	keys     []string
	calls    []string // "plugin:fn"
}

func (m *fakeModule) NewInstance(context.Context) (guest.Instance, error) {
	return &fakeInstance{m: m, nodes: map[uint32]*abi.NodeInfo{}, obs: map[uint32]*abi.NodeObservation{}}, nil
}
func (m *fakeModule) Close(context.Context) error { return nil }

func (m *fakeModule) called() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.calls...)
}

type fakeInstance struct {
	m     *fakeModule
	in    []byte
	nodes map[uint32]*abi.NodeInfo
	strs  abi.StringTable
	obs   map[uint32]*abi.NodeObservation
}

func (i *fakeInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, abi.VersionMinor), nil
}
func (i *fakeInstance) Input(_ context.Context, n int) ([]byte, error) {
	i.in = make([]byte, n)
	return i.in, nil
}
func (i *fakeInstance) Close(context.Context) error { return nil }

func (i *fakeInstance) view(slot uint32, cands []uint32) *view {
	v := &view{node: i.nodes[slot], obs: i.obs[slot], candidates: cands}
	if v.node == nil {
		v.node = &abi.NodeInfo{}
	}
	if v.obs == nil {
		v.obs = &abi.NodeObservation{}
	}
	return v
}

func (i *fakeInstance) Call(_ context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	in := i.in[:n]
	var e abi.Encoder
	e.U8(abi.ReplyOK)
	var p *fakePolicy
	if fn >= abi.FuncEvictPods {
		p = i.m.policies[arg]
		i.m.mu.Lock()
		i.m.calls = append(i.m.calls, p.name+":"+fn.String())
		i.m.mu.Unlock()
		if p.trap[fn] {
			return nil, guest.Fault(guest.ErrGuestTrap, errors.New("fake trap"))
		}
		if b, ok := p.raw[fn]; ok {
			return append(e.B, b...), nil
		}
	}
	d := abi.NewDecoder(in)
	switch fn {
	case abi.FuncManifest:
		m := abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor, Flags: abi.ManifestWantsPods, AnnotationKeys: i.m.keys}
		for _, p := range i.m.policies {
			m.Plugins = append(m.Plugins, abi.PluginInfo{Name: p.name, Points: p.points})
		}
		e.Manifest(&m)
	case abi.FuncInit:
	case abi.FuncSync:
		interned := len(in) > 0 && in[0]&abi.SyncStrings != 0
		_, _, err := abi.ParseSyncWith(in, abi.SyncHandlers{
			Strings: func(first int, ss []string) error {
				if first == 0 {
					i.strs.Reset()
				}
				return i.strs.Append(first, ss)
			},
			Upsert: func(slot uint32, rec []byte) error {
				var ni abi.NodeInfo
				dd := abi.NewDecoder(rec)
				if interned {
					dd.SetTable(&i.strs)
				}
				dd.NodeInfo(&ni)
				i.nodes[slot] = &ni
				return dd.Err()
			},
			Delete: func(slot uint32) error { delete(i.nodes, slot); delete(i.obs, slot); return nil },
		})
		if err != nil {
			return nil, err
		}
	case abi.FuncObserve:
		flags, err := abi.ParseObserve(in, func(slot uint32, rec []byte) error {
			var o abi.NodeObservation
			dd := abi.NewDecoder(rec)
			dd.NodeObservation(&o)
			i.obs[slot] = &o
			return dd.Err()
		})
		if err != nil {
			return nil, err
		}
		_ = flags
	case abi.FuncEvictPods:
		var req abi.EvictionRequest
		d.EvictionRequest(&req)
		out := make([]abi.NodeEvictPods, len(req.Nodes))
		for k, n := range req.Nodes {
			if p.evictPods != nil {
				out[k] = p.evictPods(i.view(n.Slot, n.Candidates))
			}
		}
		e.EvictPodsReply(out)
	case abi.FuncThresholdMet:
		var req abi.EvictionRequest
		d.EvictionRequest(&req)
		out := make([]abi.ThresholdResult, len(req.Nodes))
		for k, n := range req.Nodes {
			if p.threshold != nil {
				out[k] = p.threshold(i.view(n.Slot, n.Candidates))
			}
		}
		e.ThresholdMetReply(out)
	case abi.FuncTopEvictionPods:
		var req abi.TopEvictionRequest
		d.TopEvictionRequest(&req)
		out := make([]abi.TopEvictionPods, len(req.Nodes))
		for k := range req.Nodes {
			if p.top != nil {
				out[k] = p.top(i.view(req.Nodes[k].Slot, req.Nodes[k].Candidates), &req.Nodes[k])
			}
		}
		e.TopEvictionReply(out)
	}
	return e.B, nil
}

// fakeCluster is the cache plus recorded taint changes.
type fakeCluster struct {
	cache  *cache.Cache
	taints []string // "node=key:effect,..." per call
	fail   error
}

func (f *fakeCluster) UpdateSnapshot(dst *snapshot.Snapshot) { f.cache.UpdateSnapshot(dst) }

func (f *fakeCluster) SetEvictionTaints(_ context.Context, node string, taints []abi.Taint) error {
	f.taints = append(f.taints, node+"="+taintsString(taints))
	if f.fail != nil {
		return f.fail
	}
	n, _ := f.cache.Node(node)
	n.Taints = SwapTaints(n.Taints, taints)
	f.cache.AddNode(n)
	return nil
}

// fakeKiller records what it is given and holds what tests say.
type fakeKiller struct {
	submitted []KillRequest
	held      map[string]bool
}

func (k *fakeKiller) Submit(reqs []KillRequest) { k.submitted = append(k.submitted, reqs...) }
func (k *fakeKiller) Holds(uid string) bool     { return k.held[uid] }

func (k *fakeKiller) names() []string {
	var out []string
	for _, r := range k.submitted {
		out = append(out, r.Pod.Name)
	}
	return out
}

// env is a coordinator over a cache with fake policies.
type env struct {
	t       *testing.T
	cache   *cache.Cache
	cluster *fakeCluster
	killer  *fakeKiller
	clock   *clocktesting.FakeClock
	mod     *fakeModule
	coord   *Coordinator
}

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T, s Settings, specs []PolicySpec, policies ...*fakePolicy) *env {
	t.Helper()
	mod := &fakeModule{policies: policies}
	if specs == nil {
		for _, p := range policies {
			specs = append(specs, PolicySpec{Plugin: p.name})
		}
	}
	set, err := buildFake(t, mod, specs)
	if err != nil {
		t.Fatal(err)
	}
	c := cache.New(0, nil)
	e := &env{t: t, cache: c, cluster: &fakeCluster{cache: c}, killer: &fakeKiller{held: map[string]bool{}},
		clock: clocktesting.NewFakeClock(t0), mod: mod}
	e.coord = New(Options{Settings: s, Cluster: e.cluster, Killer: e.killer, Clock: e.clock}, set)
	return e
}

// fakeRegistry loads mod as the module "fake"; the registry is closed
// when the test ends.
func fakeRegistry(t *testing.T, mod *fakeModule) *modules.Registry {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.Modules = append(cfg.Modules, config.ModuleSpec{Name: "fake"})
	reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: t.TempDir(), NativeBuiltin: true,
		Backends: map[string]guest.Backend{"fake": mod}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	return reg
}

// buildFake loads mod as the module "fake" and builds specs on it; the
// registry and the set are closed when the test ends.
func buildFake(t *testing.T, mod *fakeModule, specs []PolicySpec) (*PolicySet, error) {
	t.Helper()
	ctx := context.Background()
	set, err := BuildPolicies(ctx, specs, fakeRegistry(t, mod), "eviction.policies")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { set.Close(ctx) })
	return set, nil
}

func (e *env) node(name string, cpu int64) {
	e.cache.AddNode(abi.Node{Name: name, AllowedPods: 110, Allocatable: abi.Resources{MilliCPU: cpu, Memory: 64 << 30}})
}

// pod adds a bound pod; mutate adjusts it first.
func (e *env) pod(node, name string, priority int32, cpu int64, mutate ...func(*abi.Pod)) *abi.Pod {
	p := &abi.Pod{UID: "uid-" + name, Namespace: "default", Name: name, NodeName: node, Priority: priority, QoS: abi.QoSBurstable,
		Containers: []abi.Container{{Name: "c", Requests: abi.Resources{MilliCPU: cpu}}}}
	for _, m := range mutate {
		m(p)
	}
	if err := e.cache.AddPod(p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) round() *Round {
	e.t.Helper()
	return e.coord.RunRound(context.Background())
}

// hard answers HARD_MET with the given grace on the named nodes.
func hard(grace int64, nodes ...string) func(v *view) abi.ThresholdResult {
	return func(v *view) abi.ThresholdResult {
		for _, n := range nodes {
			if v.node.Node.Name == n {
				return abi.ThresholdResult{Met: abi.HardMet, Scope: "cpu", GracePeriodSeconds: grace, ThresholdValue: 1, ObservedValue: 2, Operator: ">"}
			}
		}
		return abi.ThresholdResult{}
	}
}

// lowestPriority answers a top-N query with the candidates of lowest
// priority first (then name), topN of them (all for a soft query).
func lowestPriority(v *view, n *abi.TopEvictionNode) abi.TopEvictionPods {
	c := append([]uint32(nil), n.Candidates...)
	sort.Slice(c, func(i, j int) bool {
		a, b := &v.node.Pods[c[i]], &v.node.Pods[c[j]]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return a.Name < b.Name
	})
	if n.TopN > 0 && len(c) > int(n.TopN) {
		c = c[:n.TopN]
	}
	return abi.TopEvictionPods{Pods: c}
}

// evictNamed answers EvictPods with the named pods of each node (those
// on it), force or soft.
func evictNamed(force bool, names ...string) func(v *view) abi.NodeEvictPods {
	return func(v *view) abi.NodeEvictPods {
		var out abi.NodeEvictPods
		for _, n := range names {
			if i := v.podIndex(n); i < 1<<30 {
				out.Pods = append(out.Pods, abi.EvictPod{Pod: i, Reason: "named " + n, Force: force})
			}
		}
		return out
	}
}

func newSnap() *snapshot.Snapshot { return snapshot.New() }
