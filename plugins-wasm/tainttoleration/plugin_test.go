package tainttoleration

import (
	"slices"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		pod      *plugintest.PodWrapper
		node     *plugintest.NodeWrapper
		wantCode abi.Code
		// wantTaint is the "KEY: VALUE" the rejection names.
		wantTaint string
	}{
		{"no taints", plugintest.MakePod(), plugintest.MakeNode(), abi.Success, ""},
		{"NoSchedule taint, no toleration", plugintest.MakePod(),
			plugintest.MakeNode().Taint("dedicated", "user1", abi.EffectNoSchedule), abi.UnschedulableAndUnresolvable, "dedicated: user1"},
		{"NoExecute taint, no toleration", plugintest.MakePod(),
			plugintest.MakeNode().Taint("dedicated", "user1", abi.EffectNoExecute), abi.UnschedulableAndUnresolvable, "dedicated: user1"},
		{"PreferNoSchedule taint does not filter", plugintest.MakePod(),
			plugintest.MakeNode().Taint("dedicated", "user1", abi.EffectPreferNoSchedule), abi.Success, ""},
		{"Equal toleration with matching value",
			plugintest.MakePod().Toleration("dedicated", abi.TolerationEqual, "user1", abi.EffectNoSchedule),
			plugintest.MakeNode().Taint("dedicated", "user1", abi.EffectNoSchedule), abi.Success, ""},
		{"Equal toleration with other value",
			plugintest.MakePod().Toleration("dedicated", abi.TolerationEqual, "user2", abi.EffectNoSchedule),
			plugintest.MakeNode().Taint("dedicated", "user1", abi.EffectNoSchedule), abi.UnschedulableAndUnresolvable, "dedicated: user1"},
		{"Exists toleration ignores the value",
			plugintest.MakePod().Toleration("foo", abi.TolerationExists, "", abi.EffectNoSchedule),
			plugintest.MakeNode().Taint("foo", "bar", abi.EffectNoSchedule), abi.Success, ""},
		{"empty key with Exists tolerates every taint",
			plugintest.MakePod().Toleration("", abi.TolerationExists, "", abi.EffectAll),
			plugintest.MakeNode().Taint("a", "1", abi.EffectNoSchedule).Taint("b", "2", abi.EffectNoExecute), abi.Success, ""},
		{"empty effect tolerates every effect",
			plugintest.MakePod().Toleration("foo", abi.TolerationEqual, "bar", abi.EffectAll),
			plugintest.MakeNode().Taint("foo", "bar", abi.EffectNoExecute), abi.Success, ""},
		{"toleration effect must match",
			plugintest.MakePod().Toleration("foo", abi.TolerationEqual, "bar", abi.EffectNoExecute),
			plugintest.MakeNode().Taint("foo", "bar", abi.EffectNoSchedule), abi.UnschedulableAndUnresolvable, "foo: bar"},
		{"second taint untolerated",
			plugintest.MakePod().Toleration("a", abi.TolerationExists, "", abi.EffectAll),
			plugintest.MakeNode().Taint("a", "1", abi.EffectNoSchedule).Taint("b", "2", abi.EffectNoSchedule), abi.UnschedulableAndUnresolvable, "b: 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := New(nil, &plugintest.Handle{})
			st := p.(plugin.FilterPlugin).Filter(&plugin.CycleState{}, tt.pod.Obj(), tt.node.Obj())
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if want := ErrReasonUntolerated; tt.wantCode != abi.Success && st.Message() != want {
				t.Errorf("message = %q, want %q", st.Message(), want)
			}
		})
	}
}

