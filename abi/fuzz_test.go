package abi

import (
	"bytes"
	"reflect"
	"testing"
)

// Each fuzz target checks the one invariant every decoder promises: on any
// input it returns (never panics), and when it accepts the input, encoding
// what it decoded and decoding that again gives the same value.

func FuzzPod(f *testing.F) {
	p := samplePod()
	var e Encoder
	e.Pod(&p)
	f.Add(e.B)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var got Pod
		d := NewDecoder(b)
		d.Pod(&got)
		if d.Err() != nil {
			return
		}
		var e Encoder
		e.Pod(&got)
		var again Pod
		d2 := NewDecoder(e.B)
		d2.Pod(&again)
		if d2.Err() != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("re-decode differs: err=%v", d2.Err())
		}
	})
}

func FuzzNodeInfo(f *testing.F) {
	ni := sampleNodeInfo()
	var e Encoder
	e.NodeInfo(&ni)
	f.Add(e.B, false)
	f.Add(e.B, true)
	f.Fuzz(func(t *testing.T, b []byte, alias bool) {
		var got NodeInfo
		d := &Decoder{}
		d.Reset(b, alias)
		d.NodeInfo(&got)
		// The same bytes through NodeLists: the same answer or error.
		var lists NodeLists
		var listed NodeInfo
		dl := &Decoder{}
		dl.Reset(b, alias)
		dl.UseNodeLists(&lists)
		dl.NodeInfo(&listed)
		if (dl.Err() == nil) != (d.Err() == nil) {
			t.Fatalf("with NodeLists err=%v, without err=%v", dl.Err(), d.Err())
		}
		if d.Err() != nil {
			return
		}
		if !reflect.DeepEqual(listed, got) {
			t.Fatalf("with NodeLists the node differs:\n%+v\n%+v", listed, got)
		}
		var e Encoder
		e.NodeInfo(&got)
		var again NodeInfo
		d2 := NewDecoder(e.B)
		d2.NodeInfo(&again)
		if d2.Err() != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("re-decode differs: err=%v", d2.Err())
		}
	})
}

func FuzzManifest(f *testing.F) {
	var e Encoder
	e.Manifest(&Manifest{VersionMajor: 1, Flags: ManifestWantsPods, Plugins: []PluginInfo{{"NodePorts", PointPreFilter | PointFilter}}})
	f.Add(e.B)
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Manifest
		d := NewDecoder(b)
		d.Manifest(&m)
		if d.Err() != nil {
			return
		}
		var e Encoder
		e.Manifest(&m)
		var again Manifest
		d2 := NewDecoder(e.B)
		d2.Manifest(&again)
		if d2.Err() != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("re-decode differs: err=%v", d2.Err())
		}
	})
}

func FuzzInitRequest(f *testing.F) {
	var e Encoder
	e.InitRequest(&InitRequest{Plugins: []PluginArgs{{Name: "NodeResourcesFit", Args: Value{Kind: KindMap, Map: []Field{{"x", Value{Kind: KindFloat, Float: 1.5}}}}}}})
	f.Add(e.B)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r InitRequest
		d := NewDecoder(b)
		d.InitRequest(&r)
		if d.Err() != nil {
			return
		}
		var e Encoder
		e.InitRequest(&r)
		var again InitRequest
		d2 := NewDecoder(e.B)
		d2.InitRequest(&again)
		// NaN payloads compare unequal; compare encodings instead.
		var e2 Encoder
		e2.InitRequest(&again)
		if d2.Err() != nil || !bytes.Equal(e.B, e2.B) {
			t.Fatalf("re-encode differs: err=%v", d2.Err())
		}
	})
}

func FuzzParseSync(f *testing.F) {
	ni := sampleNodeInfo()
	var e Encoder
	e.SyncHeader(SyncReset, 1)
	e.Uvarint(1)
	e.NodeRecord(3, &ni)
	e.Uvarint(1)
	e.U32(7)
	f.Add(e.B)
	// A v1.5 sync: strings first, then an interned record.
	var in mapInterner
	var rec Encoder
	rec.SetInterner(&in)
	rec.NodeInfo(&ni)
	var v15 Encoder
	v15.SyncHeader(SyncReset|SyncStrings, 1)
	v15.Uvarint(0)
	v15.Strings(in.list)
	v15.Uvarint(1)
	v15.U32(3)
	v15.Bytes(rec.B)
	v15.Uvarint(0)
	f.Add(v15.B)
	f.Fuzz(func(t *testing.T, b []byte) {
		var table StringTable
		_, _, _ = ParseSyncWith(b, SyncHandlers{
			Strings: table.Append,
			Upsert: func(slot uint32, rec []byte) error {
				var got NodeInfo
				d := NewAliasingDecoder(rec)
				if table.Len() > 0 {
					d.SetTable(&table)
				}
				d.NodeInfo(&got)
				return d.Err()
			},
			Delete:    func(uint32) error { return nil },
			Namespace: func(Namespace) error { return nil },
		})
	})
}

