package noderesources

import (
	"slices"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

var (
	res    = plugintest.Res
	mkPod  = plugintest.MakePod
	mkNode = plugintest.MakeNode
)

const (
	gpu  = "example.com/gpu"
	fpga = "example.com/fpga"
)

// node10x20 has 10 millicores, 20 bytes, 5 example.com/gpu and 20 bytes of
// ephemeral storage allocatable, with used already requested (as a pod).
func node10x20(used abi.Resources) *plugintest.NodeWrapper {
	n := mkNode().Capacity(res(10, 20, gpu, 5, abi.ResourceEphemeralStorage, 20)).AllowedPods(32)
	if used.MilliCPU != 0 || used.Memory != 0 || used.EphemeralStorage != 0 || len(used.Scalars) != 0 {
		n.AddPod(mkPod().Name("existing").Req(used).Obj())
	}
	return n
}

func TestFitFilter(t *testing.T) {
	tests := []struct {
		name        string
		args        string
		pod         *plugintest.PodWrapper
		node        *plugintest.NodeWrapper
		wantCode    abi.Code
		wantReasons []string
	}{
		{name: "no resources requested always fits",
			pod: mkPod(), node: node10x20(res(10, 20))},
		{name: "too many resources fails",
			pod: mkPod().Req(res(1, 1)), node: node10x20(res(10, 20)),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonInsufficientCPU, ReasonInsufficientMemory}},
		{name: "fits exactly",
			pod: mkPod().Req(res(1, 1)), node: node10x20(res(9, 19))},
		{name: "init container cpu counts",
			pod: mkPod().Req(res(1, 1)).InitReq(res(3, 1)), node: node10x20(res(8, 19)),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonInsufficientCPU}},
		{name: "highest init container counts",
			pod: mkPod().Req(res(1, 1)).InitReq(res(3, 1)).InitReq(res(2, 1)), node: node10x20(res(7, 19))},
		{name: "highest init container counts (fails)",
			pod: mkPod().Req(res(1, 1)).InitReq(res(2, 1)).InitReq(res(4, 1)), node: node10x20(res(7, 19)),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonInsufficientCPU}},
		{name: "sidecar adds to the app containers",
			pod: mkPod().Req(res(1, 1)).SidecarReq(res(1, 1)), node: node10x20(res(9, 18)),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonInsufficientCPU}},
		{name: "init container after a sidecar runs beside it",
			// peak: sidecar 2 + init 3 = 5 cpu; steady: 1 + 2 = 3.
			pod: mkPod().Req(res(1, 0)).SidecarReq(res(2, 0)).InitReq(res(3, 0)), node: node10x20(res(6, 0)),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonInsufficientCPU}},
		{name: "init container after a sidecar fits",
			pod: mkPod().Req(res(1, 0)).SidecarReq(res(2, 0)).InitReq(res(3, 0)), node: node10x20(res(5, 0))},
		{name: "overhead counts",
			pod: mkPod().Req(res(1, 1)).Overhead(res(3, 16)), node: node10x20(res(5, 5)),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonInsufficientMemory}},
		{name: "overhead fits",
			pod: mkPod().Req(res(1, 1)).Overhead(res(3, 13)), node: node10x20(res(5, 5))},
		{name: "request above allocatable is unresolvable",
			pod: mkPod().Req(res(11, 1)), node: node10x20(res(0, 0)),
			wantCode: abi.UnschedulableAndUnresolvable, wantReasons: []string{ReasonInsufficientCPU}},
		{name: "one unresolvable reason makes the status unresolvable",
			pod: mkPod().Req(res(11, 2)), node: node10x20(res(0, 19)),
			wantCode: abi.UnschedulableAndUnresolvable, wantReasons: []string{ReasonInsufficientCPU, ReasonInsufficientMemory}},
		{name: "too many pods",
			pod: mkPod().Req(res(1, 1)), node: node10x20(res(0, 0)).AllowedPods(1).PodCount(1),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonTooManyPods}},
		{name: "too many pods, empty pod still checked",
			pod: mkPod(), node: node10x20(res(0, 0)).AllowedPods(1).PodCount(1),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonTooManyPods}},
		{name: "too many pods and insufficient resources, all reasons in order",
			pod:      mkPod().Req(res(1, 1, abi.ResourceEphemeralStorage, 5, gpu, 3)),
			node:     node10x20(res(10, 20, abi.ResourceEphemeralStorage, 16, gpu, 3)).AllowedPods(1),
			wantCode: abi.Unschedulable,
			wantReasons: []string{ReasonTooManyPods, ReasonInsufficientCPU, ReasonInsufficientMemory,
				ReasonInsufficientEphemeral, "Insufficient " + gpu}},
		{name: "ephemeral storage",
			pod: mkPod().Req(res(0, 0, abi.ResourceEphemeralStorage, 10)), node: node10x20(res(0, 0, abi.ResourceEphemeralStorage, 15)),
			wantCode: abi.Unschedulable, wantReasons: []string{ReasonInsufficientEphemeral}},
		{name: "extended resource fits",
			pod: mkPod().Req(res(1, 1, gpu, 2)), node: node10x20(res(0, 0, gpu, 3))},
		{name: "extended resource insufficient",
			pod: mkPod().Req(res(1, 1, gpu, 3)), node: node10x20(res(0, 0, gpu, 3)),
			wantCode: abi.Unschedulable, wantReasons: []string{"Insufficient " + gpu}},
		{name: "extended resource in an init container",
			pod: mkPod().Req(res(1, 1, gpu, 1)).InitReq(res(0, 0, gpu, 3)), node: node10x20(res(0, 0, gpu, 3)),
			wantCode: abi.Unschedulable, wantReasons: []string{"Insufficient " + gpu}},
		{name: "extended resource the node lacks is unresolvable",
			pod: mkPod().Req(res(1, 1, fpga, 1)), node: node10x20(res(0, 0)),
			wantCode: abi.UnschedulableAndUnresolvable, wantReasons: []string{"Insufficient " + fpga}},
		{name: "ignoredResources skips an extended resource",
			args: `{"ignoredResources":["example.com/fpga"]}`,
			pod:  mkPod().Req(res(1, 1, fpga, 1)), node: node10x20(res(0, 0))},
		{name: "ignoredResourceGroups skips a group",
			args: `{"ignoredResourceGroups":["example.com"]}`,
			pod:  mkPod().Req(res(1, 1, fpga, 1, gpu, 9)), node: node10x20(res(0, 0))},
		{name: "ignoredResourceGroups other group",
			args: `{"ignoredResourceGroups":["example.org"]}`,
			pod:  mkPod().Req(res(1, 1, fpga, 1)), node: node10x20(res(0, 0)),
			wantCode: abi.UnschedulableAndUnresolvable, wantReasons: []string{"Insufficient " + fpga}},
		{name: "hugepages are not extended resources and cannot be ignored",
			args: `{"ignoredResources":["hugepages-2Mi"]}`,
			pod:  mkPod().Req(res(1, 1, "hugepages-2Mi", 1)), node: node10x20(res(0, 0)),
			wantCode: abi.UnschedulableAndUnresolvable, wantReasons: []string{"Insufficient hugepages-2Mi"}},
		{name: "zero scalar request is not checked",
			pod: mkPod().Req(res(1, 1, fpga, 0)), node: node10x20(res(0, 0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewFit(plugintest.Args(t, tt.args), &plugintest.Handle{})
			if err != nil {
				t.Fatal(err)
			}
			f := p.(*Fit)
			pod := tt.pod.Obj()
			state := &plugin.CycleState{}
			if st := f.PreFilter(state, pod); !st.IsSuccess() {
				t.Fatal(st.Message())
			}
			for _, s := range []*plugin.CycleState{state, {}} { // with and without PreFilter state
				st := f.Filter(s, pod, tt.node.Obj())
				if st.Code() != tt.wantCode || !slices.Equal(st.Reasons(), tt.wantReasons) {
					t.Errorf("Filter = %v %q, want %v %q", st.Code(), st.Reasons(), tt.wantCode, tt.wantReasons)
				}
			}
		})
	}
}

