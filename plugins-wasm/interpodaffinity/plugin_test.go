package interpodaffinity

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

// ---- builders ----

func lbls(kv ...string) abi.Labels {
	var ls abi.Labels
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, abi.Label{Key: kv[i], Value: kv[i+1]})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Key < ls[j].Key })
	return ls
}

func sel(kv ...string) *abi.LabelSelector { return &abi.LabelSelector{MatchLabels: lbls(kv...)} }

type podW struct{ abi.Pod }

func mkPod(name string, kv ...string) *podW {
	return &podW{abi.Pod{Namespace: "default", Name: name, UID: name, Labels: lbls(kv...)}}
}

func (p *podW) ns(n string) *podW { p.Namespace = n; return p }

func (p *podW) aff() *abi.PodAffinity {
	if p.PodAffinity == nil {
		p.PodAffinity = &abi.PodAffinity{}
	}
	return p.PodAffinity
}

func (p *podW) anti() *abi.PodAffinity {
	if p.PodAntiAffinity == nil {
		p.PodAntiAffinity = &abi.PodAffinity{}
	}
	return p.PodAntiAffinity
}

func (p *podW) reqAff(t abi.PodAffinityTerm) *podW {
	p.aff().Required = append(p.aff().Required, t)
	return p
}

func (p *podW) reqAnti(t abi.PodAffinityTerm) *podW {
	p.anti().Required = append(p.anti().Required, t)
	return p
}

func (p *podW) prefAff(w int32, t abi.PodAffinityTerm) *podW {
	p.aff().Preferred = append(p.aff().Preferred, abi.WeightedPodAffinityTerm{Weight: w, Term: t})
	return p
}

func (p *podW) prefAnti(w int32, t abi.PodAffinityTerm) *podW {
	p.anti().Preferred = append(p.anti().Preferred, abi.WeightedPodAffinityTerm{Weight: w, Term: t})
	return p
}

func tm(key string, s *abi.LabelSelector) abi.PodAffinityTerm {
	return abi.PodAffinityTerm{LabelSelector: s, TopologyKey: key}
}

func termNS(key string, s *abi.LabelSelector, nss []string, nsSel *abi.LabelSelector) abi.PodAffinityTerm {
	return abi.PodAffinityTerm{LabelSelector: s, TopologyKey: key, Namespaces: nss, NamespaceSelector: nsSel}
}

// mkNode builds a node with labels kv holding pods, as the SDK does.
func mkNode(name string, kv []string, pods ...*podW) *plugin.NodeInfo {
	w := plugintest.MakeNode().Name(name)
	for i := 0; i+1 < len(kv); i += 2 {
		w.Label(kv[i], kv[i+1])
	}
	ni := w.Obj()
	for _, p := range pods {
		p := p.Pod
		p.NodeName = name
		ni.AddPod(&p)
	}
	ni.IndexPods()
	if uniqueSlots {
		nextSlot++
		ni.Slot = nextSlot
	}
	return ni
}

// uniqueSlots has mkNode give nodes distinct slots, as the SDK does, so
// the plugin indexes its state by slot; otherwise all nodes have slot 0
// and it falls back to label lookups.
var (
	uniqueSlots bool
	nextSlot    uint32
)

func TestBySlot(t *testing.T) {
	uniqueSlots = true
	defer func() { uniqueSlots = false }()
	t.Run("Filter", TestFilter)
	t.Run("AddRemovePod", TestAddRemovePod)
	t.Run("Score", TestScore)
}

func zone(z string) []string { return []string{"zone", z, "hostname", ""} }

const (
	ok       = abi.Success
	unsched  = abi.Unschedulable
	unresolv = abi.UnschedulableAndUnresolvable
)

type verdict struct {
	code abi.Code
	msg  string
}

