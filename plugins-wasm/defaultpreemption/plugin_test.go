package defaultpreemption

import (
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// handle serves a PDB table, as the SDK's runtime does after a sync.
type handle struct {
	plugin.Handle
	pdbs []abi.PDB
}

func (h *handle) PDBs() []abi.PDB { return h.pdbs }

func vc(name string, prio int32, start int64, labels ...string) abi.VictimCandidate {
	c := abi.VictimCandidate{UID: name, Namespace: "ns", Name: name, Priority: prio, StartTime: start}
	for i := 0; i+1 < len(labels); i += 2 {
		c.Labels = append(c.Labels, abi.Label{Key: labels[i], Value: labels[i+1]})
	}
	return c
}

func pdb(name string, allowed int32, app string, disrupted ...string) abi.PDB {
	return abi.PDB{Namespace: "ns", Name: name, DisruptionsAllowed: allowed,
		Selector: &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: app}}}, DisruptedPods: disrupted}
}

func guarded(c abi.VictimCandidate, g int32) abi.VictimCandidate { c.DisruptionGuard = &g; return c }

type choice struct {
	name      string
	violating bool
}

func TestSelectVictims(t *testing.T) {
	for _, tc := range []struct {
		name      string
		preemptor int32
		pods      []abi.VictimCandidate
		pdbs      []abi.PDB
		want      []choice
		wantCode  abi.Code
	}{
		{name: "only lower priority, most important first; equal priority: earlier start first; no start counts as now",
			preemptor: 100,
			pods:      []abi.VictimCandidate{vc("late", 10, 200), vc("equal", 100, 1), vc("high", 50, 300), vc("unstarted", 10, 0), vc("early", 10, 100)},
			want:      []choice{{"high", false}, {"early", false}, {"late", false}, {"unstarted", false}}},
		{name: "no lower-priority pod", preemptor: 5, pods: []abi.VictimCandidate{vc("a", 5, 1)},
			wantCode: abi.UnschedulableAndUnresolvable},
		{name: "budget spent in importance order: the less important pod violates",
			preemptor: 100,
			pods:      []abi.VictimCandidate{vc("low", 1, 1, "app", "db"), vc("mid", 2, 1, "app", "db")},
			pdbs:      []abi.PDB{pdb("db", 1, "db")},
			want:      []choice{{"mid", false}, {"low", true}}},
		{name: "already disrupted pods do not spend the budget",
			preemptor: 100,
			pods:      []abi.VictimCandidate{vc("a", 2, 1, "app", "db"), vc("b", 1, 1, "app", "db")},
			pdbs:      []abi.PDB{pdb("db", 0, "db", "a")},
			want:      []choice{{"a", false}, {"b", true}}},
		{name: "one pod spends several budgets; violating any makes it violating",
			preemptor: 100,
			pods:      []abi.VictimCandidate{vc("a", 2, 1, "app", "db", "tier", "x"), vc("b", 1, 1, "tier", "x")},
			pdbs: []abi.PDB{pdb("db", 5, "db"), {Namespace: "ns", Name: "tier", DisruptionsAllowed: 1,
				Selector: &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "tier", Value: "x"}}}}},
			want: []choice{{"a", false}, {"b", true}}},
		{name: "unlabelled pods, empty selectors, other namespaces and nil selectors match nothing",
			preemptor: 100,
			pods:      []abi.VictimCandidate{vc("bare", 1, 1), vc("lab", 1, 2, "app", "db")},
			pdbs: []abi.PDB{{Namespace: "ns", Name: "empty", Selector: &abi.LabelSelector{}}, {Namespace: "ns", Name: "nil"},
				{Namespace: "other", Name: "o", Selector: &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "db"}}}}},
			want: []choice{{"bare", false}, {"lab", false}}},
		{name: "KEP-3280: a guarded pod that would violate is not selectable below its guard",
			preemptor: 100,
			pods:      []abi.VictimCandidate{guarded(vc("g1", 1, 1, "app", "db"), 1000), guarded(vc("g2", 1, 2, "app", "db"), 1000), vc("free", 1, 3)},
			pdbs:      []abi.PDB{pdb("db", 1, "db")},
			want:      []choice{{"g1", false}, {"free", false}}},
		{name: "KEP-3280: at or above the guard it is best effort as usual",
			preemptor: 1000,
			pods:      []abi.VictimCandidate{guarded(vc("g1", 1, 1, "app", "db"), 1000), guarded(vc("g2", 1, 2, "app", "db"), 1000)},
			pdbs:      []abi.PDB{pdb("db", 1, "db")},
			want:      []choice{{"g1", false}, {"g2", true}}},
		{name: "KEP-3280: every guarded pod violating leaves no victims",
			preemptor: 100,
			pods:      []abi.VictimCandidate{guarded(vc("g", 1, 1, "app", "db"), 1000)},
			pdbs:      []abi.PDB{pdb("db", 0, "db")},
			wantCode:  abi.UnschedulableAndUnresolvable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := New(nil, &handle{pdbs: tc.pdbs})
			if err != nil {
				t.Fatal(err)
			}
			got, st := pl.(*Policy).SelectVictims(nil, &abi.Pod{Priority: tc.preemptor}, nil, tc.pods, nil)
			if st.Code() != tc.wantCode {
				t.Fatalf("code %v, want %v (%s)", st.Code(), tc.wantCode, st.Message())
			}
			var names []choice
			for _, v := range got {
				names = append(names, choice{tc.pods[v.Index].Name, v.Violating})
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Fatalf("victims %v, want %v", names, tc.want)
			}
		})
	}
}

