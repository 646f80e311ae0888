package wasm

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/wasmsched/wasmsched/host/internal/wasmbin"
)

// Bounding a guest's time and stack without wazero's termination checks.
//
// wazero can stop a running guest when its context ends
// (RuntimeConfig.WithCloseOnContextDone). It does so by leaving machine
// code for Go at every loop iteration: native code cannot be preempted, so
// a loop that never returns to Go would also block the Go runtime's
// stop-the-world pauses, and with them the timers that would stop it. That
// exit made our batched filter loops 2-5× slower (docs/PERFORMANCE.md).
//
// Instead, before compiling, we rewrite the module. We add three mutable
// i32 globals — a countdown, an interrupt flag (exported as
// InterruptGlobal) and a stack budget — and a "tick" at every place where
// a guest can spend unbounded time: the top of every loop body, and the
// entry of the functions the call graph requires (callgraph.go: those in
// a call cycle, those a table can reach or that call through one, and
// those whose static work or stack, their unchecked callees' included,
// exceeds TickFreeWork or TickFreeStack). A tick of n is
//
//	countdown -= n
//	if countdown <= 0 {
//	    memory.grow 0        // leaves machine code for Go: a safe point
//	    if interrupt { unreachable }
//	    countdown = SafePointEvery
//	}
//
// so it costs a subtraction and a branch, and every SafePointEvery ticks
// the guest passes through Go (where the scheduler and the garbage
// collector can stop it) and checks the flag. When a call's deadline
// passes, a timer sets the flag (module.go) and the guest traps at its
// next safe point; host imports check the deadline themselves. A loop
// body counts one tick; a checked function counts at entry one per
// WorkPerTick bytes of the code its call covers (at most maxEntryTicks),
// so the time between safe points does not grow with the shape of the
// call graph. Bulk memory instructions (memory.copy, memory.fill,
// memory.init) tick by their length, one per BulkBytesPerTick bytes, so
// a loop copying tens of MiB per iteration reaches a safe point every
// iteration. Between two ticks a guest runs only straight-line code,
// returns, and calls to unchecked functions, which run at most
// TickFreeWork bytes of code (every call site counted), so the time
// between safe points is bounded by the module's code, not by its input.
//
// Checked functions also pay for the stack: at entry the stack budget
// drops by their estimated frame (frameWeight, in StackUnitBytes units:
// the call itself, parameters, locals and body size) plus the frames of
// their deepest chain of unchecked callees, and every way out of the
// function (return, tail calls, the end of the body, a branch to the
// body's label, which the body is wrapped in a block for) gives it
// back. An entry that would overdraw the budget sets the interrupt flag
// to interruptStack and traps, so recursion is bounded by
// StackBudget·StackUnitBytes bytes of estimated frames, far below
// wazero's own ceiling (~50 MB per call stack, grown by copying). An
// unchecked function that calls others stacks, with its callees, at
// most TickFreeStack units, and one that calls none adds one frame; a
// checked caller has paid for either.
//
// Both rewrites (Instrument, and InlineFills for runtimes that bound time
// and stack themselves) also turn small constant memory.fill instructions
// into stores (fills.go); Instrument sends the other fills through a
// helper function that stores short ones (fills.go, wazero only). Both
// record what the guest's own memory.grow
// instructions return: each is followed by a store of its result into a
// mutable i32 global the module exports as GrowGlobal, so that after a
// failed call the host can tell a guest that ran out of memory (its
// allocator asked for more than the memory cap leaves, got -1, and gave
// up) from one that trapped for another reason, on either runtime,
// whatever language the guest is written in. A module with no memory.grow
// of its own gets no such global.
//
// The rewriter also bounds what a module can make the host allocate
// outside its linear memory: at most MaxLocals locals per function, at
// most MaxTables tables of at most MaxTableElements elements (a larger
// maximum is lowered, so table.grow fails past it as the spec allows).
//
// The module is read and written with host/internal/wasmbin.

