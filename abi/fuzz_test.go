package abi

import (
	"bytes"
	"errors"
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
	for _, b := range limitSeeds("manifest")[1:] {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Manifest
		d := NewDecoder(b)
		d.Manifest(&m)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(m.Plugins) > MaxPlugins || len(m.AnnotationKeys) > MaxAnnotationKeys {
			t.Fatalf("accepted %d plugins and %d annotation keys", len(m.Plugins), len(m.AnnotationKeys))
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
	// (host/platform/guest FuzzReplyValidation).
	e.Reset()
	e.FilterReply(&FilterReply{Indexes: []uint16{1}, Entries: []FilterEntry{{Code(77), []string{"forged"}}}})
	f.Add(e.B)
	e.Reset()
	e.PluginStatus(&PluginStatus{Code: Code(255), Reasons: []string{"\x1b[2J"}})
	f.Add(e.B)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r FilterReply
		d := NewDecoder(b)
		d.FilterReply(&r, 1<<16-1)
		if d.Err() == nil {
			for _, ix := range r.Indexes {
				if int(ix) > len(r.Entries) {
					t.Fatalf("accepted index %d with %d entries", ix, len(r.Entries))
				}
			}
		}
		NewDecoder(b).ScoreReply(nil, 1<<16-1)
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

// fuzzVictimNodes is the request FuzzPreemptionMessages decodes select
// victims replies to: four nodes offering eight pods each
// (FuzzSelectVictimsReplyLimits explores others).
var fuzzVictimNodes = func() []NodeCandidates {
	nodes := make([]NodeCandidates, 4)
	for i := range nodes {
		nodes[i] = NodeCandidates{Slot: uint32(i), Pods: make([]VictimCandidate, 8)}
	}
	return nodes
}()

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
		if got := d.SelectVictimsReply(nil, fuzzVictimNodes); d.Err() == nil {
			var e Encoder
			e.SelectVictimsReply(got)
			d2 := NewDecoder(e.B)
			if again := d2.SelectVictimsReply(nil, fuzzVictimNodes); d2.Err() != nil || !reflect.DeepEqual(got, again) {
				t.Fatalf("select victims reply re-decode differs: %v", d2.Err())
			}
		}
		d = NewDecoder(b)
		if got := d.RankCandidatesReply(nil, 8); d.Err() == nil {
			var e Encoder
			e.RankCandidatesReply(got)
			d2 := NewDecoder(e.B)
			if again := d2.RankCandidatesReply(nil, 8); d2.Err() != nil || !reflect.DeepEqual(got, again) {
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

// The reply-limit fuzz targets: one per reply the host decodes, each
// decoding arbitrary bytes to a request (itself fuzzed) and seeded with
// the replies of limitCases at their limit and one past it, and with
// counts of billions. Each checks what every reply decoder promises: it
// never panics; what it accepts has no list longer than the request
// allows and re-encodes to the same bytes; what it refuses for a count
// (a LimitError) had a count over the limit.

// limitSeeds are the at-the-limit and one-past replies of reply's
// limitCases, and a bare count of 2^32-1. A seed is cut at maxSeed bytes:
// the fuzzer minimises every new input it finds, which takes long on big
// ones, and a cut reply still holds the count (the one-past count is
// refused for its limit before the missing elements are noticed).
func limitSeeds(reply string) [][]byte {
	const maxSeed = 512
	bs := [][]byte{{0xff, 0xff, 0xff, 0xff, 0x0f}}
	for _, c := range limitCases() {
		if c.reply == reply {
			for _, b := range [][]byte{c.build(c.limit), c.build(c.limit + 1)} {
				bs = append(bs, b[:min(len(b), maxSeed)])
			}
		}
	}
	return bs
}

// checkRefusal fails t if err is a LimitError whose count is within its
// limit.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	var le *LimitError
	if errors.As(err, &le) && le.Count <= uint64(le.Limit) {
		t.Fatalf("refused %d for a limit of %d: %v", le.Count, le.Limit, le)
	}
}

// podLimit is the most pods an eviction reply may name on a node.
func podLimit(limit, topN uint32, offered int) int {
	n := offered
	if limit > 0 && int(limit) < n {
		n = int(limit)
	}
	if topN > 0 && int(topN) < n {
		n = int(topN)
	}
	return n
}

func checkCondition(t *testing.T, c *EvictionCondition) {
	t.Helper()
	if c != nil && len(c.Effects) > MaxConditionEffects {
		t.Fatalf("accepted %d condition effects", len(c.Effects))
	}
}

func FuzzThresholdMetReplyLimits(f *testing.F) {
	req := encoded(func(e *Encoder) { e.EvictionRequest(limitEvictReq) })
	for _, b := range limitSeeds("threshold") {
		f.Add(req, b)
	}
	f.Fuzz(func(t *testing.T, reqBytes, b []byte) {
		var r EvictionRequest
		rd := NewDecoder(reqBytes)
		if rd.EvictionRequest(&r); rd.Err() != nil {
			return
		}
		d := NewDecoder(b)
		rs := d.ThresholdMetReply(&r)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(rs) > len(r.Nodes) {
			t.Fatalf("accepted %d results for %d nodes", len(rs), len(r.Nodes))
		}
		for i := range rs {
			if len(rs[i].Candidates) > len(r.Nodes[i].Candidates) {
				t.Fatalf("node %d: accepted %d candidates of %d", i, len(rs[i].Candidates), len(r.Nodes[i].Candidates))
			}
			checkCondition(t, rs[i].Condition)
		}
		reencode(t, b, func(d *Decoder) []ThresholdResult { return d.ThresholdMetReply(&r) }, (*Encoder).ThresholdMetReply)
	})
}

func FuzzEvictPodsReplyLimits(f *testing.F) {
	req := encoded(func(e *Encoder) { e.EvictionRequest(limitEvictReq) })
	for _, b := range limitSeeds("evict") {
		f.Add(req, b)
	}
	f.Fuzz(func(t *testing.T, reqBytes, b []byte) {
		var r EvictionRequest
		rd := NewDecoder(reqBytes)
		if rd.EvictionRequest(&r); rd.Err() != nil {
			return
		}
		d := NewDecoder(b)
		rs := d.EvictPodsReply(&r)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(rs) > len(r.Nodes) {
			t.Fatalf("accepted %d answers for %d nodes", len(rs), len(r.Nodes))
		}
		for i := range rs {
			if most := podLimit(r.Limit, 0, len(r.Nodes[i].Candidates)); len(rs[i].Pods) > most {
				t.Fatalf("node %d: accepted %d pods, limit %d", i, len(rs[i].Pods), most)
			}
			checkCondition(t, rs[i].Condition)
		}
		reencode(t, b, func(d *Decoder) []NodeEvictPods { return d.EvictPodsReply(&r) }, (*Encoder).EvictPodsReply)
	})
}

func FuzzTopEvictionReplyLimits(f *testing.F) {
	req := encoded(func(e *Encoder) { e.TopEvictionRequest(limitTopReq) })
	for _, b := range limitSeeds("top") {
		f.Add(req, b)
	}
	f.Fuzz(func(t *testing.T, reqBytes, b []byte) {
		var r TopEvictionRequest
		rd := NewDecoder(reqBytes)
		if rd.TopEvictionRequest(&r); rd.Err() != nil {
			return
		}
		d := NewDecoder(b)
		rs := d.TopEvictionReply(&r)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(rs) > len(r.Nodes) {
			t.Fatalf("accepted %d answers for %d nodes", len(rs), len(r.Nodes))
		}
		for i := range rs {
			n := &r.Nodes[i]
			if most := podLimit(r.Limit, n.TopN, len(n.Candidates)); len(rs[i].Pods) > most {
				t.Fatalf("node %d: accepted %d pods, limit %d", i, len(rs[i].Pods), most)
			}
		}
		reencode(t, b, func(d *Decoder) []TopEvictionPods { return d.TopEvictionReply(&r) }, (*Encoder).TopEvictionReply)
	})
}

func FuzzVPodPolicyReplyLimits(f *testing.F) {
	for _, b := range limitSeeds("vpodpolicy") {
		f.Add(uint8(limitVPodEntries), b)
	}
	f.Fuzz(func(t *testing.T, entries uint8, b []byte) {
		dec := func(d *Decoder) *VPodPolicyReply {
			var r VPodPolicyReply
			d.VPodPolicyReply(&r, int(entries))
			return &r
		}
		d := NewDecoder(b)
		r := dec(d)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(r.Invalid) > int(entries) {
			t.Fatalf("accepted %d answers for %d entries", len(r.Invalid), entries)
		}
		reencodeEqual(t, b, dec, func(e *Encoder, r *VPodPolicyReply) { e.VPodPolicyReply(r) })
	})
}

func FuzzVPodStepReplyLimits(f *testing.F) {
	for _, b := range limitSeeds("vpodstep") {
		f.Add(uint8(limitVPodEntries), uint8(limitVPodCandidates), b)
	}
	f.Fuzz(func(t *testing.T, entries, candidates uint8, b []byte) {
		dec := func(d *Decoder) *VPodStepReply {
			var r VPodStepReply
			d.VPodStepReply(&r, int(entries), int(candidates))
			return &r
		}
		d := NewDecoder(b)
		r := dec(d)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(r.Verdicts) > int(candidates) || len(r.Scores) > int(entries) || len(r.Errors) > int(entries)*int(candidates) {
			t.Fatalf("accepted %d verdicts, %d score lists, %d errors for %d entries and %d candidates",
				len(r.Verdicts), len(r.Scores), len(r.Errors), entries, candidates)
		}
		for _, s := range r.Scores {
			if len(s.Scores) > int(candidates) {
				t.Fatalf("accepted %d scores for %d candidates", len(s.Scores), candidates)
			}
		}
		reencodeEqual(t, b, dec, func(e *Encoder, r *VPodStepReply) { e.VPodStepReply(r) })
	})
}

func FuzzFilterReplyLimits(f *testing.F) {
	for _, b := range limitSeeds("filter") {
		f.Add(uint8(limitNodes), b)
	}
	f.Fuzz(func(t *testing.T, nodes uint8, b []byte) {
		dec := func(d *Decoder) *FilterReply {
			var r FilterReply
			d.FilterReply(&r, int(nodes))
			return &r
		}
		d := NewDecoder(b)
		r := dec(d)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(r.Indexes) > int(nodes) || len(r.Entries) > int(nodes) {
			t.Fatalf("accepted %d verdicts and %d entries for %d nodes", len(r.Indexes), len(r.Entries), nodes)
		}
		for _, en := range r.Entries {
			if len(en.Reasons) > MaxReasons {
				t.Fatalf("accepted %d reasons", len(en.Reasons))
			}
		}
		reencode(t, b, dec, func(e *Encoder, r *FilterReply) { e.FilterReply(r) })
	})
}

func FuzzScoreReplyLimits(f *testing.F) {
	for _, b := range limitSeeds("score") {
		f.Add(uint8(limitNodes), b)
	}
	f.Fuzz(func(t *testing.T, nodes uint8, b []byte) {
		d := NewDecoder(b)
		scores := d.ScoreReply(nil, int(nodes))
		if checkRefusal(t, d.Err()); d.Err() == nil && len(scores) > int(nodes) {
			t.Fatalf("accepted %d scores for %d nodes", len(scores), nodes)
		}
	})
}

func FuzzPluginStatusLimits(f *testing.F) {
	for _, b := range limitSeeds("status") {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dec := func(d *Decoder) *PluginStatus {
			var s PluginStatus
			d.PluginStatus(&s)
			return &s
		}
		d := NewDecoder(b)
		s := dec(d)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(s.Reasons) > MaxReasons || len(s.Nodes) > MaxNarrowedNodes {
			t.Fatalf("accepted %d reasons and %d node names", len(s.Reasons), len(s.Nodes))
		}
		reencode(t, b, dec, func(e *Encoder, s *PluginStatus) { e.PluginStatus(s) })
	})
}

func FuzzSelectVictimsReplyLimits(f *testing.F) {
	req := encoded(func(e *Encoder) { e.SelectVictimsRequest(limitVictimNodes) })
	for _, b := range limitSeeds("victims") {
		f.Add(req, b)
	}
	f.Fuzz(func(t *testing.T, reqBytes, b []byte) {
		rd := NewDecoder(reqBytes)
		nodes := rd.SelectVictimsRequest()
		if rd.Err() != nil {
			return
		}
		d := NewDecoder(b)
		rs := d.SelectVictimsReply(nil, nodes)
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(rs) > len(nodes) {
			t.Fatalf("accepted %d answers for %d nodes", len(rs), len(nodes))
		}
		for i := range rs {
			if len(rs[i].Reasons) > MaxReasons || len(rs[i].Victims) > len(nodes[i].Pods) {
				t.Fatalf("node %d: accepted %d reasons and %d victims of %d pods", i, len(rs[i].Reasons), len(rs[i].Victims), len(nodes[i].Pods))
			}
		}
		reencode(t, b, func(d *Decoder) []NodeVictims { return d.SelectVictimsReply(nil, nodes) }, (*Encoder).SelectVictimsReply)
	})
}

func FuzzRankCandidatesReplyLimits(f *testing.F) {
	for _, b := range limitSeeds("rank") {
		f.Add(uint8(limitCandidates), b)
	}
	f.Fuzz(func(t *testing.T, candidates uint8, b []byte) {
		d := NewDecoder(b)
		order := d.RankCandidatesReply(nil, int(candidates))
		if checkRefusal(t, d.Err()); d.Err() != nil {
			return
		}
		if len(order) > int(candidates) {
			t.Fatalf("accepted %d indexes for %d candidates", len(order), candidates)
		}
		reencode(t, b, func(d *Decoder) []int { return d.RankCandidatesReply(nil, int(candidates)) }, (*Encoder).RankCandidatesReply)
	})
}
