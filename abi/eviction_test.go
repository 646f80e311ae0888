package abi

import (
	"bytes"
	"reflect"
	"testing"
)

func sampleObservation() NodeObservation {
	return NodeObservation{
		Conditions: []NodeCondition{{Type: "MemoryPressure", Status: ConditionTrue, LastTransition: 1700000000e9}},
		Usage:      &Usage{MilliCPU: 1500, Memory: 3 << 30, Timestamp: 1700000001e9},
		Pods: []PodObservation{
			{QoS: QoSBurstable, Flags: PodCritical | PodStatic, Annotations: Labels{{Key: "a", Value: "b"}}, Usage: &Usage{MilliCPU: 10, Memory: 1 << 20}},
			{QoS: QoSGuaranteed},
		},
	}
}

func grace(v int64) *int64 { return &v }

func TestEvictionMessagesRoundTrip(t *testing.T) {
	obs := sampleObservation()
	var e Encoder
	e.U8(ObserveReset)
	e.Uvarint(1)
	e.ObservationRecord(7, &obs)
	var got NodeObservation
	flags, err := ParseObserve(e.B, func(slot uint32, rec []byte) error {
		if slot != 7 {
			t.Fatalf("slot %d", slot)
		}
		d := NewDecoder(rec)
		d.NodeObservation(&got)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("record: %v, %d left", d.Err(), d.Remaining())
		}
		return nil
	})
	if err != nil || flags != ObserveReset || !reflect.DeepEqual(got, obs) {
		t.Fatalf("observe: flags %d err %v\n got %+v\nwant %+v", flags, err, got, obs)
	}

	req := EvictionRequest{Limit: 3, Nodes: []EvictionNode{{Slot: 1, Candidates: []uint32{0, 2}}, {Slot: 9}}}
	e.Reset()
	e.EvictionRequest(&req)
	var req2 EvictionRequest
	d := NewDecoder(e.B)
	d.EvictionRequest(&req2)
	if d.Err() != nil || !reflect.DeepEqual(req, req2) {
		t.Fatalf("eviction request: %v %+v", d.Err(), req2)
	}

	th := []ThresholdResult{{Met: HardMet, ThresholdValue: 1.5, ObservedValue: 2, Operator: ">", Scope: "cpu", GracePeriodSeconds: 30,
		Condition: &EvictionCondition{Name: "CPUPressure", Effects: []TaintEffect{EffectNoSchedule}, Met: true}, Candidates: []uint32{1}}, {}}
	e.Reset()
	e.ThresholdMetReply(th)
	d = NewDecoder(e.B)
	thReq := EvictionRequest{Nodes: []EvictionNode{{Slot: 1, Candidates: []uint32{1}}, {Slot: 2}}}
	if th2 := d.ThresholdMetReply(&thReq); d.Err() != nil || !reflect.DeepEqual(th, th2) {
		t.Fatalf("threshold reply: %v %+v", d.Err(), th2)
	}

	top := TopEvictionRequest{Limit: 3, Nodes: []TopEvictionNode{{Slot: 4, TopN: 1, Scope: "memory", Candidates: []uint32{3}}}}
	e.Reset()
	e.TopEvictionRequest(&top)
	var top2 TopEvictionRequest
	d = NewDecoder(e.B)
	d.TopEvictionRequest(&top2)
	if d.Err() != nil || !reflect.DeepEqual(top, top2) {
		t.Fatalf("top request: %v %+v", d.Err(), top2)
	}

	tr := []TopEvictionPods{{Pods: []uint32{3}, GracePeriodSeconds: grace(5)}, {}}
	e.Reset()
	e.TopEvictionReply(tr)
	d = NewDecoder(e.B)
	top.Nodes = append(top.Nodes, TopEvictionNode{Slot: 5})
	if tr2 := d.TopEvictionReply(&top); d.Err() != nil || !reflect.DeepEqual(tr, tr2) {
		t.Fatalf("top reply: %v %+v", d.Err(), tr2)
	}

	ep := []NodeEvictPods{{Pods: []EvictPod{{Pod: 2, Reason: "taint", Force: true, GracePeriodSeconds: grace(0)}, {Pod: 0, Reason: "soft"}}}, {Condition: &EvictionCondition{Name: "X"}}}
	e.Reset()
	e.EvictPodsReply(ep)
	d = NewDecoder(e.B)
	epReq := EvictionRequest{Limit: 2, Nodes: []EvictionNode{{Slot: 1, Candidates: []uint32{0, 2}}, {Slot: 2}}}
	if ep2 := d.EvictPodsReply(&epReq); d.Err() != nil || !reflect.DeepEqual(ep, ep2) {
		t.Fatalf("evict pods reply: %v %+v", d.Err(), ep2)
	}
}

func TestManifestAnnotationKeysFromV12(t *testing.T) {
	for _, minor := range []uint16{1, 2} {
		m := Manifest{VersionMajor: 1, VersionMinor: minor, Plugins: []PluginInfo{{Name: "P", Points: PointEvictPods}}, AnnotationKeys: []string{"k"}}
		var e Encoder
		e.Manifest(&m)
		var got Manifest
		d := NewDecoder(e.B)
		d.Manifest(&got)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("v1.%d: %v, %d left", minor, d.Err(), d.Remaining())
		}
		want := []string(nil)
		if minor >= 2 {
			want = []string{"k"}
		}
		if !reflect.DeepEqual(got.AnnotationKeys, want) {
			t.Errorf("v1.%d: annotation keys %q, want %q", minor, got.AnnotationKeys, want)
		}
	}
}

