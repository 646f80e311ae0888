package nodename

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
		{"no node name", plugintest.MakePod().Obj(), plugintest.MakeNode().Name("foo").Obj(), abi.Success},
		{"same node name", plugintest.MakePod().NodeName("foo").Obj(), plugintest.MakeNode().Name("foo").Obj(), abi.Success},
		{"different node name", plugintest.MakePod().NodeName("bar").Obj(), plugintest.MakeNode().Name("foo").Obj(), abi.UnschedulableAndUnresolvable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(nil, &plugintest.Handle{})
			if err != nil {
				t.Fatal(err)
			}
			st := p.(plugin.FilterPlugin).Filter(&plugin.CycleState{}, tt.pod, tt.node)
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if tt.wantCode != abi.Success && st.Message() != ErrReason {
				t.Errorf("message = %q, want %q", st.Message(), ErrReason)
			}
		})
	}
}