var (
	pass      = verdict{ok, ""}
	failAff   = verdict{unresolv, ErrReasonAffinityRulesNotMatch}
	failAnti  = verdict{unsched, ErrReasonAntiAffinityRulesNotMatch}
	failExist = verdict{unsched, ErrReasonExistingAntiAffinityRulesNotMatch}
)

func newPlugin(t *testing.T, args string, h *plugintest.Handle) *InterPodAffinity {
	t.Helper()
	p, err := New(plugintest.Args(t, args), h)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*InterPodAffinity)
}

func check(t *testing.T, pl *InterPodAffinity, st *plugin.CycleState, pod *abi.Pod, nodes []*plugin.NodeInfo, want []verdict) {
	t.Helper()
	for i, n := range nodes {
		s := pl.Filter(st, pod, n)
		if s.Code() != want[i].code || s.Message() != want[i].msg {
			t.Errorf("node %s: got %v %q, want %v %q", n.Name(), s.Code(), s.Message(), want[i].code, want[i].msg)
		}
	}
}

func TestFilter(t *testing.T) {
	db := func() *podW { return mkPod("db", "app", "db") }
	tests := []struct {
		name     string
		pod      *podW
		nodes    []*plugin.NodeInfo
		nsLabels map[string]abi.Labels
		wantSkip bool
		want     []verdict
	}{
		{name: "no terms, no existing anti-affinity: skip", pod: mkPod("p"),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db())}, wantSkip: true},
		{name: "required affinity: domain with a match, same domain, other domain, missing key",
			pod: mkPod("p").reqAff(tm("zone", sel("app", "db"))),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db()), mkNode("n2", zone("a")),
				mkNode("n3", zone("b")), mkNode("n4", nil)},
			want: []verdict{pass, pass, failAff, failAff}},
		{name: "required affinity: no pod matches and pod does not match itself",
			pod:   mkPod("p").reqAff(tm("zone", sel("app", "db"))),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), mkPod("w", "app", "web")), mkNode("n2", nil)},
			want:  []verdict{failAff, failAff}},
		{name: "first pod of a group may match itself (topology key still required)",
			pod:   mkPod("p", "app", "db").reqAff(tm("zone", sel("app", "db"))),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a")), mkNode("n2", nil)},
			want:  []verdict{pass, failAff}},
		{name: "self-match does not help once another pod matches",
			pod:   mkPod("p", "app", "db").reqAff(tm("zone", sel("app", "db"))),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db()), mkNode("n2", zone("b"))},
			want:  []verdict{pass, failAff}},
		{name: "two affinity terms: a pod must match both",
			pod: mkPod("p").reqAff(tm("zone", sel("app", "db"))).reqAff(tm("hostname", sel("tier", "x"))),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), mkPod("a", "app", "db", "tier", "x")),
				mkNode("n2", zone("b"), mkPod("b", "app", "db"), mkPod("c", "tier", "x"))},
			want: []verdict{pass, failAff}},
		{name: "required anti-affinity",
			pod: mkPod("p").reqAnti(tm("zone", sel("app", "db"))),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db()), mkNode("n2", zone("a")),
				mkNode("n3", zone("b")), mkNode("n4", nil)},
			want: []verdict{failAnti, failAnti, pass, pass}},
		{name: "symmetric: existing pod's required anti-affinity rejects the pod",
			pod: mkPod("p", "security", "S1"),
			nodes: []*plugin.NodeInfo{
				mkNode("n1", zone("a"), mkPod("e", "x", "y").reqAnti(tm("zone", sel("security", "S1")))),
				mkNode("n2", zone("a")), mkNode("n3", zone("b")), mkNode("n4", nil)},
			want: []verdict{failExist, failExist, pass, pass}},
		{name: "symmetric: existing pod's term covers only its own namespace",
			pod: mkPod("p", "security", "S1"),
			nodes: []*plugin.NodeInfo{
				mkNode("n1", zone("a"), mkPod("e").ns("other").reqAnti(tm("zone", sel("security", "S1")))),
				mkNode("n2", zone("b"))},
			wantSkip: true},
		{name: "symmetric: existing pod's namespaceSelector matches the pod's namespace",
			pod:      mkPod("p", "security", "S1"),
			nsLabels: map[string]abi.Labels{"default": lbls("team", "x")},
			nodes: []*plugin.NodeInfo{
				mkNode("n1", zone("a"), mkPod("e").ns("other").reqAnti(termNS("zone", sel("security", "S1"), nil, sel("team", "x")))),
				mkNode("n2", zone("b"))},
			want: []verdict{failExist, pass}},
		{name: "affinity affinity fails before anti-affinity is checked",
			pod:   mkPod("p").reqAff(tm("zone", sel("app", "web"))).reqAnti(tm("zone", sel("app", "db"))),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db()), mkNode("n2", zone("b"), mkPod("w", "app", "web"))},
			want:  []verdict{failAff, pass}},
		{name: "namespaces list",
			pod: mkPod("p").reqAff(termNS("zone", sel("app", "db"), []string{"ns2"}, nil)),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db().ns("ns2")),
				mkNode("n2", zone("b"), db())},
			want: []verdict{pass, failAff}},
		{name: "namespaceSelector",
			pod:      mkPod("p").reqAff(termNS("zone", sel("app", "db"), nil, sel("team", "x"))),
			nsLabels: map[string]abi.Labels{"ns2": lbls("team", "x"), "ns3": lbls("team", "y")},
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db().ns("ns2")),
				mkNode("n2", zone("b"), db().ns("ns3")), mkNode("n3", zone("c"), db())},
			want: []verdict{pass, failAff, failAff}},
		{name: "empty namespaceSelector: every namespace",
			pod: mkPod("p").reqAnti(termNS("zone", sel("app", "db"), nil, &abi.LabelSelector{})),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), db().ns("ns2")),
				mkNode("n2", zone("b"), db().ns("unknown")), mkNode("n3", zone("c"))},
			want: []verdict{failAnti, failAnti, pass}},
		{name: "matchLabelKeys",
			pod: mkPod("p", "app", "db", "version", "v1").reqAnti(abi.PodAffinityTerm{
				LabelSelector: sel("app", "db"), TopologyKey: "zone", MatchLabelKeys: []string{"version"}}),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), mkPod("a", "app", "db", "version", "v1")),
				mkNode("n2", zone("b"), mkPod("b", "app", "db", "version", "v2"))},
			want: []verdict{failAnti, pass}},
		{name: "mismatchLabelKeys",
			pod: mkPod("p", "tenant", "t1").reqAff(abi.PodAffinityTerm{
				LabelSelector: sel("app", "db"), TopologyKey: "zone", MismatchLabelKeys: []string{"tenant"}}),
			nodes: []*plugin.NodeInfo{mkNode("n1", zone("a"), mkPod("a", "app", "db", "tenant", "t1")),
				mkNode("n2", zone("b"), mkPod("b", "app", "db", "tenant", "t2"))},
			want: []verdict{failAff, pass}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &plugintest.Handle{NodeList: tt.nodes, Namespaces: tt.nsLabels}
			pl := newPlugin(t, "", h)
			st := &plugin.CycleState{}
			s := pl.PreFilter(st, &tt.pod.Pod)
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Fatalf("PreFilter = %v %q, want Skip", s.Code(), s.Message())
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreFilter = %v %q", s.Code(), s.Message())
			}
			check(t, pl, st, &tt.pod.Pod, tt.nodes, tt.want)
		})
	}
}

