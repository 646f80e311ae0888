package nodeaffinity

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

var (
	mkPod  = plugintest.MakePod
	mkNode = plugintest.MakeNode
	mkTerm = plugintest.Term
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name      string
		args      string
		pod       *plugintest.PodWrapper
		node      *plugintest.NodeWrapper
		wantCode  abi.Code
		wantMsg   string
		wantSkip  bool
		wantPreFn abi.Code // PreFilter code when not Success/Skip
	}{
		{name: "no selector, no affinity: skipped", pod: mkPod(), node: mkNode(), wantSkip: true},
		{name: "nodeSelector matches", pod: mkPod().NodeSelector("foo", "bar"),
			node: mkNode().Label("foo", "bar").Label("baz", "x")},
		{name: "nodeSelector value differs", pod: mkPod().NodeSelector("foo", "bar"),
			node: mkNode().Label("foo", "blah"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "nodeSelector label missing", pod: mkPod().NodeSelector("foo", "bar"),
			node: mkNode(), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "In matches", pod: mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "a", "b")),
			node: mkNode().Label("zone", "b")},
		{name: "In does not match", pod: mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "a", "b")),
			node: mkNode().Label("zone", "c"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "NotIn with label absent matches", pod: mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpNotIn, "a")),
			node: mkNode()},
		{name: "NotIn with excluded value", pod: mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpNotIn, "a")),
			node: mkNode().Label("zone", "a"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "Exists", pod: mkPod().RequiredTerm(mkTerm().Expr("gpu", abi.OpExists)),
			node: mkNode().Label("gpu", "")},
		{name: "Exists, label absent", pod: mkPod().RequiredTerm(mkTerm().Expr("gpu", abi.OpExists)),
			node: mkNode(), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "DoesNotExist", pod: mkPod().RequiredTerm(mkTerm().Expr("gpu", abi.OpDoesNotExist)),
			node: mkNode()},
		{name: "DoesNotExist, label present", pod: mkPod().RequiredTerm(mkTerm().Expr("gpu", abi.OpDoesNotExist)),
			node: mkNode().Label("gpu", "1"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "Gt", pod: mkPod().RequiredTerm(mkTerm().Expr("cores", abi.OpGt, "4")),
			node: mkNode().Label("cores", "8")},
		{name: "Gt, equal is not greater", pod: mkPod().RequiredTerm(mkTerm().Expr("cores", abi.OpGt, "8")),
			node: mkNode().Label("cores", "8"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "Lt", pod: mkPod().RequiredTerm(mkTerm().Expr("cores", abi.OpLt, "10")),
			node: mkNode().Label("cores", "8")},
		{name: "Gt, node label not an integer", pod: mkPod().RequiredTerm(mkTerm().Expr("cores", abi.OpGt, "1")),
			node: mkNode().Label("cores", "eight"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "Gt, operand not an integer: term matches nothing", pod: mkPod().RequiredTerm(mkTerm().Expr("cores", abi.OpGt, "x")),
			node: mkNode().Label("cores", "8"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "Gt with two values: term matches nothing", pod: mkPod().RequiredTerm(mkTerm().Expr("cores", abi.OpGt, "1", "2")),
			node: mkNode().Label("cores", "8"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "In with no values: term matches nothing", pod: mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpIn)),
			node: mkNode().Label("zone", "a"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "invalid label key: term matches nothing", pod: mkPod().RequiredTerm(mkTerm().Expr("bad key", abi.OpExists)),
			node: mkNode().Label("bad key", ""), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "a bad term does not spoil a good one",
			pod:  mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpIn)).RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "a")),
			node: mkNode().Label("zone", "a")},
		{name: "expressions within a term are ANDed",
			pod:  mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "a").Expr("disk", abi.OpIn, "ssd")),
			node: mkNode().Label("zone", "a").Label("disk", "hdd"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "terms are ORed",
			pod:  mkPod().RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "x")).RequiredTerm(mkTerm().Expr("disk", abi.OpIn, "hdd")),
			node: mkNode().Label("zone", "a").Label("disk", "hdd")},
		{name: "an empty term matches nothing", pod: mkPod().RequiredTerm(mkTerm()),
			node: mkNode().Label("zone", "a"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "required with no terms matches nothing", pod: mkPod().EmptyRequired(),
			node: mkNode(), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "nodeSelector AND affinity: selector fails",
			pod:  mkPod().NodeSelector("foo", "bar").RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "a")),
			node: mkNode().Label("zone", "a"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "nodeSelector AND affinity: both match",
			pod:  mkPod().NodeSelector("foo", "bar").RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "a")),
			node: mkNode().Label("zone", "a").Label("foo", "bar")},
		{name: "matchFields metadata.name In", pod: mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "node1")),
			node: mkNode().Name("node1")},
		{name: "matchFields metadata.name In, other node", pod: mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "node1")),
			node: mkNode().Name("node2"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "matchFields metadata.name NotIn", pod: mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpNotIn, "node1")),
			node: mkNode().Name("node1"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "matchFields In with two values is invalid",
			pod:  mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "node1", "node2")).RequiredTerm(mkTerm().Expr("zone", abi.OpExists)),
			node: mkNode().Name("node1"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "matchFields and matchExpressions ANDed",
			pod:  mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "node1").Expr("zone", abi.OpIn, "a")),
			node: mkNode().Name("node1").Label("zone", "b"), wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "conflicting metadata.name terms rejected in PreFilter",
			pod:  mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "node1").Field("metadata.name", abi.OpIn, "node2")),
			node: mkNode().Name("node1"), wantPreFn: abi.UnschedulableAndUnresolvable,
			wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "added affinity enforced",
			args: `{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["batch"]}]}]}}}`,
			pod:  mkPod(), node: mkNode().Label("pool", "web"),
			wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonEnforced},
		{name: "added affinity satisfied, pod selector checked too",
			args: `{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["batch"]}]}]}}}`,
			pod:  mkPod().NodeSelector("foo", "bar"), node: mkNode().Label("pool", "batch"),
			wantCode: abi.UnschedulableAndUnresolvable, wantMsg: ErrReasonPod},
		{name: "added affinity satisfied",
			args: `{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["batch"]}]}]}}}`,
			pod:  mkPod(), node: mkNode().Label("pool", "batch")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(plugintest.Args(t, tt.args), &plugintest.Handle{})
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*NodeAffinity)
			state := &plugin.CycleState{}
			pod := tt.pod.Obj()
			st := pl.PreFilter(state, pod)
			if tt.wantSkip {
				if !st.IsSkip() {
					t.Fatalf("PreFilter = %v, want Skip", st.Code())
				}
				return
			}
			if st.Code() != tt.wantPreFn {
				t.Fatalf("PreFilter = %v %q, want %v", st.Code(), st.Message(), tt.wantPreFn)
			}
			if st.Code() == abi.UnschedulableAndUnresolvable && st.Message() != ErrReasonConflict {
				t.Errorf("PreFilter message %q", st.Message())
			}
			for _, s := range []*plugin.CycleState{state, {}} { // with and without PreFilter state
				got := pl.Filter(s, pod, tt.node.Obj())
				if got.Code() != tt.wantCode || got.Message() != tt.wantMsg {
					t.Errorf("Filter = %v %q, want %v %q", got.Code(), got.Message(), tt.wantCode, tt.wantMsg)
				}
			}
		})
	}
}

