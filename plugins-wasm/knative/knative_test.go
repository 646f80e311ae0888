package knative

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

var (
	skew1 = plugintest.KnativeArgs(`{"MaxSkew": 1}`)
	skew2 = plugintest.KnativeArgs(`{"MaxSkew": 2}`)
)

// stepA: capacity 10; nodes n1, n2 (zone-a), n3 (zone-b), n4 (zone-c,
// no adapter pod); pods 0 on n1 (free 7), 1 on n2 (free 10), 2 on n3
// (free 0), 3 on n3 (free 5); the vpod has 3 vreplicas on pod 0 and 1
// on pod 3. Spreads: pods {0:3, 3:1}, nodes {n1:3, n3:1}, zones
// {a:3, b:1}.
func stepA() *plugintest.VPodWrapper {
	return plugintest.MakeVPodState().Capacity(10).
		Node("n1", "zone-a").Node("n2", "zone-a").Node("n3", "zone-b").Node("n4", "zone-c").
		Pod(0, "n1", 7).Pod(1, "n2", 10).Pod(2, "n3", 0).Pod(3, "n3", 5).
		Place(0, 3).Place(3, 1)
}

// stepB is stepA with pod 1 present in the vpod's spread with 0
// vreplicas (a placement being rebalanced): pods {0:3, 1:0, 3:1}, nodes
// {n1:3, n2:0, n3:1}, zones {a:3, b:1}.
func stepB() *plugintest.VPodWrapper { return stepA().Place(1, 0) }

func passes(t *testing.T, st []*plugin.Status) []bool {
	t.Helper()
	out := make([]bool, len(st))
	for i, s := range st {
		out[i] = s == nil
	}
	return out
}

func TestPredicates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		p      plugin.Plugin
		args   string
		state  *plugintest.VPodWrapper
		want   []bool
		reason string
	}{
		// Free 7, 10, 0, 5.
		{"PodFitsResources", PodFitsResources{PodFitsResourcesName}, "", stepA(), []bool{true, true, false, true}, "pod at full capacity"},
		{"PodFitsResources ignores args", PodFitsResources{PodFitsResourcesName}, `{"x":1}`, stepA(), []bool{true, true, false, true}, ""},
		{"PodFitsResources, empty free table", PodFitsResources{PodFitsResourcesName}, "", stepA().FreeCapEmpty(), []bool{true, true, true, true}, ""},
		{"PodFitsResources, overcommitted", PodFitsResources{PodFitsResourcesName}, "",
			plugintest.MakeVPodState().Pod(0, "n", -2).Pod(1, "n", 1), []bool{false, true}, ""},
		// 2 pods present: a third one exceeds 2 partitions, not 3.
		{"NoMaxResourceCount 2", NoMaxResourceCount{NoMaxResourceCountName}, plugintest.KnativeArgs(`{"NumPartitions": 2}`), stepA(),
			[]bool{true, false, false, true}, "pod increases total # of pods beyond partition count"},
		{"NoMaxResourceCount 3", NoMaxResourceCount{NoMaxResourceCountName}, plugintest.KnativeArgs(`{"NumPartitions": 3}`), stepA(),
			[]bool{true, true, true, true}, ""},
		// Pod 1 present with 0 counts: 3 present, pod 2 would be a 4th.
		{"NoMaxResourceCount presence", NoMaxResourceCount{NoMaxResourceCountName}, plugintest.KnativeArgs(`{"NumPartitions": 3}`), stepB(),
			[]bool{true, true, false, true}, ""},
		{"NoMaxResourceCount 0", NoMaxResourceCount{NoMaxResourceCountName}, plugintest.KnativeArgs(`{"NumPartitions": 0}`),
			plugintest.MakeVPodState().Pod(0, "n", 5), []bool{false}, ""},
		// S (o=0 with Free ≤ 0 left out: pod 2) = {0:3, 1:0, 3:1}.
		// MaxSkew 1: P0 x=4 vs pod 1 (0): 4; P1 x=1 vs pod 0: 2; P2 x=1
		// vs pod 0: 2; P3 x=2 vs pod 1: 2. All fail.
		{"EvenPodSpread 1", EvenPodSpread{EvenPodSpreadName}, skew1, stepA(), []bool{false, false, false, false}, "pod will cause an uneven spread"},
		// MaxSkew 2: P0 still 4; P1 max(|1−3|, |1−1|) = 2; P2 max(2, 1, 0)
		// = 2; P3 max(1, 2) = 2.
		{"EvenPodSpread 2", EvenPodSpread{EvenPodSpreadName}, skew2, stepA(), []bool{false, true, true, true}, ""},
		// Pod 1 (o=0, Free −1) is left out for pod 0: x=3 vs nothing.
		{"EvenPodSpread leaves out full empty pods", EvenPodSpread{EvenPodSpreadName}, skew1,
			plugintest.MakeVPodState().Pod(0, "n", 5).Pod(1, "n", -1).Place(0, 2), []bool{true, true}, ""},
		// The same with room on pod 1: x=3 vs 0 fails pod 0.
		{"EvenPodSpread counts empty pods with room", EvenPodSpread{EvenPodSpreadName}, skew1,
			plugintest.MakeVPodState().Pod(0, "n", 5).Pod(1, "n", 1).Place(0, 2), []bool{false, true}, ""},
		{"EvenPodSpread without replicas", EvenPodSpread{EvenPodSpreadName}, skew1, stepA().Replicas(0), []bool{true, true, true, true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := plugintest.RunVPodFilter(t, tc.p, tc.args, tc.state.Obj(t))
			if err != nil {
				t.Fatalf("args refused: %v", err)
			}
			if got := passes(t, st); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("passes %v, want %v", got, tc.want)
			}
			for _, s := range st {
				if s != nil && tc.reason != "" && s.Message() != tc.reason {
					t.Errorf("reason %q, want %q", s.Message(), tc.reason)
				}
			}
		})
	}
}

