package podtopologyspread

import (
	"sort"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

// lbls builds sorted labels from key, value pairs.
func lbls(kv ...string) abi.Labels {
	var ls abi.Labels
	for i := 0; i+1 < len(kv); i += 2 {
		ls = append(ls, abi.Label{Key: kv[i], Value: kv[i+1]})
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].Key < ls[j].Key })
	return ls
}

// pod is a pod in "default" on node (may be "") with labels.
func pod(name, node string, kv ...string) *abi.Pod {
	p := plugintest.MakePod().Name(name).NodeName(node).Obj()
	p.Labels = lbls(kv...)
	return p
}

func node(name, zone string) *plugintest.NodeWrapper {
	n := plugintest.MakeNode().Name(name).Label(LabelHostname, name)
	if zone != "" {
		n.Label(LabelZone, zone)
	}
	return n
}

// cluster places pods on the nodes named by their NodeName, keeping
// PodGroups as the host does.
func cluster(nodes []*plugintest.NodeWrapper, pods ...*abi.Pod) []*plugin.NodeInfo {
	out := make([]*plugin.NodeInfo, len(nodes))
	for i, n := range nodes {
		out[i] = n.Obj()
	}
	for _, p := range pods {
		for _, ni := range out {
			if ni.Node.Name == p.NodeName {
				ni.NodeInfo.AddPod(p)
			}
		}
	}
	return out
}

func fooSel() *abi.LabelSelector { return &abi.LabelSelector{MatchLabels: lbls("foo", "bar")} }

func tsc(key string, skew int32, when abi.WhenUnsatisfiable, sel *abi.LabelSelector) abi.TopologySpreadConstraint {
	return abi.TopologySpreadConstraint{MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: sel}
}

func withTSC(p *abi.Pod, cs ...abi.TopologySpreadConstraint) *abi.Pod {
	p.TopologySpread = cs
	return p
}

// fourNodes: zone1 = {n-a, n-b}, zone2 = {n-x, n-y}.
func fourNodes() []*plugintest.NodeWrapper {
	return []*plugintest.NodeWrapper{node("n-a", "zone1"), node("n-b", "zone1"), node("n-x", "zone2"), node("n-y", "zone2")}
}

func newPlugin(t *testing.T, args string, nodes []*plugin.NodeInfo) *PodTopologySpread {
	t.Helper()
	p, err := New(plugintest.Args(t, args), &plugintest.Handle{NodeList: nodes, NodeCount: len(nodes)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p.(*PodTopologySpread)
}

// filterAll runs PreFilter and Filter on every node; the result maps node
// name to status code ("skip" when PreFilter skipped).
func filterAll(t *testing.T, pl *PodTopologySpread, state *plugin.CycleState, p *abi.Pod, nodes []*plugin.NodeInfo) map[string]abi.Code {
	t.Helper()
	got := map[string]abi.Code{}
	st := pl.PreFilter(state, p)
	if st.IsSkip() {
		return nil
	}
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st.Message())
	}
	for _, ni := range nodes {
		got[ni.Node.Name] = pl.Filter(state, p, ni).Code()
	}
	return got
}

const (
	ok    = abi.Success
	unsch = abi.Unschedulable
	unres = abi.UnschedulableAndUnresolvable
)