func FuzzReplies(f *testing.F) {
	var e Encoder
	e.FilterReply(&FilterReply{Indexes: []uint16{0, 1, 1, 2}, Entries: []FilterEntry{{Unschedulable, []string{"Insufficient cpu"}}, {UnschedulableAndUnresolvable, []string{"x"}}}})
	f.Add(e.B)
	// Out-of-range codes decode (the codec does not know which function
	// a reply answers); the host's typed calls refuse them
	// (host/policy FuzzReplyValidation).
	e.Reset()
	e.FilterReply(&FilterReply{Indexes: []uint16{1}, Entries: []FilterEntry{{Code(77), []string{"forged"}}}})
	f.Add(e.B)
	e.Reset()
	e.PluginStatus(&PluginStatus{Code: Code(255), Reasons: []string{"\x1b[2J"}})
	f.Add(e.B)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r FilterReply
		d := NewDecoder(b)
		d.FilterReply(&r)
		if d.Err() == nil {
			for _, ix := range r.Indexes {
				if int(ix) > len(r.Entries) {
					t.Fatalf("accepted index %d with %d entries", ix, len(r.Entries))
				}
			}
		}
		NewDecoder(b).ScoreReply(nil)
		var st PluginStatus
		NewDecoder(b).PluginStatus(&st)
		_, _ = ParseSlots(b, nil)
	})
}

func samplePreemption() ([]NodeCandidates, []Candidate, PDB) {
	g := int32(1000)
	v := []VictimCandidate{
		{UID: "u1", Namespace: "batch", Name: "a", Labels: Labels{{Key: "app", Value: "x"}}, Priority: -5, StartTime: 42},
		{UID: "u2", Namespace: "web", Name: "b", Priority: 7, DisruptionGuard: &g},
	}
	nodes := []NodeCandidates{{Slot: 3, Pods: v}, {Slot: 9}}
	cands := []Candidate{{Slot: 3, NumPDBViolations: 1, Victims: v}}
	pdb := PDB{Namespace: "web", Name: "b", Selector: &LabelSelector{MatchLabels: Labels{{Key: "app", Value: "x"}}},
		DisruptionsAllowed: 1, DisruptedPods: []string{"p1", "p2"}}
	return nodes, cands, pdb
}

func FuzzPreemptionMessages(f *testing.F) {
	nodes, cands, pdb := samplePreemption()
	var e Encoder
	e.SelectVictimsRequest(nodes)
	f.Add(e.B)
	e.Reset()
	e.RankCandidatesRequest(cands)
	f.Add(e.B)
	e.Reset()
	e.SelectVictimsReply([]NodeVictims{{Code: Success, Victims: []VictimChoice{{1, true}, {0, false}}}, {Code: UnschedulableAndUnresolvable, Reasons: []string{"none"}}})
	f.Add(e.B)
	e.Reset()
	e.PDB(&pdb)
	f.Add(e.B)
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(b)
		if got := d.SelectVictimsRequest(); d.Err() == nil {
			var e Encoder
			e.SelectVictimsRequest(got)
			d2 := NewDecoder(e.B)
			if again := d2.SelectVictimsRequest(); d2.Err() != nil || !reflect.DeepEqual(got, again) {
				t.Fatalf("select victims request re-decode differs: %v", d2.Err())
			}
		}
		d = NewDecoder(b)
		if got := d.RankCandidatesRequest(); d.Err() == nil {
			var e Encoder
			e.RankCandidatesRequest(got)
			d2 := NewDecoder(e.B)
			if again := d2.RankCandidatesRequest(); d2.Err() != nil || !reflect.DeepEqual(got, again) {
				t.Fatalf("rank request re-decode differs: %v", d2.Err())
			}
		}
		d = NewDecoder(b)
		if got := d.SelectVictimsReply(nil); d.Err() == nil {
			var e Encoder
			e.SelectVictimsReply(got)
			d2 := NewDecoder(e.B)
			if again := d2.SelectVictimsReply(nil); d2.Err() != nil || !reflect.DeepEqual(got, again) {
				t.Fatalf("select victims reply re-decode differs: %v", d2.Err())
			}
		}
		d = NewDecoder(b)
		if got := d.RankCandidatesReply(nil); d.Err() == nil {
			var e Encoder
			e.RankCandidatesReply(got)
			d2 := NewDecoder(e.B)
			if again := d2.RankCandidatesReply(nil); d2.Err() != nil || !reflect.DeepEqual(got, again) {
				t.Fatalf("rank reply re-decode differs: %v", d2.Err())
			}
		}
		var p PDB
		d = NewDecoder(b)
		if d.PDB(&p); d.Err() == nil {
			var e Encoder
			e.PDB(&p)
			var again PDB
			d2 := NewDecoder(e.B)
			if d2.PDB(&again); d2.Err() != nil || !reflect.DeepEqual(p, again) {
				t.Fatalf("pdb re-decode differs: %v", d2.Err())
			}
		}
	})
}

func TestPreemptionMessagesRoundTrip(t *testing.T) {
	nodes, cands, pdb := samplePreemption()
	var e Encoder
	e.SelectVictimsRequest(nodes)
	d := NewDecoder(e.B)
	if got := d.SelectVictimsRequest(); d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(got, nodes) {
		t.Fatalf("select victims request: %+v, err %v", got, d.Err())
	}
	e.Reset()
	e.RankCandidatesRequest(cands)
	d = NewDecoder(e.B)
	if got := d.RankCandidatesRequest(); d.Err() != nil || !reflect.DeepEqual(got, cands) {
		t.Fatalf("rank request: %+v, err %v", got, d.Err())
	}
	e.Reset()
	e.SyncHeader(SyncPDBs, 0)
	e.Uvarint(0)
	e.Uvarint(0)
	e.Uvarint(1)
	e.PDB(&pdb)
	var got []PDB
	if _, _, err := ParseSyncTables(e.B, nil, nil, nil, func(p *PDB) error { got = append(got, *p); return nil }); err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], pdb) {
		t.Fatalf("sync with PDBs: %+v, %v", got, err)
	}
	// A v1.0 reader (ParseSync) still walks past the table.
	if _, _, err := ParseSync(e.B, nil, nil, nil); err != nil {
		t.Fatalf("ParseSync on a PDB table: %v", err)
	}
}