func TestScore(t *testing.T) {
	zoneA := mkTerm().Expr("zone", abi.OpIn, "a")
	ssd := mkTerm().Expr("disk", abi.OpIn, "ssd")
	tests := []struct {
		name     string
		args     string
		pod      *plugintest.PodWrapper
		nodes    []*plugintest.NodeWrapper
		want     []int64
		wantSkip bool
	}{
		{name: "no preferences: skipped", pod: mkPod(), nodes: []*plugintest.NodeWrapper{mkNode()}, wantSkip: true},
		{
			name: "weights summed and normalised",
			pod:  mkPod().Preferred(2, zoneA).Preferred(5, ssd),
			nodes: []*plugintest.NodeWrapper{
				mkNode().Name("n1").Label("zone", "a"),                      // 2
				mkNode().Name("n2").Label("disk", "ssd"),                    // 5
				mkNode().Name("n3").Label("zone", "a").Label("disk", "ssd"), // 7
				mkNode().Name("n4"),                                         // 0
			},
			// 100*2/7 = 28, 100*5/7 = 71, 100, 0
			want: []int64{28, 71, 100, 0},
		},
		{
			name:  "zero weight and empty terms ignored",
			pod:   mkPod().Preferred(0, zoneA).Preferred(3, mkTerm()),
			nodes: []*plugintest.NodeWrapper{mkNode().Label("zone", "a"), mkNode()},
			want:  []int64{0, 0},
		},
		{
			name: "added preferred terms count too",
			args: `{"addedAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":3,"preference":{"matchExpressions":[{"key":"disk","operator":"In","values":["ssd"]}]}}]}}`,
			pod:  mkPod().Preferred(1, zoneA),
			nodes: []*plugintest.NodeWrapper{
				mkNode().Name("n1").Label("zone", "a"),   // 1
				mkNode().Name("n2").Label("disk", "ssd"), // 3
			},
			// 100*1/3 = 33, 100
			want: []int64{33, 100},
		},
		{
			name: "added preferred terms alone",
			args: `{"addedAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":3,"preference":{"matchFields":[{"key":"metadata.name","operator":"In","values":["n2"]}]}}]}}`,
			pod:  mkPod(),
			nodes: []*plugintest.NodeWrapper{
				mkNode().Name("n1"),
				mkNode().Name("n2"),
			},
			want: []int64{0, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(plugintest.Args(t, tt.args), &plugintest.Handle{})
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*NodeAffinity)
			state := &plugin.CycleState{}
			pod := tt.pod.Obj()
			var nodes []*plugin.NodeInfo
			for _, n := range tt.nodes {
				nodes = append(nodes, n.Obj())
			}
			st := pl.PreScore(state, pod, nodes)
			if tt.wantSkip {
				if !st.IsSkip() {
					t.Fatalf("PreScore = %v, want Skip", st.Code())
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatalf("PreScore: %s", st.Message())
			}
			var got []int64
			for _, n := range nodes {
				s, st := pl.Score(state, pod, n)
				if !st.IsSuccess() {
					t.Fatal(st.Message())
				}
				got = append(got, s)
			}
			pl.NormalizeScore(state, pod, got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPreScoreInvalidPreferred(t *testing.T) {
	p, _ := New(nil, &plugintest.Handle{})
	pod := mkPod().Preferred(1, mkTerm().Expr("zone", abi.OpIn)).Obj()
	st := p.(*NodeAffinity).PreScore(&plugin.CycleState{}, pod, nil)
	if st.Code() != abi.Error {
		t.Fatalf("code = %v, want Error", st.Code())
	}
	want := "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values"
	if !strings.HasPrefix(st.Message(), want) {
		t.Errorf("message %q does not start with %q", st.Message(), want)
	}
}

func TestArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		wantErr string // prefix; "" for success
	}{
		{"defaults", "", ""},
		{"null added affinity", `{"addedAffinity":null}`, ""},
		{"valid", `{"apiVersion":"kubescheduler.config.k8s.io/v1","kind":"NodeAffinityArgs","addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"}]}]},"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchFields":[{"key":"metadata.name","operator":"In","values":["n"]}]}}]}}`, ""},
		{"unknown field", `{"addedAfinity":{}}`, "addedAfinity: unknown field"},
		{"unknown operator",
			`{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Has"}]}]}}}`,
			`addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Has"`},
		{"In without values",
			`{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{},{"matchExpressions":[{"key":"a","operator":"In"}]}]}}}`,
			"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[1].matchExpressions[0].values: Invalid value"},
		{"Lt with a non-integer",
			`{"addedAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":1,"preference":{"matchExpressions":[{"key":"a","operator":"Lt","values":["x"]}]}}]}}`,
			"addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values[0]: Invalid value"},
		{"field selector with a bad operator",
			`{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"Exists"}]}]}}}`,
			"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].operator: Unsupported value"},
		{"weight of the wrong type",
			`{"addedAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":"high"}]}}`,
			"addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: expected integer"},
		{"invalid key",
			`{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"-a","operator":"Exists"}]}]}}}`,
			"addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(plugintest.Args(t, tt.args), &plugintest.Handle{})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
			}
		})
	}
}

func TestEmptyAddedRequiredRejectsAll(t *testing.T) {
	p, err := New(plugintest.Args(t, `{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{}}}`), &plugintest.Handle{})
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*NodeAffinity)
	state := &plugin.CycleState{}
	pod := mkPod().Obj()
	if st := pl.PreFilter(state, pod); !st.IsSuccess() {
		t.Fatalf("PreFilter = %v", st.Code())
	}
	if st := pl.Filter(state, pod, mkNode().Obj()); st.Message() != ErrReasonEnforced {
		t.Errorf("Filter = %q", st.Message())
	}
}