func TestFilter(t *testing.T) {
	zone1Heavy := []*abi.Pod{ // zone1: 2 matching, zone2: 1 matching
		pod("p1", "n-a", "foo", "bar"), pod("p2", "n-a", "foo", "bar"),
		pod("p3", "n-x", "foo", "bar"),
		pod("other1", "n-b", "app", "x"), pod("other2", "n-y", "app", "x"), // never match
	}
	otherNS := pod("ns1", "n-x", "foo", "bar")
	otherNS.Namespace = "other"
	otherNS2 := pod("ns2", "n-y", "foo", "bar")
	otherNS2.Namespace = "other"

	tests := []struct {
		name  string
		args  string
		nodes []*plugintest.NodeWrapper
		pods  []*abi.Pod
		pod   *abi.Pod
		want  map[string]abi.Code // nil: PreFilter skips
	}{
		{name: "no constraints: skip", nodes: fourNodes(), pods: zone1Heavy, pod: pod("in", "", "foo", "bar")},
		{name: "only ScheduleAnyway constraints: skip", nodes: fourNodes(), pods: zone1Heavy,
			pod: withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.ScheduleAnyway, fooSel()))},
		{name: "zone maxSkew 1", nodes: fourNodes(), pods: zone1Heavy,
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel())),
			want: map[string]abi.Code{"n-a": unsch, "n-b": unsch, "n-x": ok, "n-y": ok}},
		{name: "zone maxSkew 2", nodes: fourNodes(), pods: zone1Heavy,
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 2, abi.DoNotSchedule, fooSel())),
			want: map[string]abi.Code{"n-a": ok, "n-b": ok, "n-x": ok, "n-y": ok}},
		{name: "hostname maxSkew 1", nodes: fourNodes(), pods: zone1Heavy,
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelHostname, 1, abi.DoNotSchedule, fooSel())),
			want: map[string]abi.Code{"n-a": unsch, "n-b": ok, "n-x": unsch, "n-y": ok}},
		{name: "incoming pod not matching its selector (no self match)", nodes: fourNodes(), pods: zone1Heavy,
			pod:  withTSC(pod("in", "", "app", "y"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel())),
			want: map[string]abi.Code{"n-a": ok, "n-b": ok, "n-x": ok, "n-y": ok}},
		{name: "labelSelector with expressions counts only matching pods", nodes: fourNodes(), pods: zone1Heavy,
			pod: withTSC(pod("in", "", "app", "x"), tsc(LabelHostname, 1, abi.DoNotSchedule,
				&abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "app", Operator: abi.OpIn, Values: []string{"x"}}}})),
			// n-b and n-y have 1 each, n-a and n-x 0: 1+1-0 > 1
			want: map[string]abi.Code{"n-a": ok, "n-b": unsch, "n-x": ok, "n-y": unsch}},
		{name: "pods of other namespaces are not counted", nodes: fourNodes(),
			pods: append([]*abi.Pod{otherNS, otherNS2}, zone1Heavy...),
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel())),
			want: map[string]abi.Code{"n-a": unsch, "n-b": unsch, "n-x": ok, "n-y": ok}},
		{name: "nil labelSelector matches nothing", nodes: fourNodes(), pods: zone1Heavy,
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelHostname, 1, abi.DoNotSchedule, nil)),
			want: map[string]abi.Code{"n-a": ok, "n-b": ok, "n-x": ok, "n-y": ok}},
		{name: "node missing the topology key: unresolvable",
			nodes: []*plugintest.NodeWrapper{node("n-a", "zone1"), node("n-nozone", "")},
			pod:   withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel())),
			want:  map[string]abi.Code{"n-a": ok, "n-nozone": unres}},
		{name: "two constraints: both must hold", nodes: fourNodes(), pods: zone1Heavy,
			pod: withTSC(pod("in", "", "foo", "bar"),
				tsc(LabelZone, 2, abi.DoNotSchedule, fooSel()), tsc(LabelHostname, 1, abi.DoNotSchedule, fooSel())),
			want: map[string]abi.Code{"n-a": unsch, "n-b": ok, "n-x": unsch, "n-y": ok}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nodes := cluster(tc.nodes, tc.pods...)
			pl := newPlugin(t, tc.args, nodes)
			got := filterAll(t, pl, &plugin.CycleState{}, tc.pod, nodes)
			if !equalCodes(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func equalCodes(a, b map[string]abi.Code) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestFilterMessages(t *testing.T) {
	nodes := cluster([]*plugintest.NodeWrapper{node("n-a", "zone1"), node("n-b", "zone2"), node("n-c", "")},
		pod("p1", "n-a", "foo", "bar"), pod("p2", "n-a", "foo", "bar"))
	pl := newPlugin(t, "", nodes)
	state := &plugin.CycleState{}
	p := withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel()))
	if st := pl.PreFilter(state, p); !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	if st := pl.Filter(state, p, nodes[0]); st.Code() != unsch || st.Message() != ErrReasonConstraintsNotMatch {
		t.Errorf("skewed node: %v %q", st.Code(), st.Message())
	}
	if st := pl.Filter(state, p, nodes[2]); st.Code() != unres ||
		st.Message() != "node(s) didn't match pod topology spread constraints (missing required label)" {
		t.Errorf("missing key: %v %q", st.Code(), st.Message())
	}
}

