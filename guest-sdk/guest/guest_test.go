package guest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

var errTooFull = plugin.NewStatus(abi.Unschedulable, "Too full")

// labelFilter fails nodes labelled full=true with one shared status, and
// nodes labelled taint=X with a status naming X.
type labelFilter struct{ minScore int64 }

func (labelFilter) Name() string { return "LabelFilter" }

func (labelFilter) Filter(_ *plugin.CycleState, _ *abi.Pod, n *plugin.NodeInfo) *plugin.Status {
	if v, _ := n.Label("full"); v == "true" {
		return errTooFull
	}
	if v, ok := n.Label("taint"); ok {
		return plugin.NewStatus(abi.UnschedulableAndUnresolvable, "taint {"+v+"}")
	}
	return nil
}

func (labelFilter) Score(_ *plugin.CycleState, _ *abi.Pod, n *plugin.NodeInfo) (int64, *plugin.Status) {
	return int64(n.Node.AllowedPods), nil
}

func (labelFilter) NormalizeScore(_ *plugin.CycleState, _ *abi.Pod, scores []int64) *plugin.Status {
	plugin.DefaultNormalizeScore(abi.MaxScore, false, scores)
	return nil
}

var reg = plugin.Registration{Name: "LabelFilter", New: func(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	if args != nil && args.Get("bad") != nil {
		return nil, errors.New("bad: not allowed")
	}
	return labelFilter{}, nil
}}

// call writes input and calls fn, failing the test on an error reply.
func call(t *testing.T, g *Guest, fn abi.Func, arg uint32, input []byte) []byte {
	t.Helper()
	copy(g.Input(len(input)), input)
	reply := g.Call(fn, arg, len(input))
	if reply[0] != abi.ReplyOK {
		d := abi.NewDecoder(reply[1:])
		t.Fatalf("%s: error reply %q", fn, d.String())
	}
	return append([]byte(nil), reply[1:]...)
}

func callErr(g *Guest, fn abi.Func, arg uint32, input []byte) string {
	copy(g.Input(len(input)), input)
	reply := g.Call(fn, arg, len(input))
	if reply[0] != abi.ReplyError {
		return ""
	}
	return abi.NewDecoder(reply[1:]).String()
}

func syncNodes(t *testing.T, g *Guest, nodes ...abi.Node) {
	t.Helper()
	var e abi.Encoder
	e.SyncHeader(abi.SyncReset, len(nodes))
	e.Uvarint(uint64(len(nodes)))
	for i := range nodes {
		e.NodeRecord(uint32(i), &abi.NodeInfo{Node: nodes[i]})
	}
	e.Uvarint(0)
	call(t, g, abi.FuncSync, 0, e.B)
}

func startedGuest(t *testing.T) *Guest {
	t.Helper()
	g := New(reg)
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g, abi.FuncInit, 0, e.B)
	syncNodes(t, g,
		abi.Node{Name: "ok1", AllowedPods: 10},
		abi.Node{Name: "full1", Labels: abi.Labels{{Key: "full", Value: "true"}}},
		abi.Node{Name: "t1", Labels: abi.Labels{{Key: "taint", Value: "a"}}},
		abi.Node{Name: "full2", Labels: abi.Labels{{Key: "full", Value: "true"}}},
		abi.Node{Name: "t2", Labels: abi.Labels{{Key: "taint", Value: "a"}}},
		abi.Node{Name: "ok2", AllowedPods: 40},
	)
	e.Reset()
	e.Pod(&abi.Pod{Name: "p"})
	call(t, g, abi.FuncCycle, 0, e.B)
	return g
}

func slots(ss ...uint32) []byte {
	var e abi.Encoder
	e.AppendSlots(ss)
	return e.B
}

