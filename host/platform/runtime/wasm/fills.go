package wasm

import "github.com/wasmsched/wasmsched/host/internal/wasmbin"

// Small constant memory.fill instructions become plain stores.
//
// TinyGo zeroes the frame it keeps for its garbage collector (the shadow
// stack) at the entry of every function that holds a pointer across a
// call, with `i32.const 0; i32.const N; memory.fill`, N a few dozen bytes.
// Hot helpers (a label selector's match, a node-affinity term) pay it on
// every call. Neither runtime compiles memory.fill inline: Wasmtime calls
// a libcall for it, and wazero fills by doubling copies, one call into
// Go's memmove per doubling (six of them for 40 bytes). Profiles of the
// topology plugins put 18% of their Wasm time in these fills.
//
// So the rewriter replaces a memory.fill whose value and length are
// constants, the length at most MaxInlineFillBytes, with 8-byte stores
// (and 4-, 2- and 1-byte ones for the tail) off the destination, kept in
// a scratch local:
//
//	local.set $d
//	local.get $d; i64.const v·0x0101010101010101; i64.store offset=0
//	local.get $d; i64.const …; i64.store offset=8
//	…
//
// The stores write the same bytes and trap on the same destinations
// (the last one reaches exactly d+N, and a store's address does not wrap).
// The one difference is that a trapping fill writes nothing while the
// stores may write a prefix first; a trap discards the instance, so no
// guest can observe it. A zero-length fill is left alone: it traps when
// its destination is past the end of memory, which no store would check.

// MaxInlineFillBytes is the longest constant memory.fill turned into
// stores: 16 stores, about as much code as a call.
const MaxInlineFillBytes = 128

// inlineFill tells whether a memory.fill whose two operands on top of the
// stack were pushed by value and length (the instructions just before
// it) is replaced, and returns the byte value it fills with. memIdx is
// its memory index immediate.
func inlineFill(value, length wasmbin.Instr, memIdx byte) (byte, bool) {
	if value.Op != 0x41 || length.Op != 0x41 || memIdx != 0 {
		return 0, false
	}
	if value.Imm != int64(int32(value.Imm)) || length.Imm < 1 || length.Imm > MaxInlineFillBytes {
		return 0, false
	}
	return byte(value.Imm), true
}

// appendInlineFill appends the stores that replace `i32.const v;
// i32.const n; memory.fill` (the destination is on the stack), with dst
// a free i32 local.
func appendInlineFill(out []byte, dst uint32, v byte, n int64) []byte {
	out = wasmbin.AppendU32(append(out, 0x21), dst) // local.set
	pattern := int64(v) * 0x0101010101010101
	off := int64(0)
	for _, w := range [...]struct {
		size  int64
		store byte
		wide  bool
	}{{8, 0x37, true}, {4, 0x36, false}, {2, 0x3B, false}, {1, 0x3A, false}} {
		for ; off+w.size <= n; off += w.size {
			out = wasmbin.AppendU32(append(out, 0x20), dst) // local.get
			if w.wide {
				out = wasmbin.AppendS64(append(out, 0x42), pattern) // i64.const
			} else {
				out = wasmbin.AppendS32(append(out, 0x41), int32(pattern)) // i32.const
			}
			out = append(out, w.store, 0x00) // store, alignment 1
			out = wasmbin.AppendU32(out, uint32(off))
		}
	}
	return out
}

// Short fills of any length go through a helper function (wazero only).
//
// A memory.fill whose length is not a constant is left by the rule above,
// and TinyGo's allocator runs one on every allocation (it zeroes what it
// hands out). On wazero each costs one call into Go's memmove per doubling,
// tens of nanoseconds even for 8 bytes where a store takes one
// (BenchmarkFill in fills_test.go). So Instrument adds one function to a
// module that has such fills,
//
//	fill(d, v, n i32):
//	    if n-1 >= MaxStoredFillBytes (unsigned: n is 0 or long)
//	            or d+MaxStoredFillBytes wraps the address space:
//	        memory.fill d v n; return
//	    p := v·0x0101010101010101
//	    n >= 8:  8-byte stores of p from d while more than 8 remain, then
//	             one 8-byte store ending at d+n (it may overlap the last)
//	    n 4..7:  4-byte stores at d and at d+n-4
//	    n 2..3:  2-byte stores at d and at d+n-2
//	    n 1:     a byte at d
//
// and replaces every such memory.fill by a call to it (after its bulk
// tick, so the safe points see its length as before). The helper writes
// the same bytes; a destination past the end traps on the first store,
// which starts at d (a fill that would wrap the address space is handed
// to memory.fill), with the prefix caveat stated above. The helper runs
// at most MaxStoredFillBytes/8+1 stores and calls nothing, so its
// callers' bounded work between safe points stays bounded; it is
// appended after the module's functions, so no index moves.
// Wasmtime fills with one memset libcall and keeps memory.fill
// (InlineFills).