func TestFilterMatchLabelKeys(t *testing.T) {
	nodes := cluster([]*plugintest.NodeWrapper{node("n-a", "zone1"), node("n-x", "zone2")},
		pod("p1", "n-a", "app", "web", "rev", "1"), pod("p2", "n-a", "app", "web", "rev", "1"),
		pod("p3", "n-x", "app", "web", "rev", "2"))
	sel := &abi.LabelSelector{MatchLabels: lbls("app", "web")}
	incoming := func(keys ...string) *abi.Pod {
		c := tsc(LabelZone, 1, abi.DoNotSchedule, sel)
		c.MatchLabelKeys = keys
		return withTSC(pod("in", "", "app", "web", "rev", "2"), c)
	}
	for _, tc := range []struct {
		name string
		pod  *abi.Pod
		want map[string]abi.Code
	}{
		// all revisions: zone1 2, zone2 1.
		{"without matchLabelKeys", incoming(), map[string]abi.Code{"n-a": unsch, "n-x": ok}},
		// only rev=2: zone1 0, zone2 1.
		{"matchLabelKeys rev", incoming("rev"), map[string]abi.Code{"n-a": ok, "n-x": unsch}},
		// the pod has no "missing" label: key ignored.
		{"matchLabelKeys key absent on pod", incoming("missing"), map[string]abi.Code{"n-a": unsch, "n-x": ok}},
	} {
		pl := newPlugin(t, "", nodes)
		if got := filterAll(t, pl, &plugin.CycleState{}, tc.pod, nodes); !equalCodes(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFilterMinDomains(t *testing.T) {
	nodes := cluster(fourNodes(), pod("p1", "n-a", "foo", "bar"), pod("p2", "n-x", "foo", "bar"))
	for _, tc := range []struct {
		name       string
		minDomains int32
		want       abi.Code
	}{
		{"unset: globalMin 1", 0, ok},
		{"minDomains 2 = domains: globalMin 1", 2, ok},
		{"minDomains 3 > domains: globalMin 0", 3, unsch},
	} {
		c := tsc(LabelZone, 1, abi.DoNotSchedule, fooSel())
		c.MinDomains = tc.minDomains
		p := withTSC(pod("in", "", "foo", "bar"), c)
		pl := newPlugin(t, "", nodes)
		got := filterAll(t, pl, &plugin.CycleState{}, p, nodes)
		for n, code := range got {
			if code != tc.want {
				t.Errorf("%s: %s got %v, want %v", tc.name, n, code, tc.want)
			}
		}
	}
}

func TestFilterInclusionPolicies(t *testing.T) {
	// zone1: n-a (pool=a, 1 pod), n-b (no pool, tainted, 2 pods); zone2: n-x (pool=a, 1 pod).
	mk := func() []*plugin.NodeInfo {
		return cluster([]*plugintest.NodeWrapper{
			node("n-a", "zone1").Label("pool", "a"),
			node("n-b", "zone1").Taint("dedicated", "x", abi.EffectNoSchedule),
			node("n-x", "zone2").Label("pool", "a"),
		}, pod("p1", "n-a", "foo", "bar"), pod("p2", "n-b", "foo", "bar"), pod("p3", "n-b", "foo", "bar"),
			pod("p4", "n-x", "foo", "bar"))
	}
	for _, tc := range []struct {
		name     string
		affinity abi.InclusionPolicy
		taints   abi.InclusionPolicy
		nodeSel  bool // pod requires pool=a
		reqAff   bool // pod requires pool In [a] via required node affinity
		tolerate bool
		want     abi.Code // verdict on n-a
	}{
		{name: "affinity Honor (default), nodeSelector excludes n-b", nodeSel: true, want: ok},
		{name: "affinity Honor, required node affinity excludes n-b", reqAff: true, affinity: abi.PolicyHonor, want: ok},
		{name: "affinity Ignore counts n-b", nodeSel: true, affinity: abi.PolicyIgnore, want: unsch},
		{name: "taints Ignore (default) counts tainted n-b", want: unsch},
		{name: "taints Honor excludes untolerated n-b", taints: abi.PolicyHonor, want: ok},
		{name: "taints Honor, tolerated n-b counts", taints: abi.PolicyHonor, tolerate: true, want: unsch},
	} {
		nodes := mk()
		c := tsc(LabelZone, 1, abi.DoNotSchedule, fooSel())
		c.NodeAffinityPolicy, c.NodeTaintsPolicy = tc.affinity, tc.taints
		w := plugintest.MakePod().Name("in")
		if tc.nodeSel {
			w.NodeSelector("pool", "a")
		}
		if tc.reqAff {
			w.RequiredTerm(plugintest.Term().Expr("pool", abi.OpIn, "a"))
		}
		if tc.tolerate {
			w.Toleration("dedicated", abi.TolerationEqual, "x", abi.EffectNoSchedule)
		}
		p := w.Obj()
		p.Labels = lbls("foo", "bar")
		p.TopologySpread = []abi.TopologySpreadConstraint{c}
		pl := newPlugin(t, "", nodes)
		state := &plugin.CycleState{}
		if st := pl.PreFilter(state, p); !st.IsSuccess() {
			t.Fatal(st.Message())
		}
		if got := pl.Filter(state, p, nodes[0]).Code(); got != tc.want {
			t.Errorf("%s: n-a got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFilterDefaulting(t *testing.T) {
	nodes := cluster(fourNodes(), pod("p1", "n-a", "foo", "bar"), pod("p2", "n-a", "foo", "bar"))
	ctrl := func(p *abi.Pod) *abi.Pod { p.ControllerSelector = fooSel(); return p }
	listArgs := `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]}`
	for _, tc := range []struct {
		name string
		args string
		pod  *abi.Pod
		want map[string]abi.Code
	}{
		{"System defaults are soft: Filter skips", "", ctrl(pod("in", "", "foo", "bar")), nil},
		{"List defaults with a controller selector", listArgs, ctrl(pod("in", "", "foo", "bar")),
			map[string]abi.Code{"n-a": unsch, "n-b": unsch, "n-x": ok, "n-y": ok}},
		{"List defaults without a controller selector: skip", listArgs, pod("in", "", "foo", "bar"), nil},
		{"List defaults with an empty controller selector: skip", listArgs,
			func() *abi.Pod {
				p := pod("in", "", "foo", "bar")
				p.ControllerSelector = &abi.LabelSelector{}
				return p
			}(), nil},
		{"pod's own constraints win over List defaults", listArgs,
			ctrl(withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 3, abi.DoNotSchedule, fooSel()))),
			map[string]abi.Code{"n-a": ok, "n-b": ok, "n-x": ok, "n-y": ok}},
	} {
		pl := newPlugin(t, tc.args, nodes)
		if got := filterAll(t, pl, &plugin.CycleState{}, tc.pod, nodes); !equalCodes(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAddRemovePod(t *testing.T) {
	nodes := cluster(fourNodes(), pod("p1", "n-a", "foo", "bar"), pod("p2", "n-x", "foo", "bar"))
	pl := newPlugin(t, "", nodes)
	p := withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel()))
	state := &plugin.CycleState{}
	if st := pl.PreFilter(state, p); !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	na, nx := nodes[0], nodes[2]
	if c := pl.Filter(state, p, na).Code(); c != ok {
		t.Fatalf("before: n-a %v", c)
	}

	// A nominated matching pod on n-a: zone1 2, zone2 1 -> n-a skewed.
	added := state.Clone()
	pl.AddPod(added, p, pod("nom", "n-a", "foo", "bar"), na)
	if c := pl.Filter(added, p, na).Code(); c != unsch {
		t.Errorf("after AddPod: n-a %v, want Unschedulable", c)
	}
	if c := pl.Filter(state, p, na).Code(); c != ok {
		t.Errorf("AddPod leaked into the original state: n-a %v", c)
	}
	// Non-matching or other-namespace pods change nothing.
	other := state.Clone()
	pl.AddPod(other, p, pod("nom2", "n-a", "app", "x"), na)
	ns := pod("nom3", "n-a", "foo", "bar")
	ns.Namespace = "other"
	pl.AddPod(other, p, ns, na)
	if c := pl.Filter(other, p, na).Code(); c != ok {
		t.Errorf("non-matching AddPod: n-a %v", c)
	}

	// A victim removed from n-x: zone2 0 -> globalMin 0, n-a (1+1) skewed.
	removed := state.Clone()
	victim := &nx.NodeInfo.Pods[0]
	pl.RemovePod(removed, p, victim, nx)
	if c := pl.Filter(removed, p, na).Code(); c != unsch {
		t.Errorf("after RemovePod: n-a %v, want Unschedulable", c)
	}
	if c := pl.Filter(removed, p, nx).Code(); c != ok {
		t.Errorf("after RemovePod: n-x %v, want Success", c)
	}
	// Adding it back restores the verdict.
	pl.AddPod(removed, p, victim, nx)
	if c := pl.Filter(removed, p, na).Code(); c != ok {
		t.Errorf("after re-adding: n-a %v, want Success", c)
	}
}

// scoreAll runs PreScore, Score on every node and NormalizeScore; nil when
// PreScore skips.
func scoreAll(t *testing.T, pl *PodTopologySpread, p *abi.Pod, feasible []*plugin.NodeInfo) map[string]int64 {
	t.Helper()
	state := &plugin.CycleState{}
	st := pl.PreScore(state, p, feasible)
	if st.IsSkip() {
		return nil
	}
	if !st.IsSuccess() {
		t.Fatalf("PreScore: %v", st.Message())
	}
	scores := make([]int64, len(feasible))
	for i, ni := range feasible {
		s, st := pl.Score(state, p, ni)
		if !st.IsSuccess() {
			t.Fatalf("Score: %v", st.Message())
		}
		scores[i] = s
	}
	if st := pl.NormalizeScore(state, p, scores); !st.IsSuccess() {
		t.Fatalf("NormalizeScore: %v", st.Message())
	}
	got := map[string]int64{}
	for i, ni := range feasible {
		got[ni.Node.Name] = scores[i]
	}
	return got
}

func equalScores(a, b map[string]int64) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestScore(t *testing.T) {
	threeZones := func() []*plugintest.NodeWrapper {
		return []*plugintest.NodeWrapper{node("n-a", "zone1"), node("n-b", "zone2"), node("n-c", "zone3"), node("n-d", "")}
	}
	pods := []*abi.Pod{ // zone1 3, zone2 1, zone3 0
		pod("p1", "n-a", "foo", "bar"), pod("p2", "n-a", "foo", "bar"), pod("p3", "n-a", "foo", "bar"),
		pod("p4", "n-b", "foo", "bar"), pod("x", "n-c", "app", "x"),
	}
	ctrl := func(p *abi.Pod) *abi.Pod { p.ControllerSelector = fooSel(); return p }
	for _, tc := range []struct {
		name string
		args string
		pod  *abi.Pod
		want map[string]int64
	}{
		{name: "no constraints, no controller: skip", pod: pod("in", "", "foo", "bar")},
		{name: "only DoNotSchedule: skip",
			pod: withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel()))},
		// weight log(3+2): raw 3*1.61=5, 1.61=2, 0; n-d lacks zone: 0.
		// normalized 100*(5+0-s)/5.
		{name: "zone, fewer matching pods score higher",
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.ScheduleAnyway, fooSel())),
			want: map[string]int64{"n-a": 0, "n-b": 60, "n-c": 100, "n-d": 0}},
		// maxSkew 3 adds 2 to every raw score: raw 7, 4, 2 -> 100*(9-s)/7.
		{name: "zone maxSkew 3 waters down differences",
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 3, abi.ScheduleAnyway, fooSel())),
			want: map[string]int64{"n-a": 28, "n-b": 71, "n-c": 100, "n-d": 0}},
		// hostname: weight log(4+2)=1.79: raw n-a 5, n-b 2, n-c 0, n-d 0.
		{name: "hostname",
			pod:  withTSC(pod("in", "", "foo", "bar"), tsc(LabelHostname, 1, abi.ScheduleAnyway, fooSel())),
			want: map[string]int64{"n-a": 0, "n-b": 60, "n-c": 100, "n-d": 100}},
		// System defaults (hostname 3, zone 5) need a controller selector;
		// nodes without a zone still get hostname spreading.
		// hostname weight log(6): n-a 3*1.79+2=7.4, n-b 1.79+2=3.8, n-c 2, n-d 2;
		// zone weight log(3+1+2) (the "" domain of n-d counts): n-a 3*1.79+4, n-b 1.79+4, n-c 4.
		// raw: n-a round(16.75)=17, n-b round(9.58)=10, n-c 6, n-d 2.
		{name: "system defaults with a controller selector", pod: ctrl(pod("in", "", "foo", "bar")),
			want: map[string]int64{"n-a": 100 * (17 + 2 - 17) / 17, "n-b": 100 * (17 + 2 - 10) / 17, "n-c": 100 * (17 + 2 - 6) / 17, "n-d": 100}},
		{name: "List defaulting", pod: ctrl(pod("in", "", "foo", "bar")),
			args: `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}]}`,
			want: map[string]int64{"n-a": 0, "n-b": 60, "n-c": 100, "n-d": 0}},
	} {
		nodes := cluster(threeZones(), pods...)
		pl := newPlugin(t, tc.args, nodes)
		if got := scoreAll(t, pl, tc.pod, nodes); !equalScores(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestScoreCountsAllNodesButOnlyFeasibleDomains(t *testing.T) {
	// n-b (zone2) is infeasible: zone2's pods are still counted for n-b2.
	nodes := cluster([]*plugintest.NodeWrapper{node("n-a", "zone1"), node("n-b", "zone2"), node("n-b2", "zone2")},
		pod("p1", "n-a", "foo", "bar"), pod("p2", "n-b", "foo", "bar"), pod("p3", "n-b", "foo", "bar"))
	pl := newPlugin(t, "", nodes)
	p := withTSC(pod("in", "", "foo", "bar"), tsc(LabelZone, 1, abi.ScheduleAnyway, fooSel()))
	got := scoreAll(t, pl, p, []*plugin.NodeInfo{nodes[0], nodes[2]})
	if got["n-a"] <= got["n-b2"] {
		t.Errorf("zone1 (1 pod) should beat zone2 (2 pods): %v", got)
	}
}

func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		args    string
		wantErr string
	}{
		{args: ""},
		{args: `{"defaultingType": "System"}`},
		{args: `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}`},
		{args: `{"defaultingType": "Other"}`, wantErr: "defaultingType: Unsupported value"},
		{args: `{"bogus": 1}`, wantErr: "bogus: unknown field"},
		{args: `{"defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}`,
			wantErr: `.defaultConstraints must be empty`},
		{args: `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}`,
			wantErr: "defaultConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"},
		{args: `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}]}`,
			wantErr: "defaultConstraints[0].topologyKey: Required value"},
		{args: `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Maybe"}]}`,
			wantErr: "defaultConstraints[0].whenUnsatisfiable: Unsupported value"},
		{args: `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]}`,
			wantErr: "defaultConstraints[0].labelSelector: Forbidden"},
		{args: `{"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}, {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]}`,
			wantErr: "defaultConstraints[1]: Duplicate value"},
	} {
		_, err := New(plugintest.Args(t, tc.args), &plugintest.Handle{})
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want containing %q", tc.args, err, tc.wantErr)
		}
	}
}