func TestManifestListsPluginsAndPoints(t *testing.T) {
	g := New(reg)
	var m abi.Manifest
	d := abi.NewDecoder(call(t, g, abi.FuncManifest, 0, nil))
	d.Manifest(&m)
	if d.Err() != nil || len(m.Plugins) != 1 || m.Plugins[0].Name != "LabelFilter" ||
		m.Plugins[0].Points != abi.PointFilter|abi.PointScore|abi.PointNormalizeScore || m.VersionMajor != abi.VersionMajor {
		t.Fatalf("manifest = %+v (err %v)", m, d.Err())
	}
}

func TestFilterBatchSharesEntriesPerDistinctReason(t *testing.T) {
	g := startedGuest(t)
	var r abi.FilterReply
	d := abi.NewDecoder(call(t, g, abi.FuncFilter, 0, slots(0, 1, 2, 3, 4, 5)))
	d.FilterReply(&r, 6)
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	wantIx := []uint16{0, 1, 2, 1, 2, 0}
	for i, ix := range r.Indexes {
		if ix != wantIx[i] {
			t.Fatalf("indexes = %v, want %v", r.Indexes, wantIx)
		}
	}
	if len(r.Entries) != 2 || r.Entries[0].Code != abi.Unschedulable || r.Entries[0].Reasons[0] != "Too full" ||
		r.Entries[1].Code != abi.UnschedulableAndUnresolvable || r.Entries[1].Reasons[0] != "taint {a}" {
		t.Fatalf("entries = %+v", r.Entries)
	}
}

func TestScoreNormalisesOverTheBatch(t *testing.T) {
	g := startedGuest(t)
	d := abi.NewDecoder(call(t, g, abi.FuncScore, 0, slots(0, 5)))
	got := d.ScoreReply(nil, 2)
	if d.Err() != nil || len(got) != 2 || got[0] != 25 || got[1] != 100 {
		t.Fatalf("scores = %v (err %v), want [25 100]", got, d.Err())
	}
}

// With abi.ScoreRaw after the slots, the reply carries the scores
// Score returned before NormalizeScore after the normalised ones; without
// it, the reply is the normalised scores alone, as to a v1.7 host.
func TestScoreSendsRawScoresWhenAsked(t *testing.T) {
	g := startedGuest(t)
	plain := call(t, g, abi.FuncScore, 0, slots(0, 5))
	if len(plain) != 4+2*8 {
		t.Fatalf("reply without the flag has %d bytes, want %d", len(plain), 4+2*8)
	}
	d := abi.NewDecoder(call(t, g, abi.FuncScore, 0, append(slots(0, 5), abi.ScoreRaw)))
	norm := d.ScoreReply(nil, 2)
	raw := d.RawScores(nil, 2)
	if d.Err() != nil || d.Remaining() != 0 || !slices.Equal(norm, []int64{25, 100}) || !slices.Equal(raw, []int64{10, 40}) {
		t.Fatalf("scores %v raw %v (err %v, %d bytes left), want [25 100] and [10 40] (AllowedPods)", norm, raw, d.Err(), d.Remaining())
	}
}

func TestErrorsAreRepliesNotPanics(t *testing.T) {
	g := New(reg)
	if msg := callErr(g, abi.FuncFilter, 0, slots(0)); !strings.Contains(msg, "before init") {
		t.Errorf("filter before init: %q", msg)
	}
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{Plugins: []abi.PluginArgs{{Name: "Nope"}}})
	if msg := callErr(g, abi.FuncInit, 0, e.B); !strings.Contains(msg, "args for unknown plugin Nope") {
		t.Errorf("init with unknown plugin: %q", msg)
	}
	e.Reset()
	e.InitRequest(&abi.InitRequest{Plugins: []abi.PluginArgs{{Name: "LabelFilter", Args: abi.Value{Kind: abi.KindMap, Map: []abi.Field{{Key: "bad"}}}}}})
	if msg := callErr(g, abi.FuncInit, 0, e.B); msg != "plugin LabelFilter: bad: not allowed" {
		t.Errorf("init with bad args: %q", msg)
	}
	g = startedGuest(t)
	for _, tc := range []struct {
		fn   abi.Func
		arg  uint32
		in   []byte
		want string
	}{
		{abi.FuncFilter, 0, slots(99), "unknown node slot"},
		{abi.FuncFilter, 7, slots(0), "plugin index out of range"},
		{abi.FuncPreFilter, 0, nil, "not a PreFilter plugin"},
		{abi.FuncCycle, 0, []byte{0xff}, "decode"},
		{abi.Func(99), 0, nil, "unknown ABI function"},
		{abi.FuncSync, 0, []byte{0, 1, 5}, "decode"},
	} {
		if msg := callErr(g, tc.fn, tc.arg, tc.in); !strings.Contains(msg, tc.want) {
			t.Errorf("%s(%d, % x): reply %q, want it to say %q", tc.fn, tc.arg, tc.in, msg, tc.want)
		}
	}
}

