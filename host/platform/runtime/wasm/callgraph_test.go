package wasm

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmsched/wasmsched/host/internal/wasmbin"
)

// plansOf runs the rewriter's analysis on a module and returns the plan
// of each defined function.
func plansOf(t *testing.T, bin []byte) []entryPlan {
	t.Helper()
	secs, err := wasmbin.ReadSections(bin)
	if err != nil {
		t.Fatal(err)
	}
	info, err := analyze(secs)
	if err != nil {
		t.Fatal(err)
	}
	refs, ok := referencedFuncs(secs)
	if !ok {
		t.Fatal("element or global section not read")
	}
	g := globals{countdown: uint32(info.importedGlobals + info.definedGlobals)}
	var facts []funcFacts
	for _, s := range secs {
		if s.ID != wasmbin.SecCode {
			continue
		}
		cr := wasmbin.NewReader(s.Payload)
		n := cr.U32()
		for i := uint32(0); i < n; i++ {
			f, err := scanBody(cr.Bytes(int(cr.U32())), info.types[info.funcs[i]], g, refs)
			if err != nil {
				t.Fatal(err)
			}
			facts = append(facts, f)
		}
	}
	return planEntries(facts, info.importedFuncs, refs, false)
}

func TestSmallHelpersAreNotInstrumentedButCyclesAndTablesAre(t *testing.T) {
	bin, err := os.ReadFile(filepath.Join(suiteGuests, "callgraph.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	plans := plansOf(t, bin)
	// Function indexes in callgraph.wat (no imports).
	const (
		t0, t40            = 2, 42
		ping, pong         = 43, 44
		inner, middle, out = 45, 46, 47
	)
	for name, f := range map[string]int{"$inner": inner, "$middle": middle, "$outer": out, "$t40": t40} {
		if plans[f].instrumented {
			t.Errorf("%s is instrumented; a small acyclic helper (or a leaf) needs no entry check", name)
		}
	}
	for name, f := range map[string]int{"$ping (call_indirect)": ping, "$pong (in the table)": pong} {
		if !plans[f].instrumented {
			t.Errorf("%s is not instrumented", name)
		}
	}
	// The call tree doubles its work per level: every few levels one
	// must tick, counting the work below it.
	ticking := 0
	for f := t0; f < t40; f++ {
		if plans[f].instrumented {
			ticking++
			if plans[f].ticks < TickFreeWork/WorkPerTick/2 {
				t.Errorf("$t%d counts %d ticks at entry for a subtree over %d bytes of code", f-t0, plans[f].ticks, TickFreeWork/2)
			}
		}
	}
	if ticking < 3 {
		t.Errorf("%d of the 40 levels of a 2^40-call tree tick, want several", ticking)
	}
}

// TestPlanEntriesBoundsEveryCallGraph checks, on random call graphs with
// cycles, table entries and indirect calls, the properties the deadline
// and the stack budget rely on.
func TestPlanEntriesBoundsEveryCallGraph(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 300; round++ {
		const imported = 3
		n := 1 + rng.IntN(60)
		facts := make([]funcFacts, n)
		refs := map[uint32]bool{}
		for i := range facts {
			f := &facts[i]
			f.size = 1 + rng.IntN(600)
			f.weight = int32(2 + rng.IntN(200))
			for k := rng.IntN(5); k > 0; k-- {
				// Mostly calls to later functions (a DAG), sometimes back.
				c := i + 1 + rng.IntN(n)
				if rng.IntN(8) == 0 {
					c = rng.IntN(n)
				}
				if c < n {
					f.callees = append(f.callees, imported+uint32(c))
				} else {
					f.callees = append(f.callees, uint32(rng.IntN(imported)))
				}
			}
			f.indirect = rng.IntN(20) == 0
			if rng.IntN(15) == 0 {
				refs[imported+uint32(i)] = true
			}
		}
		plans := planEntries(facts, imported, refs, false)

		// Work and stack of an uninstrumented function, brute force: its
		// uninstrumented callees must form a DAG, or this never ends.
		var work func(f, depth int) int
		var stack func(f, depth int) int32
		work = func(f, depth int) int {
			if depth > n {
				t.Fatalf("round %d: a cycle of uninstrumented functions through %d", round, f)
			}
			w := facts[f].size
			for _, c := range facts[f].callees {
				if c >= imported && !plans[c-imported].instrumented {
					w = min(w+work(int(c-imported), depth+1), maxWork)
				}
			}
			return w
		}
		stack = func(f, depth int) int32 {
			s := int32(0)
			for _, c := range facts[f].callees {
				if c >= imported && !plans[c-imported].instrumented {
					s = max(s, stack(int(c-imported), depth+1))
				}
			}
			return facts[f].weight + s
		}
		for f, p := range plans {
			calls := len(facts[f].callees) > 0 || facts[f].indirect
			if !calls {
				if p.instrumented {
					t.Errorf("round %d: leaf %d instrumented", round, f)
				}
				continue
			}
			selfOrCycle := false
			for _, c := range facts[f].callees {
				selfOrCycle = selfOrCycle || c == imported+uint32(f)
			}
			if !p.instrumented {
				switch {
				case selfOrCycle || facts[f].indirect || refs[imported+uint32(f)]:
					t.Errorf("round %d: %d recurses, calls indirectly or is in the table, yet is not instrumented", round, f)
				case work(f, 0) > TickFreeWork:
					t.Errorf("round %d: %d runs %d bytes of code unchecked", round, f, work(f, 0))
				case stack(f, 0) > TickFreeStack:
					t.Errorf("round %d: %d stacks %d units unchecked", round, f, stack(f, 0))
				}
				continue
			}
			if want := stack(f, 0); p.charge < want {
				t.Errorf("round %d: %d charges %d stack units, under its own frame and deepest unchecked chain (%d)", round, f, p.charge, want)
			}
			if want := int32(min(1+work(f, 0)/WorkPerTick, maxEntryTicks)); p.ticks < want {
				t.Errorf("round %d: %d counts %d ticks for %d bytes of work", round, f, p.ticks, work(f, 0))
			}
		}
	}
}
