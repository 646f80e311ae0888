package wasmbin

import (
	"errors"
	"fmt"
)

// Reader decodes the binary format from a byte slice. The first error
// sticks: it moves the reader to the end, and every later read returns a
// zero value, so a caller can read a whole entry and check Err once.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader at the start of b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// ErrTruncated is a read past the end of the input.
var ErrTruncated = errors.New("truncated")

// Err is the first error the reader met, nil if none.
func (r *Reader) Err() error { return r.err }

// Off is the offset of the next byte to read.
func (r *Reader) Off() int { return r.off }

// Remaining is the number of bytes left to read.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

func (r *Reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
	r.off = len(r.b)
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if r.off >= len(r.b) {
		r.fail(ErrTruncated)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

// Bytes reads n bytes; the result aliases the input.
func (r *Reader) Bytes(n int) []byte {
	if n < 0 || n > len(r.b)-r.off {
		r.fail(ErrTruncated)
		return nil
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	return b
}

// U32 reads an unsigned LEB128 of at most 32 bits (at most five bytes).
func (r *Reader) U32() uint32 {
	var v uint32
	for shift := uint(0); shift < 35; shift += 7 {
		c := r.Byte()
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

// Signed reads a signed LEB128 of at most bits bits (at most 64).
func (r *Reader) Signed(bits uint) int64 {
	var v int64
	for n, shift := uint(0), uint(0); n < (bits+6)/7; n, shift = n+1, shift+7 {
		c := r.Byte()
		if r.err != nil {
			return 0
		}
		v |= int64(c&0x7F) << shift
		if c < 0x80 {
			if shift+7 < 64 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return v
		}
	}
	r.fail(errors.New("signed integer too long"))
	return 0
}

// SkipBlockType skips a block type: one byte for an empty or value type,
// or a signed LEB128 (33 bits) type index.
func (r *Reader) SkipBlockType() { r.Signed(33) }

// SkipLimits skips the limits of a memory or table type.
func (r *Reader) SkipLimits() {
	flags := r.Byte()
	r.U32()
	if flags&1 != 0 {
		r.U32()
	}
}

// ValTypes reads a vector of value types; the result aliases the input.
func (r *Reader) ValTypes() []byte {
	n := r.U32()
	if int(n) > len(r.b)-r.off {
		r.fail(ErrTruncated)
		return nil
	}
	ts := r.Bytes(int(n))
	for _, t := range ts {
		switch t {
		case 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		default:
			r.fail(fmt.Errorf("unsupported value type 0x%02x", t))
			return nil
		}
	}
	return ts
}