// SafePointEvery is how many ticks a guest runs between two passes
// through Go: small enough that a stop-the-world pause or a deadline waits
// well under a millisecond, large enough that the pass costs nothing per
// tick.
const SafePointEvery = 1 << 15

// BulkBytesPerTick is how many bytes of a bulk memory instruction count
// as one tick: 32768 ticks of it are 32 MiB, a few milliseconds of copying.
const BulkBytesPerTick = 1 << bulkShift

const bulkShift = 10

// StackBudget is the call-stack budget of one call, in StackUnitBytes
// units of estimated frame size: 16 MiB of frames.
const (
	StackUnitBytes = 64
	StackBudget    = (16 << 20) / StackUnitBytes
)

// Bounds on what a module may declare, checked before compiling.
const (
	// MaxLocals bounds the locals of one function (as browsers do): a
	// local declaration is compact, its frame is not.
	MaxLocals = 50000
	// MaxTables and MaxTableElements bound tables: each element costs the
	// host a pointer per instance.
	MaxTables        = 8
	MaxTableElements = 1 << 16
)

// InterruptGlobal is the name under which an instrumented module exports
// its interrupt flag. A module must not export this name itself.
const InterruptGlobal = "wasmsched_interrupt"

// GrowGlobal is the name under which a rewritten module exports the
// result of its last memory.grow: the memory's old size in pages, -1 when
// the grow was refused (the memory cap, or the module's own maximum), 0
// before any. Only modules that grow their memory have it. A module must
// not export this name itself.
const GrowGlobal = "wasmsched_memory_grow"

// Values of the interrupt flag.
const (
	interruptNone     = 0
	interruptDeadline = 1 // set by the host when the call's deadline passes
	interruptStack    = 2 // set by the guest when its stack budget runs out
)

// ErrUnsupportedModule is wrapped when a module uses something the
// instrumentation cannot rewrite safely, or declares more than the bounds
// above.
var ErrUnsupportedModule = errors.New("module cannot be instrumented")

// moduleInfo is what the rewriter needs to know about a module.
type moduleInfo struct {
	types           []wasmbin.FuncType
	funcs           []uint32 // type index of each defined function
	importedFuncs   uint32
	importedGlobals int
	definedGlobals  int
	hasMemory       bool
}

// globals are the indexes of the added globals: the checks' three (with
// Instrument) and the grow recorder (when the module grows its memory).
type globals struct{ countdown, interrupt, stack, grow uint32 }

// Instrument returns the module with the added globals and checks, its
// small constant fills inlined and its other fills calling the fill
// helper (fills.go). It
// refuses modules with a start section (they would run code at
// instantiation, before a deadline can be armed), modules using
// instructions it does not know (SIMD, threads, exceptions), modules
// touching the added globals, and modules over the bounds above.
func Instrument(bin []byte) ([]byte, error) { return rewrite(bin, true) }

// InlineFills returns the module with only its small constant fills
// inlined (fills.go), after the same refusals as Instrument and with
// tables capped the same way. It serves runtimes that bound a guest's
// time and stack themselves (Wasmtime's epochs and stack limit).
func InlineFills(bin []byte) ([]byte, error) { return rewrite(bin, false) }

// RewriteRevision changes whenever the rewriting of modules changes what
// it outputs, so caches of compiled code keyed by a module's original
// bytes (not by the rewritten ones) can include it.
const RewriteRevision = 5

