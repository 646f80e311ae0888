package wasmbin

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestLEB128RoundTrips(t *testing.T) {
	for _, v := range []uint32{0, 1, 0x7F, 0x80, 0x3FFF, 0x4000, math.MaxUint32} {
		b := AppendU32(nil, v)
		r := NewReader(b)
		if got := r.U32(); got != v || r.Err() != nil || r.Remaining() != 0 {
			t.Errorf("U32(AppendU32(%d) = % x) = %d, %v, %d bytes left", v, b, got, r.Err(), r.Remaining())
		}
	}
	for _, v := range []int64{0, 1, -1, 63, 64, -64, -65, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64} {
		bits := uint(64)
		b := AppendS64(nil, v)
		if v == int64(int32(v)) {
			bits = 32
			if b32 := AppendS32(nil, int32(v)); string(b32) != string(b) {
				t.Errorf("AppendS32(%d) = % x, AppendS64 % x", v, b32, b)
			}
		}
		r := NewReader(b)
		if got := r.Signed(bits); got != v || r.Err() != nil || r.Remaining() != 0 {
			t.Errorf("Signed(%d, AppendS64(%d) = % x) = %d, %v", bits, v, b, got, r.Err())
		}
	}
}

func TestReaderErrorsStick(t *testing.T) {
	r := NewReader([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x00})
	if r.U32(); r.Err() == nil || r.Remaining() != 0 {
		t.Fatalf("a six-byte u32: err %v, %d bytes left", r.Err(), r.Remaining())
	}
	r = NewReader([]byte{0x05, 0x01})
	if b := r.Bytes(int(r.U32())); b != nil || !errors.Is(r.Err(), ErrTruncated) {
		t.Fatalf("reading 5 of 1 byte: %v, %v", b, r.Err())
	}
	if r.Byte(); !errors.Is(r.Err(), ErrTruncated) {
		t.Fatalf("a later read replaced the first error: %v", r.Err())
	}
}

func TestReadSections(t *testing.T) {
	head := "\x00asm\x01\x00\x00\x00"
	for _, c := range []struct {
		bin, err string
		n        int // sections returned
	}{
		{head, "", 0},
		{head + "\x00\x01x\x01\x00\x03\x00\x05\x00\x00\x00", "", 5},
		{"\x00asm\x02\x00\x00\x00", "not a Wasm 1.0 binary", 0},
		{head + "\x03\x00\x01\x00", "section 1 out of order", 1},
		{head + "\x01\x00\x63\x00", "unknown section id 99", 1},
		{head + "\x01\x00\x08\x05\x00", "section 8: truncated", 1},
	} {
		secs, err := ReadSections([]byte(c.bin))
		if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) || len(secs) != c.n {
			t.Errorf("ReadSections(%q) = %d sections, %v; want %d, %q", c.bin, len(secs), err, c.n, c.err)
		}
	}
}

func TestInstrReadsImmediates(t *testing.T) {
	// i32.const -2; br_table 1 [0 0]; memory.fill 0; ref.func 300; call 7; end
	code := []byte{0x41, 0x7E, 0x0E, 0x02, 0x00, 0x00, 0x01, 0xFC, 0x0B, 0x00, 0xD2, 0xAC, 0x02, 0x10, 0x07, 0x0B}
	want := []Instr{{Op: 0x41, Imm: -2}, {Op: 0x0E}, {Op: 0xFC, Sub: 11}, {Op: 0xD2, Idx: 300}, {Op: 0x10, Idx: 7}, {Op: 0x0B}}
	r := NewReader(code)
	for i, w := range want {
		in, err := r.Instr()
		if err != nil || in != w {
			t.Fatalf("instruction %d = %+v, %v; want %+v", i, in, err, w)
		}
	}
	if r.Remaining() != 0 {
		t.Fatalf("%d bytes left", r.Remaining())
	}
	r = NewReader([]byte{0x01, 0xFD, 0x00})
	r.Instr()
	if _, err := r.Instr(); err == nil || !strings.Contains(err.Error(), "0xfd at byte 1") {
		t.Fatalf("a SIMD opcode: %v", err)
	}
}

func TestElementSegmentNamesItsFunctions(t *testing.T) {
	var got []uint32
	ref := func(f uint32) { got = append(got, f) }
	// Active, table 0, offset i32.const 0, functions 3 and 200.
	r := NewReader([]byte{0x00, 0x41, 0x00, 0x0B, 0x02, 0x03, 0xC8, 0x01})
	if err := r.ElementSegment(ref); err != nil || r.Remaining() != 0 {
		t.Fatalf("flags 0: %v, %d bytes left", err, r.Remaining())
	}
	// Passive, funcref expressions: ref.func 5, ref.null func.
	r = NewReader([]byte{0x05, 0x70, 0x02, 0xD2, 0x05, 0x0B, 0xD0, 0x70, 0x0B})
	if err := r.ElementSegment(ref); err != nil || r.Remaining() != 0 {
		t.Fatalf("flags 5: %v, %d bytes left", err, r.Remaining())
	}
	if len(got) != 3 || got[0] != 3 || got[1] != 200 || got[2] != 5 {
		t.Fatalf("functions named: %v, want [3 200 5]", got)
	}
}

func TestExtendVector(t *testing.T) {
	out, err := ExtendVector([]byte{0x01, 0xAA}, 2, func(b []byte) []byte { return append(b, 0xBB, 0xCC) })
	if err != nil || string(out) != "\x03\xAA\xBB\xCC" {
		t.Fatalf("ExtendVector = % x, %v", out, err)
	}
	if _, err := ExtendVector(nil, 1, nil); !errors.Is(err, ErrTruncated) {
		t.Fatalf("ExtendVector of nothing: %v", err)
	}
}
