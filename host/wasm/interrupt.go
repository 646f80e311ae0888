package wasm

import (
	"errors"
	"fmt"
)

// Deadlines without wazero's termination checks.
//
// wazero can stop a running guest when its context ends
// (RuntimeConfig.WithCloseOnContextDone). It does so by leaving machine
// code for Go at every loop iteration: native code cannot be preempted, so
// a loop that never returns to Go would also block the Go runtime's
// stop-the-world pauses, and with them the timers that would stop it. That
// exit made our batched filter loops 2-5× slower (docs/PERFORMANCE.md).
//
// Instead, before compiling, we rewrite the module: we add two mutable i32
// globals, a countdown and an interrupt flag (exported as InterruptGlobal),
// and put this at the top of every loop body:
//
//	countdown -= 1
//	if countdown == 0 {
//	    memory.grow 0        // leaves machine code for Go: a safe point
//	    if interrupt { unreachable }
//	    countdown = SafePointEvery
//	}
//
// so a loop iteration costs a decrement and a branch, and every
// SafePointEvery iterations the guest passes through Go (where the
// scheduler and the garbage collector can stop it) and checks the flag.
// When a call's deadline passes, a timer sets the flag and the guest traps
// within SafePointEvery iterations; the instance is then discarded.
// Straight-line code always ends and unbounded recursion ends in a
// stack-overflow trap, so loops are the only place a guest can run forever.

// SafePointEvery is how many loop iterations a guest runs between two
// passes through Go: small enough that a stop-the-world pause or a deadline
// waits well under a millisecond, large enough that the pass costs nothing
// per iteration.
const SafePointEvery = 1 << 15

// InterruptGlobal is the name under which an instrumented module exports
// its interrupt flag. A module must not export this name itself.
const InterruptGlobal = "wasmsched_interrupt"

// ErrUnsupportedModule is wrapped when a module uses something the
// instrumentation cannot rewrite safely.
var ErrUnsupportedModule = errors.New("module cannot be instrumented")

// Section ids of the Wasm binary format.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
	secData     = 11
	secDataCnt  = 12
	secTag      = 13
)

// sectionRank orders non-custom sections as the binary format requires.
var sectionRank = map[byte]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCnt: 11, secCode: 12, secData: 13,
}

type section struct {
	id      byte
	payload []byte
}

// Instrument returns the module with the interrupt global and loop checks
// added. It refuses modules with a start section (they would run code at
// instantiation, before a deadline can be armed) and modules using
// instructions it does not know (SIMD, threads, exceptions).
func Instrument(bin []byte) ([]byte, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" || bin[4] != 1 || bin[5] != 0 || bin[6] != 0 || bin[7] != 0 {
		return nil, fmt.Errorf("%w: not a Wasm 1.0 binary", ErrUnsupportedModule)
	}
	var secs []section
	r := reader{b: bin, off: 8}
	last := 0
	for r.off < len(r.b) {
		id := r.byte()
		size := r.u32()
		payload := r.bytes(int(size))
		if r.err != nil {
			return nil, fmt.Errorf("%w: section %d: %v", ErrUnsupportedModule, id, r.err)
		}
		if id != secCustom {
			rank, ok := sectionRank[id]
			if !ok {
				return nil, fmt.Errorf("%w: unknown section id %d", ErrUnsupportedModule, id)
			}
			if rank <= last {
				return nil, fmt.Errorf("%w: section %d out of order", ErrUnsupportedModule, id)
			}
			last = rank
		}
		if id == secStart {
			return nil, fmt.Errorf("%w: it has a start section; a reactor initialises in _initialize", ErrUnsupportedModule)
		}
		secs = append(secs, section{id, payload})
	}

	importedGlobals, err := countImportedGlobals(secs)
	if err != nil {
		return nil, err
	}
	definedGlobals := 0
	for _, s := range secs {
		if s.id == secGlobal {
			r := reader{b: s.payload}
			definedGlobals = int(r.u32())
			if r.err != nil {
				return nil, fmt.Errorf("%w: global section: %v", ErrUnsupportedModule, r.err)
			}
		}
	}
	if !hasMemory(secs) {
		return nil, fmt.Errorf("%w: it has no memory", ErrUnsupportedModule)
	}
	// Two new globals after the existing ones: countdown, then interrupt.
	countdownIdx := uint32(importedGlobals + definedGlobals)
	globalIdx := countdownIdx + 1

	out := append([]byte(nil), bin[:8]...)
	haveGlobal, haveExport := false, false
	emitMissing := func(beforeRank int) {
		if !haveGlobal && beforeRank > sectionRank[secGlobal] {
			out = appendSection(out, secGlobal, appendNewGlobals(appendU32(nil, 2)))
			haveGlobal = true
		}
		if !haveExport && beforeRank > sectionRank[secExport] {
			out = appendSection(out, secExport, appendNewExport(appendU32(nil, 1), globalIdx))
			haveExport = true
		}
	}
	for _, s := range secs {
		if s.id != secCustom {
			emitMissing(sectionRank[s.id])
		}
		payload := s.payload
		switch s.id {
		case secGlobal:
			payload, err = extendVector(payload, 2, appendNewGlobals)
			haveGlobal = true
		case secExport:
			if err = checkExportName(payload); err == nil {
				payload, err = extendVector(payload, 1, func(b []byte) []byte { return appendNewExport(b, globalIdx) })
			}
			haveExport = true
		case secCode:
			payload, err = instrumentCode(payload, loopCheck(countdownIdx, globalIdx))
		}
		if err != nil {
			return nil, err
		}
		out = appendSection(out, s.id, payload)
	}
	emitMissing(1 << 30)
	return out, nil
}

