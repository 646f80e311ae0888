package guest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// evSeen is what a test policy was shown of one node.
type evSeen struct {
	node       string
	obs        abi.NodeObservation
	podObs     []*abi.PodObservation // PodObs(i) for each pod
	candidates []uint32
	topN       int
	scope      string
	limit      int
}

// testPolicy is a ThresholdPlugin and an EvictPodsPlugin whose answers
// the test sets: it records every node it was asked about.
type testPolicy struct {
	name   string
	answer []uint32 // pods GetTopEvictionPods and GetEvictPods name
	restr  []uint32 // ThresholdResult.Candidates
	seen   []evSeen
}

func (p *testPolicy) Name() string { return p.name }

func (p *testPolicy) record(n *plugin.EvictionNode, topN int, scope string, limit int) {
	s := evSeen{node: n.Name(), obs: *n.Obs, candidates: append([]uint32(nil), n.Candidates...), topN: topN, scope: scope, limit: limit}
	for i := range n.Pods {
		s.podObs = append(s.podObs, n.PodObs(uint32(i)))
	}
	p.seen = append(p.seen, s)
}

func (p *testPolicy) ThresholdMet(n *plugin.EvictionNode) abi.ThresholdResult {
	p.record(n, -1, "", -1)
	if _, hot := n.Label("hot"); !hot {
		return abi.ThresholdResult{}
	}
	return abi.ThresholdResult{Met: abi.HardMet, Scope: "memory", Operator: ">", ThresholdValue: 1, ObservedValue: 2, Candidates: p.restr,
		Condition: &abi.EvictionCondition{Name: "Hot", Effects: []abi.TaintEffect{abi.EffectNoSchedule}, Met: true}}
}

func (p *testPolicy) GetTopEvictionPods(n *plugin.EvictionNode, topN int, scope string, _ []uint32, limit int) ([]uint32, *int64) {
	p.record(n, topN, scope, limit)
	g := int64(7)
	return p.answer, &g
}

func (p *testPolicy) GetEvictPods(n *plugin.EvictionNode, limit int) ([]abi.EvictPod, *abi.EvictionCondition) {
	p.record(n, -1, "", limit)
	var out []abi.EvictPod
	for _, i := range p.answer {
		out = append(out, abi.EvictPod{Pod: i, Reason: "because", Force: true})
	}
	return out, nil
}

// evictionGuest returns an initialised guest running pol (plus a Filter
// plugin that is no eviction policy) with nodes n0 (3 pods, hot), n1 (2
// pods) and n2 (no pods) synced in slots 0-2.
func evictionGuest(t *testing.T, pol *testPolicy) *Guest {
	t.Helper()
	g := New(
		reg,
		plugin.Registration{Name: pol.name, New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return pol, nil },
			AnnotationKeys: []string{"b.example/x", "a.example/y"}},
	)
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g, abi.FuncInit, 0, e.B)
	syncInfos(t, g, abi.SyncReset, map[uint32]*abi.NodeInfo{
		0: nodeWithPods("n0", 3, abi.Labels{{Key: "hot", Value: "1"}}),
		1: nodeWithPods("n1", 2, nil),
		2: nodeWithPods("n2", 0, nil),
	}, nil)
	return g
}

func nodeWithPods(name string, pods int, labels abi.Labels) *abi.NodeInfo {
	ni := &abi.NodeInfo{Node: abi.Node{Name: name, Labels: labels}}
	for i := 0; i < pods; i++ {
		ni.Pods = append(ni.Pods, abi.Pod{Name: name + "-p" + string(rune('0'+i)), Namespace: "ns"})
	}
	return ni
}

func syncInfos(t *testing.T, g *Guest, flags uint8, upserts map[uint32]*abi.NodeInfo, deletes []uint32) {
	t.Helper()
	var e abi.Encoder
	e.SyncHeader(flags, len(upserts))
	e.Uvarint(uint64(len(upserts)))
	for slot := uint32(0); len(upserts) > 0 && slot < 16; slot++ {
		if ni, ok := upserts[slot]; ok {
			e.NodeRecord(slot, ni)
		}
	}
	e.Uvarint(uint64(len(deletes)))
	for _, s := range deletes {
		e.U32(s)
	}
	call(t, g, abi.FuncSync, 0, e.B)
}