// rewrite is Instrument (checks) or InlineFills.
func rewrite(bin []byte, checks bool) ([]byte, error) {
	secs, err := wasmbin.ReadSections(bin)
	// A start section is refused as soon as it is met, before whatever
	// follows it is found malformed.
	if hasSection(secs, wasmbin.SecStart) {
		return nil, fmt.Errorf("%w: it has a start section; a reactor initialises in _initialize", ErrUnsupportedModule)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedModule, err)
	}

	info, err := analyze(secs)
	if err != nil {
		return nil, err
	}
	refs, readRefs := referencedFuncs(secs)
	allRefs := !readRefs
	if allRefs {
		refs = map[uint32]bool{}
	}
	if !info.hasMemory {
		return nil, fmt.Errorf("%w: it has no memory", ErrUnsupportedModule)
	}
	// New globals after the existing ones: the checks' three, then the
	// grow recorder.
	first := uint32(info.importedGlobals + info.definedGlobals)
	g := globals{countdown: first, interrupt: first + 1, stack: first + 2, grow: first}
	if checks {
		g.grow = first + 3
	}

	// The code is rewritten first: it may need new (block) types.
	types := &typeTable{types: info.types}
	var code []byte
	grows := false
	helper := noHelper
	for _, s := range secs {
		if s.ID == wasmbin.SecCode {
			if code, grows, helper, err = instrumentCode(s.Payload, info, refs, allRefs, checks, g, types); err != nil {
				return nil, err
			}
		}
	}
	if len(types.added) > 0 && !hasSection(secs, wasmbin.SecType) {
		return nil, fmt.Errorf("%w: functions without a type section", ErrUnsupportedModule)
	}
	added := addedGlobals{checks: checks, grow: grows, g: g}

	out := append([]byte(nil), bin[:8]...)
	haveGlobal, haveExport := added.count() == 0, added.count() == 0 // nothing to add
	globalRank, _ := wasmbin.Rank(wasmbin.SecGlobal)
	exportRank, _ := wasmbin.Rank(wasmbin.SecExport)
	emitMissing := func(beforeRank int) {
		if !haveGlobal && beforeRank > globalRank {
			out = wasmbin.AppendSection(out, wasmbin.SecGlobal, added.appendGlobals(wasmbin.AppendU32(nil, added.count())))
			haveGlobal = true
		}
		if !haveExport && beforeRank > exportRank {
			out = wasmbin.AppendSection(out, wasmbin.SecExport, added.appendExports(wasmbin.AppendU32(nil, added.exports())))
			haveExport = true
		}
	}
	for _, s := range secs {
		if rank, ok := wasmbin.Rank(s.ID); ok {
			emitMissing(rank)
		}
		payload := s.Payload
		switch s.ID {
		case wasmbin.SecType:
			payload, err = extendVector(payload, uint32(len(types.added)), func(b []byte) []byte {
				for _, t := range types.added {
					b = append(b, t...)
				}
				return b
			})
		case wasmbin.SecFunction:
			if helper != noHelper {
				payload, err = extendVector(payload, 1, func(b []byte) []byte { return wasmbin.AppendU32(b, helper) })
			}
		case wasmbin.SecTable:
			payload, err = capTables(payload)
		case wasmbin.SecGlobal:
			if added.count() > 0 {
				payload, err = extendVector(payload, added.count(), added.appendGlobals)
			}
			haveGlobal = true
		case wasmbin.SecExport:
			if err = checkExports(payload, first); err == nil && added.exports() > 0 {
				payload, err = extendVector(payload, added.exports(), added.appendExports)
			}
			haveExport = true
		case wasmbin.SecCode:
			payload = code
		}
		if err != nil {
			return nil, err
		}
		out = wasmbin.AppendSection(out, s.ID, payload)
	}
	emitMissing(1 << 30)
	return out, nil
}

func hasSection(secs []wasmbin.Section, id byte) bool {
	for _, s := range secs {
		if s.ID == id {
			return true
		}
	}
	return false
}