func TestEvictionDecodersRefuseOutOfRange(t *testing.T) {
	for name, b := range map[string][]byte{
		"met type 3":       {1, 3},
		"index ≥ 2^31":     {1, 1, 0x80, 0x80, 0x80, 0x80, 0x08, 0},
		"condition kind 1": {1, 0, 1, 1},
	} {
		d := NewDecoder(b)
		switch name {
		case "met type 3":
			d.ThresholdMetReply(fuzzEvictionRequest())
		case "index ≥ 2^31":
			d.TopEvictionReply(fuzzTopEvictionRequest())
		default:
			d.EvictPodsReply(fuzzEvictionRequest())
		}
		if d.Err() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// fuzzEvictionRequest and fuzzTopEvictionRequest are the requests the
// eviction message fuzzers decode replies to: four nodes offering eight
// candidates each, with no limit and no topN, so the reply shapes the
// fuzzer explores are bounded only by those (FuzzEvictionReplyLimits
// explores the limits).
func fuzzEvictionRequest() *EvictionRequest {
	r := &EvictionRequest{}
	for slot := range uint32(4) {
		r.Nodes = append(r.Nodes, EvictionNode{Slot: slot, Candidates: []uint32{0, 1, 2, 3, 4, 5, 6, 7}})
	}
	return r
}

func fuzzTopEvictionRequest() *TopEvictionRequest {
	r := &TopEvictionRequest{}
	for _, n := range fuzzEvictionRequest().Nodes {
		r.Nodes = append(r.Nodes, TopEvictionNode{Slot: n.Slot, Candidates: n.Candidates})
	}
	return r
}

// reencode decodes b with dec and, when it is accepted, checks that
// encoding the result and decoding that again gives the same bytes
// (bytes, not values: thresholds may carry NaN).
func reencode[T any](t *testing.T, b []byte, dec func(*Decoder) T, enc func(*Encoder, T)) {
	d := NewDecoder(b)
	v := dec(d)
	if d.Err() != nil {
		return
	}
	var e1, e2 Encoder
	enc(&e1, v)
	d2 := NewDecoder(e1.B)
	v2 := dec(d2)
	if d2.Err() != nil {
		t.Fatalf("re-decode: %v", d2.Err())
	}
	enc(&e2, v2)
	if !bytes.Equal(e1.B, e2.B) {
		t.Fatalf("re-encode differs")
	}
}

func FuzzEvictionMessages(f *testing.F) {
	var e Encoder
	obs := sampleObservation()
	e.NodeObservation(&obs)
	f.Add(uint8(0), e.B)
	e.Reset()
	e.ThresholdMetReply([]ThresholdResult{{Met: SoftMet, Scope: "cpu", Condition: &EvictionCondition{Name: "c", Effects: []TaintEffect{1}}}})
	f.Add(uint8(1), e.B)
	e.Reset()
	e.EvictPodsReply([]NodeEvictPods{{Pods: []EvictPod{{Pod: 1, Force: true, GracePeriodSeconds: grace(3)}}}})
	f.Add(uint8(2), e.B)
	e.Reset()
	e.TopEvictionReply([]TopEvictionPods{{Pods: []uint32{0}}})
	f.Add(uint8(3), e.B)
	e.Reset()
	e.EvictionRequest(&EvictionRequest{Limit: 3, Nodes: []EvictionNode{{Slot: 1, Candidates: []uint32{0}}}})
	f.Add(uint8(4), e.B)
	e.Reset()
	e.TopEvictionRequest(&TopEvictionRequest{Nodes: []TopEvictionNode{{Slot: 1, TopN: 1, Scope: "s"}}})
	f.Add(uint8(5), e.B)
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		switch which % 7 {
		case 0:
			reencode(t, b, func(d *Decoder) *NodeObservation { var o NodeObservation; d.NodeObservation(&o); return &o },
				func(e *Encoder, o *NodeObservation) { e.NodeObservation(o) })
		case 1:
			reencode(t, b, func(d *Decoder) []ThresholdResult { return d.ThresholdMetReply(fuzzEvictionRequest()) }, (*Encoder).ThresholdMetReply)
		case 2:
			reencode(t, b, func(d *Decoder) []NodeEvictPods { return d.EvictPodsReply(fuzzEvictionRequest()) }, (*Encoder).EvictPodsReply)
		case 3:
			reencode(t, b, func(d *Decoder) []TopEvictionPods { return d.TopEvictionReply(fuzzTopEvictionRequest()) }, (*Encoder).TopEvictionReply)
		case 4:
			reencode(t, b, func(d *Decoder) *EvictionRequest { var r EvictionRequest; d.EvictionRequest(&r); return &r },
				func(e *Encoder, r *EvictionRequest) { e.EvictionRequest(r) })
		case 5:
			reencode(t, b, func(d *Decoder) *TopEvictionRequest { var r TopEvictionRequest; d.TopEvictionRequest(&r); return &r },
				func(e *Encoder, r *TopEvictionRequest) { e.TopEvictionRequest(r) })
		case 6:
			_, _ = ParseObserve(b, func(uint32, []byte) error { return nil })
		}
	})
}