func TestPreFilterInvalidSelector(t *testing.T) {
	pod := mkPod("p").reqAff(tm("zone", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "a", Operator: abi.OpIn}}}))
	pl := newPlugin(t, "", &plugintest.Handle{})
	if s := pl.PreFilter(&plugin.CycleState{}, &pod.Pod); s.Code() != abi.Error {
		t.Fatalf("got %v, want Error", s.Code())
	}
}

func TestAddRemovePod(t *testing.T) {
	t.Run("AddPod of a matching pod satisfies affinity", func(t *testing.T) {
		nodes := []*plugin.NodeInfo{mkNode("n1", zone("a"), mkPod("w", "app", "web")), mkNode("n2", zone("b"))}
		pod := mkPod("p").reqAff(tm("zone", sel("app", "db")))
		pl := newPlugin(t, "", &plugintest.Handle{NodeList: nodes})
		st := &plugin.CycleState{}
		if s := pl.PreFilter(st, &pod.Pod); !s.IsSuccess() {
			t.Fatal(s.Message())
		}
		check(t, pl, st, &pod.Pod, nodes, []verdict{failAff, failAff})
		what := st.Clone()
		added := mkPod("db", "app", "db").Pod
		if s := pl.AddPod(what, &pod.Pod, &added, nodes[0]); !s.IsSuccess() {
			t.Fatal(s.Message())
		}
		check(t, pl, what, &pod.Pod, nodes, []verdict{pass, failAff})
		check(t, pl, st, &pod.Pod, nodes, []verdict{failAff, failAff}) // the clone is independent
		if s := pl.RemovePod(what, &pod.Pod, &added, nodes[0]); !s.IsSuccess() {
			t.Fatal(s.Message())
		}
		check(t, pl, what, &pod.Pod, nodes, []verdict{failAff, failAff})
	})
	t.Run("RemovePod of a victim lifts anti-affinity", func(t *testing.T) {
		victim := mkPod("db", "app", "db")
		nodes := []*plugin.NodeInfo{mkNode("n1", zone("a"), victim), mkNode("n2", zone("b"), victim)}
		pod := mkPod("p").reqAnti(tm("zone", sel("app", "db")))
		pl := newPlugin(t, "", &plugintest.Handle{NodeList: nodes})
		st := &plugin.CycleState{}
		pl.PreFilter(st, &pod.Pod)
		check(t, pl, st, &pod.Pod, nodes, []verdict{failAnti, failAnti})
		pl.RemovePod(st, &pod.Pod, &victim.Pod, nodes[0])
		check(t, pl, st, &pod.Pod, nodes, []verdict{pass, failAnti})
	})
	t.Run("AddPod and RemovePod of a pod with anti-affinity against the incoming pod", func(t *testing.T) {
		nodes := []*plugin.NodeInfo{mkNode("n1", zone("a")), mkNode("n2", zone("b"))}
		pod := mkPod("p", "security", "S1").reqAnti(tm("zone", sel("app", "none")))
		pl := newPlugin(t, "", &plugintest.Handle{NodeList: nodes})
		st := &plugin.CycleState{}
		pl.PreFilter(st, &pod.Pod)
		check(t, pl, st, &pod.Pod, nodes, []verdict{pass, pass})
		nominated := mkPod("e").reqAnti(tm("zone", sel("security", "S1")))
		pl.AddPod(st, &pod.Pod, &nominated.Pod, nodes[1])
		check(t, pl, st, &pod.Pod, nodes, []verdict{pass, failExist})
		pl.RemovePod(st, &pod.Pod, &nominated.Pod, nodes[1])
		check(t, pl, st, &pod.Pod, nodes, []verdict{pass, pass})
	})
}