type obsRec struct {
	slot uint32
	obs  *abi.NodeObservation
}

func observeReq(flags uint8, recs ...obsRec) []byte {
	var e abi.Encoder
	e.U8(flags)
	e.Uvarint(uint64(len(recs)))
	for _, r := range recs {
		e.ObservationRecord(r.slot, r.obs)
	}
	return e.B
}

func obsWith(cond string, pods int) *abi.NodeObservation {
	o := &abi.NodeObservation{Conditions: []abi.NodeCondition{{Type: cond, Status: abi.ConditionTrue}},
		Usage: &abi.Usage{MilliCPU: 100, Memory: 200}}
	for i := 0; i < pods; i++ {
		o.Pods = append(o.Pods, abi.PodObservation{QoS: abi.QoSBurstable, Usage: &abi.Usage{Memory: int64(i + 1)},
			Annotations: abi.Labels{{Key: "a.example/y", Value: "v"}}})
	}
	return o
}

func evictionReq(limit uint32, nodes ...abi.EvictionNode) []byte {
	var e abi.Encoder
	e.EvictionRequest(&abi.EvictionRequest{Limit: limit, Nodes: nodes})
	return e.B
}

func thresholdMet(t *testing.T, g *Guest, nodes ...abi.EvictionNode) []abi.ThresholdResult {
	t.Helper()
	d := abi.NewDecoder(call(t, g, abi.FuncThresholdMet, 1, evictionReq(0, nodes...)))
	rs := d.ThresholdMetReply(&abi.EvictionRequest{Nodes: nodes})
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("threshold reply: %v", d.Err())
	}
	return rs
}

func TestManifestOfEvictionModuleWantsPodsAndMergesAnnotationKeys(t *testing.T) {
	pol := &testPolicy{name: "Policy"}
	other := &testPolicy{name: "Other"}
	g := New(
		plugin.Registration{Name: "LabelFilter", New: reg.New, AnnotationKeys: []string{"ignored.example/k"}},
		plugin.Registration{Name: "Policy", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return pol, nil },
			AnnotationKeys: []string{"b.example/x", "a.example/y", ""}},
		plugin.Registration{Name: "Other", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return other, nil },
			AnnotationKeys: []string{"a.example/y", "c.example/z"}},
	)
	var m abi.Manifest
	d := abi.NewDecoder(call(t, g, abi.FuncManifest, 0, nil))
	d.Manifest(&m)
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("manifest: %v (%d bytes left)", d.Err(), d.Remaining())
	}
	if m.VersionMinor < 2 || m.Flags&abi.ManifestWantsPods == 0 {
		t.Errorf("version 1.%d flags %b: an eviction module must be v1.2 or later and want pods", m.VersionMinor, m.Flags)
	}
	want := abi.PointEvictionThreshold | abi.PointEvictPods
	if m.Plugins[1].Points != want || m.Plugins[0].Points&abi.PointsEviction != 0 {
		t.Errorf("points %s, %s", m.Plugins[0].Points, m.Plugins[1].Points)
	}
	// Sorted, de-duplicated, no empty key, and only eviction policies'
	// keys (the Filter plugin never gets observations).
	if keys := []string{"a.example/y", "b.example/x", "c.example/z"}; !reflect.DeepEqual(m.AnnotationKeys, keys) {
		t.Errorf("annotation keys %q, want %q", m.AnnotationKeys, keys)
	}

	// A module without eviction policies does not ask for pods.
	var m2 abi.Manifest
	abi.NewDecoder(call(t, New(reg), abi.FuncManifest, 0, nil)).Manifest(&m2)
	if m2.Flags != 0 || len(m2.AnnotationKeys) != 0 {
		t.Errorf("plain module: flags %b keys %q", m2.Flags, m2.AnnotationKeys)
	}
}