// analyze reads the type, import, function, memory and global sections.
func analyze(secs []wasmbin.Section) (*moduleInfo, error) {
	info := &moduleInfo{}
	for _, s := range secs {
		r := wasmbin.NewReader(s.Payload)
		switch s.ID {
		case wasmbin.SecType:
			n := r.U32()
			for i := uint32(0); i < n && r.Err() == nil; i++ {
				if form := r.Byte(); form != 0x60 && r.Err() == nil {
					return nil, fmt.Errorf("%w: type %d has form 0x%02x, not a function type", ErrUnsupportedModule, i, form)
				}
				var t wasmbin.FuncType
				t.Params = r.ValTypes()
				t.Results = r.ValTypes()
				info.types = append(info.types, t)
			}
		case wasmbin.SecImport:
			n := r.U32()
			for i := uint32(0); i < n && r.Err() == nil; i++ {
				r.Bytes(int(r.U32())) // module
				r.Bytes(int(r.U32())) // name
				switch kind := r.Byte(); kind {
				case 0x00: // func
					r.U32()
					info.importedFuncs++
				case 0x01: // table
					return nil, fmt.Errorf("%w: it imports a table", ErrUnsupportedModule)
				case 0x02: // memory
					r.SkipLimits()
					info.hasMemory = true
				case 0x03: // global
					r.Byte()
					r.Byte()
					info.importedGlobals++
				default:
					if r.Err() == nil {
						return nil, fmt.Errorf("%w: import kind %d", ErrUnsupportedModule, kind)
					}
				}
			}
		case wasmbin.SecFunction:
			n := r.U32()
			for i := uint32(0); i < n && r.Err() == nil; i++ {
				info.funcs = append(info.funcs, r.U32())
			}
		case wasmbin.SecMemory:
			if r.U32() > 0 {
				info.hasMemory = true
			}
		case wasmbin.SecGlobal:
			info.definedGlobals = int(r.U32())
		default:
			continue
		}
		if r.Err() != nil {
			return nil, fmt.Errorf("%w: section %d: %v", ErrUnsupportedModule, s.ID, r.Err())
		}
	}
	for i, t := range info.funcs {
		if int(t) >= len(info.types) {
			return nil, fmt.Errorf("%w: function %d has type %d, which does not exist", ErrUnsupportedModule, i, t)
		}
	}
	return info, nil
}

// typeTable finds or adds the function types block types need.
type typeTable struct {
	types []wasmbin.FuncType
	added [][]byte // encoded types to append to the type section
}

// blockType returns the block type of a block yielding results.
func (t *typeTable) blockType(results []byte) []byte {
	switch len(results) {
	case 0:
		return []byte{0x40}
	case 1:
		return []byte{results[0]}
	}
	for i, ft := range t.types {
		if len(ft.Params) == 0 && bytes.Equal(ft.Results, results) {
			return wasmbin.AppendS32(nil, int32(i))
		}
	}
	idx := len(t.types)
	t.types = append(t.types, wasmbin.FuncType{Results: results})
	enc := []byte{0x60, 0x00}
	enc = wasmbin.AppendU32(enc, uint32(len(results)))
	t.added = append(t.added, append(enc, results...))
	return wasmbin.AppendS32(nil, int32(idx))
}

// funcType returns the index of the function type (params) -> (),
// adding it if the module has none.
func (t *typeTable) funcType(params []byte) uint32 {
	for i, ft := range t.types {
		if len(ft.Results) == 0 && bytes.Equal(ft.Params, params) {
			return uint32(i)
		}
	}
	idx := len(t.types)
	t.types = append(t.types, wasmbin.FuncType{Params: params})
	enc := []byte{0x60}
	enc = wasmbin.AppendU32(enc, uint32(len(params)))
	enc = append(append(enc, params...), 0x00)
	t.added = append(t.added, enc)
	return uint32(idx)
}

// capTables checks the table section against MaxTables and
// MaxTableElements and lowers every maximum to MaxTableElements.
func capTables(payload []byte) ([]byte, error) {
	r := wasmbin.NewReader(payload)
	n := r.U32()
	if n > MaxTables {
		return nil, fmt.Errorf("%w: it declares %d tables; at most %d", ErrUnsupportedModule, n, MaxTables)
	}
	out := wasmbin.AppendU32(nil, n)
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		ref := r.Byte()
		flags := r.Byte()
		if r.Err() == nil && (ref != 0x70 && ref != 0x6F || flags > 1) {
			return nil, fmt.Errorf("%w: table %d has an unsupported type (0x%02x, limits 0x%02x)", ErrUnsupportedModule, i, ref, flags)
		}
		min, max := r.U32(), uint32(MaxTableElements)
		if flags == 1 {
			if m := r.U32(); m < max {
				max = m
			}
		}
		if min > MaxTableElements {
			return nil, fmt.Errorf("%w: table %d starts with %d elements; at most %d", ErrUnsupportedModule, i, min, MaxTableElements)
		}
		out = append(out, ref, 0x01)
		out = wasmbin.AppendU32(wasmbin.AppendU32(out, min), max)
	}
	if r.Err() != nil || r.Remaining() != 0 {
		return nil, fmt.Errorf("%w: table section malformed", ErrUnsupportedModule)
	}
	return out, nil
}