func TestHandleCountsNodesAndImages(t *testing.T) {
	g := New(reg)
	img := []abi.ImageState{{Names: []string{"nginx:1", "nginx@sha256:x"}, Size: 10}}
	syncNodes(t, g, abi.Node{Name: "a", Images: img}, abi.Node{Name: "b", Images: img}, abi.Node{Name: "c"})
	if g.NumNodes() != 3 || g.ImageNumNodes("nginx:1") != 2 || g.ImageNumNodes("nginx@sha256:x") != 2 {
		t.Fatalf("nodes %d, image counts %d/%d", g.NumNodes(), g.ImageNumNodes("nginx:1"), g.ImageNumNodes("nginx@sha256:x"))
	}
	var e abi.Encoder
	e.SyncHeader(0, 2)
	e.Uvarint(0)
	e.Uvarint(1)
	e.U32(0)
	call(t, g, abi.FuncSync, 0, e.B)
	if g.NumNodes() != 2 || g.ImageNumNodes("nginx:1") != 1 {
		t.Fatalf("after delete: nodes %d, image count %d", g.NumNodes(), g.ImageNumNodes("nginx:1"))
	}
}

func TestBadRegistrationIsReportedByEveryCall(t *testing.T) {
	g := New(reg, reg)
	if msg := callErr(g, abi.FuncManifest, 0, nil); !strings.Contains(msg, `bad plugin registration "LabelFilter"`) {
		t.Fatalf("manifest reply %q, want the duplicate named", msg)
	}
}

func TestHandleNodesFollowsSyncsAndPodsAreIndexed(t *testing.T) {
	g := New(reg)
	anti := abi.Pod{UID: "a", PodAntiAffinity: &abi.PodAffinity{Required: []abi.PodAffinityTerm{{TopologyKey: "zone"}}}}
	aff := abi.Pod{UID: "b", PodAffinity: &abi.PodAffinity{Preferred: []abi.WeightedPodAffinityTerm{{Weight: 1}}}}
	plain := abi.Pod{UID: "c"}
	var e abi.Encoder
	e.SyncHeader(abi.SyncReset, 2)
	e.Uvarint(2)
	e.NodeRecord(0, &abi.NodeInfo{Node: abi.Node{Name: "x"}, Pods: []abi.Pod{anti, aff, plain}})
	e.NodeRecord(3, &abi.NodeInfo{Node: abi.Node{Name: "y"}})
	e.Uvarint(0)
	call(t, g, abi.FuncSync, 0, e.B)
	if ns := g.Nodes(); len(ns) != 2 || ns[0].Name() != "x" || ns[1].Name() != "y" {
		t.Fatalf("Nodes() = %v", ns)
	}
	x := g.mirror.nodes[0]
	if len(x.PodsWithAffinity) != 2 || len(x.PodsWithRequiredAntiAffinity) != 1 || x.PodsWithRequiredAntiAffinity[0].UID != "a" {
		t.Fatalf("affinity %d, required anti-affinity %d", len(x.PodsWithAffinity), len(x.PodsWithRequiredAntiAffinity))
	}
	e.Reset()
	e.SyncHeader(0, 1)
	e.Uvarint(0)
	e.Uvarint(1)
	e.U32(0)
	call(t, g, abi.FuncSync, 0, e.B)
	if ns := g.Nodes(); len(ns) != 1 || ns[0].Name() != "y" {
		t.Fatalf("after deleting x, Nodes() = %v", ns)
	}
}