func TestObservationsFollowObserveSyncAndReset(t *testing.T) {
	pol := &testPolicy{name: "Policy"}
	g := evictionGuest(t, pol)
	call(t, g, abi.FuncObserve, 0, observeReq(abi.ObserveReset,
		obsRec{0, obsWith("MemoryPressure", 3)},
		obsRec{1, obsWith("DiskPressure", 2)},
	))
	all := []abi.EvictionNode{{Slot: 0, Candidates: []uint32{0, 1, 2}}, {Slot: 1}, {Slot: 2}}
	thresholdMet(t, g, all...)
	if len(pol.seen) != 3 {
		t.Fatalf("policy asked about %d nodes, want 3", len(pol.seen))
	}
	s0, s1, s2 := pol.seen[0], pol.seen[1], pol.seen[2]
	if s0.obs.Conditions[0].Type != "MemoryPressure" || s1.obs.Conditions[0].Type != "DiskPressure" {
		t.Errorf("conditions %+v %+v", s0.obs.Conditions, s1.obs.Conditions)
	}
	if p := s0.podObs[2]; p == nil || p.Usage == nil || p.Usage.Memory != 3 || p.Annotations[0].Value != "v" {
		t.Errorf("n0 pod 2 observation %+v", p)
	}
	if s2.obs.Usage != nil || len(s2.obs.Conditions) != 0 || len(s2.podObs) != 0 {
		t.Errorf("a node with no observation must see an empty one, got %+v", s2.obs)
	}

	// A record replaces its slot's; a mismatched pod count hides the
	// per-pod observations but keeps the node's.
	call(t, g, abi.FuncObserve, 0, observeReq(0, obsRec{1, obsWith("PIDPressure", 5)}))
	pol.seen = nil
	thresholdMet(t, g, all...)
	if s := pol.seen[1]; s.obs.Conditions[0].Type != "PIDPressure" || s.obs.Pods != nil || s.podObs[0] != nil || s.podObs[1] != nil {
		t.Errorf("n1 after a 5-pod record for 2 pods: %+v %v", s.obs, s.podObs)
	}
	if pol.seen[0].obs.Conditions[0].Type != "MemoryPressure" {
		t.Error("an observe without reset dropped another slot's record")
	}

	// Deleting a node drops its observation: a node taking the slot
	// starts with none.
	syncInfos(t, g, 0, nil, []uint32{1})
	syncInfos(t, g, 0, map[uint32]*abi.NodeInfo{1: nodeWithPods("n1b", 2, nil)}, nil)
	pol.seen = nil
	thresholdMet(t, g, all...)
	if s := pol.seen[1]; s.node != "n1b" || len(s.obs.Conditions) != 0 || s.obs.Usage != nil {
		t.Errorf("reused slot 1 kept the deleted node's observation: %+v", s.obs)
	}
	if pol.seen[0].obs.Usage == nil {
		t.Error("a delete of slot 1 dropped slot 0's observation")
	}

	// ObserveReset drops every record not in the request.
	call(t, g, abi.FuncObserve, 0, observeReq(abi.ObserveReset, obsRec{1, obsWith("X", 2)}))
	pol.seen = nil
	thresholdMet(t, g, all...)
	if pol.seen[0].obs.Usage != nil || pol.seen[1].obs.Conditions[0].Type != "X" {
		t.Errorf("after an observe reset: n0 %+v n1 %+v", pol.seen[0].obs, pol.seen[1].obs)
	}

	// A sync reset drops them all.
	syncInfos(t, g, abi.SyncReset, map[uint32]*abi.NodeInfo{0: nodeWithPods("n0", 3, nil), 1: nodeWithPods("n1", 2, nil)}, nil)
	pol.seen = nil
	thresholdMet(t, g, all[:2]...)
	if pol.seen[1].obs.Usage != nil || len(pol.seen[1].obs.Conditions) != 0 {
		t.Errorf("a sync reset kept an observation: %+v", pol.seen[1].obs)
	}
}

func TestThresholdMetReplyPerNodeAndMissingSlot(t *testing.T) {
	pol := &testPolicy{name: "Policy", restr: []uint32{2}}
	g := evictionGuest(t, pol)
	rs := thresholdMet(t, g, abi.EvictionNode{Slot: 1, Candidates: []uint32{0}}, abi.EvictionNode{Slot: 9},
		abi.EvictionNode{Slot: 0, Candidates: []uint32{1, 2}})
	if len(rs) != 3 || rs[0].Met != abi.NotMet || rs[1].Met != abi.NotMet || rs[2].Met != abi.HardMet {
		t.Fatalf("results %+v", rs)
	}
	if rs[2].Scope != "memory" || !reflect.DeepEqual(rs[2].Candidates, []uint32{2}) || rs[2].Condition == nil || rs[2].Condition.Name != "Hot" {
		t.Errorf("n0 result %+v", rs[2])
	}
	if len(pol.seen) != 2 {
		t.Errorf("the policy was asked about %d nodes; a slot the mirror lacks must not reach it", len(pol.seen))
	}
}