// addedGlobals says which globals (and exports of them) a rewrite adds:
// the checks' three with Instrument, the grow recorder when the module has
// a memory.grow of its own.
type addedGlobals struct {
	checks, grow bool
	g            globals
}

// count is the number of globals added.
func (a addedGlobals) count() uint32 {
	n := uint32(0)
	if a.checks {
		n = 3
	}
	if a.grow {
		n++
	}
	return n
}

// exports is the number of exports added: the interrupt flag, GrowGlobal.
func (a addedGlobals) exports() uint32 {
	n := uint32(0)
	if a.checks {
		n++
	}
	if a.grow {
		n++
	}
	return n
}

// appendGlobals appends the added globals' declarations, in index order.
func (a addedGlobals) appendGlobals(b []byte) []byte {
	if a.checks {
		b = appendNewGlobals(b)
	}
	if a.grow {
		b = append(b, 0x7F, 0x01, 0x41, 0x00, 0x0B) // mutable i32, 0
	}
	return b
}

// appendExports appends the added exports.
func (a addedGlobals) appendExports(b []byte) []byte {
	if a.checks {
		b = appendNewExport(b, InterruptGlobal, a.g.interrupt)
	}
	if a.grow {
		b = appendNewExport(b, GrowGlobal, a.g.grow)
	}
	return b
}

// appendNewGlobals appends the countdown (mutable i32, SafePointEvery),
// the interrupt flag (mutable i32, 0) and the stack budget (mutable i32,
// StackBudget).
func appendNewGlobals(b []byte) []byte {
	b = append(b, 0x7F, 0x01, 0x41)
	b = wasmbin.AppendS32(b, SafePointEvery)
	b = append(b, 0x0B)
	b = append(b, 0x7F, 0x01, 0x41, 0x00, 0x0B)
	b = append(b, 0x7F, 0x01, 0x41)
	b = wasmbin.AppendS32(b, StackBudget)
	return append(b, 0x0B)
}

// Instruction sequences the rewriter inserts.
func globalGet(b []byte, idx uint32) []byte { return wasmbin.AppendU32(append(b, 0x23), idx) }
func globalSet(b []byte, idx uint32) []byte { return wasmbin.AppendU32(append(b, 0x24), idx) }

// recordGrow follows a memory.grow: its result goes into the GrowGlobal
// global and stays on the stack.
func recordGrow(b []byte, g globals) []byte { return globalGet(globalSet(b, g.grow), g.grow) }

// safePoint: pass through Go, trap if interrupted, rearm the countdown.
func safePoint(b []byte, g globals) []byte {
	b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1A) // i32.const 0; memory.grow 0; drop
	b = globalGet(b, g.interrupt)
	b = append(b, 0x04, 0x40, 0x00, 0x0B) // if; unreachable; end
	b = append(b, 0x41)
	b = wasmbin.AppendS32(b, SafePointEvery)
	return globalSet(b, g.countdown)
}

// ifCountdownSpent runs the safe point when the countdown reached zero.
func ifCountdownSpent(b []byte, g globals) []byte {
	b = globalGet(b, g.countdown)
	b = append(b, 0x41, 0x01, 0x48, 0x04, 0x40) // i32.const 1; i32.lt_s; if
	b = safePoint(b, g)
	return append(b, 0x0B)
}

