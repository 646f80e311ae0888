package abi

import (
	"bytes"
	"slices"
	"testing"
)

// A v1.8 score reply with raw scores is the v1.7 reply followed by them:
// a v1.7 reader (ScoreReply alone) reads the same scores and stops, a
// v1.8 reader reads the raw ones too, of any sign and size; a reply
// without them is byte for byte the v1.7 one.
func TestScoreReplyRawScoresRoundTrip(t *testing.T) {
	norm, raw := []int64{0, 57, 100}, []int64{-3, 1 << 40, 9}
	var old, withRaw Encoder
	old.ScoreReply(norm, nil)
	withRaw.ScoreReply(norm, raw)
	if len(old.B) != 4+8*len(norm) || !bytes.Equal(withRaw.B[:len(old.B)], old.B) || len(withRaw.B) != len(old.B)+8*len(raw) {
		t.Fatalf("v1.7 reply %x is not the prefix of the v1.8 one %x", old.B, withRaw.B)
	}
	d := NewDecoder(withRaw.B)
	if got := d.ScoreReply(nil, 3); d.Err() != nil || !slices.Equal(got, norm) {
		t.Fatalf("v1.7 reader: %v %v", got, d.Err())
	}
	if got := d.RawScores(nil, 3); d.Err() != nil || d.Remaining() != 0 || !slices.Equal(got, raw) {
		t.Fatalf("v1.8 reader: raw %v %v (%d left)", got, d.Err(), d.Remaining())
	}
	d = NewDecoder(old.B)
	d.ScoreReply(nil, 3)
	if d.RawScores(nil, 3); d.Err() == nil {
		t.Fatal("raw scores read from a reply without them")
	}
}