func cand(viol int32, victims ...abi.VictimCandidate) abi.Candidate {
	return abi.Candidate{NumPDBViolations: viol, Victims: victims}
}

func TestRankCandidates(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cands []abi.Candidate
		want  []int
	}{
		{"fewest PDB violations", []abi.Candidate{cand(1, vc("a", 1, 1)), cand(0, vc("b", 9, 1), vc("c", 9, 1))}, []int{1, 0}},
		{"lowest top victim priority", []abi.Candidate{cand(0, vc("a", 5, 1), vc("b", 1, 1)), cand(0, vc("c", 4, 1), vc("d", 4, 1), vc("e", 4, 1))}, []int{1, 0}},
		{"smallest priority sum", []abi.Candidate{cand(0, vc("a", 5, 1), vc("b", 5, 1)), cand(0, vc("c", 5, 1), vc("d", 1, 1))}, []int{1, 0}},
		{"2^31 offset: negative priorities do not favour more victims",
			[]abi.Candidate{cand(0, vc("a", -10, 1), vc("b", -10, 1)), cand(0, vc("c", -10, 1))}, []int{1, 0}},
		{"fewest victims when sums tie", []abi.Candidate{cand(0, vc("a", 0, 1), vc("b", 0, 1)), cand(0, vc("c", 0, 1))}, []int{1, 0}},
		{"latest start among the top-priority victims", []abi.Candidate{cand(0, vc("a", 3, 100), vc("b", 3, 50)), cand(0, vc("c", 3, 90), vc("d", 3, 80))}, []int{1, 0}},
		{"no start time counts as now (latest)", []abi.Candidate{cand(0, vc("a", 3, 100)), cand(0, vc("b", 3, 0))}, []int{1, 0}},
		{"ties keep the host's order", []abi.Candidate{cand(0, vc("a", 3, 100)), cand(0, vc("b", 3, 100)), cand(0, vc("c", 3, 100))}, []int{0, 1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := New(nil, &handle{})
			got, st := pl.(*Policy).RankCandidates(nil, &abi.Pod{Priority: 100}, tc.cands, nil)
			if !st.IsSuccess() || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("rank %v (%v), want %v", got, st.Message(), tc.want)
			}
		})
	}
}

func TestArgsAreRefused(t *testing.T) {
	if _, err := New(&abi.Value{Kind: abi.KindMap, Map: []abi.Field{{Key: "x"}}}, &handle{}); err == nil {
		t.Fatal("args accepted")
	}
}

// The compiled selectors follow a new table (a sync), not a stale one.
func TestBudgetsFollowANewTable(t *testing.T) {
	h := &handle{pdbs: []abi.PDB{pdb("db", 0, "db")}}
	pl, _ := New(nil, h)
	p := pl.(*Policy)
	pods := []abi.VictimCandidate{vc("a", 1, 1, "app", "web")}
	got, _ := p.SelectVictims(nil, &abi.Pod{Priority: 10}, nil, pods, nil)
	if len(got) != 1 || got[0].Violating {
		t.Fatalf("first table: %+v", got)
	}
	h.pdbs = []abi.PDB{pdb("web", 0, "web")}
	got, _ = p.SelectVictims(nil, &abi.Pod{Priority: 10}, nil, pods, nil)
	if len(got) != 1 || !got[0].Violating {
		t.Fatalf("second table not applied: %+v", got)
	}
}
