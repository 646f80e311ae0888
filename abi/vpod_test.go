package abi

import (
	"reflect"
	"testing"
)

func sampleVPodPolicy() VPodPolicy {
	return VPodPolicy{ID: 7, Entries: []VPodEntry{
		{Plugin: 2, Kind: VPodPredicate, Args: []byte(`"{\"MaxSkew\":2}"`)},
		{Plugin: 0, Kind: VPodPriority}, // no args
		{Plugin: 5, Kind: VPodPriority, Args: []byte{}},
	}}
}

func sampleVPodTopology() VPodTopology {
	return VPodTopology{Generation: 1 << 40, StatefulSet: "kafka-source-dispatcher", Capacity: 20, Replicas: 3,
		Pods:  []VPodPod{{Ordinal: 0, Node: 1}, {Ordinal: 2, Node: 0}, {Ordinal: 1<<31 - 1, Node: 1}},
		Nodes: []VPodNode{{Name: "n1", Zone: 0}, {Name: "n2", Zone: 1}}, Zones: []string{"unknown", "zone-a"}}
}

func sampleVPodStep() VPodStep {
	return VPodStep{Policy: 7, Topology: 1 << 40, Namespace: "ns", Name: "src", VReplicas: 5, FreeCapEmpty: true,
		Free:       []int32{3, -2, 20},
		PodSpread:  []VPodCount{{Index: 0, VReplicas: 2}, {Index: 2, VReplicas: 0}},
		NodeSpread: []VPodCount{{Index: 1, VReplicas: 2}}, ZoneSpread: []VPodCount{{Index: 1, VReplicas: -1}},
		Candidates: []uint32{0, 1, 2}}
}

func sampleVPodStepReply() VPodStepReply {
	return VPodStepReply{
		Verdicts: []VPodVerdict{{}, {Entry: 1, Code: Unschedulable, Reason: "pod at full capacity"}, {Entry: 3, Code: Error}},
		Scores:   []VPodScores{{Entry: 1, Scores: []int64{-7, 0, 1 << 62}}, {Entry: 2, Scores: []int64{-1 << 63, 5, 0}}},
		Errors:   []VPodScoreError{{Entry: 2, Candidate: 1, Message: "invalid arguments"}},
	}
}

func TestVPodMessagesRoundTrip(t *testing.T) {
	pol := sampleVPodPolicy()
	var e Encoder
	e.VPodPolicy(&pol)
	var pol2 VPodPolicy
	d := NewDecoder(e.B)
	d.VPodPolicy(&pol2)
	if d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(pol, pol2) {
		t.Fatalf("policy: %v\n got %+v\nwant %+v", d.Err(), pol2, pol)
	}
	// Absent args stay nil, present empty args stay present.
	if pol2.Entries[1].Args != nil || pol2.Entries[2].Args == nil {
		t.Fatalf("args presence lost: %q %q", pol2.Entries[1].Args, pol2.Entries[2].Args)
	}
	// The decoded args are a copy: the input buffer may be reused.
	for i := range e.B {
		e.B[i] = 0
	}
	if string(pol2.Entries[0].Args) != `"{\"MaxSkew\":2}"` {
		t.Fatalf("args alias the input: %q", pol2.Entries[0].Args)
	}

	pr := VPodPolicyReply{Invalid: []string{"", "invalid arguments: unknown field \"x\"", ""}}
	e.Reset()
	e.VPodPolicyReply(&pr)
	var pr2 VPodPolicyReply
	d = NewDecoder(e.B)
	d.VPodPolicyReply(&pr2, len(pr.Invalid))
	if d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(pr, pr2) {
		t.Fatalf("policy reply: %v %+v", d.Err(), pr2)
	}

	topo := sampleVPodTopology()
	e.Reset()
	e.VPodTopology(&topo)
	var topo2 VPodTopology
	d = NewDecoder(e.B)
	d.VPodTopology(&topo2)
	if d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(topo, topo2) {
		t.Fatalf("topology: %v\n got %+v\nwant %+v", d.Err(), topo2, topo)
	}

	step := sampleVPodStep()
	e.Reset()
	e.VPodStep(&step)
	var step2 VPodStep
	d = NewDecoder(e.B)
	d.VPodStep(&step2)
	if d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(step, step2) {
		t.Fatalf("step: %v\n got %+v\nwant %+v", d.Err(), step2, step)
	}

	r := sampleVPodStepReply()
	e.Reset()
	e.VPodStepReply(&r)
	var r2 VPodStepReply
	d = NewDecoder(e.B)
	d.VPodStepReply(&r2, 3, 3)
	if d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(r, r2) {
		t.Fatalf("step reply: %v\n got %+v\nwant %+v", d.Err(), r2, r)
	}

	// Empty messages decode to nil lists.
	for _, m := range []func(*Encoder){
		func(e *Encoder) { e.VPodPolicy(&VPodPolicy{}) },
		func(e *Encoder) { e.VPodTopology(&VPodTopology{}) },
		func(e *Encoder) { e.VPodStep(&VPodStep{}) },
		func(e *Encoder) { e.VPodStepReply(&VPodStepReply{}) },
	} {
		e.Reset()
		m(&e)
		if len(e.B) == 0 {
			t.Fatal("an empty message encodes to nothing")
		}
	}
}

