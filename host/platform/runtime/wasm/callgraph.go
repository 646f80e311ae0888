package wasm

import "github.com/wasmsched/wasmsched/host/internal/wasmbin"

// Which functions need a tick and a stack charge at entry.
//
// A tick at the entry of every function that calls another bounds time
// (recursion and call trees have no loop), and a stack charge there
// bounds the call stack. Both cost a few instructions per call, which
// hot helpers called per node (a label match, a hash) pay on every call.
// Most calls need neither: a function that is not part of a call cycle,
// is never called through a table and calls only such functions does a
// bounded amount of work and uses a bounded amount of stack, both known
// before it runs. So the rewriter computes, callees first:
//
//	work(f)  = size(f) + Σ over f's call sites of work(callee)
//	stack(f) = frame(f) + max over f's callees of stack(callee)
//
// where a callee that is instrumented counts zero (it pays for itself).
// A function is instrumented when it calls others and it is in a call
// cycle, makes an indirect call, can be called through a table, or its
// work or stack exceeds TickFreeWork or TickFreeStack. An instrumented
// function charges stack(f) at entry, so its uninstrumented callees are
// paid for, and counts ticks in proportion to its work (WorkPerTick), so
// a safe point still comes every SafePointEvery·WorkPerTick bytes of code
// run, whatever the shape of the call graph.

// TickFreeWork bounds the code, in bytes, an uninstrumented function may
// run (itself and its uninstrumented callees, each call site counted).
const TickFreeWork = 4096

// TickFreeStack bounds the estimated frames, in StackUnitBytes units, an
// uninstrumented function may stack (itself and its deepest chain of
// uninstrumented callees): 64 KiB.
const TickFreeStack = (64 << 10) / StackUnitBytes

// funcFacts is what the first pass over a body learns about a function.
type funcFacts struct {
	size     int      // bytes of code
	weight   int32    // its own frame, in StackUnitBytes units
	callees  []uint32 // function index of each direct call site
	indirect bool     // it has call_indirect or return_call_indirect
	bulk     bool     // it uses memory.copy, memory.fill or memory.init
	fills    bool     // it has a fill inlined as stores (fills.go)
	dynFills bool     // it has a memory.fill left for the fill helper (fills.go)
	grows    bool     // it has a memory.grow (recorded in GrowGlobal)
}

// frameWeight estimates a frame in StackUnitBytes units: 128 bytes for
// the call itself (return address, saved registers, alignment: wazero's
// frames of small functions measure about 80), 16 bytes per parameter and
// local, and (for spilled values) a byte per byte of code, the latter
// counted up to 64 KiB.
func frameWeight(params int, locals uint64, codeLen int) int32 {
	if codeLen > 64<<10 {
		codeLen = 64 << 10
	}
	return int32(2 + (16*(uint64(params)+locals)+uint64(codeLen))/StackUnitBytes)
}

// entryPlan says what one function gets at entry.
type entryPlan struct {
	instrumented bool
	charge       int32 // stack units charged at entry when instrumented
	ticks        int32 // ticks counted at entry when instrumented
}

// WorkPerTick is how many bytes of code (a function's own and its
// uninstrumented callees') an entry tick stands for: an instrumented
// function counts 1 + work/WorkPerTick ticks at entry, so that the time
// between two safe points does not grow with the work a tick covers.
const WorkPerTick = 256

// maxWork caps work estimates (a call tree's doubles at every level).
const maxWork = 1 << 24

// maxEntryTicks caps the ticks one entry counts: work is a static upper
// bound (every call site taken), and a hot function overestimated by
// orders of magnitude must not reach a safe point (a pass through Go)
// on every call.
const maxEntryTicks = SafePointEvery / 64