func TestFilterAndScoreDoNotAllocate(t *testing.T) {
	nodes := cluster(fourNodes(), pod("p1", "n-a", "foo", "bar"), pod("p2", "n-x", "foo", "bar"))
	pl := newPlugin(t, "", nodes)
	p := withTSC(pod("in", "", "foo", "bar"),
		tsc(LabelZone, 1, abi.DoNotSchedule, fooSel()), tsc(LabelHostname, 1, abi.ScheduleAnyway, fooSel()))
	state := &plugin.CycleState{}
	if st := pl.PreFilter(state, p); !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	if st := pl.PreScore(state, p, nodes); !st.IsSuccess() {
		t.Fatal(st.Message())
	}
	if n := testing.AllocsPerRun(50, func() { pl.Filter(state, p, nodes[1]) }); n != 0 {
		t.Errorf("Filter allocates %v times", n)
	}
	if n := testing.AllocsPerRun(50, func() { pl.Score(state, p, nodes[1]) }); n != 0 {
		t.Errorf("Score allocates %v times", n)
	}
}

// TestTablesRecycledAcrossCycles runs pods through one plugin and one
// CycleState, Reset per cycle as the SDK does, so the per-slot tables
// come from storage of earlier cycles (plugin.Scratch). Within a cycle,
// PreScore takes its tables after PreFilter's, and Filter runs after
// PreScore: each must still see its own. The answers must equal a fresh
// plugin's.
func TestTablesRecycledAcrossCycles(t *testing.T) {
	pods := []*abi.Pod{
		pod("p1", "n-a", "foo", "bar"), pod("p2", "n-a", "foo", "bar"), pod("p3", "n-x", "foo", "bar"),
		pod("other1", "n-b", "app", "x"),
	}
	nodes := cluster(fourNodes(), pods...)
	for i, ni := range nodes {
		ni.Slot = uint32(i) // as the SDK numbers them: the per-slot paths
	}
	// Label sets numbered as the string table numbers them: the memos of
	// the recycled plugin serve several cycles with different selectors.
	if plugintest.NumberGroups(nodes) < 2 {
		t.Fatal("fewer than two label sets: the memos are not tested")
	}
	incoming := []*abi.Pod{
		withTSC(pod("in1", "", "foo", "bar"), tsc(LabelZone, 1, abi.DoNotSchedule, fooSel()), tsc(LabelHostname, 1, abi.ScheduleAnyway, fooSel())),
		withTSC(pod("in2", "", "app", "x"), tsc(LabelHostname, 1, abi.DoNotSchedule,
			&abi.LabelSelector{MatchLabels: lbls("app", "x")}), tsc(LabelZone, 2, abi.ScheduleAnyway, fooSel())),
		withTSC(pod("in3", "", "foo", "bar"), tsc(LabelZone, 1, abi.ScheduleAnyway, fooSel())),
		withTSC(pod("in4", "", "foo", "bar"), tsc(LabelHostname, 1, abi.DoNotSchedule, fooSel()),
			tsc(LabelZone, 1, abi.DoNotSchedule, fooSel())),
	}
	type result struct {
		codes  map[string]abi.Code
		scores map[string]int64
	}
	run := func(pl *PodTopologySpread, state *plugin.CycleState, p *abi.Pod) result {
		var r result
		pf := pl.PreFilter(state, p)
		ps := pl.PreScore(state, p, nodes)
		if !pf.IsSkip() {
			r.codes = map[string]abi.Code{}
			for _, ni := range nodes {
				r.codes[ni.Node.Name] = pl.Filter(state, p, ni).Code()
			}
		}
		if !ps.IsSkip() {
			scores := make([]int64, len(nodes))
			for i, ni := range nodes {
				scores[i], _ = pl.Score(state, p, ni)
			}
			pl.NormalizeScore(state, p, scores)
			r.scores = map[string]int64{}
			for i, ni := range nodes {
				r.scores[ni.Node.Name] = scores[i]
			}
		}
		return r
	}
	recycled := newPlugin(t, "", nodes)
	var state plugin.CycleState
	for round := 0; round < 4; round++ {
		if round == 3 {
			// A sync replaces n-b (slot 1) by a node of another zone: the
			// cached topology values of the old one must not be used.
			moved := cluster([]*plugintest.NodeWrapper{node("n-b", "zone2")}, pod("other1", "n-b", "app", "x"))[0]
			moved.Slot = 1
			nodes[1] = moved // the handles share the slice
			plugintest.NumberGroups(nodes)
		}
		for _, p := range incoming {
			want := run(newPlugin(t, "", nodes), &plugin.CycleState{}, p)
			if want.codes == nil && want.scores == nil {
				t.Fatalf("%s: the fresh plugin skipped everything; the test checks nothing", p.Name)
			}
			state.Reset()
			got := run(recycled, &state, p)
			if !equalCodes(got.codes, want.codes) || !equalScores(got.scores, want.scores) {
				t.Errorf("round %d, %s: recycled %+v, fresh %+v", round, p.Name, got, want)
			}
		}
	}
}