func TestNoAllocsPerNode(t *testing.T) {
	p, _ := New(plugintest.Args(t, `{"addedAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"Exists"}]}]}}}`), &plugintest.Handle{})
	pl := p.(*NodeAffinity)
	pod := mkPod().NodeSelector("foo", "bar").
		RequiredTerm(mkTerm().Expr("zone", abi.OpIn, "a", "b").Expr("cores", abi.OpGt, "4")).
		Preferred(3, mkTerm().Expr("disk", abi.OpIn, "ssd")).Obj()
	state := &plugin.CycleState{}
	pl.PreFilter(state, pod)
	pl.PreScore(state, pod, nil)
	for _, node := range []*plugin.NodeInfo{
		mkNode().Label("pool", "x").Label("foo", "bar").Label("zone", "a").Label("cores", "8").Label("disk", "ssd").Obj(),
		mkNode().Label("pool", "x").Label("foo", "bar").Label("zone", "c").Obj(),
		mkNode().Obj(),
	} {
		if n := testing.AllocsPerRun(100, func() {
			pl.Filter(state, pod, node)
			pl.Score(state, pod, node)
		}); n != 0 {
			t.Errorf("node %v: %v allocations", node.Node.Labels, n)
		}
		// Without PreFilter/PreScore the first node compiles the pod's
		// terms and the cycle's other nodes reuse them.
		fresh := &plugin.CycleState{}
		if n := testing.AllocsPerRun(100, func() {
			pl.Filter(fresh, pod, node)
			pl.Score(fresh, pod, node)
		}); n != 0 {
			t.Errorf("node %v without PreFilter/PreScore: %v allocations", node.Node.Labels, n)
		}
	}
}

