package abi

import (
	"reflect"
	"testing"
)

// The scratch decoders read exactly what the plain ones read, reusing
// their storage from call to call without one answer leaking into the
// next.
func TestVictimScratchDecodesAsThePlainDecoders(t *testing.T) {
	nodes, cands, _ := samplePreemption()
	var s VictimScratch
	for round := 0; round < 3; round++ {
		var e Encoder
		e.SelectVictimsRequest(nodes)
		for _, alias := range []bool{false, true} {
			var d Decoder
			d.Reset(e.B, alias)
			if got := d.SelectVictimsRequestInto(&s); d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(got, nodes) {
				t.Fatalf("round %d alias %v: select victims %+v, err %v", round, alias, got, d.Err())
			}
		}
		e.Reset()
		e.RankCandidatesRequest(cands)
		d := NewAliasingDecoder(e.B)
		if got := d.RankCandidatesRequestInto(&s); d.Err() != nil || !reflect.DeepEqual(got, cands) {
			t.Fatalf("round %d: rank %+v, err %v", round, got, d.Err())
		}
		// Grow the request, so the next round reuses bigger arrays.
		nodes = append(nodes, NodeCandidates{Slot: uint32(10 + round), Pods: nodes[0].Pods})
		cands = append(cands, Candidate{Slot: uint32(10 + round), Victims: cands[0].Victims[1:]})
	}
	var e Encoder
	e.SelectVictimsRequest(nil)
	if got := NewDecoder(e.B).SelectVictimsRequestInto(&s); got != nil {
		t.Fatalf("empty request: %+v", got)
	}
}

func TestVictimScratchDoesNotAllocate(t *testing.T) {
	nodes, cands, _ := samplePreemption()
	var e, e2 Encoder
	e.SelectVictimsRequest(nodes)
	e2.RankCandidatesRequest(cands)
	var s VictimScratch
	var d Decoder
	allocs := testing.AllocsPerRun(50, func() {
		d.Reset(e.B, true)
		d.SelectVictimsRequestInto(&s)
		d.Reset(e2.B, true)
		d.RankCandidatesRequestInto(&s)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per pair of requests, want 0", allocs)
	}
}

func FuzzVictimScratch(f *testing.F) {
	nodes, cands, _ := samplePreemption()
	var e Encoder
	e.SelectVictimsRequest(nodes)
	f.Add(e.B)
	e.Reset()
	e.RankCandidatesRequest(cands)
	f.Add(e.B)
	var s VictimScratch
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(b)
		want := d.SelectVictimsRequest()
		wantErr := d.Err()
		d = NewAliasingDecoder(b)
		got := d.SelectVictimsRequestInto(&s)
		if (wantErr == nil) != (d.Err() == nil) || (wantErr == nil && !reflect.DeepEqual(got, want)) {
			t.Fatalf("select victims: scratch %+v (err %v), plain %+v (err %v)", got, d.Err(), want, wantErr)
		}
		d = NewDecoder(b)
		wantC := d.RankCandidatesRequest()
		wantErr = d.Err()
		d = NewAliasingDecoder(b)
		gotC := d.RankCandidatesRequestInto(&s)
		if (wantErr == nil) != (d.Err() == nil) || (wantErr == nil && !reflect.DeepEqual(gotC, wantC)) {
			t.Fatalf("rank: scratch %+v (err %v), plain %+v (err %v)", gotC, d.Err(), wantC, wantErr)
		}
	})
}