func TestFitFilterAllocs(t *testing.T) {
	p, _ := NewFit(nil, &plugintest.Handle{})
	f := p.(*Fit)
	pod := mkPod().Req(res(1, 1, gpu, 2)).Obj()
	state := &plugin.CycleState{}
	f.PreFilter(state, pod)
	fits := node10x20(res(1, 1)).Obj()
	short := node10x20(res(1, 1, gpu, 4)).Obj()
	for name, tc := range map[string]struct {
		node    *plugin.NodeInfo
		reasons int
	}{
		"fits":              {fits, 0},
		"one reason":        {short, 1},
		"two fixed reasons": {node10x20(res(10, 20)).Obj(), 2},
		"scalar and fixed":  {node10x20(res(10, 1, gpu, 4)).Obj(), 2},
		"all reasons":       {node10x20(res(10, 20, gpu, 4)).PodCount(32).Obj(), 4},
	} {
		node := tc.node
		st0 := f.Filter(state, pod, node)
		if len(st0.Reasons()) != tc.reasons {
			t.Errorf("%s: reasons %q, want %d", name, st0.Reasons(), tc.reasons)
		}
		var st *plugin.Status
		if n := testing.AllocsPerRun(100, func() { st = f.Filter(state, pod, node) }); n != 0 {
			t.Errorf("%s: Filter allocates %v times", name, n)
		}
		if st != st0 {
			t.Errorf("%s: status not shared across nodes", name)
		}
		// Without PreFilter the first node computes the requests and the
		// cycle's other nodes reuse them.
		fresh := &plugin.CycleState{}
		if n := testing.AllocsPerRun(100, func() { st = f.Filter(fresh, pod, node) }); n != 0 {
			t.Errorf("%s without PreFilter: Filter allocates %v times", name, n)
		}
		if st.Code() != st0.Code() || !slices.Equal(st.Reasons(), st0.Reasons()) {
			t.Errorf("%s without PreFilter: %v %q, want %v %q", name, st.Code(), st.Reasons(), st0.Code(), st0.Reasons())
		}
	}
}