func TestScore(t *testing.T) {
	db := func() *podW { return mkPod("db", "app", "db") }
	web := func() *podW { return mkPod("web", "app", "web") }
	nodes4 := func(extra ...*podW) []*plugin.NodeInfo {
		return []*plugin.NodeInfo{mkNode("n1", zone("a"), append([]*podW{db(), db()}, extra...)...),
			mkNode("n2", zone("a")), mkNode("n3", zone("b"), db()), mkNode("n4", zone("c"))}
	}
	tests := []struct {
		name     string
		args     string
		pod      *podW
		nodes    []*plugin.NodeInfo
		wantSkip bool
		want     []int64
	}{
		{name: "preferred affinity", pod: mkPod("p").prefAff(5, tm("zone", sel("app", "db"))),
			nodes: nodes4(), want: []int64{100, 100, 50, 0}},
		{name: "preferred anti-affinity", pod: mkPod("p").prefAnti(5, tm("zone", sel("app", "db"))),
			nodes: nodes4(), want: []int64{0, 0, 50, 100}},
		{name: "affinity and anti-affinity combine",
			pod: mkPod("p").prefAff(3, tm("hostname", sel("app", "db"))).prefAnti(1, tm("zone", sel("app", "db"))),
			// n1: 2*3 - 2 = 4, n2: -2, n3: 3 - 1 = 2, n4: 0
			nodes: []*plugin.NodeInfo{mkNode("n1", []string{"zone", "a", "hostname", "n1"}, db(), db()),
				mkNode("n2", []string{"zone", "a", "hostname", "n2"}), mkNode("n3", []string{"zone", "b", "hostname", "n3"}, db()),
				mkNode("n4", []string{"zone", "c", "hostname", "n4"})},
			want: []int64{100, 0, 66, 33}},
		{name: "no terms and no existing pods with affinity: skip", pod: mkPod("p"), nodes: nodes4(), wantSkip: true},
		{name: "existing pod's required affinity: hardPodAffinityWeight (default 1)", pod: mkPod("p", "app", "web"),
			nodes: nodes4(mkPod("e").reqAff(tm("zone", sel("app", "web")))), want: []int64{100, 100, 0, 0}},
		{name: "hardPodAffinityWeight 0 disables it", args: `{"hardPodAffinityWeight": 0}`, pod: mkPod("p", "app", "web"),
			nodes: nodes4(mkPod("e").reqAff(tm("zone", sel("app", "web")))), wantSkip: true},
		{name: "existing pod's preferred anti-affinity", pod: mkPod("p", "app", "web"),
			nodes: nodes4(mkPod("e").prefAnti(7, tm("zone", sel("app", "web")))), want: []int64{0, 0, 100, 100}},
		{name: "existing pod's preferred affinity, other namespace: no match", pod: mkPod("p", "app", "web"),
			nodes: nodes4(mkPod("e").ns("x").prefAff(7, tm("zone", sel("app", "web")))), wantSkip: true},
		{name: "ignorePreferredTermsOfExistingPods without own terms: skip", args: `{"ignorePreferredTermsOfExistingPods": true}`,
			pod: mkPod("p", "app", "web"), nodes: nodes4(mkPod("e").prefAff(7, tm("zone", sel("app", "web")))), wantSkip: true},
		{name: "ignorePreferredTermsOfExistingPods with own terms: existing terms still count", args: `{"ignorePreferredTermsOfExistingPods": true}`,
			pod:   mkPod("p", "app", "web").prefAff(1, tm("zone", sel("app", "web"))),
			nodes: nodes4(mkPod("e").prefAff(7, tm("zone", sel("app", "web"))), web()),
			// zone a: 7 (existing pod) + 1 (web pod) = 8
			want: []int64{100, 100, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, tt.args, &plugintest.Handle{NodeList: tt.nodes})
			st := &plugin.CycleState{}
			s := pl.PreScore(st, &tt.pod.Pod, tt.nodes)
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Fatalf("PreScore = %v %q, want Skip", s.Code(), s.Message())
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreScore = %v %q", s.Code(), s.Message())
			}
			scores := make([]int64, len(tt.nodes))
			for i, n := range tt.nodes {
				var st2 *plugin.Status
				if scores[i], st2 = pl.Score(st, &tt.pod.Pod, n); !st2.IsSuccess() {
					t.Fatal(st2.Message())
				}
			}
			pl.NormalizeScore(st, &tt.pod.Pod, scores)
			for i := range scores {
				if scores[i] != tt.want[i] {
					t.Fatalf("scores %v, want %v", scores, tt.want)
				}
			}
		})
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		args    string
		want    Args
		wantErr string
	}{
		{args: "", want: Args{HardPodAffinityWeight: 1}},
		{args: `{}`, want: Args{HardPodAffinityWeight: 1}},
		{args: `{"hardPodAffinityWeight": 0, "ignorePreferredTermsOfExistingPods": true}`,
			want: Args{HardPodAffinityWeight: 0, IgnorePreferredTermsOfExistingPods: true}},
		{args: `{"hardPodAffinityWeight": 100}`, want: Args{HardPodAffinityWeight: 100}},
		{args: `{"hardPodAffinityWeight": 101}`, wantErr: "hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]"},
		{args: `{"hardPodAffinityWeight": -1}`, wantErr: "hardPodAffinityWeight: Invalid value: -1: not in valid range [0, 100]"},
		{args: `{"hardPodAffinityWeight": "1"}`, wantErr: "hardPodAffinityWeight"},
		{args: `{"ignorePreferredTermsOfExistingPods": 1}`, wantErr: "ignorePreferredTermsOfExistingPods"},
		{args: `{"hardPodAffinityWieght": 1}`, wantErr: "hardPodAffinityWieght"},
	}
	for _, tt := range tests {
		a, err := ParseArgs(plugintest.Args(t, tt.args))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || a != tt.want {
			t.Errorf("%s: got %+v, %v; want %+v", tt.args, a, err, tt.want)
		}
	}
}

