package modules

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
	"github.com/wasmsched/wasmsched/plugins-wasm/examples/brokerzone"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

// The knative bundle's Wasm build against its native twin: the same
// policies registered with both, the same random topologies and steps,
// and the replies must be identical.

// vpodEntry builds a policy entry for a plugin of m by name; args "" is
// absent.
func vpodEntry(t testing.TB, m *abi.Manifest, name string, kind abi.VPodEntryKind, args string) abi.VPodEntry {
	t.Helper()
	i := m.Plugin(name)
	if i < 0 {
		t.Fatalf("module has no plugin %s", name)
	}
	e := abi.VPodEntry{Plugin: uint32(i), Kind: kind}
	if args != "" {
		e.Args = []byte(args)
	}
	return e
}

// knativeArgs is a Knative args string holding the object js.
func knativeArgs(js string) string { return fmt.Sprintf("%q", js) }

// knativePolicies are a placement policy, a descheduling policy, one
// with refused args and an empty one.
func knativePolicies(t testing.TB, m *abi.Manifest) []*abi.VPodPolicy {
	pred, prio := abi.VPodPredicate, abi.VPodPriority
	skew := knativeArgs(`{"MaxSkew": 1}`)
	return []*abi.VPodPolicy{
		{ID: 1, Entries: []abi.VPodEntry{
			vpodEntry(t, m, "PodFitsResources", pred, ""),
			vpodEntry(t, m, "NoMaxResourceCount", pred, knativeArgs(`{"NumPartitions": 4}`)),
			vpodEntry(t, m, "EvenPodSpread", pred, knativeArgs(`{"MaxSkew": 2}`)),
			vpodEntry(t, m, "EvenPodSpread", prio, skew),
			vpodEntry(t, m, "AvailabilityNodePriority", prio, skew),
			vpodEntry(t, m, "AvailabilityZonePriority", prio, skew),
			vpodEntry(t, m, "LowestOrdinalPriority", prio, ""),
		}},
		{ID: 2, Entries: []abi.VPodEntry{
			vpodEntry(t, m, "RemoveWithEvenPodSpreadPriority", prio, skew),
			vpodEntry(t, m, "RemoveWithAvailabilityNodePriority", prio, skew),
			vpodEntry(t, m, "RemoveWithAvailabilityZonePriority", prio, skew),
			vpodEntry(t, m, "RemoveWithHighestOrdinalPriority", prio, ""),
		}},
		{ID: 3, Entries: []abi.VPodEntry{
			vpodEntry(t, m, "PodFitsResources", pred, `{"anything": true}`),
			vpodEntry(t, m, "EvenPodSpread", pred, `{"MaxSkew": 1}`), // an object, not a string: invalid
			vpodEntry(t, m, "AvailabilityZonePriority", prio, knativeArgs(`{"MaxSkew": 1.5}`)),
			vpodEntry(t, m, "NoMaxResourceCount", pred, knativeArgs(`{"NumPartitions": "2"}`)),
			vpodEntry(t, m, "LowestOrdinalPriority", prio, "[]"),
		}},
		{ID: 4},
	}
}

// randomTopology makes up to 8 nodes over up to 3 zones and up to 12
// adapter pods.
func randomTopology(rng *rand.Rand, gen uint64) *abi.VPodTopology {
	t := &abi.VPodTopology{Generation: gen, StatefulSet: "adapter", Capacity: 5, Zones: []string{"unknown", "zone-a", "zone-b"}[:1+rng.Intn(3)]}
	for n := 0; n < 1+rng.Intn(8); n++ {
		t.Nodes = append(t.Nodes, abi.VPodNode{Name: fmt.Sprintf("node-%d", n), Zone: uint32(rng.Intn(len(t.Zones)))})
	}
	ordinal := int32(-1)
	for p := rng.Intn(13); p > 0; p-- {
		ordinal += 1 + int32(rng.Intn(2))
		t.Pods = append(t.Pods, abi.VPodPod{Ordinal: ordinal, Node: uint32(rng.Intn(len(t.Nodes)))})
	}
	t.Replicas = int32(rng.Intn(len(t.Pods) + 2))
	return t
}