// tick counts n ticks: the code put at the top of every loop body (n=1)
// and at the entry of every instrumented function.
func tick(g globals, n int32) []byte {
	b := globalGet(nil, g.countdown)
	b = wasmbin.AppendS32(append(b, 0x41), n) // i32.const n
	b = append(b, 0x6B)                       // i32.sub
	b = globalSet(b, g.countdown)
	return ifCountdownSpent(b, g)
}

// bulkTick charges a bulk memory instruction by its length, the value on
// top of the stack, which it leaves there (scratch is an i32 local).
func bulkTick(g globals, scratch uint32) []byte {
	b := wasmbin.AppendU32([]byte{0x22}, scratch) // local.tee
	b = globalGet(b, g.countdown)
	b = wasmbin.AppendU32(append(b, 0x20), scratch) // local.get
	b = append(b, 0x41, bulkShift, 0x76, 0x6B)      // i32.const shift; i32.shr_u; i32.sub
	b = globalSet(b, g.countdown)
	return ifCountdownSpent(b, g)
}

// stackEnter takes a frame's weight from the stack budget and traps when
// the budget is overdrawn.
func stackEnter(g globals, weight int32) []byte {
	b := globalGet(nil, g.stack)
	b = wasmbin.AppendS32(append(b, 0x41), weight)
	b = append(b, 0x6B) // i32.sub
	b = globalSet(b, g.stack)
	b = globalGet(b, g.stack)
	b = append(b, 0x41, 0x00, 0x48, 0x04, 0x40) // i32.const 0; i32.lt_s; if
	b = wasmbin.AppendS32(append(b, 0x41), interruptStack)
	b = globalSet(b, g.interrupt)
	return append(b, 0x00, 0x0B) // unreachable; end
}

// stackLeave gives a frame's weight back.
func stackLeave(g globals, weight int32) []byte {
	b := globalGet(nil, g.stack)
	b = wasmbin.AppendS32(append(b, 0x41), weight)
	b = append(b, 0x6A) // i32.add
	return globalSet(b, g.stack)
}

// appendNewExport appends the export of an added global.
func appendNewExport(b []byte, name string, idx uint32) []byte {
	b = wasmbin.AppendU32(b, uint32(len(name)))
	b = append(b, name...)
	b = append(b, 0x03) // global
	return wasmbin.AppendU32(b, idx)
}

// extendVector is wasmbin.ExtendVector, refusing a section whose entry
// count cannot be read.
func extendVector(payload []byte, extra uint32, add func([]byte) []byte) ([]byte, error) {
	out, err := wasmbin.ExtendVector(payload, extra, add)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedModule, err)
	}
	return out, nil
}

// checkExports refuses exports named InterruptGlobal or GrowGlobal and
// exports of globals that do not exist before instrumentation (they would
// name the added ones).
func checkExports(payload []byte, globals uint32) error {
	r := wasmbin.NewReader(payload)
	n := r.U32()
	for i := uint32(0); i < n && r.Err() == nil; i++ {
		name := r.Bytes(int(r.U32()))
		kind := r.Byte()
		idx := r.U32()
		if string(name) == InterruptGlobal || string(name) == GrowGlobal {
			return fmt.Errorf("%w: it already exports %s", ErrUnsupportedModule, name)
		}
		if kind == 0x03 && idx >= globals && r.Err() == nil {
			return fmt.Errorf("%w: it exports global %d, which does not exist", ErrUnsupportedModule, idx)
		}
	}
	if r.Err() != nil {
		return fmt.Errorf("%w: export section: %v", ErrUnsupportedModule, r.Err())
	}
	return nil
}