// TestTablesRecycledAcrossCycles runs pods through one plugin and one
// CycleState, Reset per cycle as the SDK does, so counts and domain
// tables come from storage of earlier cycles (plugin.Scratch), with
// PreScore's taken after PreFilter's in the same cycle and Filter run
// after PreScore. The answers must equal a fresh plugin's.
func TestTablesRecycledAcrossCycles(t *testing.T) {
	uniqueSlots = true
	defer func() { uniqueSlots = false }()
	db := func() *podW { return mkPod("db", "app", "db") }
	web := func() *podW { return mkPod("web", "app", "web") }
	nodes := []*plugin.NodeInfo{
		mkNode("n1", []string{"zone", "a", "hostname", "n1"}, db(), db(), mkPod("e").reqAnti(tm("hostname", sel("app", "web")))),
		mkNode("n2", []string{"zone", "a", "hostname", "n2"}, web()),
		mkNode("n3", []string{"zone", "b", "hostname", "n3"}, db()),
		mkNode("n4", []string{"zone", "c", "hostname", "n4"}),
	}
	incoming := []*podW{
		mkPod("p1", "app", "web").reqAff(tm("zone", sel("app", "db"))).prefAnti(2, tm("hostname", sel("app", "db"))),
		mkPod("p2").reqAnti(tm("zone", sel("app", "web"))).prefAff(5, tm("zone", sel("app", "db"))),
		mkPod("p3", "app", "web").prefAff(3, tm("hostname", sel("app", "db"))),
		mkPod("p4").reqAff(tm("hostname", sel("app", "web"))).reqAnti(tm("hostname", sel("app", "db"))).prefAnti(1, tm("zone", sel("app", "web"))),
	}
	type result struct {
		codes  []abi.Code
		scores []int64
	}
	run := func(pl *InterPodAffinity, state *plugin.CycleState, p *abi.Pod) result {
		var r result
		pf := pl.PreFilter(state, p)
		ps := pl.PreScore(state, p, nodes)
		if !pf.IsSkip() {
			for _, n := range nodes {
				r.codes = append(r.codes, pl.Filter(state, p, n).Code())
			}
		}
		if !ps.IsSkip() {
			r.scores = make([]int64, len(nodes))
			for i, n := range nodes {
				r.scores[i], _ = pl.Score(state, p, n)
			}
			pl.NormalizeScore(state, p, r.scores)
		}
		return r
	}
	// Label sets numbered as the string table numbers them: the memos of
	// the recycled plugin serve several cycles with different terms.
	if plugintest.NumberGroups(nodes) < 2 {
		t.Fatal("fewer than two label sets: the memos are not tested")
	}
	h := &plugintest.Handle{NodeList: nodes, NodeCount: len(nodes)}
	recycled := newPlugin(t, "", h)
	var state plugin.CycleState
	for round := 0; round < 4; round++ {
		if round == 3 {
			// A sync replaces n2 by a node of another zone in the same
			// slot: the cached domain of the old one must not be used.
			moved := mkNode("n2", []string{"zone", "b", "hostname", "n2"}, web())
			moved.Slot = nodes[1].Slot
			nodes[1] = moved // the handle shares the slice
			plugintest.NumberGroups(nodes)
		}
		for _, p := range incoming {
			want := run(newPlugin(t, "", h), &plugin.CycleState{}, &p.Pod)
			if want.codes == nil || want.scores == nil {
				t.Fatalf("%s: the fresh plugin skipped a phase; the test checks less than it says", p.Name)
			}
			state.Reset()
			got := run(recycled, &state, &p.Pod)
			if !slices.Equal(got.codes, want.codes) || !slices.Equal(got.scores, want.scores) {
				t.Errorf("round %d, %s: recycled %+v, fresh %+v", round, p.Name, got, want)
			}
		}
	}
}