// appendNewGlobals appends the countdown (mutable i32, SafePointEvery) and
// the interrupt flag (mutable i32, 0).
func appendNewGlobals(b []byte) []byte {
	b = append(b, 0x7F, 0x01, 0x41)
	b = appendS32(b, SafePointEvery)
	b = append(b, 0x0B)
	return append(b, 0x7F, 0x01, 0x41, 0x00, 0x0B)
}

// loopCheck is the code put at the top of every loop body (see the
// package comment above).
func loopCheck(countdown, interrupt uint32) []byte {
	get := func(b []byte, idx uint32) []byte { return appendU32(append(b, 0x23), idx) }
	set := func(b []byte, idx uint32) []byte { return appendU32(append(b, 0x24), idx) }
	var b []byte
	b = get(b, countdown)
	b = append(b, 0x41, 0x01, 0x6B) // i32.const 1; i32.sub
	b = set(b, countdown)
	b = get(b, countdown)
	b = append(b, 0x45, 0x04, 0x40)             // i32.eqz; if
	b = append(b, 0x41, 0x00, 0x40, 0x00, 0x1A) // i32.const 0; memory.grow 0; drop
	b = get(b, interrupt)
	b = append(b, 0x04, 0x40, 0x00, 0x0B) // if; unreachable; end
	b = append(b, 0x41)
	b = appendS32(b, SafePointEvery)
	b = set(b, countdown)
	return append(b, 0x0B) // end
}

// hasMemory reports whether the module defines or imports a memory, which
// the safe point (memory.grow 0) needs.
func hasMemory(secs []section) bool {
	for _, s := range secs {
		r := reader{b: s.payload}
		switch s.id {
		case secMemory:
			if r.u32() > 0 && r.err == nil {
				return true
			}
		case secImport:
			n := r.u32()
			for i := uint32(0); i < n && r.err == nil; i++ {
				r.bytes(int(r.u32()))
				r.bytes(int(r.u32()))
				switch r.byte() {
				case 0x00:
					r.u32()
				case 0x01:
					r.byte()
					r.limits()
				case 0x02:
					return r.err == nil
				case 0x03:
					r.byte()
					r.byte()
				}
			}
		}
	}
	return false
}

// appendNewExport appends the export of the interrupt global.
func appendNewExport(b []byte, idx uint32) []byte {
	b = appendU32(b, uint32(len(InterruptGlobal)))
	b = append(b, InterruptGlobal...)
	b = append(b, 0x03) // global
	return appendU32(b, idx)
}

// extendVector rewrites a section that is a vector of entries, adding
// `extra` entries at the end.
func extendVector(payload []byte, extra uint32, add func([]byte) []byte) ([]byte, error) {
	r := reader{b: payload}
	n := r.u32()
	if r.err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedModule, r.err)
	}
	out := appendU32(nil, n+extra)
	out = append(out, payload[r.off:]...)
	return add(out), nil
}

func checkExportName(payload []byte) error {
	r := reader{b: payload}
	n := r.u32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		name := r.bytes(int(r.u32()))
		r.byte()
		r.u32()
		if string(name) == InterruptGlobal {
			return fmt.Errorf("%w: it already exports %s", ErrUnsupportedModule, InterruptGlobal)
		}
	}
	if r.err != nil {
		return fmt.Errorf("%w: export section: %v", ErrUnsupportedModule, r.err)
	}
	return nil
}

func countImportedGlobals(secs []section) (int, error) {
	for _, s := range secs {
		if s.id != secImport {
			continue
		}
		r := reader{b: s.payload}
		n := r.u32()
		globals := 0
		for i := uint32(0); i < n && r.err == nil; i++ {
			r.bytes(int(r.u32())) // module
			r.bytes(int(r.u32())) // name
			switch kind := r.byte(); kind {
			case 0x00: // func
				r.u32()
			case 0x01: // table
				r.byte()
				r.limits()
			case 0x02: // memory
				r.limits()
			case 0x03: // global
				r.byte()
				r.byte()
				globals++
			default:
				return 0, fmt.Errorf("%w: import kind %d", ErrUnsupportedModule, kind)
			}
		}
		if r.err != nil {
			return 0, fmt.Errorf("%w: import section: %v", ErrUnsupportedModule, r.err)
		}
		return globals, nil
	}
	return 0, nil
}

