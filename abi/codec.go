package abi

import "unsafe"

// The wire format is deliberately plain (see docs/ABI.md, "Encoding"):
//
//   uvarint  LEB128 unsigned, at most 10 bytes
//   varint   zig-zag LEB128 signed
//   bool     one byte, 0 or 1
//   u8       one byte
//   u16/u32/u64  fixed-width little endian (used for dense arrays)
//   string   uvarint length, then the bytes
//   list     uvarint count, then the elements
//   optional one byte 0 (absent) or 1, then the value
//
// There are no field tags: every message lists its fields in a fixed order
// and a minor ABI version may only append fields at the end.
//
// One record grew inside lists: a Pod, which node records carry in a list
// and which old guests decode field by field. Its fields of ABI v1.4 and
// later are written only for a reader of that version (Peer), so a module
// built for an older minor version keeps reading pods as it was built to.

// Encoder appends encoded values to a byte slice. Reuse one across calls
// (Reset) to keep the hot path free of allocations.
type Encoder struct {
	B []byte
	// peer is the ABI minor version of the module that will read these
	// bytes, plus one; zero (the default) means this package's own
	// version. Set it with SetPeerMinor.
	peer uint16
	// intern, when set, numbers internable strings (see SetInterner).
	intern Interner
}

// SetPeerMinor says which minor version the reader was built for, so
// records that grew since are written as that version reads them.
func (e *Encoder) SetPeerMinor(minor uint16) { e.peer = minor + 1 }

// peerReads reports whether the reader knows fields added in minor.
func (e *Encoder) peerReads(minor uint16) bool { return e.peer == 0 || e.peer-1 >= minor }

// Reset empties the encoder, keeping its buffer.
func (e *Encoder) Reset() { e.B = e.B[:0] }

// Uvarint appends an unsigned LEB128 integer.
func (e *Encoder) Uvarint(v uint64) {
	for v >= 0x80 {
		e.B = append(e.B, byte(v)|0x80)
		v >>= 7
	}
	e.B = append(e.B, byte(v))
}

// Varint appends a zig-zag signed integer.
func (e *Encoder) Varint(v int64) { e.Uvarint(uint64(v<<1) ^ uint64(v>>63)) }

// Bool appends 0 or 1.
func (e *Encoder) Bool(v bool) {
	if v {
		e.B = append(e.B, 1)
	} else {
		e.B = append(e.B, 0)
	}
}

// U8 appends one byte.
func (e *Encoder) U8(v uint8) { e.B = append(e.B, v) }

// U16 appends a little-endian uint16.
func (e *Encoder) U16(v uint16) { e.B = append(e.B, byte(v), byte(v>>8)) }

// U32 appends a little-endian uint32.
func (e *Encoder) U32(v uint32) { e.B = append(e.B, byte(v), byte(v>>8), byte(v>>16), byte(v>>24)) }