// TestFilterReasonIsUpstreams: every rejected node gets kube-scheduler
// v1.35's one reason, whatever the taint, and shares one status.
func TestFilterReasonIsUpstreams(t *testing.T) {
	p, _ := New(nil, &plugintest.Handle{})
	pl := p.(*TaintToleration)
	pod := plugintest.MakePod().Obj()
	state := &plugin.CycleState{}
	gpu := pl.Filter(state, pod, plugintest.MakeNode().Name("n1").Taint("dedicated", "gpu", abi.EffectNoSchedule).Obj())
	tpu := pl.Filter(state, pod, plugintest.MakeNode().Name("n3").Taint("dedicated", "tpu", abi.EffectNoExecute).Obj())
	if gpu != tpu {
		t.Error("nodes rejected by different taints do not share the one status")
	}
	if got, want := gpu.Message(), "node(s) had untolerated taint(s)"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name  string
		pod   *plugintest.PodWrapper
		nodes []*plugintest.NodeWrapper
		want  []int64
	}{
		{
			name: "the node with fewer intolerable PreferNoSchedule taints wins",
			pod:  plugintest.MakePod().Toleration("foo", abi.TolerationEqual, "bar", abi.EffectPreferNoSchedule),
			nodes: []*plugintest.NodeWrapper{
				plugintest.MakeNode().Name("n1").Taint("foo", "bar", abi.EffectPreferNoSchedule),
				plugintest.MakeNode().Name("n2").Taint("foo", "blah", abi.EffectPreferNoSchedule),
			},
			// raw counts 0, 1 -> reversed: 100, 0
			want: []int64{100, 0},
		},
		{
			name: "only PreferNoSchedule taints count",
			pod:  plugintest.MakePod(),
			nodes: []*plugintest.NodeWrapper{
				plugintest.MakeNode().Name("n1"),
				plugintest.MakeNode().Name("n2").Taint("a", "1", abi.EffectPreferNoSchedule).Taint("b", "2", abi.EffectPreferNoSchedule),
				plugintest.MakeNode().Name("n3").Taint("a", "1", abi.EffectPreferNoSchedule).Taint("c", "3", abi.EffectNoSchedule),
			},
			// raw 0, 2, 1 -> 100 - 100*s/2 = 100, 0, 50
			want: []int64{100, 0, 50},
		},
		{
			name: "a NoSchedule toleration does not tolerate PreferNoSchedule taints",
			pod:  plugintest.MakePod().Toleration("a", abi.TolerationExists, "", abi.EffectNoSchedule),
			nodes: []*plugintest.NodeWrapper{
				plugintest.MakeNode().Name("n1").Taint("a", "1", abi.EffectPreferNoSchedule),
				plugintest.MakeNode().Name("n2"),
			},
			want: []int64{0, 100},
		},
		{
			name: "empty effect toleration tolerates PreferNoSchedule",
			pod:  plugintest.MakePod().Toleration("a", abi.TolerationExists, "", abi.EffectAll),
			nodes: []*plugintest.NodeWrapper{
				plugintest.MakeNode().Name("n1").Taint("a", "1", abi.EffectPreferNoSchedule),
				plugintest.MakeNode().Name("n2"),
			},
			// all zero -> reversed to max
			want: []int64{100, 100},
		},
		{
			name: "three levels",
			pod:  plugintest.MakePod(),
			nodes: []*plugintest.NodeWrapper{
				plugintest.MakeNode().Name("n1").Taint("a", "", abi.EffectPreferNoSchedule),
				plugintest.MakeNode().Name("n2").Taint("a", "", abi.EffectPreferNoSchedule).Taint("b", "", abi.EffectPreferNoSchedule).Taint("c", "", abi.EffectPreferNoSchedule),
				plugintest.MakeNode().Name("n3"),
			},
			// raw 1, 3, 0 -> 100 - 100*1/3 = 67, 0, 100
			want: []int64{67, 0, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := New(nil, &plugintest.Handle{})
			pl := p.(*TaintToleration)
			state := &plugin.CycleState{}
			var nodes []*plugin.NodeInfo
			for _, n := range tt.nodes {
				nodes = append(nodes, n.Obj())
			}
			pod := tt.pod.Obj()
			if st := pl.PreScore(state, pod, nodes); !st.IsSuccess() {
				t.Fatal(st.Message())
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

func TestNoAllocsPerNode(t *testing.T) {
	p, _ := New(nil, &plugintest.Handle{})
	pl := p.(*TaintToleration)
	pod := plugintest.MakePod().Toleration("a", abi.TolerationExists, "", abi.EffectAll).Obj()
	node := plugintest.MakeNode().Taint("a", "1", abi.EffectNoSchedule).Taint("b", "2", abi.EffectPreferNoSchedule).Taint("c", "3", abi.EffectNoExecute).Obj()
	state := &plugin.CycleState{}
	pl.PreScore(state, pod, nil)
	if n := testing.AllocsPerRun(100, func() {
		pl.Filter(state, pod, node)
		pl.Score(state, pod, node)
	}); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
