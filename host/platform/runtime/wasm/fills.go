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