func TestPriorities(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     plugin.Plugin
		args  string
		state *plugintest.VPodWrapper
		want  []int64
	}{
		// Pod 2 (o=0, Free 0) left out. P0 x=4: |4−0| + |4−1| = 7. P1
		// x=1: |1−3| + |1−1| = 2. P2 x=1: 2 + 1 + 0 = 3. P3 x=2: 1 + 2.
		{"EvenPodSpread", EvenPodSpread{EvenPodSpreadName}, skew1, stepA(), []int64{-7, -2, -3, -3}},
		// The scorer leaves out Free == 0 only: pod 1 (Free −1) counts.
		// P0 x=3: |3−0| = 3. P1 x=1: |1−2| = 1.
		{"EvenPodSpread counts overcommitted empty pods", EvenPodSpread{EvenPodSpreadName}, skew1,
			plugintest.MakeVPodState().Pod(0, "n", 5).Pod(1, "n", -1).Place(0, 2), []int64{-3, -1}},
		{"EvenPodSpread without replicas", EvenPodSpread{EvenPodSpreadName}, skew1, stepA().Replicas(0), []int64{0, 0, 0, 0}},
		// Nodes n1:3 n2:0 n3:1 n4:0 (n4 has no adapter pod, it counts).
		// P0 (n1) x=4: 4+3+4 = 11. P1 (n2) x=1: 2+0+1 = 3. P2, P3 (n3)
		// x=2: 1+2+2 = 5.
		{"AvailabilityNodePriority", AvailabilityNodePriority{AvailabilityNodePriorityName}, skew1, stepA(), []int64{-11, -3, -5, -5}},
		// Zones a:3 b:1 c:0. P0, P1 (a) x=4: 3+4. P2, P3 (b) x=2: 1+2.
		{"AvailabilityZonePriority", AvailabilityZonePriority{AvailabilityZonePriorityName}, skew1, stepA(), []int64{-7, -7, -3, -3}},
		{"AvailabilityZonePriority without replicas", AvailabilityZonePriority{AvailabilityZonePriorityName}, skew1, stepA().Replicas(0), []int64{0, 0, 0, 0}},
		{"LowestOrdinalPriority", LowestOrdinalPriority{LowestOrdinalPriorityName}, "", stepA(), []int64{0, -1, -2, -3}},
		{"LowestOrdinalPriority ignores args and replicas", LowestOrdinalPriority{LowestOrdinalPriorityName}, `[1]`, stepA().Replicas(0), []int64{0, -1, -2, -3}},
		{"RemoveWithHighestOrdinalPriority", RemoveWithHighestOrdinalPriority{RemoveWithHighestOrdinalPriorityName}, "", stepA(), []int64{0, 1, 2, 3}},
		// Present pods {0:3, 3:1}. P0 x=2: |2−1| = 1. P1, P2 (absent)
		// x=−1: 4 + 2. P3 x=0: 3.
		{"RemoveWithEvenPodSpreadPriority", RemoveWithEvenPodSpreadPriority{RemoveWithEvenPodSpreadPriorityName}, skew1, stepA(), []int64{-1, -6, -6, -3}},
		// Present {0:3, 1:0, 3:1}. P0 x=2: 2+1. P1 x=−1: 4+2 (its own
		// term left out). P2 x=−1: 4+1+2. P3 x=0: 3+0.
		{"RemoveWithEvenPodSpreadPriority presence", RemoveWithEvenPodSpreadPriority{RemoveWithEvenPodSpreadPriorityName}, skew1, stepB(), []int64{-3, -6, -7, -3}},
		// Present nodes {n1:3, n3:1}. P0 x=2: 1. P1 (n2) x=−1: 4+2. P2,
		// P3 (n3) x=0: 3.
		{"RemoveWithAvailabilityNodePriority", RemoveWithAvailabilityNodePriority{RemoveWithAvailabilityNodePriorityName}, skew1, stepA(), []int64{-1, -6, -3, -3}},
		// Present {n1:3, n2:0, n3:1}. P0 x=2: 2+1. P1 x=−1: 4+2. P2, P3
		// x=0: 3+0.
		{"RemoveWithAvailabilityNodePriority presence", RemoveWithAvailabilityNodePriority{RemoveWithAvailabilityNodePriorityName}, skew1, stepB(), []int64{-3, -6, -3, -3}},
		// Present zones {a:3, b:1}. P0, P1 (a) x=2: 1. P2, P3 (b) x=0: 3.
		{"RemoveWithAvailabilityZonePriority", RemoveWithAvailabilityZonePriority{RemoveWithAvailabilityZonePriorityName}, skew1, stepA(), []int64{-1, -1, -3, -3}},
		{"RemoveWithAvailabilityZonePriority without replicas", RemoveWithAvailabilityZonePriority{RemoveWithAvailabilityZonePriorityName}, skew1, stepA().Replicas(0), []int64{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := plugintest.RunVPodScore(t, tc.p, tc.args, tc.state.Obj(t))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("scores %v, want %v", got, tc.want)
			}
		})
	}
}