// MaxStoredFillBytes is the longest fill of non-constant length the
// helper does with stores; longer ones stay memory.fill, whose doubling
// copies cost less than the stores past that.
const MaxStoredFillBytes = 128

// fillHelper turns the helper on; tests turn it off to measure it.
var fillHelper = true

// fillHelperParams is the helper's signature: (d, v, n i32) -> ().
var fillHelperParams = []byte{0x7F, 0x7F, 0x7F}

// isDynamicFill tells whether a memory.fill (in, memory index memIdx),
// not inlined, goes to the helper.
func isDynamicFill(in wasmbin.Instr, memIdx byte) bool {
	return in.Op == 0xFC && in.Sub == 11 && memIdx == 0
}

// appendFillHelper appends the helper's body (locals included).
func appendFillHelper(b []byte) []byte {
	const d, v, n, p = 0, 1, 2, 3
	get := func(b []byte, l byte) []byte { return append(b, 0x20, l) }
	set := func(b []byte, l byte) []byte { return append(b, 0x21, l) }
	i32 := func(b []byte, c int32) []byte { return wasmbin.AppendS32(append(b, 0x41), c) }
	b = append(b, 0x01, 0x01, 0x7E) // one i64 local: p
	// if n-1 >= Max || d > 2^32-65: memory.fill; return
	b = get(b, n)
	b = i32(b, 1)
	b = append(b, 0x6B) // i32.sub
	b = i32(b, MaxStoredFillBytes)
	b = append(b, 0x4F) // i32.ge_u
	b = get(b, d)
	b = i32(b, -MaxStoredFillBytes-1)
	b = append(b, 0x4B) // i32.gt_u
	b = append(b, 0x72) // i32.or
	b = append(b, 0x04, 0x40)
	b = get(get(get(b, d), v), n)
	b = append(b, 0xFC, 0x0B, 0x00, 0x0F) // memory.fill 0; return
	b = append(b, 0x0B)
	// p = (i64(v) & 0xff) * 0x0101010101010101
	b = get(b, v)
	b = append(b, 0xAD) // i64.extend_i32_u
	b = wasmbin.AppendS64(append(b, 0x42), 0xFF)
	b = append(b, 0x83) // i64.and
	b = wasmbin.AppendS64(append(b, 0x42), 0x0101010101010101)
	b = append(b, 0x7E) // i64.mul
	b = set(b, p)
	// n >= 8
	b = get(b, n)
	b = i32(b, 8)
	b = append(b, 0x4F, 0x04, 0x40)       // i32.ge_u; if
	b = append(b, 0x02, 0x40, 0x03, 0x40) // block; loop
	b = get(b, n)
	b = i32(b, 8)
	b = append(b, 0x4D, 0x0D, 0x01) // i32.le_u; br_if 1
	b = get(get(b, d), p)
	b = append(b, 0x37, 0x00, 0x00) // i64.store align=1 offset=0
	b = set(append(i32(get(b, d), 8), 0x6A), d)
	b = set(append(i32(get(b, n), 8), 0x6B), n)
	b = append(b, 0x0C, 0x00, 0x0B, 0x0B) // br 0; end; end
	b = append(get(get(b, d), n), 0x6A)
	b = append(i32(b, 8), 0x6B)
	b = get(b, p)
	b = append(b, 0x37, 0x00, 0x00, 0x0F, 0x0B) // i64.store; return; end
	// n 4..7, 2..3: two overlapping stores of the pattern's low bytes
	for _, w := range [...]struct {
		size  int32
		store byte
	}{{4, 0x36}, {2, 0x3B}} {
		b = get(b, n)
		b = i32(b, w.size)
		b = append(b, 0x4F, 0x04, 0x40) // i32.ge_u; if
		b = get(b, d)
		b = append(get(b, p), 0xA7)        // i32.wrap_i64
		b = append(b, w.store, 0x00, 0x00) // store align=1 offset=0
		b = append(get(get(b, d), n), 0x6A)
		b = append(i32(b, w.size), 0x6B)
		b = append(get(b, p), 0xA7)
		b = append(b, w.store, 0x00, 0x00, 0x0F, 0x0B) // store; return; end
	}
	// n 1
	b = get(get(b, d), v)
	b = append(b, 0x3A, 0x00, 0x00) // i32.store8
	return append(b, 0x0B)
}
