package wasmbin

import "fmt"

// Instr is one decoded instruction: its opcode, the sub-opcode of a
// 0xFC-prefixed one, its first index immediate (local, global, table or
// function index) and the value of an i32.const. Other immediates are
// read past, not kept.
type Instr struct {
	Op  byte
	Sub uint32
	Idx uint32
	Imm int64
}

// Returns tells whether the instruction leaves the function: return,
// return_call, return_call_indirect.
func (in Instr) Returns() bool { return in.Op == 0x0F || in.Op == 0x12 || in.Op == 0x13 }

// BulkMemory tells whether the instruction is memory.init, memory.copy
// or memory.fill, whose cost grows with the length on top of the stack.
func (in Instr) BulkMemory() bool {
	return in.Op == 0xFC && (in.Sub == 8 || in.Sub == 10 || in.Sub == 11)
}

// Instr decodes the next instruction. An opcode it does not know (SIMD,
// threads, exceptions, GC) is an error naming it and its offset.
func (r *Reader) Instr() (Instr, error) {
	start := r.off
	in := Instr{Op: r.Byte()}
	switch op := in.Op; {
	case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
		r.SkipBlockType()
	case op == 0x0C || op == 0x0D: // br, br_if
		r.U32()
	case op == 0x0E: // br_table
		k := r.U32()
		for j := uint32(0); j <= k && r.err == nil; j++ {
			r.U32()
		}
	case op == 0x10 || op == 0x12: // call, return_call
		in.Idx = r.U32()
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		r.U32()
		r.U32()
	case op == 0x1C: // select with types
		k := r.U32()
		for j := uint32(0); j < k && r.err == nil; j++ {
			r.Byte()
		}
	case op >= 0x20 && op <= 0x26: // local/global get/set/tee, table.get/set
		in.Idx = r.U32()
	case op >= 0x28 && op <= 0x3E: // loads and stores: memarg
		r.U32()
		r.U32()
	case op == 0x3F || op == 0x40: // memory.size, memory.grow
		r.Byte()
	case op == 0x41: // i32.const
		in.Imm = r.Signed(32)
	case op == 0x42: // i64.const
		r.Signed(64)
	case op == 0x43:
		r.Bytes(4)
	case op == 0x44:
		r.Bytes(8)
	case op == 0xD0: // ref.null
		r.Byte()
	case op == 0xD2: // ref.func
		in.Idx = r.U32()
	case op == 0xFC:
		in.Sub = r.U32()
		if err := r.prefixedFC(in.Sub); err != nil {
			return in, err
		}
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0B || op == 0x0F ||
		op == 0x1A || op == 0x1B || (op >= 0x45 && op <= 0xC4) || op == 0xD1:
		// no immediates
	default:
		return in, fmt.Errorf("unsupported opcode 0x%02x at byte %d", op, start)
	}
	return in, r.err
}

// prefixedFC reads the immediates of a 0xFC-prefixed instruction
// (saturating conversions, bulk memory, table operations).
func (r *Reader) prefixedFC(sub uint32) error {
	switch {
	case sub <= 7: // trunc_sat
	case sub == 8: // memory.init
		r.U32()
		r.Byte()
	case sub == 9 || sub == 13: // data.drop, elem.drop
		r.U32()
	case sub == 10: // memory.copy
		r.Byte()
		r.Byte()
	case sub == 11: // memory.fill
		r.Byte()
	case sub == 12 || sub == 14: // table.init, table.copy
		r.U32()
		r.U32()
	case sub >= 15 && sub <= 17: // table.grow, table.size, table.fill
		r.U32()
	default:
		return fmt.Errorf("unsupported instruction 0xfc %d", sub)
	}
	return nil
}

// ElementSegment reads one element segment (any of the eight encodings),
// calling ref with each function index it names, in its element list or
// in its expressions.
func (r *Reader) ElementSegment(ref func(funcIdx uint32)) error {
	flags := r.U32()
	if flags > 7 {
		return fmt.Errorf("element segment flags %d", flags)
	}
	if flags&2 != 0 && flags&1 == 0 { // explicit table index
		r.U32()
	}
	if flags&1 == 0 { // active: an offset expression
		if err := r.ConstExpr(ref); err != nil {
			return err
		}
	}
	if flags&3 != 0 { // element kind (0x00) or reference type
		r.Byte()
	}
	n := r.U32()
	for i := uint32(0); i < n && r.err == nil; i++ {
		if flags&4 == 0 {
			ref(r.U32())
		} else if err := r.ConstExpr(ref); err != nil {
			return err
		}
	}
	return r.err
}

// ConstExpr reads a constant expression up to its end, calling ref with
// the function index of each ref.func in it.
func (r *Reader) ConstExpr(ref func(funcIdx uint32)) error {
	for r.err == nil {
		in, err := r.Instr()
		if err != nil {
			return err
		}
		switch in.Op {
		case 0x0B:
			return nil
		case 0xD2:
			ref(in.Idx)
		}
	}
	return r.err
}
