package wasmbin

// AppendU32 appends an unsigned LEB128.
func AppendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// AppendS32 appends a signed LEB128 (for i32.const).
func AppendS32(b []byte, v int32) []byte { return AppendS64(b, int64(v)) }

// AppendS64 appends a signed LEB128 (for i64.const).
func AppendS64(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// AppendSection appends a section: its id, its size and its payload.
func AppendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = AppendU32(out, uint32(len(payload)))
	return append(out, payload...)
}