func TestTopEvictionPodsTruncatesToLimitAndTopN(t *testing.T) {
	pol := &testPolicy{name: "Policy", answer: []uint32{2, 0, 1}}
	g := evictionGuest(t, pol)
	top := func(limit uint32, nodes ...abi.TopEvictionNode) []abi.TopEvictionPods {
		var e abi.Encoder
		req := &abi.TopEvictionRequest{Limit: limit, Nodes: nodes}
		e.TopEvictionRequest(req)
		d := abi.NewDecoder(call(t, g, abi.FuncTopEvictionPods, 1, e.B))
		rs := d.TopEvictionReply(req)
		if d.Err() != nil {
			t.Fatal(d.Err())
		}
		return rs
	}
	all := []uint32{0, 1, 2}
	rs := top(2,
		abi.TopEvictionNode{Slot: 0, TopN: 0, Scope: "memory", Candidates: all}, // soft: the limit cuts
		abi.TopEvictionNode{Slot: 0, TopN: 1, Scope: "cpu", Candidates: all},    // hard: topN cuts
		abi.TopEvictionNode{Slot: 7, TopN: 1, Candidates: all},                  // no such node
	)
	if len(rs) != 3 || !reflect.DeepEqual(rs[0].Pods, []uint32{2, 0}) || !reflect.DeepEqual(rs[1].Pods, []uint32{2}) ||
		len(rs[2].Pods) != 0 || rs[2].GracePeriodSeconds != nil {
		t.Fatalf("replies %+v", rs)
	}
	if rs[0].GracePeriodSeconds == nil || *rs[0].GracePeriodSeconds != 7 {
		t.Errorf("grace period lost: %+v", rs[0])
	}
	if s := pol.seen[0]; s.topN != 0 || s.scope != "memory" || s.limit != 2 {
		t.Errorf("soft query seen as %+v", s)
	}
	if s := pol.seen[1]; s.topN != 1 || s.scope != "cpu" {
		t.Errorf("hard query seen as %+v", s)
	}
	// Limit 0 is no limit: the policy may name every candidate.
	pol.seen = nil
	rs = top(0, abi.TopEvictionNode{Slot: 0, Candidates: all})
	if !reflect.DeepEqual(rs[0].Pods, []uint32{2, 0, 1}) || pol.seen[0].limit != 3 {
		t.Errorf("no limit: %+v (policy saw limit %d)", rs[0], pol.seen[0].limit)
	}
}

func TestEvictPodsTruncatesAndKeepsOrder(t *testing.T) {
	pol := &testPolicy{name: "Policy", answer: []uint32{1, 2, 0}}
	g := evictionGuest(t, pol)
	req := &abi.EvictionRequest{Limit: 2, Nodes: []abi.EvictionNode{{Slot: 0, Candidates: []uint32{0, 1, 2}}, {Slot: 5}}}
	d := abi.NewDecoder(call(t, g, abi.FuncEvictPods, 1, evictionReq(req.Limit, req.Nodes...)))
	rs := d.EvictPodsReply(req)
	if d.Err() != nil || len(rs) != 2 {
		t.Fatalf("reply %+v (%v)", rs, d.Err())
	}
	if len(rs[0].Pods) != 2 || rs[0].Pods[0].Pod != 1 || rs[0].Pods[1].Pod != 2 || !rs[0].Pods[0].Force || rs[0].Pods[0].Reason != "because" {
		t.Errorf("n0 %+v, want pods 1 and 2 (the plugin's first two)", rs[0].Pods)
	}
	if len(rs[1].Pods) != 0 || rs[1].Condition != nil {
		t.Errorf("missing node %+v", rs[1])
	}
}