// scoreAll runs PreScore, Score and (if any) NormalizeScore over nodes.
func scoreAll(t *testing.T, p plugin.Plugin, pod *abi.Pod, nodes []*plugintest.NodeWrapper) ([]int64, *plugin.Status) {
	t.Helper()
	var infos []*plugin.NodeInfo
	for _, n := range nodes {
		infos = append(infos, n.Obj())
	}
	state := &plugin.CycleState{}
	if st := p.(plugin.PreScorePlugin).PreScore(state, pod, infos); !st.IsSuccess() {
		return nil, st
	}
	var scores []int64
	for _, n := range infos {
		s, st := p.(plugin.ScorePlugin).Score(state, pod, n)
		if !st.IsSuccess() {
			t.Fatal(st.Message())
		}
		scores = append(scores, s)
	}
	return scores, nil
}

func TestFitScore(t *testing.T) {
	const mi = 1024 * 1024
	// The pod of upstream's examples: 3000m CPU, 5000 bytes memory.
	pod := mkPod().Req(res(1000, 2000)).Req(res(2000, 3000))
	small := func() *plugintest.NodeWrapper { return mkNode().Name("small").Capacity(res(4000, 10000)) }
	large := func() *plugintest.NodeWrapper { return mkNode().Name("large").Capacity(res(6000, 10000)) }
	tests := []struct {
		name  string
		args  string
		pod   *plugintest.PodWrapper
		nodes []*plugintest.NodeWrapper
		want  []int64
	}{
		{name: "LeastAllocated by default",
			pod: pod, nodes: []*plugintest.NodeWrapper{small(), large()},
			// small: cpu (4000-3000)*100/4000 = 25, mem (10000-5000)*100/10000 = 50 -> 75/2 = 37
			// large: cpu 3000*100/6000 = 50, mem 50 -> 50
			want: []int64{37, 50}},
		{name: "LeastAllocated with weights",
			args: `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":2},{"name":"memory","weight":1}]}}`,
			pod:  pod, nodes: []*plugintest.NodeWrapper{small(), large()},
			// small: (25*2 + 50)/3 = 33; large: (50*2 + 50)/3 = 50
			want: []int64{33, 50}},
		{name: "LeastAllocated counts existing pods' non-zero requests",
			pod:   pod,
			nodes: []*plugintest.NodeWrapper{large().AddPod(mkPod().Name("bare").Container("x").Obj())},
			// cpu: 100 (default) + 3000 of 6000 -> 2900*100/6000 = 48;
			// mem: 200Mi default + 5000 > 10000 -> 0. (48+0)/2 = 24
			want: []int64{24}},
		{name: "LeastAllocated, pod without requests uses the defaults",
			pod:   mkPod().Container("x"),
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(1000, 2000*mi))},
			// cpu (1000-100)*100/1000 = 90, mem (2000-200)*100/2000 = 90
			want: []int64{90}},
		{name: "LeastAllocated, over capacity scores 0",
			pod:   mkPod().Req(res(5000, 5000)),
			nodes: []*plugintest.NodeWrapper{small()},
			// cpu 5000 > 4000 -> 0, mem 50 -> 25
			want: []int64{25}},
		{name: "MostAllocated",
			args: `{"scoringStrategy":{"type":"MostAllocated"}}`,
			pod:  pod, nodes: []*plugintest.NodeWrapper{small(), large()},
			// small: cpu 3000*100/4000 = 75, mem 50 -> 62; large: 50, 50 -> 50
			want: []int64{62, 50}},
		{name: "MostAllocated caps requests at capacity",
			args:  `{"scoringStrategy":{"type":"MostAllocated"}}`,
			pod:   mkPod().Req(res(5000, 5000)),
			nodes: []*plugintest.NodeWrapper{small()},
			// cpu capped -> 100, mem 50 -> 75
			want: []int64{75}},
		{name: "MostAllocated with an extended resource",
			args: `{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":1},{"name":"memory","weight":1},{"name":"example.com/gpu","weight":3}]}}`,
			pod:  mkPod().Req(res(1000, 2000, gpu, 1)),
			nodes: []*plugintest.NodeWrapper{
				mkNode().Capacity(res(4000, 10000, gpu, 4)).AddPod(mkPod().Name("g").Req(res(0, 0, gpu, 1)).Obj()),
			},
			// cpu (100 default of the gpu pod + 1000)*100/4000 = 27; mem (200Mi+2000 > 10000) capped -> 100;
			// gpu (1+1)*100/4 = 50 -> (27 + 100 + 150)/5 = 55
			want: []int64{55}},
		{name: "extended resource the pod does not request is skipped",
			args:  `{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":1},{"name":"memory","weight":1},{"name":"example.com/gpu","weight":3}]}}`,
			pod:   mkPod().Req(res(1000, 2000)),
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(4000, 10000, gpu, 4))},
			// cpu 25, mem 20 -> 45/2 = 22
			want: []int64{22}},
		{name: "resource with no allocatable is skipped",
			args:  `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":1},{"name":"ephemeral-storage","weight":5}]}}`,
			pod:   mkPod().Req(res(1000, 0, abi.ResourceEphemeralStorage, 10)),
			nodes: []*plugintest.NodeWrapper{small()},
			// only cpu: (4000-1000)*100/4000 = 75
			want: []int64{75}},
		{name: "RequestedToCapacityRatio bin packing rounds half up",
			args: `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":100,"score":10}]}}}`,
			pod:  pod, nodes: []*plugintest.NodeWrapper{small(), large()},
			// small: cpu 75, mem 50 -> round(62.5) = 63; large: 50, 50 -> 50
			want: []int64{63, 50}},
		{name: "RequestedToCapacityRatio spreading",
			args: `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":10},{"utilization":100,"score":0}]}}}`,
			pod:  pod, nodes: []*plugintest.NodeWrapper{small(), large()},
			// small: cpu 25, mem 50 -> round(37.5) = 38; large: 50
			want: []int64{38, 50}},
		{name: "RequestedToCapacityRatio three-point shape",
			args: `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":50,"score":10},{"utilization":100,"score":0}]}}}`,
			pod:  pod, nodes: []*plugintest.NodeWrapper{small()},
			// cpu util 75 -> 100 + (0-100)*(75-50)/50 = 50; mem util 50 -> 100 -> 75
			want: []int64{75}},
		{name: "RequestedToCapacityRatio ignores zero scores in the average",
			args:  `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":100,"score":10}]}}}`,
			pod:   mkPod().Req(res(2000, 0)),
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(4000, 100*1024*mi))},
			// cpu 50; mem 200Mi of 100Gi -> utilization 0 -> score 0, left out: 50/1
			want: []int64{50}},
		{name: "RequestedToCapacityRatio over capacity scores the 100% point",
			args:  `{"scoringStrategy":{"type":"RequestedToCapacityRatio","requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":80,"score":4}]}}}`,
			pod:   mkPod().Req(res(5000, 5000)),
			nodes: []*plugintest.NodeWrapper{small()},
			// cpu over -> f(100) = 40 (flat after the last point); mem 50 -> 0 + 40*50/80 = 25 -> round(32.5) = 33
			want: []int64{33}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewFit(plugintest.Args(t, tt.args), &plugintest.Handle{})
			if err != nil {
				t.Fatal(err)
			}
			got, st := scoreAll(t, p, tt.pod.Obj(), tt.nodes)
			if !st.IsSuccess() {
				t.Fatal(st.Message())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBalancedAllocation(t *testing.T) {
	pod := mkPod().Req(res(1000, 2000)).Req(res(2000, 3000)) // 3000m, 5000
	tests := []struct {
		name     string
		args     string
		pod      *plugintest.PodWrapper
		nodes    []*plugintest.NodeWrapper
		want     []int64
		wantSkip bool
	}{
		{name: "best-effort pod skips",
			pod: mkPod().Container("x"), nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(4000, 10000))}, wantSkip: true},
		{name: "two resources",
			pod: pod,
			nodes: []*plugintest.NodeWrapper{
				mkNode().Name("small").Capacity(res(4000, 10000)),
				mkNode().Name("large").Capacity(res(6000, 10000)),
			},
			// balance with the pod: small 0.75, 0.5 -> std 0.125 -> 87;
			// large 0.5, 0.5 -> 100; both empty nodes are at 100 without it:
			// 50 + (50+87-100)/2 = 68 and 50 + (50+100-100)/2 = 75
			want: []int64{68, 75}},
		{name: "existing pods count by actual requests",
			pod: pod,
			nodes: []*plugintest.NodeWrapper{
				mkNode().Capacity(res(6000, 10000)).AddPod(mkPod().Name("bare").Container("x").Obj()).
					AddPod(mkPod().Name("p").Req(res(1000, 0)).Obj()),
			},
			// with: cpu (1000+3000)/6000 = 0.667, mem 0.5 -> std 0.0833 -> 91;
			// without: cpu 1000/6000, mem 0 -> the same 91 -> 75
			want: []int64{75}},
		{name: "a pod that evens the node out scores above 75",
			pod: mkPod().Req(res(0, 5000)),
			nodes: []*plugintest.NodeWrapper{
				mkNode().Capacity(res(4000, 10000)).AddPod(mkPod().Name("p").Req(res(2000, 0)).Obj()),
			},
			// without: 0.5, 0 -> 75; with: 0.5, 0.5 -> 100; 50 + (50+100-75)/2 = 87
			want: []int64{87}},
		{name: "a pod that unbalances an empty node scores below 75",
			pod:   mkPod().Req(res(3000, 0)),
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(4000, 10000))},
			// with: 0.75, 0 -> 62; without: 100; 50 + (50+62-100)/2 = 56
			want: []int64{56}},
		{name: "fractions capped at 1",
			pod:   pod,
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(1000, 10000))},
			// with: 1, 0.5 -> 75; without: 100; 50 + 25/2 = 62
			want: []int64{62}},
		{name: "three resources use the standard deviation",
			args:  `{"resources":[{"name":"cpu"},{"name":"memory"},{"name":"example.com/gpu","weight":1}]}`,
			pod:   mkPod().Req(res(3000, 5000, gpu, 1)),
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(4000, 10000, gpu, 4))},
			// 0.75, 0.5, 0.25: mean 0.5, std sqrt(0.125/3) = 0.2041 -> 79;
			// without: 100; 50 + 29/2 = 64
			want: []int64{64}},
		{name: "unrequested extended resource and missing allocatable are skipped",
			args:  `{"resources":[{"name":"cpu"},{"name":"memory"},{"name":"example.com/gpu"},{"name":"ephemeral-storage"}]}`,
			pod:   pod,
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(4000, 10000, gpu, 4))},
			want:  []int64{68}},
		{name: "a single resource has no deviation",
			args:  `{"resources":[{"name":"cpu"}]}`,
			pod:   pod,
			nodes: []*plugintest.NodeWrapper{mkNode().Capacity(res(4000, 10000))},
			want:  []int64{75}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewBalancedAllocation(plugintest.Args(t, tt.args), &plugintest.Handle{})
			if err != nil {
				t.Fatal(err)
			}
			got, st := scoreAll(t, p, tt.pod.Obj(), tt.nodes)
			if tt.wantSkip {
				if !st.IsSkip() {
					t.Fatalf("PreScore = %v, want Skip", st.Code())
				}
				return
			}
			if !st.IsSuccess() {
				t.Fatal(st.Message())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("scores = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScoreAllocs(t *testing.T) {
	pod := mkPod().Req(res(1000, 2000, gpu, 1)).Obj()
	node := mkNode().Capacity(res(4000, 10000, gpu, 4)).Obj()
	fit, _ := NewFit(plugintest.Args(t, `{"scoringStrategy":{"type":"RequestedToCapacityRatio","resources":[{"name":"cpu"},{"name":"example.com/gpu"}],"requestedToCapacityRatio":{"shape":[{"utilization":0,"score":0},{"utilization":100,"score":10}]}}}`), &plugintest.Handle{})
	bal, _ := NewBalancedAllocation(plugintest.Args(t, `{"resources":[{"name":"cpu"},{"name":"memory"},{"name":"example.com/gpu"}]}`), &plugintest.Handle{})
	for _, p := range []plugin.Plugin{fit, bal} {
		state := &plugin.CycleState{}
		p.(plugin.PreScorePlugin).PreScore(state, pod, nil)
		sp := p.(plugin.ScorePlugin)
		if n := testing.AllocsPerRun(100, func() { sp.Score(state, pod, node) }); n != 0 {
			t.Errorf("%s: Score allocates %v times", p.Name(), n)
		}
		fresh := &plugin.CycleState{} // without PreScore
		if n := testing.AllocsPerRun(100, func() { sp.Score(fresh, pod, node) }); n != 0 {
			t.Errorf("%s without PreScore: Score allocates %v times", p.Name(), n)
		}
	}
}

func TestScaledUtilizationOverflow(t *testing.T) {
	// requested*100 overflows int64; the 128-bit path must stay exact.
	const capacity = int64(1) << 62
	if got, want := scaledUtilization(capacity/2, capacity, 100), int64(50); got != want {
		t.Errorf("scaledUtilization = %d, want %d", got, want)
	}
	if got := scaledUtilization(capacity-1, capacity, 100); got != 99 {
		t.Errorf("scaledUtilization near capacity = %d, want 99", got)
	}
}

func BenchmarkFitFilter(b *testing.B) {
	p, _ := NewFit(nil, &plugintest.Handle{})
	f := p.(*Fit)
	pod := mkPod().Req(res(100, 1000, gpu, 1)).Obj()
	node := node10x20(res(1, 1)).Capacity(res(4000, 1<<34, gpu, 4, "hugepages-2Mi", 1<<30)).Obj()
	state := &plugin.CycleState{}
	f.PreFilter(state, pod)
	b.ReportAllocs()
	for b.Loop() {
		f.Filter(state, pod, node)
	}
}

func BenchmarkFitScore(b *testing.B) {
	p, _ := NewFit(nil, &plugintest.Handle{})
	benchScore(b, p)
}

func BenchmarkBalancedAllocationScore(b *testing.B) {
	p, _ := NewBalancedAllocation(nil, &plugintest.Handle{})
	benchScore(b, p)
}

func benchScore(b *testing.B, p plugin.Plugin) {
	pod := mkPod().Req(res(100, 1000)).Obj()
	node := mkNode().Capacity(res(4000, 1<<34)).AddPod(mkPod().Req(res(500, 1<<30)).Obj()).Obj()
	state := &plugin.CycleState{}
	p.(plugin.PreScorePlugin).PreScore(state, pod, nil)
	sp := p.(plugin.ScorePlugin)
	b.ReportAllocs()
	for b.Loop() {
		sp.Score(state, pod, node)
	}
}