func TestVPodDecodersRefuseOutOfRange(t *testing.T) {
	enc := func(f func(e *Encoder)) []byte {
		var e Encoder
		f(&e)
		return e.B
	}
	big := uint64(1) << 31
	for _, tc := range []struct {
		name string
		b    []byte
		dec  func(d *Decoder)
	}{
		{"entry kind 0", enc(func(e *Encoder) { e.Uvarint(1); e.Uvarint(1); e.Uvarint(0); e.U8(0); e.Bool(false) }),
			func(d *Decoder) { d.VPodPolicy(&VPodPolicy{}) }},
		{"entry kind 3", enc(func(e *Encoder) { e.Uvarint(1); e.Uvarint(1); e.Uvarint(0); e.U8(3); e.Bool(false) }),
			func(d *Decoder) { d.VPodPolicy(&VPodPolicy{}) }},
		{"policy id ≥ 2^31", enc(func(e *Encoder) { e.Uvarint(big); e.Uvarint(0) }), func(d *Decoder) { d.VPodPolicy(&VPodPolicy{}) }},
		{"args flag 2", enc(func(e *Encoder) { e.Uvarint(1); e.Uvarint(1); e.Uvarint(0); e.U8(1); e.U8(2) }),
			func(d *Decoder) { d.VPodPolicy(&VPodPolicy{}) }},
		{"pod's node out of range", enc(func(e *Encoder) {
			t := sampleVPodTopology()
			t.Pods[1].Node = 2
			e.VPodTopology(&t)
		}), func(d *Decoder) { d.VPodTopology(&VPodTopology{}) }},
		{"node's zone out of range", enc(func(e *Encoder) {
			t := sampleVPodTopology()
			t.Nodes[0].Zone = 2
			e.VPodTopology(&t)
		}), func(d *Decoder) { d.VPodTopology(&VPodTopology{}) }},
		{"capacity beyond int32", enc(func(e *Encoder) { e.U64(1); e.String("s"); e.Varint(1 << 31) }), func(d *Decoder) { d.VPodTopology(&VPodTopology{}) }},
		{"spread index ≥ 2^31", enc(func(e *Encoder) {
			s := sampleVPodStep()
			s.ZoneSpread[0].Index = 1<<31 + 1
			e.VPodStep(&s)
		}), func(d *Decoder) { d.VPodStep(&VPodStep{}) }},
		{"candidate ≥ 2^31", enc(func(e *Encoder) {
			s := sampleVPodStep()
			s.Candidates[0] = 1 << 31
			e.VPodStep(&s)
		}), func(d *Decoder) { d.VPodStep(&VPodStep{}) }},
		{"free count beyond input", enc(func(e *Encoder) {
			e.Uvarint(1)
			e.U64(1)
			e.String("")
			e.String("")
			e.Varint(0)
			e.Bool(false)
			e.Uvarint(1000)
		}), func(d *Decoder) { d.VPodStep(&VPodStep{}) }},
		{"verdict entry ≥ 2^31", enc(func(e *Encoder) { e.Uvarint(1); e.Uvarint(big) }), func(d *Decoder) { d.VPodStepReply(&VPodStepReply{}, 4, 4) }},
		{"reply truncated", enc(func(e *Encoder) { r := sampleVPodStepReply(); e.VPodStepReply(&r); e.B = e.B[:len(e.B)-3] }),
			func(d *Decoder) { d.VPodStepReply(&VPodStepReply{}, 4, 4) }},
	} {
		d := NewDecoder(tc.b)
		tc.dec(d)
		if d.Err() == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// FuzzVPodMessages decodes arbitrary bytes with every vpod decoder: none
// panics, and what one accepts re-encodes to bytes that decode to the
// same value.
func FuzzVPodMessages(f *testing.F) {
	var e Encoder
	pol := sampleVPodPolicy()
	e.VPodPolicy(&pol)
	f.Add(uint8(0), e.B)
	e.Reset()
	e.VPodPolicyReply(&VPodPolicyReply{Invalid: []string{"", "bad"}})
	f.Add(uint8(1), e.B)
	e.Reset()
	topo := sampleVPodTopology()
	e.VPodTopology(&topo)
	f.Add(uint8(2), e.B)
	e.Reset()
	step := sampleVPodStep()
	e.VPodStep(&step)
	f.Add(uint8(3), e.B)
	e.Reset()
	r := sampleVPodStepReply()
	e.VPodStepReply(&r)
	f.Add(uint8(4), e.B)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		switch which % 5 {
		case 0:
			reencodeEqual(t, b, func(d *Decoder) *VPodPolicy { var p VPodPolicy; d.VPodPolicy(&p); return &p },
				func(e *Encoder, p *VPodPolicy) { e.VPodPolicy(p) })
		case 1:
			reencodeEqual(t, b, func(d *Decoder) *VPodPolicyReply {
				var p VPodPolicyReply
				d.VPodPolicyReply(&p, fuzzVPodEntries)
				return &p
			},
				func(e *Encoder, p *VPodPolicyReply) { e.VPodPolicyReply(p) })
		case 2:
			reencodeEqual(t, b, func(d *Decoder) *VPodTopology { var p VPodTopology; d.VPodTopology(&p); return &p },
				func(e *Encoder, p *VPodTopology) { e.VPodTopology(p) })
		case 3:
			reencodeEqual(t, b, func(d *Decoder) *VPodStep { var p VPodStep; d.VPodStep(&p); return &p },
				func(e *Encoder, p *VPodStep) { e.VPodStep(p) })
		case 4:
			reencodeEqual(t, b, func(d *Decoder) *VPodStepReply {
				var p VPodStepReply
				d.VPodStepReply(&p, fuzzVPodEntries, fuzzVPodCandidates)
				return &p
			},
				func(e *Encoder, p *VPodStepReply) { e.VPodStepReply(p) })
		}
		// Every decoder on the same bytes, aliasing too: none panics.
		for _, alias := range []bool{false, true} {
			d := &Decoder{}
			d.Reset(b, alias)
			d.VPodPolicy(&VPodPolicy{})
			d.Reset(b, alias)
			d.VPodPolicyReply(&VPodPolicyReply{}, fuzzVPodEntries)
			d.Reset(b, alias)
			d.VPodTopology(&VPodTopology{})
			d.Reset(b, alias)
			d.VPodStep(&VPodStep{})
			d.Reset(b, alias)
			d.VPodStepReply(&VPodStepReply{}, fuzzVPodEntries, fuzzVPodCandidates)
		}
	})
}

// fuzzVPodEntries and fuzzVPodCandidates are the request FuzzVPodMessages
// decodes replies to (FuzzVPodReplyLimits explores others).
const fuzzVPodEntries, fuzzVPodCandidates = 8, 8

// reencodeEqual is reencode (eviction_test.go) with a value comparison
// too: vpod messages carry no floats.
func reencodeEqual[T any](t *testing.T, b []byte, dec func(*Decoder) T, enc func(*Encoder, T)) {
	t.Helper()
	reencode(t, b, dec, enc)
	d := NewDecoder(b)
	v := dec(d)
	if d.Err() != nil {
		return
	}
	var e Encoder
	enc(&e, v)
	d2 := NewDecoder(e.B)
	if v2 := dec(d2); d2.Err() != nil || !reflect.DeepEqual(v, v2) {
		t.Fatalf("re-decode differs: %v\n%+v\n%+v", d2.Err(), v, v2)
	}
}
