package abi

import (
	"reflect"
	"strings"
	"testing"
)

func sampleEdits() []ViewEdit {
	p, q := samplePod(), samplePod()
	q.UID, q.Name = "uid-2", "web-1"
	return []ViewEdit{
		{Slot: 3, Op: EditRemove, UID: "uid-1"},
		{Slot: 3, Op: EditRemovePod, Pod: &p},
		{Slot: 70000, Op: EditAdd, Pod: &q},
		{Slot: 3, Op: EditRestore, UID: "uid-1"},
	}
}

func TestViewEditsRoundTrip(t *testing.T) {
	edits := sampleEdits()
	var e Encoder
	e.ViewEdits(edits)
	for _, alias := range []bool{false, true} {
		var d Decoder
		d.Reset(e.B, alias)
		got := d.ViewEdits(nil)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("alias %v: err %v, %d bytes left", alias, d.Err(), d.Remaining())
		}
		if !reflect.DeepEqual(got, edits) {
			t.Fatalf("alias %v: got %+v", alias, got)
		}
	}
	// The raw reader hands carried pods over undecoded, each exactly its
	// Pod's bytes.
	d := NewDecoder(e.B)
	n := d.ViewEditsCount()
	var raw RawViewEdit
	for i := 0; i < n; i++ {
		d.RawViewEdit(&raw)
		if raw.Slot != edits[i].Slot || raw.Op != edits[i].Op || raw.UID != edits[i].UID || (raw.Pod != nil) != raw.Op.HasPod() {
			t.Fatalf("raw edit %d = %+v", i, raw)
		}
		if raw.Op.HasPod() {
			var pe Encoder
			pe.Pod(edits[i].Pod)
			if string(pe.B) != string(raw.Pod) {
				t.Fatalf("raw edit %d: pod bytes differ from the Pod's encoding", i)
			}
		}
	}
}

// A pod written for an older module (no v1.4 fields) decodes as such
// through the carrying decoder's peer version.
func TestViewEditPodFollowsThePeerVersion(t *testing.T) {
	edits := sampleEdits()[2:3]
	var e Encoder
	e.SetPeerMinor(3)
	e.ViewEdits(edits)
	d := NewDecoder(e.B)
	d.SetPeerMinor(3)
	got := d.ViewEdits(nil)
	if d.Err() != nil || len(got) != 1 || got[0].Pod.Name != "web-1" {
		t.Fatalf("v1.3 edits: err %v, %+v", d.Err(), got)
	}
	if d := NewDecoder(e.B); len(d.ViewEdits(nil)) != 0 || d.Err() == nil {
		t.Fatal("v1.3 pod bytes decoded as the current version without an error")
	}
}

func TestViewEditsRefuseMalformedInput(t *testing.T) {
	var e Encoder
	e.ViewEdits(sampleEdits())
	full := e.B
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown op 0", []byte{1, 0, 0, 0, 0, 0, 0}, "unknown view edit op at byte 5"},
		{"unknown op 5", []byte{1, 0, 0, 0, 0, 5, 0}, "unknown view edit op"},
		{"count beyond input", []byte{9, 0, 0, 0, 0, 1, 0}, "list count exceeds input"},
		{"truncated slot", []byte{1, 0, 0}, "list count exceeds input"},
		{"truncated", full[:len(full)-3], "decode"},
		{"pod length beyond input", []byte{1, 0, 0, 0, 0, byte(EditAdd), 50, 0}, "list count exceeds input"},
		{"garbage pod", []byte{1, 0, 0, 0, 0, byte(EditAdd), 2, 0xff, 0xff}, "decode"},
		{"pod with trailing bytes", trailingPodEdit(), "trailing bytes after pod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.in)
			got := d.ViewEdits(nil)
			if d.Err() == nil || !strings.Contains(d.Err().Error(), tc.want) || len(got) != 0 {
				t.Fatalf("err %v (want %q), %d edits", d.Err(), tc.want, len(got))
			}
		})
	}
}

func trailingPodEdit() []byte {
	p := samplePod()
	var pe Encoder
	pe.Pod(&p)
	pe.U8(0)
	var e Encoder
	e.Uvarint(1)
	e.U32(1)
	e.U8(uint8(EditAdd))
	e.Bytes(pe.B)
	return e.B
}

func FuzzViewEdits(f *testing.F) {
	var e Encoder
	e.ViewEdits(sampleEdits())
	f.Add(e.B, false)
	f.Add(e.B, true)
	f.Add([]byte{1, 0, 0, 0, 0, 4, 1, 'x'}, false)
	f.Fuzz(func(t *testing.T, b []byte, alias bool) {
		var d Decoder
		d.Reset(b, alias)
		got := d.ViewEdits(nil)
		// The raw reader, which guests use, must agree on every accepted
		// input and never panic on the others.
		rd := NewDecoder(b)
		n := rd.ViewEditsCount()
		var raw RawViewEdit
		for i := 0; i < n && rd.Err() == nil; i++ {
			rd.RawViewEdit(&raw)
		}
		if d.Err() != nil {
			return
		}
		if rd.Err() != nil {
			t.Fatalf("raw reader refused what ViewEdits accepted: %v", rd.Err())
		}
		// Carried pods decode alike with a slab (as the guest decodes
		// them) and without.
		var s Slab
		for i := range got {
			if got[i].Pod == nil {
				continue
			}
			var pe Encoder
			pe.Pod(got[i].Pod)
			var sp Pod
			var sd Decoder
			sd.Reset(s.KeepBytes(pe.B), true)
			sd.UseSlab(&s)
			sd.Pod(&sp)
			if sd.Err() != nil || !reflect.DeepEqual(&sp, got[i].Pod) {
				t.Fatalf("edit %d: slab decoding differs: err %v", i, sd.Err())
			}
		}
		var e Encoder
		e.ViewEdits(got)
		d2 := NewDecoder(e.B)
		again := d2.ViewEdits(nil)
		if d2.Err() != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("re-decode differs: err=%v", d2.Err())
		}
	})
}