func TestNodesWithAffinityPodsFollowsSyncs(t *testing.T) {
	g := New(reg)
	anti := abi.Pod{UID: "a", PodAntiAffinity: &abi.PodAffinity{Required: []abi.PodAffinityTerm{{TopologyKey: "zone"}}}}
	var e abi.Encoder
	e.SyncHeader(abi.SyncReset, 2)
	e.Uvarint(2)
	e.NodeRecord(0, &abi.NodeInfo{Node: abi.Node{Name: "x"}, Pods: []abi.Pod{anti}})
	e.NodeRecord(1, &abi.NodeInfo{Node: abi.Node{Name: "y"}})
	e.Uvarint(0)
	call(t, g, abi.FuncSync, 0, e.B)
	if l := g.NodesWithAffinityPods(); len(l) != 1 || l[0].Name() != "x" {
		t.Fatalf("list = %v", l)
	}
	e.Reset()
	e.SyncHeader(0, 2)
	e.Uvarint(2)
	e.NodeRecord(0, &abi.NodeInfo{Node: abi.Node{Name: "x"}})
	e.NodeRecord(1, &abi.NodeInfo{Node: abi.Node{Name: "y"}, Pods: []abi.Pod{anti}})
	e.Uvarint(0)
	call(t, g, abi.FuncSync, 0, e.B)
	if l := g.NodesWithAffinityPods(); len(l) != 1 || l[0].Name() != "y" {
		t.Fatalf("after moving the pod, list = %v", l)
	}
}

// TestHandleNodesMatchesMirrorOverRandomSyncs checks the incrementally
// kept node list against the mirror after every sync of a random
// sequence of replacements, additions, deletions and resets, each sync
// preceded by a Nodes call so the list is kept, not rebuilt.
func TestHandleNodesMatchesMirrorOverRandomSyncs(t *testing.T) {
	g := New(reg)
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[uint32]string{}
	var e abi.Encoder
	for step := 0; step < 400; step++ {
		e.Reset()
		flags := uint8(0)
		if rng.IntN(40) == 0 {
			flags = abi.SyncReset
			clear(live)
		}
		type upsert struct {
			slot uint32
			name string
		}
		var ups []upsert
		var dels []uint32
		for i := rng.IntN(4); i > 0; i-- {
			slot := uint32(rng.IntN(12))
			if rng.IntN(4) == 0 {
				dels = append(dels, slot)
				continue
			}
			ups = append(ups, upsert{slot, fmt.Sprintf("n%d-%d", slot, step)})
		}
		e.SyncHeader(flags, 0)
		e.Uvarint(uint64(len(ups)))
		for _, u := range ups {
			e.NodeRecord(u.slot, &abi.NodeInfo{Node: abi.Node{Name: u.name}})
			live[u.slot] = u.name
		}
		e.Uvarint(uint64(len(dels)))
		for _, d := range dels {
			e.U32(d)
		}
		call(t, g, abi.FuncSync, 0, e.B)
		for _, d := range dels {
			// Deletions apply after upserts in one sync.
			delete(live, d)
		}
		var want []string
		for slot := uint32(0); slot < 12; slot++ {
			if name, ok := live[slot]; ok {
				want = append(want, name)
			}
		}
		var got []string
		for _, n := range g.Nodes() {
			got = append(got, n.Name())
		}
		if !slices.Equal(got, want) || g.NumNodes() != len(want) {
			t.Fatalf("step %d: Nodes() = %v (NumNodes %d), mirror holds %v", step, got, g.NumNodes(), want)
		}
	}
}