// instrumentCode rewrites every function body of the code section: a
// first pass learns each function's calls, size and frame (scanBody),
// planEntries decides which functions need entry checks, and a second
// pass writes the bodies (instrumentBody). grows says a body has a
// memory.grow of its own, recorded in GrowGlobal.
//
// With checks, a module with memory.fill instructions left after the
// inlining gets the fill helper (fills.go) as its last function; helper
// is the helper's type index, or noHelper.
func instrumentCode(payload []byte, info *moduleInfo, refs map[uint32]bool, allRefs, checks bool, g globals, types *typeTable) (_ []byte, grows bool, helper uint32, _ error) {
	helper = noHelper
	r := wasmbin.NewReader(payload)
	n := r.U32()
	if r.Err() == nil && int(n) != len(info.funcs) {
		return nil, false, helper, fmt.Errorf("%w: %d function bodies for %d functions", ErrUnsupportedModule, n, len(info.funcs))
	}
	bodies := make([][]byte, 0, len(info.funcs))
	facts := make([]funcFacts, 0, len(info.funcs))
	for i := uint32(0); i < n; i++ {
		size := r.U32()
		code := r.Bytes(int(size))
		if r.Err() != nil {
			return nil, false, helper, fmt.Errorf("%w: code section: %v", ErrUnsupportedModule, r.Err())
		}
		f, err := scanBody(code, info.types[info.funcs[i]], g, refs)
		if err != nil {
			return nil, false, helper, fmt.Errorf("%w: function %d: %v", ErrUnsupportedModule, i, err)
		}
		for _, c := range f.callees {
			if uint64(c) >= uint64(info.importedFuncs)+uint64(len(info.funcs)) {
				return nil, false, helper, fmt.Errorf("%w: function %d calls function %d, which does not exist", ErrUnsupportedModule, i, c)
			}
		}
		grows = grows || f.grows
		bodies, facts = append(bodies, code), append(facts, f)
	}
	if r.Remaining() != 0 {
		return nil, false, helper, fmt.Errorf("%w: code section has trailing bytes", ErrUnsupportedModule)
	}
	plans := make([]entryPlan, len(facts))
	callFill := noHelper // the helper's function index
	if checks {
		plans = planEntries(facts, info.importedFuncs, refs, allRefs)
		for _, f := range facts {
			if f.dynFills && fillHelper {
				helper = types.funcType(fillHelperParams)
				callFill = info.importedFuncs + uint32(len(info.funcs))
				break
			}
		}
	}
	count := n
	if helper != noHelper {
		count++
	}
	out := wasmbin.AppendU32(nil, count)
	var body []byte
	for i, code := range bodies {
		// A scratch local for bulk ticks (checks) and inlined fills.
		scratch := facts[i].fills || (checks && facts[i].bulk)
		body = instrumentBody(body[:0], code, info.types[info.funcs[i]], scratch, checks, plans[i], g, types, callFill)
		out = wasmbin.AppendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if helper != noHelper {
		body = appendFillHelper(body[:0])
		out = wasmbin.AppendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, grows, helper, nil
}

// noHelper says a module gets no fill helper.
const noHelper = ^uint32(0)

// scanBody validates one function body and returns what planEntries needs
// to know about it. Function indexes named by ref.func are added to refs.
func scanBody(code []byte, ft wasmbin.FuncType, g globals, refs map[uint32]bool) (funcFacts, error) {
	var f funcFacts
	r := wasmbin.NewReader(code)
	groups := r.U32()
	var locals uint64
	for i := uint32(0); i < groups && r.Err() == nil; i++ {
		locals += uint64(r.U32())
		r.Byte() // value type
	}
	if r.Err() != nil {
		return f, r.Err()
	}
	if locals > MaxLocals {
		return f, fmt.Errorf("it declares %d locals; at most %d", locals, MaxLocals)
	}
	nlocals := uint32(uint64(len(ft.Params)) + locals)
	var prev, prev2 wasmbin.Instr
	extra := 0
	for r.Remaining() > 0 {
		in, err := r.Instr()
		if err != nil {
			return f, err
		}
		if in.Op == 0xFC && in.Sub == 11 {
			if v, ok := inlineFill(prev2, prev, code[r.Off()-1]); ok {
				f.fills = true
				extra += len(appendInlineFill(nil, nlocals, v, prev.Imm))
			} else if isDynamicFill(in, code[r.Off()-1]) {
				f.dynFills = true
			}
		}
		prev2, prev = prev, in
		switch {
		case in.Op >= 0x20 && in.Op <= 0x22 && in.Idx >= nlocals:
			return f, fmt.Errorf("uses local %d, which does not exist", in.Idx)
		case (in.Op == 0x23 || in.Op == 0x24) && in.Idx >= g.countdown:
			return f, fmt.Errorf("uses global %d, which does not exist", in.Idx)
		case in.Op == 0x10 || in.Op == 0x12:
			f.callees = append(f.callees, in.Idx)
		case in.Op == 0x11 || in.Op == 0x13:
			f.indirect = true
		case in.Op == 0xD2:
			refs[in.Idx] = true
		case in.Op == 0x40:
			f.grows = true
			extra += len(recordGrow(nil, g)) // straight-line code too
		}
		f.bulk = f.bulk || in.BulkMemory()
	}
	f.size = len(code) + extra // inlined fills run as straight-line code
	f.weight = frameWeight(len(ft.Params), locals, len(code))
	return f, nil
}

// instrumentBody copies one (scanned) function body with its small
// constant fills inlined (fills.go) and, with checks, its checks: a tick
// after the block type of every loop and before every bulk memory
// instruction left; for a function planned for entry checks, the stack
// charge and a tick at entry, the body wrapped in a block (so a branch to
// the body's label lands before the exit), and the charge given back
// before every way out. It walks every instruction so that an immediate
// byte that happens to equal an opcode is never mistaken for one.
func instrumentBody(out, code []byte, ft wasmbin.FuncType, needScratch, checks bool, plan entryPlan, g globals, types *typeTable, callFill uint32) []byte {
	r := wasmbin.NewReader(code)
	groups := r.U32()
	groupsEnd := r.Off()
	var locals uint64
	for i := uint32(0); i < groups; i++ {
		locals += uint64(r.U32())
		r.Byte() // value type
	}
	localsEnd := r.Off()
	scratch := uint32(uint64(len(ft.Params)) + locals)
	if needScratch {
		out = wasmbin.AppendU32(out, groups+1)
		out = append(out, code[groupsEnd:localsEnd]...)
		out = append(out, 0x01, 0x7F) // one i32
	} else {
		out = append(out, code[:localsEnd]...)
	}
	var leave []byte
	if plan.instrumented {
		out = append(out, stackEnter(g, plan.charge)...)
		out = append(out, tick(g, plan.ticks)...)
		out = append(out, 0x02) // block
		out = append(out, types.blockType(ft.Results)...)
		leave = stackLeave(g, plan.charge)
	}
	loop := tick(g, 1)
	// The last two instructions and where they start in out: an inlined
	// fill replaces its two constant operands.
	var prev, prev2 wasmbin.Instr
	var prevAt, prev2At int
	for r.Remaining() > 0 {
		start := r.Off()
		in, _ := r.Instr() // validated by scanBody
		if in.Op == 0xFC && in.Sub == 11 {
			if v, ok := inlineFill(prev2, prev, code[r.Off()-1]); ok {
				out = appendInlineFill(out[:prev2At], scratch, v, prev.Imm)
				prev, prev2 = wasmbin.Instr{}, wasmbin.Instr{}
				continue
			}
		}
		prev2, prev, prev2At = prev, in, prevAt
		switch {
		case plan.instrumented && in.Returns():
			out = append(out, leave...)
		case checks && in.BulkMemory():
			out = append(out, bulkTick(g, scratch)...)
		}
		prevAt = len(out)
		if callFill != noHelper && isDynamicFill(in, code[r.Off()-1]) {
			out = wasmbin.AppendU32(append(out, 0x10), callFill) // call fill
		} else {
			out = append(out, code[start:r.Off()]...)
		}
		switch {
		case checks && in.Op == 0x03:
			out = append(out, loop...)
		case in.Op == 0x40:
			out = recordGrow(out, g)
		}
	}
	if plan.instrumented {
		// The body's own end closed the block; leave, then end the body.
		out = append(out, leave...)
		out = append(out, 0x0B)
	}
	return out
}