func BenchmarkFilter(b *testing.B) {
	p, _ := New(nil, &plugintest.Handle{})
	pl := p.(*NodeAffinity)
	pod := mkPod().NodeSelector("kubernetes.io/os", "linux").
		RequiredTerm(mkTerm().Expr("topology.kubernetes.io/zone", abi.OpIn, "a", "b", "c")).Obj()
	node := mkNode().Label("kubernetes.io/os", "linux").Label("kubernetes.io/arch", "amd64").
		Label("kubernetes.io/hostname", "node-1").Label("topology.kubernetes.io/region", "r").
		Label("topology.kubernetes.io/zone", "c").Label("node.kubernetes.io/instance-type", "m5").Obj()
	state := &plugin.CycleState{}
	pl.PreFilter(state, pod)
	b.ReportAllocs()
	for b.Loop() {
		pl.Filter(state, pod, node)
	}
}

// Upstream's PreFilterResult: when every required term pins metadata.name,
// PreFilter names the union of the terms' intersections; one unpinned term
// allows every node.
func TestPreFilterNamesPinnedNodes(t *testing.T) {
	tests := []struct {
		name       string
		pod        *plugintest.PodWrapper
		want       []string
		wantNarrow bool
	}{
		{name: "one term, one name", pod: mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "n1")),
			want: []string{"n1"}, wantNarrow: true},
		{name: "terms are unioned", pod: mkPod().
			RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "n2", "n1")).
			RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "n3", "n1")),
			want: []string{"n1", "n2", "n3"}, wantNarrow: true},
		{name: "fields of a term are intersected", pod: mkPod().
			RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "n1", "n2").Field("metadata.name", abi.OpIn, "n2", "n3")),
			want: []string{"n2"}, wantNarrow: true},
		{name: "an unpinned term allows every node", pod: mkPod().
			RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "n1")).
			RequiredTerm(mkTerm().Expr("zone", abi.OpExists))},
		{name: "NotIn does not narrow", pod: mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpNotIn, "n1"))},
		{name: "nodeSelector only", pod: mkPod().NodeSelector("a", "b")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(plugintest.Args(t, ""), &plugintest.Handle{})
			if err != nil {
				t.Fatal(err)
			}
			st := p.(*NodeAffinity).PreFilter(&plugin.CycleState{}, tt.pod.Obj())
			if !st.IsSuccess() {
				t.Fatalf("PreFilter = %v %q, want Success", st.Code(), st.Message())
			}
			got, narrowed := st.Narrowed()
			if narrowed != tt.wantNarrow || !slices.Equal(got, tt.want) {
				t.Fatalf("narrowed to %v (%v), want %v (%v)", got, narrowed, tt.want, tt.wantNarrow)
			}
		})
	}
	// plugintest's runner applies the narrowing as the host does.
	p, _ := New(plugintest.Args(t, ""), &plugintest.Handle{})
	pod := mkPod().RequiredTerm(mkTerm().Field("metadata.name", abi.OpIn, "n1")).Obj()
	sts := plugintest.RunFilter(t, p, pod, mkNode().Name("n1").Obj(), mkNode().Name("n2").Obj())
	if sts[0] != nil || sts[1].Code() != abi.UnschedulableAndUnresolvable || sts[1].Message() != "node(s) didn't satisfy plugin(s) [NodeAffinity]" {
		t.Fatalf("RunFilter = %v, %v %q", sts[0], sts[1].Code(), sts[1].Message())
	}
}

func TestSortNames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 200; n++ {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("node-%d", rng.IntN(50))
		}
		want := slices.Clone(names)
		slices.Sort(want)
		sortNames(names)
		if !slices.Equal(names, want) {
			t.Fatalf("n=%d: %v, want %v", n, names, want)
		}
	}
}