// TestOwnNamespaceComparedByNumber: a term in its owner's namespace
// counts a pod group by the namespace numbers when both sides are
// numbered (a group whose text says otherwise proves the numbers are
// what is compared) and by text when either is not.
func TestOwnNamespaceComparedByNumber(t *testing.T) {
	uniqueSlots = true
	defer func() { uniqueSlots = false }()
	const defaultID, otherID abi.StrID = 7, 8
	db := func(ns string) *podW { return mkPod("db", "app", "db").ns(ns) }
	nodes := []*plugin.NodeInfo{
		mkNode("n1", []string{"hostname", "n1"}, db("default")),
		mkNode("n2", []string{"hostname", "n2"}, db("other")),
		mkNode("n3", []string{"hostname", "n3"}, db("default")), // numbered as "other" below
		mkNode("n4", []string{"hostname", "n4"}, db("default")), // not numbered: compared by text
	}
	for i, id := range []abi.StrID{defaultID, otherID, otherID, 0} {
		nodes[i].PodGroups[0].NamespaceID = id
	}
	plugintest.NumberGroups(nodes)
	h := &plugintest.Handle{NodeList: nodes, NodeCount: len(nodes)}
	incoming := mkPod("p").prefAff(5, tm("hostname", sel("app", "db")))
	incoming.NamespaceID = defaultID
	for _, tc := range []struct {
		name   string
		filter bool
	}{{"preferred (PreScore)", false}, {"required anti-affinity (PreFilter)", true}} {
		t.Run(tc.name, func(t *testing.T) {
			pl, state := newPlugin(t, "", h), &plugin.CycleState{}
			if tc.filter {
				p := mkPod("p").reqAnti(tm("hostname", sel("app", "db")))
				p.NamespaceID = defaultID
				pl.PreFilter(state, &p.Pod)
				var got []bool
				for _, n := range nodes {
					got = append(got, pl.Filter(state, &p.Pod, n).IsSuccess())
				}
				if want := []bool{false, true, true, false}; !slices.Equal(got, want) {
					t.Errorf("feasible %v, want %v", got, want)
				}
				return
			}
			if s := pl.PreScore(state, &incoming.Pod, nodes); !s.IsSuccess() {
				t.Fatal(s.Message())
			}
			scores := make([]int64, len(nodes))
			for i, n := range nodes {
				scores[i], _ = pl.Score(state, &incoming.Pod, n)
			}
			if want := []int64{5, 0, 0, 5}; !slices.Equal(scores, want) {
				t.Errorf("raw scores %v, want %v", scores, want)
			}
		})
	}
}
