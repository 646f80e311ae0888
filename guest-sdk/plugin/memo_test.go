package plugin

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

func TestLabelMemoRemembersPerSetUntilTheNextBegin(t *testing.T) {
	var m LabelMemo
	if _, ok := (MemoRef{}).Get(1); ok {
		t.Fatal("the zero MemoRef knows an answer")
	}
	(MemoRef{}).Put(1, true) // ignored, not a panic
	r := m.Begin()
	if _, ok := r.Get(3); ok {
		t.Fatal("a fresh memo knows set 3")
	}
	r.Put(3, true)
	r.Put(700, false) // grows the marks
	r.Put(0, true)    // not numbered: ignored
	if v, ok := r.Get(3); !ok || !v {
		t.Errorf("set 3: %v %v, want true", v, ok)
	}
	if v, ok := r.Get(700); !ok || v {
		t.Errorf("set 700: %v %v, want false", v, ok)
	}
	if _, ok := r.Get(0); ok {
		t.Error("set 0 (not numbered) remembered")
	}
	if _, ok := r.Get(4); ok {
		t.Error("set 4 known without a Put")
	}
	// The next predicate starts empty, and the old reference goes quiet.
	r2 := m.Begin()
	if _, ok := r2.Get(3); ok {
		t.Error("a new predicate knows the old one's answer")
	}
	r2.Put(3, false)
	if _, ok := r.Get(3); ok {
		t.Error("a stale reference still answers")
	}
	r.Put(5, true)
	if _, ok := r2.Get(5); ok {
		t.Error("a stale reference's Put reached the new predicate")
	}
	if v, ok := r2.Get(3); !ok || v {
		t.Errorf("set 3 under the new predicate: %v %v, want false", v, ok)
	}
	// Numbers past the bound are not remembered.
	r2.Put(maxMemoID+1, true)
	if _, ok := r2.Get(maxMemoID + 1); ok {
		t.Error("a number past maxMemoID remembered")
	}
}

func TestLabelMemoGenerationsStartOver(t *testing.T) {
	var m LabelMemo
	m.gen = maxMemoGen - 2
	r := m.Begin() // maxMemoGen - 1
	r.Put(2, true)
	r2 := m.Begin() // wraps: marks cleared, generation 1
	if m.gen != 1 {
		t.Fatalf("generation %d after the wrap, want 1", m.gen)
	}
	if _, ok := r2.Get(2); ok {
		t.Error("an answer survived the wrap")
	}
}

func TestMatchesGroupAnswersAsMatches(t *testing.T) {
	sel, err := NewSelector(&abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	var m LabelMemo
	r := m.Begin()
	a := &abi.PodGroup{Labels: abi.Labels{{Key: "app", Value: "a"}}, LabelsID: 1}
	b := &abi.PodGroup{Labels: abi.Labels{{Key: "app", Value: "b"}}, LabelsID: 2}
	for round := 0; round < 2; round++ { // the second round is answered by the memo
		if !sel.MatchesGroup(a, r) || sel.MatchesGroup(b, r) {
			t.Fatalf("round %d: app=a %v, app=b %v", round, sel.MatchesGroup(a, r), sel.MatchesGroup(b, r))
		}
	}
	// The memo answers by number: a group claiming set 1 gets set 1's
	// answer, which is why numbers must come from the string table.
	liar := &abi.PodGroup{Labels: abi.Labels{{Key: "app", Value: "b"}}, LabelsID: 1}
	if !sel.MatchesGroup(liar, r) {
		t.Error("the memo did not answer set 1 from memory")
	}
	if sel.MatchesGroup(liar, MemoRef{}) {
		t.Error("without a memo the group's own labels must decide")
	}
}