// instrumentCode rewrites every function body of the code section.
func instrumentCode(payload []byte, check []byte) ([]byte, error) {
	r := reader{b: payload}
	n := r.u32()
	out := appendU32(nil, n)
	var body []byte
	for i := uint32(0); i < n; i++ {
		size := r.u32()
		code := r.bytes(int(size))
		if r.err != nil {
			return nil, fmt.Errorf("%w: code section: %v", ErrUnsupportedModule, r.err)
		}
		var err error
		body, err = instrumentBody(body[:0], code, check)
		if err != nil {
			return nil, fmt.Errorf("%w: function %d: %v", ErrUnsupportedModule, i, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%w: code section has trailing bytes", ErrUnsupportedModule)
	}
	return out, nil
}

// instrumentBody copies one function body, inserting check after the block
// type of every loop instruction. It walks every instruction so that an
// immediate byte that happens to equal the loop opcode is never mistaken
// for one.
func instrumentBody(out, code, check []byte) ([]byte, error) {
	r := reader{b: code}
	groups := r.u32()
	for i := uint32(0); i < groups && r.err == nil; i++ {
		r.u32()  // count
		r.byte() // value type
	}
	if r.err != nil {
		return nil, r.err
	}
	out = append(out, code[:r.off]...)
	for r.off < len(r.b) {
		start := r.off
		op := r.byte()
		isLoop := false
		switch {
		case op == 0x02 || op == 0x04: // block, if
			r.s33()
		case op == 0x03: // loop
			r.s33()
			isLoop = true
		case op == 0x0C || op == 0x0D: // br, br_if
			r.u32()
		case op == 0x0E: // br_table
			k := r.u32()
			for j := uint32(0); j <= k && r.err == nil; j++ {
				r.u32()
			}
		case op == 0x10 || op == 0x12: // call, return_call
			r.u32()
		case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
			r.u32()
			r.u32()
		case op == 0x1C: // select with types
			k := r.u32()
			for j := uint32(0); j < k && r.err == nil; j++ {
				r.byte()
			}
		case op >= 0x20 && op <= 0x26: // local/global get/set/tee, table.get/set
			r.u32()
		case op >= 0x28 && op <= 0x3E: // loads and stores: memarg
			r.u32()
			r.u32()
		case op == 0x3F || op == 0x40: // memory.size, memory.grow
			r.byte()
		case op == 0x41: // i32.const
			r.sleb(32)
		case op == 0x42: // i64.const
			r.sleb(64)
		case op == 0x43:
			r.bytes(4)
		case op == 0x44:
			r.bytes(8)
		case op == 0xD0: // ref.null
			r.byte()
		case op == 0xD2: // ref.func
			r.u32()
		case op == 0xFC:
			if err := r.prefixedFC(); err != nil {
				return nil, err
			}
		case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0B || op == 0x0F ||
			op == 0x1A || op == 0x1B || (op >= 0x45 && op <= 0xC4) || op == 0xD1:
			// no immediates
		default:
			return nil, fmt.Errorf("unsupported opcode 0x%02x at byte %d", op, start)
		}
		if r.err != nil {
			return nil, r.err
		}
		out = append(out, code[start:r.off]...)
		if isLoop {
			out = append(out, check...)
		}
	}
	return out, nil
}

// prefixedFC reads the immediates of a 0xFC-prefixed instruction
// (saturating conversions, bulk memory, table operations).
func (r *reader) prefixedFC() error {
	sub := r.u32()
	switch {
	case sub <= 7: // trunc_sat
	case sub == 8: // memory.init
		r.u32()
		r.byte()
	case sub == 9 || sub == 13: // data.drop, elem.drop
		r.u32()
	case sub == 10: // memory.copy
		r.byte()
		r.byte()
	case sub == 11: // memory.fill
		r.byte()
	case sub == 12 || sub == 14: // table.init, table.copy
		r.u32()
		r.u32()
	case sub >= 15 && sub <= 17: // table.grow, table.size, table.fill
		r.u32()
	default:
		return fmt.Errorf("unsupported instruction 0xfc %d", sub)
	}
	return nil
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(payload)))
	return append(out, payload...)
}

// appendS32 appends a signed LEB128 (for i32.const).
func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// reader decodes the binary format; the first error sticks and stops it.
type reader struct {
	b   []byte
	off int
	err error
}

var errTruncated = errors.New("truncated")

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.off = len(r.b)
}

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.fail(errTruncated)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) bytes(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.fail(errTruncated)
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

func (r *reader) u32() uint32 {
	var v uint32
	for shift := uint(0); shift < 35; shift += 7 {
		c := r.byte()
		if r.err != nil {
			return 0
		}
		v |= uint32(c&0x7F) << shift
		if c < 0x80 {
			return v
		}
	}
	r.fail(errors.New("u32 too long"))
	return 0
}

// sleb skips a signed LEB128 of at most bits bits.
func (r *reader) sleb(bits uint) {
	for n := uint(0); n < (bits+6)/7; n++ {
		if c := r.byte(); r.err != nil || c < 0x80 {
			return
		}
	}
	r.fail(errors.New("signed integer too long"))
}

// s33 skips a block type: one byte for an empty or value type, or a
// signed LEB128 type index.
func (r *reader) s33() { r.sleb(33) }

func (r *reader) limits() {
	flags := r.byte()
	r.u32()
	if flags&1 != 0 {
		r.u32()
	}
}
