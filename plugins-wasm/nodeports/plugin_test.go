package nodeports

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

const (
	tcp = abi.ProtocolTCP
	udp = abi.ProtocolUDP
)

func TestPreFilterSkip(t *testing.T) {
	p, _ := New(nil, &plugintest.Handle{})
	pl := p.(*NodePorts)
	if st := pl.PreFilter(&plugin.CycleState{}, plugintest.MakePod().Container("img").Obj()); !st.IsSkip() {
		t.Errorf("pod without host ports: got %v, want Skip", st.Code())
	}
	// A plain init container's port is released before the app starts.
	if st := pl.PreFilter(&plugin.CycleState{}, plugintest.MakePod().InitHostPort(false, "", tcp, 8080).Obj()); !st.IsSkip() {
		t.Errorf("init container port: got %v, want Skip", st.Code())
	}
	if st := pl.PreFilter(&plugin.CycleState{}, plugintest.MakePod().HostPort("", tcp, 0).Obj()); !st.IsSkip() {
		t.Errorf("hostPort 0: got %v, want Skip", st.Code())
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		pod      *plugintest.PodWrapper
		node     *plugintest.NodeWrapper
		wantCode abi.Code
	}{
		{"free port", plugintest.MakePod().HostPort("", tcp, 8080),
			plugintest.MakeNode().UsedPort("", tcp, 9090), abi.Success},
		{"same port and protocol", plugintest.MakePod().HostPort("127.0.0.1", tcp, 8080),
			plugintest.MakeNode().UsedPort("127.0.0.1", tcp, 8080), abi.Unschedulable},
		{"same port, other protocol", plugintest.MakePod().HostPort("127.0.0.1", udp, 8080),
			plugintest.MakeNode().UsedPort("127.0.0.1", tcp, 8080), abi.Success},
		{"same port, other IP", plugintest.MakePod().HostPort("127.0.0.1", tcp, 8080),
			plugintest.MakeNode().UsedPort("127.0.0.2", tcp, 8080), abi.Success},
		{"second port conflicts", plugintest.MakePod().HostPort("127.0.0.1", udp, 8080).HostPort("127.0.0.1", tcp, 8081),
			plugintest.MakeNode().UsedPort("127.0.0.1", tcp, 8081), abi.Unschedulable},
		{"wanted 0.0.0.0 clashes with any IP", plugintest.MakePod().HostPort("0.0.0.0", tcp, 8001),
			plugintest.MakeNode().UsedPort("127.0.0.1", tcp, 8001), abi.Unschedulable},
		{"wanted empty IP means 0.0.0.0", plugintest.MakePod().HostPort("", tcp, 8001),
			plugintest.MakeNode().UsedPort("10.0.0.1", tcp, 8001), abi.Unschedulable},
		{"used 0.0.0.0 clashes with a specific IP", plugintest.MakePod().HostPort("127.0.0.1", tcp, 8001),
			plugintest.MakeNode().UsedPort("0.0.0.0", tcp, 8001), abi.Unschedulable},
		{"used empty IP clashes with a specific IP", plugintest.MakePod().HostPort("127.0.0.1", tcp, 8001),
			plugintest.MakeNode().UsedPort("", tcp, 8001), abi.Unschedulable},
		{"0.0.0.0 UDP vs TCP", plugintest.MakePod().HostPort("0.0.0.0", udp, 8001),
			plugintest.MakeNode().UsedPort("127.0.0.1", tcp, 8001), abi.Success},
		{"sidecar port conflicts", plugintest.MakePod().InitHostPort(true, "", tcp, 8080),
			plugintest.MakeNode().UsedPort("", tcp, 8080), abi.Unschedulable},
		{"port bound by a pod added to the node", plugintest.MakePod().HostPort("", udp, 53),
			plugintest.MakeNode().AddPod(plugintest.MakePod().Name("dns").HostPort("", udp, 53).Obj()), abi.Unschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := New(nil, &plugintest.Handle{})
			pl := p.(*NodePorts)
			state := &plugin.CycleState{}
			pod := tt.pod.Obj()
			if st := pl.PreFilter(state, pod); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v %s", st.Code(), st.Message())
			}
			st := pl.Filter(state, pod, tt.node.Obj())
			if st.Code() != tt.wantCode {
				t.Fatalf("code = %v, want %v", st.Code(), tt.wantCode)
			}
			if tt.wantCode != abi.Success && st.Message() != ErrReason {
				t.Errorf("message = %q", st.Message())
			}
			// Without PreFilter state the answer is the same.
			if st2 := pl.Filter(&plugin.CycleState{}, pod, tt.node.Obj()); st2.Code() != tt.wantCode {
				t.Errorf("without PreFilter: code = %v", st2.Code())
			}
		})
	}
}

func TestNoAllocsPerNode(t *testing.T) {
	p, _ := New(nil, &plugintest.Handle{})
	pl := p.(*NodePorts)
	pod := plugintest.MakePod().HostPort("", tcp, 80).HostPort("10.0.0.1", udp, 53).Obj()
	state := &plugin.CycleState{}
	pl.PreFilter(state, pod)
	for _, node := range []*plugin.NodeInfo{
		plugintest.MakeNode().UsedPort("", tcp, 8080).UsedPort("10.0.0.2", udp, 53).Obj(),
		plugintest.MakeNode().UsedPort("", tcp, 80).Obj(),
	} {
		if n := testing.AllocsPerRun(100, func() { pl.Filter(state, pod, node) }); n != 0 {
			t.Errorf("%v allocations", n)
		}
		// Without PreFilter the first node computes the state and the
		// cycle's other nodes reuse it.
		fresh := &plugin.CycleState{}
		if n := testing.AllocsPerRun(100, func() { pl.Filter(fresh, pod, node) }); n != 0 {
			t.Errorf("without PreFilter: %v allocations", n)
		}
	}
}