// planEntries decides, for every defined function, whether it is
// instrumented and what it charges. imported is the number of imported
// functions (function indexes below it are host functions, which bound
// themselves); referenced marks the functions a table or ref.func can
// reach (nil with allReferenced: treat every function as reachable).
func planEntries(facts []funcFacts, imported uint32, referenced map[uint32]bool, allReferenced bool) []entryPlan {
	n := len(facts)
	plans := make([]entryPlan, n)
	work := make([]int, n)
	stack := make([]int32, n)
	for _, scc := range callCycles(facts, imported) {
		cyclic := len(scc) > 1
		if !cyclic {
			for _, c := range facts[scc[0]].callees {
				cyclic = cyclic || c == imported+uint32(scc[0])
			}
		}
		for _, f := range scc {
			ff := &facts[f]
			w, s := ff.size, int32(0)
			for _, c := range ff.callees {
				if c < imported {
					continue
				}
				d := c - imported
				if int(d) == int(f) || plans[d].instrumented {
					continue
				}
				w = min(w+work[d], maxWork) // saturate: call trees grow exponentially
				if stack[d] > s {
					s = stack[d]
				}
			}
			work[f], stack[f] = w, ff.weight+s
			calls := len(ff.callees) > 0 || ff.indirect
			reachable := allReferenced || referenced[imported+uint32(f)]
			if calls && (cyclic || ff.indirect || reachable || w > TickFreeWork || stack[f] > TickFreeStack) {
				plans[f] = entryPlan{instrumented: true, charge: stack[f], ticks: int32(min(1+w/WorkPerTick, maxEntryTicks))}
			}
		}
	}
	return plans
}

// callCycles returns the strongly connected components of the direct
// call graph between defined functions, callees' components before their
// callers' (Tarjan's algorithm, iterative: a hostile module may chain a
// million calls).
func callCycles(facts []funcFacts, imported uint32) [][]int {
	n := len(facts)
	const unvisited = -1
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var sccs [][]int
	var stack []int
	type frame struct{ f, next int }
	var work []frame
	counter := 0
	for root := 0; root < n; root++ {
		if index[root] != unvisited {
			continue
		}
		work = append(work, frame{f: root})
		for len(work) > 0 {
			top := &work[len(work)-1]
			f := top.f
			if top.next == 0 && index[f] == unvisited {
				index[f], low[f] = counter, counter
				counter++
				stack = append(stack, f)
				onStack[f] = true
			}
			descended := false
			for top.next < len(facts[f].callees) {
				c := facts[f].callees[top.next]
				top.next++
				if c < imported {
					continue
				}
				d := int(c - imported)
				if index[d] == unvisited {
					work = append(work, frame{f: d})
					descended = true
					break
				}
				if onStack[d] && index[d] < low[f] {
					low[f] = index[d]
				}
			}
			if descended {
				continue
			}
			if low[f] == index[f] {
				var scc []int
				for {
					top := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[top] = false
					scc = append(scc, top)
					if top == f {
						break
					}
				}
				sccs = append(sccs, scc)
			}
			work = work[:len(work)-1]
			if len(work) > 0 {
				if p := work[len(work)-1].f; low[f] < low[p] {
					low[p] = low[f]
				}
			}
		}
	}
	return sccs
}

// referencedFuncs collects the functions an element segment or a global's
// initializer names (table entries, ref.func): the ones an indirect call
// may reach. ok is false when a segment could not be read, and then every
// function must be treated as reachable.
func referencedFuncs(secs []wasmbin.Section) (refs map[uint32]bool, ok bool) {
	refs = map[uint32]bool{}
	ref := func(f uint32) { refs[f] = true }
	for _, s := range secs {
		r := wasmbin.NewReader(s.Payload)
		switch s.ID {
		case wasmbin.SecElement:
			n := r.U32()
			for i := uint32(0); i < n && r.Err() == nil; i++ {
				if err := r.ElementSegment(ref); err != nil {
					return nil, false
				}
			}
		case wasmbin.SecGlobal:
			n := r.U32()
			for i := uint32(0); i < n && r.Err() == nil; i++ {
				r.Byte() // value type
				r.Byte() // mutability
				if err := r.ConstExpr(ref); err != nil {
					return nil, false
				}
			}
		default:
			continue
		}
		if r.Err() != nil || r.Remaining() != 0 {
			return nil, false
		}
	}
	return refs, true
}
