package plugintest

import (
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// evictToy names the pods its fields say: soft and force pods for
// GetEvictPods, a threshold and its top pods.
type evictToy struct {
	name        string
	force, soft []uint32
	met         abi.MetType
	scope       string
	top         []uint32
	sawTopN     int
	sawLimit    int
}

func (e *evictToy) Name() string { return e.name }

func (e *evictToy) GetEvictPods(_ *plugin.EvictionNode, limit int) ([]abi.EvictPod, *abi.EvictionCondition) {
	e.sawLimit = limit
	var out []abi.EvictPod
	for _, i := range e.force {
		out = append(out, abi.EvictPod{Pod: i, Force: true, Reason: "forced"})
	}
	for _, i := range e.soft {
		out = append(out, abi.EvictPod{Pod: i, Reason: "soft"})
	}
	return out, nil
}

func (e *evictToy) ThresholdMet(*plugin.EvictionNode) abi.ThresholdResult {
	return abi.ThresholdResult{Met: e.met, Scope: e.scope}
}

func (e *evictToy) GetTopEvictionPods(_ *plugin.EvictionNode, topN int, _ string, _ []uint32, limit int) ([]uint32, *int64) {
	e.sawTopN, e.sawLimit = topN, limit
	return e.top, nil
}

// fourPods is a node with pods p0..p3 of priorities 40, 10, 30, 20.
func fourPods() *plugin.EvictionNode {
	n := MakeNode().Name("n1")
	for i, prio := range []int32{40, 10, 30, 20} {
		n.AddPod(MakePod().Name("p" + itoa(i)).Priority(prio).Obj())
	}
	return EvictionNodeOf(n.Obj())
}

func pods(vs []EvictionVictim) []uint32 {
	var out []uint32
	for _, v := range vs {
		out = append(out, v.Pod)
	}
	return out
}

func TestEvictionRoundFollowsTheCoordinator(t *testing.T) {
	// Soft candidates: only the one least worth keeping (lowest priority) goes.
	soft := &evictToy{name: "Soft", soft: []uint32{0, 1, 2}}
	if got := pods(EvictionRound(t, 3, fourPods(), soft)); len(got) != 1 || got[0] != 1 {
		t.Errorf("soft candidates: victims %v, want [1]", got)
	}
	// Force pods all go (within the burst), least worth keeping first,
	// plus one soft victim not already forced.
	mixed := &evictToy{name: "Mixed", force: []uint32{0, 2}, soft: []uint32{3, 1}}
	if got := pods(EvictionRound(t, 0, fourPods(), mixed)); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 0 {
		t.Errorf("force and soft: victims %v, want [1 2 0]", got)
	}
	// The burst is the policy's limit (the SDK keeps its first pods) and
	// caps the victims of a node.
	if got := EvictionRound(t, 1, fourPods(), &evictToy{name: "F", force: []uint32{0, 2}}); len(got) != 1 || got[0].Pod != 0 {
		t.Errorf("burst 1: victims %+v, want [0]", got)
	}
	two := EvictionRound(t, 1, fourPods(), &evictToy{name: "F", force: []uint32{0}}, &evictToy{name: "G", force: []uint32{2}})
	if len(two) != 1 || two[0].Pod != 2 {
		t.Errorf("burst 1, two policies: victims %+v, want [2], the lower priority", two)
	}
	// A hard threshold asks topN 1 and forces its pod; two policies naming
	// one pod make one victim with both reasons.
	hard := &evictToy{name: "Hard", met: abi.HardMet, scope: "memory", top: []uint32{3}}
	also := &evictToy{name: "Also", met: abi.HardMet, scope: "cpu", top: []uint32{3}}
	got := EvictionRound(t, 3, fourPods(), hard, also)
	if hard.sawTopN != 1 || len(got) != 1 || got[0].Pod != 3 || !strings.Contains(got[0].Reason, "Hard") || !strings.Contains(got[0].Reason, "Also") {
		t.Errorf("hard thresholds: topN %d, victims %+v", hard.sawTopN, got)
	}
	// A soft threshold asks topN 0 and gives soft candidates.
	softMet := &evictToy{name: "SoftMet", met: abi.SoftMet, scope: "cpu", top: []uint32{0, 3}}
	if got := pods(EvictionRound(t, 3, fourPods(), softMet)); softMet.sawTopN != 0 || len(got) != 1 || got[0] != 3 {
		t.Errorf("soft threshold: topN %d, victims %v, want [3]", softMet.sawTopN, got)
	}
	// NotMet asks for nothing.
	notMet := &evictToy{name: "NotMet", sawTopN: -1, top: []uint32{0}}
	if got := EvictionRound(t, 3, fourPods(), notMet); len(got) != 0 || notMet.sawTopN != -1 {
		t.Errorf("NotMet: victims %+v, GetTopEvictionPods called with topN %d", got, notMet.sawTopN)
	}
}

func TestEvictionRunnersRefuseWhatTheSDKRefuses(t *testing.T) {
	n := fourPods()
	n.Candidates = []uint32{0, 1}
	r := record(t, func(tb testing.TB) { RunEvictPods(tb, &evictToy{name: "X", force: []uint32{2}}, n, 3) })
	if len(r.msgs) != 1 || !strings.Contains(r.msgs[0], "not one of the candidates") {
		t.Errorf("a pod not offered: %v", r.msgs)
	}
	r = record(t, func(tb testing.TB) { RunEvictPods(tb, &evictToy{name: "X", force: []uint32{1, 1}}, n, 3) })
	if len(r.msgs) != 1 || !strings.Contains(r.msgs[0], "twice") {
		t.Errorf("a pod named twice: %v", r.msgs)
	}
	// Answers are cut to the limit, which is at most the candidates.
	e := &evictToy{name: "X", force: []uint32{0, 1}}
	if got, _ := RunEvictPods(t, e, n, 1); len(got) != 1 || got[0].Pod != 0 || e.sawLimit != 1 {
		t.Errorf("limit 1: %+v (limit seen %d)", got, e.sawLimit)
	}
	if RunEvictPods(t, e, n, 10); e.sawLimit != 2 {
		t.Errorf("burst 10 with 2 candidates: limit %d, want 2", e.sawLimit)
	}
	r = record(t, func(tb testing.TB) { RunThresholdMet(tb, &evictToy{name: "X"}, n) })
	if len(r.msgs) != 0 {
		t.Errorf("a plain threshold failed: %v", r.msgs)
	}
	r = record(t, func(tb testing.TB) { EvictionRound(tb, 3, n, &toy{}) })
	if !r.fatal || !strings.Contains(r.msgs[0], "no eviction policy") {
		t.Errorf("a filter plugin as a policy: %v", r.msgs)
	}
}