// TestScoresOfASubset: a scorer given some pods scores those, in order.
func TestScoresOfASubset(t *testing.T) {
	got, err := plugintest.RunVPodScore(t, AvailabilityNodePriority{AvailabilityNodePriorityName}, skew1, stepA().Obj(t), 3, 0)
	if err != nil || !reflect.DeepEqual(got, []int64{-5, -11}) {
		t.Fatalf("scores %v (%v), want [-5 -11]", got, err)
	}
}

func TestInvalidArgs(t *testing.T) {
	s := stepA().Obj(t)
	for _, args := range []string{
		"", // absent
		`{"MaxSkew": 1}`,
		`1`,
		plugintest.KnativeArgs(`{"MaxSkew": 1.5}`),
		plugintest.KnativeArgs(`{"MaxSkew": "1"}`),
		plugintest.KnativeArgs(`{"MaxSkew": 1, "Other": 2}`),
		plugintest.KnativeArgs(`{"MaxSkew": 4294967296}`),
		plugintest.KnativeArgs(`[1]`),
		plugintest.KnativeArgs(``),
	} {
		for _, p := range []plugin.Plugin{EvenPodSpread{EvenPodSpreadName}, NoMaxResourceCount{NoMaxResourceCountName}} {
			st, err := plugintest.RunVPodFilter(t, p, args, s)
			if err == nil {
				t.Errorf("%s: args %s accepted", p.Name(), args)
				continue
			}
			if !strings.HasPrefix(err.Error(), "invalid arguments") || st[0].Message() != "invalid arguments" {
				t.Errorf("%s: args %s: error %q, verdict %q", p.Name(), args, err, st[0].Message())
			}
		}
		for _, p := range []plugin.Plugin{EvenPodSpread{EvenPodSpreadName}, AvailabilityNodePriority{AvailabilityNodePriorityName},
			AvailabilityZonePriority{AvailabilityZonePriorityName}, RemoveWithEvenPodSpreadPriority{RemoveWithEvenPodSpreadPriorityName},
			RemoveWithAvailabilityNodePriority{RemoveWithAvailabilityNodePriorityName}, RemoveWithAvailabilityZonePriority{RemoveWithAvailabilityZonePriorityName}} {
			if _, err := plugintest.RunVPodScore(t, p, args, s); err == nil {
				t.Errorf("%s: args %s accepted", p.Name(), args)
			}
		}
	}
	// NumPartitions is an int, MaxSkew's name does not apply.
	if _, err := plugintest.RunVPodFilter(t, NoMaxResourceCount{NoMaxResourceCountName}, skew1, s); err == nil {
		t.Error("NoMaxResourceCount accepted MaxSkew")
	}
	if _, err := plugintest.RunVPodFilter(t, NoMaxResourceCount{NoMaxResourceCountName}, plugintest.KnativeArgs(`{"NumPartitions": 5000000000}`), s); err != nil {
		t.Errorf("NoMaxResourceCount refused a 64-bit int: %v", err)
	}
}

