package nodedeclaredfeatures

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

func TestPreFilterSkipsPodsThatNeedNoFeature(t *testing.T) {
	p, _ := New(nil, &plugintest.Handle{})
	pf := p.(plugin.PreFilterPlugin)
	if st := pf.PreFilter(&plugin.CycleState{}, plugintest.MakePod().Obj()); !st.IsSkip() {
		t.Fatalf("a pod needing nothing: %v, want Skip", st)
	}
	pod := plugintest.MakePod().Obj()
	pod.RequiredFeatures = 1 << 2
	if st := pf.PreFilter(&plugin.CycleState{}, pod); st.Code() != abi.Success {
		t.Fatalf("a pod needing a feature: %v, want Success", st)
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name           string
		needs, declare uint64
		want           abi.Code
	}{
		{"needs nothing", 0, 0, abi.Success},
		{"needs nothing, node declares", 0, 0b11, abi.Success},
		{"needs one the node declares", 0b10, 0b110, abi.Success},
		{"needs two the node declares", 0b101, 0b101, abi.Success},
		{"needs one the node lacks", 0b1, 0b10, abi.UnschedulableAndUnresolvable},
		{"needs two, node has one", 0b11, 0b01, abi.UnschedulableAndUnresolvable},
		{"node declares nothing", 1 << 63, 0, abi.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := New(nil, &plugintest.Handle{})
			pod := plugintest.MakePod().Obj()
			pod.RequiredFeatures = tt.needs
			node := plugintest.MakeNode().Obj()
			node.Node.DeclaredFeatures = tt.declare
			st := p.(plugin.FilterPlugin).Filter(&plugin.CycleState{}, pod, node)
			if st.Code() != tt.want {
				t.Fatalf("code = %v, want %v", st.Code(), tt.want)
			}
			if tt.want != abi.Success && st.Message() != ErrReason {
				t.Errorf("message = %q", st.Message())
			}
		})
	}
}