// randomStep places the vpod on some pods (sometimes with 0), sums the
// node and zone spreads as the host does, and picks candidates.
func randomStep(rng *rand.Rand, t *abi.VPodTopology, policy uint32) *abi.VPodStep {
	s := &abi.VPodStep{Policy: policy, Topology: t.Generation, Namespace: "ns", Name: "src", VReplicas: int32(rng.Intn(10)), FreeCapEmpty: rng.Intn(10) == 0}
	nodes, zones := map[uint32]int32{}, map[uint32]int32{}
	for i, p := range t.Pods {
		s.Free = append(s.Free, int32(rng.Intn(8))-2)
		if rng.Intn(2) == 0 {
			v := int32(rng.Intn(5))
			s.PodSpread = append(s.PodSpread, abi.VPodCount{Index: uint32(i), VReplicas: v})
			nodes[p.Node] += v
			zones[t.Nodes[p.Node].Zone] += v
		}
		if rng.Intn(4) > 0 {
			s.Candidates = append(s.Candidates, uint32(i))
		}
	}
	s.NodeSpread, s.ZoneSpread = countsOf(nodes), countsOf(zones)
	return s
}

func countsOf(m map[uint32]int32) []abi.VPodCount {
	var cs []abi.VPodCount
	for i, v := range m {
		cs = append(cs, abi.VPodCount{Index: i, VReplicas: v})
	}
	sort.Slice(cs, func(a, b int) bool { return cs[a].Index < cs[b].Index })
	return cs
}

// vpodTwin sends the same calls to a Wasm and a native client and fails
// unless they answer alike.
type vpodTwin struct {
	t            *testing.T
	wasm, native *guest.Client
}

func (tw *vpodTwin) policy(p *abi.VPodPolicy) *abi.VPodPolicyReply {
	tw.t.Helper()
	ctx := context.Background()
	w, err := tw.wasm.EnsureVPodPolicy(ctx, p)
	if err != nil {
		tw.t.Fatalf("wasm: %v", err)
	}
	n, err := tw.native.EnsureVPodPolicy(ctx, p)
	if err != nil {
		tw.t.Fatalf("native: %v", err)
	}
	if !reflect.DeepEqual(w, n) {
		tw.t.Fatalf("vpod_policy %d differs:\nwasm   %q\nnative %q", p.ID, w.Invalid, n.Invalid)
	}
	return w
}

func (tw *vpodTwin) topology(t *abi.VPodTopology) {
	tw.t.Helper()
	for _, c := range []*guest.Client{tw.wasm, tw.native} {
		if err := c.VPodTopology(context.Background(), t); err != nil {
			tw.t.Fatal(err)
		}
	}
}

func (tw *vpodTwin) step(p *abi.VPodPolicy, s *abi.VPodStep) *abi.VPodStepReply {
	tw.t.Helper()
	ctx := context.Background()
	w, err := tw.wasm.VPodStep(ctx, p, s)
	if err != nil {
		tw.t.Fatalf("wasm: %v", err)
	}
	n, err := tw.native.VPodStep(ctx, p, s)
	if err != nil {
		tw.t.Fatalf("native: %v", err)
	}
	if !reflect.DeepEqual(w, n) {
		tw.t.Fatalf("vpod_step of policy %d differs on %+v:\nwasm   %+v\nnative %+v", p.ID, s, w, n)
	}
	return w
}

