package nodeunschedulable

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		pod      *abi.Pod
		node     *plugin.NodeInfo
		wantCode abi.Code
	}{
		{"schedulable node", plugintest.MakePod().Obj(), plugintest.MakeNode().Obj(), abi.Success},
		{"cordoned node", plugintest.MakePod().Obj(), plugintest.MakeNode().Unschedulable().Obj(), abi.UnschedulableAndUnresolvable},
		{"cordoned node, pod tolerates with Exists",
			plugintest.MakePod().Toleration(TaintNodeUnschedulable, abi.TolerationExists, "", abi.EffectNoSchedule).Obj(),
			plugintest.MakeNode().Unschedulable().Obj(), abi.Success},
		{"cordoned node, pod tolerates with empty effect",
			plugintest.MakePod().Toleration(TaintNodeUnschedulable, abi.TolerationExists, "", abi.EffectAll).Obj(),
			plugintest.MakeNode().Unschedulable().Obj(), abi.Success},
		{"cordoned node, empty key Exists tolerates everything",
			plugintest.MakePod().Toleration("", abi.TolerationExists, "", abi.EffectAll).Obj(),
			plugintest.MakeNode().Unschedulable().Obj(), abi.Success},
		{"cordoned node, toleration with wrong effect",
			plugintest.MakePod().Toleration(TaintNodeUnschedulable, abi.TolerationExists, "", abi.EffectNoExecute).Obj(),
			plugintest.MakeNode().Unschedulable().Obj(), abi.UnschedulableAndUnresolvable},
		{"cordoned node, Equal with a value does not match the empty taint value",
			plugintest.MakePod().Toleration(TaintNodeUnschedulable, abi.TolerationEqual, "x", abi.EffectNoSchedule).Obj(),
			plugintest.MakeNode().Unschedulable().Obj(), abi.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := New(nil, &plugintest.Handle{})
			st := p.(plugin.FilterPlugin).Filter(&plugin.CycleState{}, tt.pod, tt.node)
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if tt.wantCode != abi.Success && st.Message() != ErrReasonUnschedulable {
				t.Errorf("message = %q", st.Message())
			}
		})
	}
}
