package plugin

import (
	"math/rand/v2"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

func TestSelectorSemantics(t *testing.T) {
	web := abi.Labels{{Key: "app", Value: "web"}, {Key: "tier", Value: "front"}}
	for _, tc := range []struct {
		name string
		sel  *abi.LabelSelector
		want bool
	}{
		{"nil matches nothing", nil, false},
		{"empty matches everything", &abi.LabelSelector{}, true},
		{"matchLabels", &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "web"}}}, true},
		{"matchLabels other value", &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "db"}}}, false},
		{"In", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "tier", Operator: abi.OpIn, Values: []string{"back", "front"}}}}, true},
		{"NotIn", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "tier", Operator: abi.OpNotIn, Values: []string{"front"}}}}, false},
		{"NotIn of a missing key", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "zone", Operator: abi.OpNotIn, Values: []string{"a"}}}}, true},
		{"Exists", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "app", Operator: abi.OpExists}}}, true},
		{"DoesNotExist", &abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "app", Operator: abi.OpDoesNotExist}}}, false},
		{"labels and expressions ANDed", &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "web"}},
			MatchExpressions: []abi.Requirement{{Key: "tier", Operator: abi.OpIn, Values: []string{"back"}}}}, false},
	} {
		s, err := NewSelector(tc.sel)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := s.Matches(web); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, err := NewSelector(&abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "x", Operator: abi.OpGt, Values: []string{"1"}}}}); err == nil {
		t.Error("Gt accepted in a label selector")
	}
	if _, err := NewSelector(&abi.LabelSelector{MatchExpressions: []abi.Requirement{{Key: "x", Operator: abi.OpIn}}}); err == nil {
		t.Error("In without values accepted")
	}
}

// tableHandle numbers strings with a fixed table, as the guest's handle
// does after a sync.
type tableHandle struct {
	Handle
	t *abi.StringTable
}

func (h tableHandle) StringID(s string) abi.StrID { return h.t.Lookup(s) }

// TestNumberedSelectorsMatchAsStringsDo draws label sets and selectors
// from a small vocabulary, only part of which is in the string table,
// and checks that matching by numbers gives the answers matching by
// strings gives, whichever sides are numbered.
func TestNumberedSelectorsMatchAsStringsDo(t *testing.T) {
	vocab := []string{"app", "tier", "zone", "web", "db", "a", "b", "x"}
	var table abi.StringTable
	if err := table.Append(0, vocab[:5]); err != nil { // "a", "b", "x" are not numbered
		t.Fatal(err)
	}
	h := tableHandle{t: &table}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() string { return vocab[rng.IntN(len(vocab))] }
	ops := []abi.Operator{abi.OpIn, abi.OpNotIn, abi.OpExists, abi.OpDoesNotExist}
	for i := 0; i < 5000; i++ {
		var labels abi.Labels
		seen := map[string]bool{}
		for n := rng.IntN(4); n > 0; n-- {
			if k := pick(); !seen[k] {
				seen[k] = true
				labels = append(labels, abi.Label{Key: k, Value: pick()})
			}
		}
		numbered := append(abi.Labels(nil), labels...)
		if rng.IntN(2) == 0 {
			table.Number(numbered)
		}
		sel := &abi.LabelSelector{}
		if rng.IntN(2) == 0 {
			sel.MatchLabels = abi.Labels{{Key: pick(), Value: pick()}}
		}
		for n := rng.IntN(3); n > 0; n-- {
			r := abi.Requirement{Key: pick(), Operator: ops[rng.IntN(len(ops))]}
			if r.Operator == abi.OpIn || r.Operator == abi.OpNotIn {
				r.Values = []string{pick(), pick()}
			}
			sel.MatchExpressions = append(sel.MatchExpressions, r)
		}
		plain, err := NewSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		fast, _ := NewSelector(sel)
		fast.Number(h)
		if want, got := plain.Matches(labels), fast.Matches(numbered); got != want {
			t.Fatalf("selector %+v on %+v: numbered match %v, string match %v", sel, numbered, got, want)
		}
	}
}