func TestKnativeTwinsAgree(t *testing.T) {
	tw := &vpodTwin{t: t,
		wasm:   evictionClient(t, config.BuiltinKnativeModule, dist.KnativeWasm, nil, nil),
		native: evictionClient(t, config.BuiltinKnativeModule, nil, knativedefaults.Plugins(), nil)}
	m := tw.wasm.Module().Manifest()
	if !reflect.DeepEqual(m, tw.native.Module().Manifest()) {
		t.Fatalf("manifests differ:\nwasm   %+v\nnative %+v", m, tw.native.Module().Manifest())
	}
	if p := m.Plugins[m.Plugin("EvenPodSpread")].Points; p != abi.PointsVPod {
		t.Fatalf("EvenPodSpread points %s, want both vpod points", p)
	}
	policies := knativePolicies(t, m)
	for _, p := range policies {
		r := tw.policy(p)
		if p.ID == 3 {
			want := []bool{false, true, true, true, false}     // which entries are invalid
			ignored := []bool{true, false, false, false, true} // args given to a plugin that takes none
			for i, msg := range r.Invalid {
				isIgnored := strings.HasPrefix(msg, abi.ArgsIgnored)
				if (msg != "" && !isIgnored) != want[i] || isIgnored != ignored[i] {
					t.Errorf("policy 3 entry %d: %q, want invalid %v, args ignored %v", i, msg, want[i], ignored[i])
				}
			}
		} else if strings.Join(r.Invalid, "") != "" {
			t.Fatalf("policy %d refused: %q", p.ID, r.Invalid)
		}
	}
	rng := rand.New(rand.NewSource(42))
	var topo *abi.VPodTopology
	var refused, scored, failed int
	for n := 0; n < 400; n++ {
		if n%5 == 0 {
			topo = randomTopology(rng, uint64(n+1))
			tw.topology(topo)
		}
		for _, p := range policies {
			r := tw.step(p, randomStep(rng, topo, p.ID))
			for _, v := range r.Verdicts {
				if v.Entry != 0 {
					refused++
				}
			}
			for _, sc := range r.Scores {
				for _, v := range sc.Scores {
					if v != 0 {
						scored++
					}
				}
			}
			failed += len(r.Errors)
		}
	}
	if refused == 0 || scored == 0 || failed == 0 {
		t.Fatalf("the steps exercised too little: %d refusals, %d non-zero scores, %d score errors", refused, scored, failed)
	}
}

