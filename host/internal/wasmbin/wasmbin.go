// Package wasmbin reads and writes the WebAssembly binary format, as much
// of it as the host's module rewriting (host/platform/runtime/wasm: Instrument and
// InlineFills) needs: the sections of a module, the types, instructions,
// element segments and constant expressions in them, and LEB128 integers.
// It knows Wasm 1.0 and the proposals the host accepts (bulk memory,
// reference types, multi-value, sign extension, saturating conversions,
// tail calls); anything else reads as an error, so a rewriter built on it
// refuses what it cannot walk rather than misreading it.
//
// It decodes and encodes; it decides nothing about which modules are
// acceptable beyond the format itself. It is internal: its API follows
// the rewriter's needs and is not promised to importers.
package wasmbin

import (
	"errors"
	"fmt"
)

// Section ids of the binary format.
const (
	SecCustom   = 0
	SecType     = 1
	SecImport   = 2
	SecFunction = 3
	SecTable    = 4
	SecMemory   = 5
	SecGlobal   = 6
	SecExport   = 7
	SecStart    = 8
	SecElement  = 9
	SecCode     = 10
	SecData     = 11
	SecDataCnt  = 12
	SecTag      = 13
)

// sectionRank orders non-custom sections as the binary format requires.
var sectionRank = map[byte]int{
	SecType: 1, SecImport: 2, SecFunction: 3, SecTable: 4, SecMemory: 5, SecTag: 6,
	SecGlobal: 7, SecExport: 8, SecStart: 9, SecElement: 10, SecDataCnt: 11, SecCode: 12, SecData: 13,
}

// Rank is where a non-custom section goes in a module: sections appear in
// increasing rank. ok is false for a custom section (which may appear
// anywhere) and for an unknown id.
func Rank(id byte) (rank int, ok bool) {
	rank, ok = sectionRank[id]
	return rank, ok
}

// Section is one section of a module: its id and its payload (the bytes
// after its size).
type Section struct {
	ID      byte
	Payload []byte
}

// ReadSections checks a module's header (Wasm 1.0) and splits the rest
// into sections, checking that every non-custom section is known and in
// order. It stops at the first problem and returns, with the error, the
// sections before it, so a caller refusing some section (a start
// section, say) can tell whether it came first. Payloads alias bin.
func ReadSections(bin []byte) ([]Section, error) {
	if len(bin) < 8 || string(bin[:4]) != "\x00asm" || bin[4] != 1 || bin[5] != 0 || bin[6] != 0 || bin[7] != 0 {
		return nil, errors.New("not a Wasm 1.0 binary")
	}
	var secs []Section
	r := NewReader(bin[8:])
	last := 0
	for r.Remaining() > 0 {
		id := r.Byte()
		size := r.U32()
		payload := r.Bytes(int(size))
		if r.Err() != nil {
			return secs, fmt.Errorf("section %d: %v", id, r.Err())
		}
		if id != SecCustom {
			rank, ok := Rank(id)
			if !ok {
				return secs, fmt.Errorf("unknown section id %d", id)
			}
			if rank <= last {
				return secs, fmt.Errorf("section %d out of order", id)
			}
			last = rank
		}
		secs = append(secs, Section{id, payload})
	}
	return secs, nil
}

// FuncType is a function type: its parameter and result value types, by
// their encoding.
type FuncType struct{ Params, Results []byte }

// ExtendVector rewrites the payload of a section that is a vector of
// entries (types, globals, exports) to hold extra more entries, which add
// appends after the existing ones.
func ExtendVector(payload []byte, extra uint32, add func([]byte) []byte) ([]byte, error) {
	r := NewReader(payload)
	n := r.U32()
	if r.Err() != nil {
		return nil, r.Err()
	}
	out := AppendU32(nil, n+extra)
	out = append(out, payload[r.Off():]...)
	return add(out), nil
}
