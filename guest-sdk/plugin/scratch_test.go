package plugin

import "testing"

func TestScratchRecyclesStorageFromTheNextCycleOn(t *testing.T) {
	var s Scratch[int32]
	var state CycleState
	state.Reset()
	a := s.Make(&state, 8)
	for i := range a {
		a[i] = 7
	}
	b := s.Make(&state, 8)
	if &a[0] == &b[0] {
		t.Fatal("two Makes of one cycle share storage")
	}
	// A clone belongs to the same cycle: still fresh storage.
	c := s.Make(state.Clone(), 8)
	if &c[0] == &a[0] || &c[0] == &b[0] {
		t.Fatal("a clone's Make shares storage with the same cycle's")
	}
	state.Reset()
	d := s.Make(&state, 6)
	if &d[0] != &a[0] {
		t.Error("the next cycle did not reuse the first slice's storage")
	}
	if len(d) != 6 || cap(d) != 6 {
		t.Errorf("len %d cap %d, want 6 and 6 (appending must not reach storage beyond)", len(d), cap(d))
	}
	for i, v := range d {
		if v != 0 {
			t.Fatalf("recycled slice not zeroed: d[%d] = %d", i, v)
		}
	}
	if e := s.Make(&state, 100); len(e) != 100 || &e[0] == &b[0] {
		t.Error("a larger request than the kept storage must get new storage of its size")
	}
}

func TestScratchNeverRecyclesForAStateOfUnknownCycle(t *testing.T) {
	var s Scratch[byte]
	var state CycleState // never Reset, as a unit test's state
	a := s.Make(&state, 4)
	b := s.Make(&state, 4)
	if &a[0] == &b[0] {
		t.Fatal("a state of unknown cycle got recycled storage")
	}
	if c := s.Make(nil, 3); len(c) != 3 {
		t.Fatalf("nil state: len %d", len(c))
	}
}

func TestCycleStateResetStartsANewCycle(t *testing.T) {
	var a CycleState
	a.Reset()
	first := a.cycle
	a.Reset()
	if first == 0 || a.cycle == first {
		t.Fatalf("cycles %d then %d: want distinct, non-zero", first, a.cycle)
	}
	var c CycleState
	a.CloneInto(&c)
	if c.cycle != a.cycle || a.Clone().cycle != a.cycle {
		t.Error("a clone left its state's cycle")
	}
	// The SDK's what-if pop makes a clone the current state; the next
	// cycle's Reset must still move past every number used so far.
	c.Reset()
	if c.cycle == a.cycle || c.cycle == first {
		t.Errorf("Reset of a clone repeated a cycle: %d", c.cycle)
	}
}
