package taintviolation

import (
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

func tol(key, value string, effect abi.TaintEffect) abi.Toleration {
	op := abi.TolerationEqual
	if value == "" {
		op = abi.TolerationExists
	}
	return abi.Toleration{Key: key, Operator: op, Value: value, Effect: effect}
}

// node builds an eviction node with the taints and pods, every pod a
// candidate.
func node(taints []abi.Taint, pods ...abi.Pod) *plugin.EvictionNode {
	ni := &plugin.NodeInfo{}
	ni.Node.Name = "n1"
	ni.Node.Taints = taints
	ni.Pods = pods
	n := &plugin.EvictionNode{NodeInfo: ni, Obs: &abi.NodeObservation{}}
	for i := range pods {
		n.Candidates = append(n.Candidates, uint32(i))
	}
	return n
}

func pod(name string, prio int32, tols ...abi.Toleration) abi.Pod {
	return abi.Pod{Name: name, Namespace: "ns", Priority: prio, Tolerations: tols}
}

func TestGetEvictPods(t *testing.T) {
	gpu := abi.Taint{Key: "dedicated", Value: "gpu", Effect: abi.EffectNoSchedule}
	soft := abi.Taint{Key: "spot", Value: "true", Effect: abi.EffectPreferNoSchedule}
	pressure := abi.Taint{Key: "eviction.wasmsched.io/MemoryPressure", Effect: abi.EffectNoSchedule}
	exec := abi.Taint{Key: "broken", Effect: abi.EffectNoExecute}
	pods := []abi.Pod{
		pod("web", 100),
		pod("gpu-job", 0, tol("dedicated", "gpu", abi.EffectNoSchedule)),
		pod("batch", 0),
		pod("any", 0, abi.Toleration{Operator: abi.TolerationExists}),
		pod("wrong-value", 50, tol("dedicated", "fpga", abi.EffectAll)),
	}
	tests := []struct {
		name   string
		args   string
		taints []abi.Taint
		cands  []uint32 // nil: all
		limit  int
		want   string // name:reason-taint, in order
	}{
		{name: "no taints", limit: 5},
		{name: "NoSchedule", taints: []abi.Taint{gpu}, limit: 5,
			want: "batch:dedicated=gpu:NoSchedule,wrong-value:dedicated=gpu:NoSchedule,web:dedicated=gpu:NoSchedule"},
		{name: "limit", taints: []abi.Taint{gpu}, limit: 1, want: "batch:dedicated=gpu:NoSchedule"},
		{name: "only candidates", taints: []abi.Taint{gpu}, cands: []uint32{0, 1}, limit: 5, want: "web:dedicated=gpu:NoSchedule"},
		{name: "PreferNoSchedule ignored by default", taints: []abi.Taint{soft}, limit: 5},
		{name: "PreferNoSchedule included", args: `{"includePreferNoSchedule": true}`, taints: []abi.Taint{soft}, limit: 5,
			want: "batch:spot=true:PreferNoSchedule,gpu-job:spot=true:PreferNoSchedule,wrong-value:spot=true:PreferNoSchedule,web:spot=true:PreferNoSchedule"},
		{name: "coordinator taints never count", taints: []abi.Taint{pressure}, limit: 5},
		{name: "NoExecute is the taint manager's", taints: []abi.Taint{exec}, limit: 5},
		{name: "excluded by key", args: `{"excludedTaints": ["dedicated"]}`, taints: []abi.Taint{gpu}, limit: 5},
		{name: "excluded by key=value", args: `{"excludedTaints": ["dedicated=gpu"]}`, taints: []abi.Taint{gpu}, limit: 5},
		{name: "other value not excluded", args: `{"excludedTaints": ["dedicated=cpu"]}`, taints: []abi.Taint{gpu}, cands: []uint32{2}, limit: 5,
			want: "batch:dedicated=gpu:NoSchedule"},
		{name: "first untolerated taint named", taints: []abi.Taint{pressure, gpu, {Key: "zone", Value: "", Effect: abi.EffectNoSchedule}}, cands: []uint32{1}, limit: 5,
			want: "gpu-job:zone=:NoSchedule"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plugintest.New(t, Registration, tt.args, nil).(plugin.EvictPodsPlugin)
			n := node(tt.taints, pods...)
			if tt.cands != nil {
				n.Candidates = tt.cands
			}
			got, cond := p.GetEvictPods(n, tt.limit)
			var s []string
			for _, e := range got {
				if !e.Force || e.GracePeriodSeconds != nil {
					t.Errorf("%+v: want forced with the pod's own grace period", e)
				}
				name := n.Pods[e.Pod].Name
				prefix := "pod does not tolerate taint "
				if !strings.HasPrefix(e.Reason, prefix) || !strings.HasSuffix(e.Reason, " on node n1") {
					t.Errorf("reason %q", e.Reason)
				}
				s = append(s, name+":"+strings.TrimSuffix(strings.TrimPrefix(e.Reason, prefix), " on node n1"))
			}
			if got := strings.Join(s, ","); got != tt.want || cond != nil {
				t.Errorf("got %s (condition %v)\nwant %s", got, cond, tt.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	bad := map[string]string{
		`{"includePreferNoSchedule": "yes"}`: "includePreferNoSchedule",
		`{"excludedTaints": "dedicated"}`:    "excludedTaints",
		`{"excludedTaints": ["ok", ""]}`:     "excludedTaints[1]",
		`{"excludedTaints": ["=gpu"]}`:       "excludedTaints[0]",
		`{"excludedTaints": [3]}`:            "excludedTaints[0]",
		`{"excludeTaints": ["dedicated"]}`:   "excludeTaints",
		`[1]`:                                "args",
	}
	for args, field := range bad {
		_, err := Registration.New(plugintest.Args(t, args), &plugintest.Handle{})
		if err == nil || !strings.HasPrefix(err.Error(), field+":") {
			t.Errorf("args %s: error %v, want one naming %s", args, err, field)
		}
	}
	p := plugintest.New(t, Registration, `{"includePreferNoSchedule": true, "excludedTaints": ["a", "b=c", "d="]}`, nil).(*RemovePodsViolatingNodeTaints)
	want := []excludedTaint{{key: "a", anyValue: true}, {key: "b", value: "c"}, {key: "d", value: ""}}
	if !p.preferNoSchedule || len(p.excluded) != 3 || p.excluded[0] != want[0] || p.excluded[1] != want[1] || p.excluded[2] != want[2] {
		t.Errorf("parsed %+v", p)
	}
}