func TestRegistrationsRefuseModuleArgs(t *testing.T) {
	p := plugintest.New(t, EvenPodSpreadRegistration, "", nil)
	if p.Name() != EvenPodSpreadName {
		t.Fatalf("name %q", p.Name())
	}
	if _, err := EvenPodSpreadRegistration.New(plugintest.Args(t, `{"MaxSkew": 1}`), nil); err == nil {
		t.Error("module args accepted")
	}
}

// Every plugin that takes args refuses a misspelt key and a mistyped
// value, as Knative's json.Decoder with DisallowUnknownFields does: the
// host turns the refusal into a load error naming the entry (or, with
// knativeCompat: lenient, keeps Knative's refuse-every-pod behaviour).
func TestArgsRefuseUnknownAndMistypedFields(t *testing.T) {
	type ctor struct {
		name string
		make func(string) error
	}
	filter := func(p plugin.VPodPredicatePlugin) func(string) error {
		return func(a string) error { _, err := p.NewVPodFilter([]byte(a)); return err }
	}
	scorer := func(p plugin.VPodPriorityPlugin) func(string) error {
		return func(a string) error { _, err := p.NewVPodScorer([]byte(a)); return err }
	}
	skew := []ctor{
		{"EvenPodSpread predicate", filter(EvenPodSpread{EvenPodSpreadName})},
		{"EvenPodSpread priority", scorer(EvenPodSpread{EvenPodSpreadName})},
		{AvailabilityNodePriorityName, scorer(AvailabilityNodePriority{AvailabilityNodePriorityName})},
		{AvailabilityZonePriorityName, scorer(AvailabilityZonePriority{AvailabilityZonePriorityName})},
		{RemoveWithEvenPodSpreadPriorityName, scorer(RemoveWithEvenPodSpreadPriority{RemoveWithEvenPodSpreadPriorityName})},
		{RemoveWithAvailabilityNodePriorityName, scorer(RemoveWithAvailabilityNodePriority{RemoveWithAvailabilityNodePriorityName})},
		{RemoveWithAvailabilityZonePriorityName, scorer(RemoveWithAvailabilityZonePriority{RemoveWithAvailabilityZonePriorityName})},
	}
	for _, c := range skew {
		if err := c.make(plugintest.KnativeArgs(`{"MaxSkw": 2}`)); err == nil || !strings.Contains(err.Error(), `unknown field "MaxSkw"`) {
			t.Errorf("%s with MaxSkw: %v", c.name, err)
		}
		if err := c.make(plugintest.KnativeArgs(`{"MaxSkew": "2"}`)); err == nil {
			t.Errorf("%s took a string MaxSkew", c.name)
		}
		if err := c.make(skew2); err != nil {
			t.Errorf("%s refused MaxSkew 2: %v", c.name, err)
		}
	}
	nmrc := filter(NoMaxResourceCount{NoMaxResourceCountName})
	if err := nmrc(plugintest.KnativeArgs(`{"NumPartition": 3}`)); err == nil || !strings.Contains(err.Error(), `unknown field "NumPartition"`) {
		t.Errorf("NoMaxResourceCount with NumPartition: %v", err)
	}
	if err := nmrc(plugintest.KnativeArgs(`{"NumPartitions": 3.5}`)); err == nil {
		t.Error("NoMaxResourceCount took a fractional NumPartitions")
	}
}