// U64 appends a little-endian uint64.
func (e *Encoder) U64(v uint64) {
	e.B = append(e.B, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
		byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

// String appends a length-prefixed string.
func (e *Encoder) String(s string) {
	e.Uvarint(uint64(len(s)))
	e.B = append(e.B, s...)
}

// Bytes appends a length-prefixed byte string.
func (e *Encoder) Bytes(b []byte) {
	e.Uvarint(uint64(len(b)))
	e.B = append(e.B, b...)
}

// Strings appends a list of strings.
func (e *Encoder) Strings(ss []string) {
	e.Uvarint(uint64(len(ss)))
	for _, s := range ss {
		e.String(s)
	}
}

// Decoder reads values from a byte slice. It never panics on malformed
// input: the first problem is kept in Err, later reads return zero values,
// and no allocation is sized from a length the input could lie about
// beyond what the remaining bytes can hold.
type Decoder struct {
	b   []byte
	off int
	err error
	// alias makes strings share the input's memory instead of copying.
	// Only safe while the input outlives every decoded value; the guest
	// mirror uses it for records it owns.
	alias bool
	// peer is the writer's minor version plus one; zero means this
	// package's own (see Encoder.SetPeerMinor).
	peer uint16
	// table, when set, resolves the StrIDs of an interned record (see
	// SetTable).
	table *StringTable
	// slab, if set, provides a Pod's common lists (see Slab).
	slab *Slab
	// lists, if set, holds the lists of node records (see NodeLists).
	lists ListSource
}

// SetPeerMinor says which minor version the writer encoded for; a host
// test decoding what it wrote for an older module uses it.
func (d *Decoder) SetPeerMinor(minor uint16) { d.peer = minor + 1 }

// peerWrote reports whether the writer included fields added in minor.
func (d *Decoder) peerWrote(minor uint16) bool { return d.peer == 0 || d.peer-1 >= minor }

// NewDecoder reads b; strings are copied out of it.
func NewDecoder(b []byte) *Decoder { return &Decoder{b: b} }

// NewAliasingDecoder reads b; decoded strings point into b, which must
// then never be modified or reused while they are alive.
func NewAliasingDecoder(b []byte) *Decoder { return &Decoder{b: b, alias: true} }

// Reset points the decoder at b and clears any error.
func (d *Decoder) Reset(b []byte, alias bool) {
	d.b, d.off, d.err, d.alias = b, 0, nil, alias // peer and table are kept
}

// Err is the first decoding error, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining is the number of bytes not yet read.
func (d *Decoder) Remaining() int { return len(d.b) - d.off }

// Offset is the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// Fail records err (if no error was recorded yet) and stops decoding.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.off = len(d.b)
}

func (d *Decoder) failf(what string) {
	d.Fail(&DecodeError{What: what, Offset: d.off})
}

// DecodeError says what could not be decoded and where.
type DecodeError struct {
	What   string
	Offset int
}

func (e *DecodeError) Error() string {
	return "abi: decode " + e.What + " at byte " + Itoa(int64(e.Offset))
}

// Uvarint reads an unsigned LEB128 integer.
func (d *Decoder) Uvarint() uint64 {
	// Most values (lengths, counts, small numbers) are one byte.
	if d.off < len(d.b) && d.b[d.off] < 0x80 {
		d.off++
		return uint64(d.b[d.off-1])
	}
	return d.uvarintLong()
}

func (d *Decoder) uvarintLong() uint64 {
	var v uint64
	for shift := uint(0); shift < 70; shift += 7 {
		if d.off >= len(d.b) {
			d.failf("truncated varint")
			return 0
		}
		c := d.b[d.off]
		d.off++
		if shift == 63 && c > 1 {
			d.failf("varint overflows 64 bits")
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	d.failf("varint too long")
	return 0
}

// Varint reads a zig-zag signed integer.
func (d *Decoder) Varint() int64 {
	u := d.Uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// Int32 reads a varint that must fit in an int32.
func (d *Decoder) Int32() int32 {
	v := d.Varint()
	if v < -1<<31 || v > 1<<31-1 {
		d.failf("int32 out of range")
		return 0
	}
	return int32(v)
}

// Bool reads a bool; any byte other than 0 or 1 is an error.
func (d *Decoder) Bool() bool {
	v := d.U8()
	if v > 1 {
		d.failf("bool not 0 or 1")
		return false
	}
	return v == 1
}

// U8 reads one byte.
func (d *Decoder) U8() uint8 {
	if d.off >= len(d.b) {
		d.failf("truncated byte")
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

// U16 reads a little-endian uint16.
func (d *Decoder) U16() uint16 {
	if len(d.b)-d.off < 2 {
		d.failf("truncated u16")
		return 0
	}
	b := d.b[d.off:]
	d.off += 2
	return uint16(b[0]) | uint16(b[1])<<8
}

// U32 reads a little-endian uint32.
func (d *Decoder) U32() uint32 {
	if len(d.b)-d.off < 4 {
		d.failf("truncated u32")
		return 0
	}
	b := d.b[d.off:]
	d.off += 4
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// U64 reads a little-endian uint64.
func (d *Decoder) U64() uint64 {
	lo := uint64(d.U32())
	hi := uint64(d.U32())
	return lo | hi<<32
}

// Count reads a list length and checks that the remaining input can hold
// that many elements of at least minSize bytes each, so a forged count
// cannot make the caller allocate more than the input justifies.
func (d *Decoder) Count(minSize int) int {
	n := d.Uvarint()
	if d.err != nil {
		return 0
	}
	if minSize < 1 {
		minSize = 1
	}
	if n > uint64(d.Remaining()/minSize) {
		d.failf("list count exceeds input")
		return 0
	}
	return int(n)
}

// Raw reads n bytes without copying.
func (d *Decoder) Raw(n int) []byte {
	if n < 0 || n > d.Remaining() {
		d.failf("truncated bytes")
		return nil
	}
	b := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return b
}

// Bytes reads a length-prefixed byte string without copying.
func (d *Decoder) Bytes() []byte {
	n := d.Count(1)
	return d.Raw(n)
}

// aliasString views b as a string without copying it, for map lookups
// that do not keep the key (String writes the same inline: a call there
// costs every module a few bytes).
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// String reads a length-prefixed string.
func (d *Decoder) String() string {
	b := d.Bytes()
	if len(b) == 0 {
		return ""
	}
	if d.alias {
		return unsafe.String(&b[0], len(b)) // b is not empty
	}
	return string(b)
}

// Strings reads a list of strings; an empty list decodes as nil.
func (d *Decoder) Strings() []string {
	n := d.Count(1)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = d.String()
	}
	return ss
}

// Optional reads the presence byte of an optional value.
func (d *Decoder) Optional() bool { return d.Bool() }
