package abi

// String interning (ABI v1.5). Label keys and values, taint keys and
// values, image names and namespaces repeat across thousands of nodes and
// pods, and plugins compare them in their hottest loops: a selector
// against every node's labels, a pod's images against every node's. In a
// Wasm guest a string compare is a byte loop with a bounds check per
// byte, so the host numbers each such string once (its StrID) and node
// records sent to a v1.5 reader carry the numbers; the guest keeps the
// table in its mirror, synced like the rest of it, and its plugins compare
// numbers. The strings are still there (decoded from the table) for code
// that wants them, and for everything that did not come through a record
// (the cycle's pod, a what-if pod) the SDK looks the numbers up by string.

// StrID numbers a string of the host's table: the table index plus one.
// The zero StrID means "not numbered" (the value did not come through an
// interned record and was not looked up): compare the strings then.
// StrAbsent means "looked up and not in the table": it equals no numbered
// string.
type StrID uint32

// StrAbsent is the StrID of a string looked up and not found.
const StrAbsent StrID = ^StrID(0)

// SameString reports whether two strings are equal, given their StrIDs:
// by number when both are numbered (and not both absent), else by
// comparing the strings.
func SameString(a string, aID StrID, b string, bID StrID) bool {
	if aID != 0 && bID != 0 && (aID != StrAbsent || bID != StrAbsent) {
		return aID == bID
	}
	return a == b
}

// AnyString reports whether v (numbered vID) is one of vs, whose
// numbers are ids index for index (nil or short where not numbered),
// comparing each as SameString does, with the choice of comparison made
// once per call (selectors call it per node).
func AnyString(vs []string, ids []StrID, v string, vID StrID) bool {
	if vID != 0 && vID != StrAbsent && len(ids) >= len(vs) {
		// Every value numbered or explicitly not: a numbered value can
		// only equal its own number, an unnumbered one by text.
		for i := range vs {
			id := ids[i]
			if id == vID || (id == 0 && vs[i] == v) {
				return true
			}
		}
		return false
	}
	for i := range vs {
		var id StrID
		if i < len(ids) {
			id = ids[i]
		}
		if SameString(vs[i], id, v, vID) {
			return true
		}
	}
	return false
}

// Interner numbers strings for an Encoder writing interned records: the
// same string always gets the same StrID, never zero or StrAbsent.
type Interner interface {
	ID(s string) StrID
}

// StringTable is a reader's copy of the host's string table: the strings
// in StrID order and the reverse index, so values that arrive as text
// (the cycle's pod) can be numbered too. The zero value is an empty table.
type StringTable struct {
	strs []string
	ids  map[string]StrID
}

// maxTableStrings bounds a guest's table; a host that numbered more
// strings than this must start a new table (with a full resync).
const maxTableStrings = 1 << 24

// Len is the number of strings in the table.
func (t *StringTable) Len() int { return len(t.strs) }

// Reset empties the table.
func (t *StringTable) Reset() {
	t.strs = t.strs[:0]
	clear(t.ids)
}

// Append adds strings numbered from first+1 on; first must be the
// table's length (strings are never renumbered).
func (t *StringTable) Append(first int, ss []string) error {
	if first != len(t.strs) {
		return &DecodeError{What: "string table: strings from " + Itoa(int64(first)) + " but the table has " + Itoa(int64(len(t.strs)))}
	}
	if len(t.strs)+len(ss) > maxTableStrings {
		return &DecodeError{What: "string table: more than " + Itoa(maxTableStrings) + " strings"}
	}
	if t.ids == nil {
		t.ids = make(map[string]StrID, len(ss))
	}
	for _, s := range ss {
		t.strs = append(t.strs, s)
		if _, dup := t.ids[s]; !dup {
			t.ids[s] = StrID(len(t.strs))
		}
	}
	return nil
}

// Lookup returns s's StrID, or StrAbsent when the table lacks it.
func (t *StringTable) Lookup(s string) StrID {
	if id, ok := t.ids[s]; ok {
		return id
	}
	return StrAbsent
}

// String returns the string numbered id and whether the table has it.
func (t *StringTable) String(id StrID) (string, bool) {
	if id == 0 || uint64(id) > uint64(len(t.strs)) {
		return "", false
	}
	return t.strs[id-1], true
}

// SetInterner makes the encoder write label keys and values, taint keys
// and values, image names and namespaces as StrIDs of in (an interned
// record, for a v1.5 reader); nil writes them as text again.
func (e *Encoder) SetInterner(in Interner) { e.intern = in }

// SetTable makes the decoder read what an Encoder with SetInterner wrote,
// resolving StrIDs through t; nil reads text again.
func (d *Decoder) SetTable(t *StringTable) { d.table = t }

// sym appends an internable string: its StrID under an interner, else
// the text.
func (e *Encoder) sym(s string) {
	if e.intern != nil {
		e.Uvarint(uint64(e.intern.ID(s)))
		return
	}
	e.String(s)
}

// sym reads what Encoder.sym wrote: the string and, from an interned
// record, its StrID (0 otherwise).
func (d *Decoder) sym() (string, StrID) {
	if d.table == nil {
		return d.String(), 0
	}
	v := d.Uvarint()
	if d.err != nil {
		return "", 0
	}
	if v == 0 || v > uint64(d.table.Len()) {
		d.failf("string id " + Itoa(int64(v)) + " not in the string table")
		return "", 0
	}
	return d.table.strs[v-1], StrID(v)
}

// Number fills the StrIDs of labels that were decoded from text, by
// looking each key and value up in t; numbered entries are kept.
func (t *StringTable) Number(ls Labels) {
	for i := range ls {
		if ls[i].KeyID == 0 {
			ls[i].KeyID = t.Lookup(ls[i].Key)
		}
		if ls[i].ValueID == 0 {
			ls[i].ValueID = t.Lookup(ls[i].Value)
		}
	}
}
