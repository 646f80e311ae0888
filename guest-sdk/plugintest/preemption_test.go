package plugintest

import (
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// victimToy answers its fields: choices (nil: every candidate, in the
// order offered), a status, a ranking.
type victimToy struct {
	choices []abi.VictimChoice
	st      *plugin.Status
	rank    []int
}

func (*victimToy) Name() string { return "VictimToy" }

func (v *victimToy) SelectVictims(_ *plugin.CycleState, _ *abi.Pod, _ *plugin.NodeInfo, c []abi.VictimCandidate, out []abi.VictimChoice) ([]abi.VictimChoice, *plugin.Status) {
	if v.choices != nil {
		return append(out, v.choices...), v.st
	}
	for i := range c {
		out = append(out, abi.VictimChoice{Index: uint32(i)})
	}
	return out, v.st
}

func (v *victimToy) RankCandidates(_ *plugin.CycleState, _ *abi.Pod, _ []abi.Candidate, out []int) ([]int, *plugin.Status) {
	return append(out, v.rank...), nil
}

// fullNode is a 4-CPU node with a (priority 5, 1 CPU), b (priority 50,
// 2 CPUs) and c (priority 500, 1 CPU).
func fullNode() *plugin.NodeInfo {
	return MakeNode().Name("n1").Capacity(Res(4000, 8<<30)).
		AddPod(MakePod().Name("a").Priority(5).Req(Res(1000, 0)).Obj()).
		AddPod(MakePod().Name("b").Priority(50).Req(Res(2000, 0)).Obj()).
		AddPod(MakePod().Name("c").Priority(500).Req(Res(1000, 0)).Obj()).
		Obj()
}

func TestPreemptReprievesInThePolicysOrder(t *testing.T) {
	preemptor := MakePod().Name("p").Priority(100).Req(Res(2000, 0)).Obj()
	cands, at := VictimCandidatesOf(preemptor, fullNode())
	if len(cands) != 2 || cands[0].Name != "a" || cands[1].Name != "b" || !slices.Equal(at, []int{0, 1}) {
		t.Fatalf("candidates %+v at %v, want a and b (c outranks the preemptor)", cands, at)
	}
	// 2 CPUs wanted: a comes back (c + a + 2 = 4), b cannot.
	if got, st := Preempt(t, &victimToy{}, preemptor, fullNode()); st != nil || !slices.Equal(got, []string{"b"}) {
		t.Errorf("order a, b: victims %v (%v), want [b]", got, st)
	}
	// 1 CPU wanted: in the order a, b, a comes back first and b cannot
	// (c + a + b + 1 = 5); with b violating, b comes back first and a
	// cannot.
	small := MakePod().Name("s").Priority(100).Req(Res(1000, 0)).Obj()
	if got, _ := Preempt(t, &victimToy{}, small, fullNode()); !slices.Equal(got, []string{"b"}) {
		t.Errorf("small preemptor: victims %v, want [b]", got)
	}
	violating := &victimToy{choices: []abi.VictimChoice{{Index: 0}, {Index: 1, Violating: true}}}
	if got, _ := Preempt(t, violating, small, fullNode()); !slices.Equal(got, []string{"a"}) {
		t.Errorf("small preemptor, b violating: victims %v, want [a]", got)
	}
	// Too big even with every victim gone.
	huge := MakePod().Name("h").Priority(100).Req(Res(4000, 0)).Obj()
	if got, st := Preempt(t, &victimToy{}, huge, fullNode()); got != nil || st.Code() != abi.Unschedulable {
		t.Errorf("huge preemptor: %v %v", got, st)
	}
	// A rejection, or no victims, makes the node no candidate.
	rej := &victimToy{st: plugin.NewStatus(abi.UnschedulableAndUnresolvable, "no")}
	if _, st := Preempt(t, rej, preemptor, fullNode()); st.Code() != abi.UnschedulableAndUnresolvable {
		t.Errorf("rejection: %v", st)
	}
	if _, st := Preempt(t, &victimToy{choices: []abi.VictimChoice{}}, preemptor, fullNode()); st.IsSuccess() {
		t.Error("no victims made a candidate")
	}
}

func TestPreemptionRunnersRefuseWhatTheHostRefuses(t *testing.T) {
	preemptor := MakePod().Priority(100).Obj()
	cands, _ := VictimCandidatesOf(preemptor, fullNode())
	for name, v := range map[string]*victimToy{
		"out of range": {choices: []abi.VictimChoice{{Index: 2}}},
		"repeated":     {choices: []abi.VictimChoice{{Index: 0}, {Index: 0}}},
		"bad code":     {st: plugin.NewStatus(abi.Skip)},
	} {
		r := record(t, func(tb testing.TB) { RunSelectVictims(tb, v, preemptor, fullNode(), cands) })
		if len(r.msgs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	three := make([]abi.Candidate, 3)
	for name, rank := range map[string][]int{"none": {}, "repeated": {0, 0}, "out of range": {3}} {
		r := record(t, func(tb testing.TB) { RunRankCandidates(tb, &victimToy{rank: rank}, preemptor, three) })
		if !r.fatal || !strings.Contains(strings.Join(r.msgs, ""), "RankCandidates") {
			t.Errorf("ranking %s: %v", name, r.msgs)
		}
	}
	if got := RunRankCandidates(t, &victimToy{rank: []int{2, 0}}, preemptor, three); !slices.Equal(got, []int{2, 0}) {
		t.Errorf("ranking %v", got)
	}
}