func TestEvictionRepliesNamingOtherPodsAreErrors(t *testing.T) {
	cases := []struct {
		name   string
		fn     abi.Func
		answer []uint32
		restr  []uint32
		want   string
	}{
		{"top: not a candidate", abi.FuncTopEvictionPods, []uint32{0}, nil, "pod index 0 is not one of the candidates offered"},
		{"top: named twice", abi.FuncTopEvictionPods, []uint32{1, 1}, nil, "pod index 1 is named twice"},
		{"top: past the limit still checked", abi.FuncTopEvictionPods, []uint32{1, 2, 0}, nil, "pod index 0 is not one"},
		{"evict: not a candidate", abi.FuncEvictPods, []uint32{2, 0}, nil, "pod index 0 is not one"},
		{"threshold: restricts to another pod", abi.FuncThresholdMet, nil, []uint32{0}, "pod index 0 is not one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol := &testPolicy{name: "Policy", answer: c.answer, restr: c.restr}
			g := evictionGuest(t, pol)
			cands := []uint32{1, 2}
			var in []byte
			if c.fn == abi.FuncTopEvictionPods {
				var e abi.Encoder
				e.TopEvictionRequest(&abi.TopEvictionRequest{Limit: 1, Nodes: []abi.TopEvictionNode{{Slot: 0, Candidates: cands}}})
				in = e.B
			} else {
				in = evictionReq(1, abi.EvictionNode{Slot: 0, Candidates: cands})
			}
			msg := callErr(g, c.fn, 1, in)
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, "Policy") || !strings.Contains(msg, "n0") {
				t.Fatalf("error %q, want one naming the policy, node n0 and %q", msg, c.want)
			}
			// The instance stays usable.
			call(t, g, abi.FuncThresholdMet, 1, evictionReq(0, abi.EvictionNode{Slot: 1}))
		})
	}
}

func TestEvictionCallsRefuseWhatCannotBeAnswered(t *testing.T) {
	pol := &testPolicy{name: "Policy"}
	g := evictionGuest(t, pol)
	// Candidates past the node's pods: the mirror and the host disagree.
	if msg := callErr(g, abi.FuncEvictPods, 1, evictionReq(0, abi.EvictionNode{Slot: 1, Candidates: []uint32{5}})); !strings.Contains(msg, "candidate pod index 5 out of range") {
		t.Errorf("out-of-range candidate: %q", msg)
	}
	if len(pol.seen) != 0 {
		t.Error("the policy was called with a candidate it could not index")
	}
	// A plugin without eviction points.
	if msg := callErr(g, abi.FuncThresholdMet, 0, evictionReq(0)); !strings.Contains(msg, "LabelFilter does not implement threshold_met") {
		t.Errorf("non-eviction plugin: %q", msg)
	}
	if msg := callErr(g, abi.FuncEvictPods, 9, evictionReq(0)); !strings.Contains(msg, "plugin index out of range") {
		t.Errorf("bad plugin index: %q", msg)
	}
	if msg := callErr(g, abi.FuncEvictPods, 1, append(evictionReq(0), 0)); !strings.Contains(msg, "trailing bytes") {
		t.Errorf("trailing bytes: %q", msg)
	}
	// Observe to a module with no eviction policy, and before init.
	if msg := callErr(startedGuest(t), abi.FuncObserve, 0, observeReq(abi.ObserveReset)); !strings.Contains(msg, "no eviction plugin") {
		t.Errorf("observe without a policy: %q", msg)
	}
	if msg := callErr(New(reg), abi.FuncObserve, 0, observeReq(0)); !strings.Contains(msg, "before init") {
		t.Errorf("observe before init: %q", msg)
	}
	if msg := callErr(g, abi.FuncObserve, 0, observeReq(0, obsRec{maxSlot, obsWith("X", 0)})); !strings.Contains(msg, "slot out of range") {
		t.Errorf("hostile slot: %q", msg)
	}
}

func TestPodAndPodObsAreSafeOutOfRange(t *testing.T) {
	n := &plugin.EvictionNode{NodeInfo: &plugin.NodeInfo{NodeInfo: *nodeWithPods("n", 1, nil)}, Obs: &abi.NodeObservation{}}
	if n.Pod(0) == nil || n.Pod(1) != nil || n.PodObs(0) != nil {
		t.Errorf("Pod(0) %v Pod(1) %v PodObs(0) %v", n.Pod(0), n.Pod(1), n.PodObs(0))
	}
	var empty plugin.EvictionNode
	if empty.Pod(0) != nil || empty.PodObs(0) != nil {
		t.Error("a zero EvictionNode must answer nil")
	}
}