// TestKnativeStepByHand: one step through the Wasm build whose answer is
// worked out from Knative's rules.
func TestKnativeStepByHand(t *testing.T) {
	c := evictionClient(t, config.BuiltinKnativeModule, dist.KnativeWasm, nil, nil)
	ctx := context.Background()
	m := c.Module().Manifest()
	p := &abi.VPodPolicy{ID: 9, Entries: []abi.VPodEntry{
		vpodEntry(t, m, "PodFitsResources", abi.VPodPredicate, ""),
		vpodEntry(t, m, "AvailabilityZonePriority", abi.VPodPriority, knativeArgs(`{"MaxSkew": 1}`)),
		vpodEntry(t, m, "LowestOrdinalPriority", abi.VPodPriority, ""),
	}}
	if _, err := c.EnsureVPodPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Pods 0 (node a, zone-a, free 0), 1 (node b, zone-b, free 3), 2
	// (node c, zone-b, free 2); the vpod has 2 in zone-a (pod 0).
	topo := &abi.VPodTopology{Generation: 1, StatefulSet: "s", Capacity: 5, Replicas: 3,
		Pods:  []abi.VPodPod{{Ordinal: 0, Node: 0}, {Ordinal: 1, Node: 1}, {Ordinal: 2, Node: 2}},
		Nodes: []abi.VPodNode{{Name: "a", Zone: 0}, {Name: "b", Zone: 1}, {Name: "c", Zone: 1}}, Zones: []string{"zone-a", "zone-b"}}
	if err := c.VPodTopology(ctx, topo); err != nil {
		t.Fatal(err)
	}
	s := &abi.VPodStep{Policy: 9, Topology: 1, Namespace: "ns", Name: "v", VReplicas: 3, Free: []int32{0, 3, 2},
		PodSpread: []abi.VPodCount{{Index: 0, VReplicas: 2}}, NodeSpread: []abi.VPodCount{{Index: 0, VReplicas: 2}},
		ZoneSpread: []abi.VPodCount{{Index: 0, VReplicas: 2}}, Candidates: []uint32{0, 1, 2}}
	r, err := c.VPodStep(ctx, p, s)
	if err != nil {
		t.Fatal(err)
	}
	// Pod 0 is full; pods 1 and 2 (zone-b, 0 there): |0+1−2| = 1 → −1;
	// ordinals −1, −2; pod 0 scores 0 (refused).
	want := &abi.VPodStepReply{
		Verdicts: []abi.VPodVerdict{{Entry: 1, Code: abi.Unschedulable, Reason: "pod at full capacity"}, {}, {}},
		Scores:   []abi.VPodScores{{Entry: 1, Scores: []int64{0, -1, -1}}, {Entry: 2, Scores: []int64{0, -1, -2}}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("reply\n got %+v\nwant %+v", r, want)
	}
}

// TestBrokerZoneTwinsAgree: the example module's TinyGo build against
// its source run natively.
func TestBrokerZoneTwinsAgree(t *testing.T) {
	bin := testwasm.TinyGoBytes(t, testwasm.Guest{Name: "brokerzone", Package: "./examples/brokerzone/cmd",
		TinyGo: "plugins-wasm/examples/brokerzone/brokerzone.tinygo.wasm"})
	tw := &vpodTwin{t: t,
		wasm:   evictionClient(t, "brokerzone", bin, nil, nil),
		native: evictionClient(t, "brokerzone", nil, []plugin.Registration{brokerzone.Registration}, nil)}
	m := tw.wasm.Module().Manifest()
	p := &abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{
		vpodEntry(t, m, brokerzone.Name, abi.VPodPriority, knativeArgs(`{"Zone": "zone-a"}`)),
		vpodEntry(t, m, brokerzone.Name, abi.VPodPriority, knativeArgs(`{"Zone": ""}`)),
	}}
	if r := tw.policy(p); r.Invalid[0] != "" || r.Invalid[1] == "" {
		t.Fatalf("policy reply %q", r.Invalid)
	}
	rng := rand.New(rand.NewSource(7))
	topo := randomTopology(rng, 1)
	topo.Zones = []string{"unknown", "zone-a"}
	for i := range topo.Nodes {
		topo.Nodes[i].Zone = uint32(i % 2)
	}
	tw.topology(topo)
	for n := 0; n < 50; n++ {
		r := tw.step(p, randomStep(rng, topo, 1))
		if len(r.Errors) != len(r.Verdicts) {
			t.Fatalf("the invalid entry failed %d of %d candidates", len(r.Errors), len(r.Verdicts))
		}
	}
}

// TestKnativeBundleLoadsWithVPod: the builtin knative bundle is loaded
// only when the vpod section configures a scheduler, and then serves the
// ten plugins.
func TestKnativeBundleLoadsWithVPod(t *testing.T) {
	for _, native := range []bool{false, true} {
		cfg := config.Default()
		r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), NativeBuiltin: native})
		if err != nil {
			t.Fatal(err)
		}
		if r.PluginModule("EvenPodSpread") != nil {
			t.Errorf("native=%v: knative bundle loaded without a vpod scheduler", native)
		}
		r.Close(context.Background())

		cfg.VPod = &config.VPod{Schedulers: []config.VPodScheduler{{Name: "kafka"}}}
		r, err = Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), NativeBuiltin: native})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"PodFitsResources", "NoMaxResourceCount", "EvenPodSpread", "AvailabilityNodePriority",
			"AvailabilityZonePriority", "LowestOrdinalPriority", "RemoveWithEvenPodSpreadPriority",
			"RemoveWithAvailabilityNodePriority", "RemoveWithAvailabilityZonePriority", "RemoveWithHighestOrdinalPriority"} {
			if m := r.PluginModule(p); m == nil || m.Config.Name != config.BuiltinKnativeModule {
				t.Errorf("native=%v: %s not served by the knative bundle", native, p)
			}
		}
		r.Close(context.Background())
	}
}
