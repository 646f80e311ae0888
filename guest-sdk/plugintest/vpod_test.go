package plugintest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// vtoy is a vpod predicate refusing pods with ordinal ≥ its args' digit
// (Skip for ordinal 9), and a priority scoring free capacity.
type vtoy struct{}

func (vtoy) Name() string { return "VToy" }

func (vtoy) NewVPodFilter(args []byte) (plugin.VPodFilter, error) {
	if len(args) != 1 || args[0] < '0' || args[0] > '9' {
		return nil, errors.New("want a digit")
	}
	limit := int32(args[0] - '0')
	return func(s *plugin.VPodState, pods []int, verdicts []*plugin.Status) {
		for i, p := range pods {
			switch {
			case s.Ordinal(p) == 9:
				verdicts[i] = plugin.NewStatus(abi.Skip)
			case s.Ordinal(p) >= limit:
				verdicts[i] = plugin.NewStatus(abi.Unschedulable, "too high")
			}
		}
	}, nil
}

func (vtoy) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return func(s *plugin.VPodState, pods []int, scores []int64) error {
		if string(args) == "fail" {
			return errors.New("failed")
		}
		for i, p := range pods {
			scores[i] = int64(s.Free(p))
		}
		return nil
	}, nil
}

func TestVPodWrapperBuildsSpreads(t *testing.T) {
	w := MakeVPodState().Capacity(7).VPod("ns", "src", 4).
		Node("n2", "b").Node("n1", "a").Pod(3, "n2", 1).Pod(1, "n1", 5).Pod(2, "n2", 0).Pod(5, "n3", 2).
		Place(3, 2).Place(2, 0).Place(3, 1)
	topo, step := w.Topology(t), w.Step(t)
	// Pods by ordinal 1, 2, 3, 5; nodes n1, n2, n3; zones a, b, unknown.
	wantTopo := abi.VPodTopology{Generation: 1, StatefulSet: "adapter", Capacity: 7, Replicas: 4,
		Pods:  []abi.VPodPod{{Ordinal: 1, Node: 0}, {Ordinal: 2, Node: 1}, {Ordinal: 3, Node: 1}, {Ordinal: 5, Node: 2}},
		Nodes: []abi.VPodNode{{Name: "n1", Zone: 0}, {Name: "n2", Zone: 1}, {Name: "n3", Zone: 2}}, Zones: []string{"a", "b", "unknown"}}
	if !reflect.DeepEqual(*topo, wantTopo) {
		t.Fatalf("topology\n got %+v\nwant %+v", *topo, wantTopo)
	}
	wantStep := abi.VPodStep{Topology: 1, Namespace: "ns", Name: "src", VReplicas: 4, Free: []int32{5, 0, 1, 2},
		PodSpread:  []abi.VPodCount{{Index: 1, VReplicas: 0}, {Index: 2, VReplicas: 3}},
		NodeSpread: []abi.VPodCount{{Index: 1, VReplicas: 3}}, ZoneSpread: []abi.VPodCount{{Index: 1, VReplicas: 3}},
		Candidates: []uint32{0, 1, 2, 3}}
	if !reflect.DeepEqual(*step, wantStep) {
		t.Fatalf("step\n got %+v\nwant %+v", *step, wantStep)
	}
	if r := record(t, func(tb testing.TB) { MakeVPodState().Place(1, 1).Obj(tb) }); !r.fatal {
		t.Error("Place on a missing pod accepted")
	}
}

func TestRunVPodFollowsRuntimeRules(t *testing.T) {
	s := MakeVPodState().Pod(0, "n", 3).Pod(1, "n", 2).Pod(2, "n", 1).Obj(t)
	st, err := RunVPodFilter(t, vtoy{}, "2", s)
	if err != nil || st[0] != nil || st[1] != nil || st[2].Message() != "too high" {
		t.Fatalf("verdicts %v, %v", st, err)
	}
	st, err = RunVPodFilter(t, vtoy{}, "x", s, 1)
	if err == nil || len(st) != 1 || st[0].Code() != abi.Unschedulable || st[0].Message() != "invalid arguments" {
		t.Fatalf("invalid args: %v, %v", st, err)
	}
	// Skip is no predicate verdict.
	r := record(t, func(tb testing.TB) { RunVPodFilter(tb, vtoy{}, "9", MakeVPodState().Pod(9, "n", 1).Obj(tb)) })
	if len(r.msgs) != 1 || !strings.Contains(r.msgs[0], "no vpod predicate verdict") {
		t.Fatalf("Skip accepted: %q", r.msgs)
	}
	if sc, err := RunVPodScore(t, vtoy{}, "", s, 2, 0); err != nil || !reflect.DeepEqual(sc, []int64{1, 3}) {
		t.Fatalf("scores %v, %v", sc, err)
	}
	if _, err := RunVPodScore(t, vtoy{}, "fail", s); err == nil {
		t.Fatal("scorer error lost")
	}
	if KnativeArgs(`{"MaxSkew": 1}`) != `"{\"MaxSkew\": 1}"` {
		t.Fatalf("KnativeArgs %s", KnativeArgs(`{"MaxSkew": 1}`))
	}
}

func TestPlaceVReplicasStepsLikeTheEngine(t *testing.T) {
	w := MakeVPodState().Capacity(3).VPod("ns", "src", 5).
		Pod(0, "n1", 3).Pod(1, "n1", 2).Pod(2, "n2", 3).Pod(3, "n2", 3)
	// Ordinals below 3 only (vtoy's predicate with "3"), freest first
	// (vtoy's priority), lowest ordinal on ties, capacity enforced.
	placed, pending, err := PlaceVReplicas(t, w, 9, VPodPolicy{
		FitsResources: true,
		Predicates:    []VPodEntry{{Plugin: vtoy{}, Args: "3"}},
		Priorities:    []VPodEntry{{Plugin: vtoy{}, Weight: 2}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(placed, map[int32]int32{0: 3, 1: 2, 2: 3}) || pending != 1 {
		t.Errorf("placed %v, pending %d; want 0:3 1:2 2:3 and 1 pending", placed, pending)
	}
	if v, ok := w.Obj(t).PodSpread(1); v != 2 || !ok {
		t.Errorf("the wrapper did not keep the placements: pod 1 spread %d %v", v, ok)
	}
	// A failing priority stops placement, the error returned.
	_, pending, err = PlaceVReplicas(t, MakeVPodState().Pod(0, "n1", 3), 2, VPodPolicy{
		Priorities: []VPodEntry{{Plugin: vtoy{}, Args: "fail", Weight: 1}},
	})
	if err == nil || pending != 2 {
		t.Errorf("failing priority: pending %d, err %v", pending, err)
	}
	// Refused predicate args refuse every pod.
	_, pending, _ = PlaceVReplicas(t, MakeVPodState().Pod(0, "n1", 3), 2, VPodPolicy{
		Predicates: []VPodEntry{{Plugin: vtoy{}, Args: "x"}},
	})
	if pending != 2 {
		t.Errorf("invalid predicate args: pending %d, want 2", pending)
	}
}
