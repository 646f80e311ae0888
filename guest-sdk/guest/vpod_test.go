package guest

import (
	"errors"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

var (
	errOdd    = plugin.NewStatus(abi.Unschedulable, "odd ordinal")
	errNoRoom = plugin.NewStatus(abi.UnschedulableAndUnresolvable, "no room")
	errSkip   = plugin.NewStatus(abi.Skip, "skip")
)

// vpodTest is a vpod predicate and priority whose behaviour its args
// select: the predicate refuses odd ordinals ("odd"), pods without free
// capacity ("full") or answers Skip ("skip"); the priority scores the
// ordinal ("ord"), 10 × free ("free") or fails ("boom"). Other args are
// refused. It records the pods each filter and scorer was given.
type vpodTest struct{ seen *[]string }

func (vpodTest) Name() string { return "VTest" }

func (v vpodTest) NewVPodFilter(args []byte) (plugin.VPodFilter, error) {
	mode := string(args)
	if mode != `"odd"` && mode != `"full"` && mode != `"skip"` {
		return nil, errors.New("want \"odd\", \"full\" or \"skip\"")
	}
	return func(s *plugin.VPodState, pods []int, verdicts []*plugin.Status) {
		*v.seen = append(*v.seen, "filter "+mode+" "+ints(pods))
		for i, p := range pods {
			switch {
			case mode == `"odd"` && s.Ordinal(p)%2 == 1:
				verdicts[i] = errOdd
			case mode == `"full"` && s.Free(p) <= 0:
				verdicts[i] = errNoRoom
			case mode == `"skip"`:
				verdicts[i] = errSkip
			}
		}
	}, nil
}

func (v vpodTest) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	mode := string(args)
	if mode != `"ord"` && mode != `"free"` && mode != `"boom"` {
		return nil, errors.New("") // an empty message still marks the entry invalid
	}
	return func(s *plugin.VPodState, pods []int, scores []int64) error {
		*v.seen = append(*v.seen, "score "+mode+" "+ints(pods))
		if mode == `"boom"` {
			return errors.New("boom")
		}
		for i, p := range pods {
			if mode == `"ord"` {
				scores[i] = int64(s.Ordinal(p))
			} else {
				scores[i] = -10 * int64(s.Free(p))
			}
		}
		return nil
	}, nil
}

func ints(xs []int) string {
	s := ""
	for _, x := range xs {
		s += string(rune('0' + x))
	}
	return s
}

// vpodGuest returns an initialised guest with the LabelFilter plugin
// (index 0, no vpod points) and VTest (index 1), and the log of what
// VTest was asked.
func vpodGuest(t *testing.T) (*Guest, *[]string) {
	t.Helper()
	seen := &[]string{}
	g := New(reg, plugin.Registration{Name: "VTest", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return vpodTest{seen}, nil }})
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g, abi.FuncInit, 0, e.B)
	return g, seen
}

// testTopology: pods with ordinals 0..4 (indexes 0..4) on nodes a, a,
// b, b, c in zones z1, z1, z2, z2, z2.
func testTopology(gen uint64) *abi.VPodTopology {
	return &abi.VPodTopology{Generation: gen, StatefulSet: "ss", Capacity: 5, Replicas: 5,
		Pods:  []abi.VPodPod{{Ordinal: 0, Node: 0}, {Ordinal: 1, Node: 0}, {Ordinal: 2, Node: 1}, {Ordinal: 3, Node: 1}, {Ordinal: 4, Node: 2}},
		Nodes: []abi.VPodNode{{Name: "a", Zone: 0}, {Name: "b", Zone: 1}, {Name: "c", Zone: 1}}, Zones: []string{"z1", "z2"}}
}

func entry(kind abi.VPodEntryKind, args string) abi.VPodEntry {
	e := abi.VPodEntry{Plugin: 1, Kind: kind}
	if args != "" {
		e.Args = []byte(args)
	}
	return e
}

func encPolicy(p *abi.VPodPolicy) []byte {
	var e abi.Encoder
	e.VPodPolicy(p)
	return e.B
}

func encTopology(t *abi.VPodTopology) []byte {
	var e abi.Encoder
	e.VPodTopology(t)
	return e.B
}

func encStep(s *abi.VPodStep) []byte {
	var e abi.Encoder
	e.VPodStep(s)
	return e.B
}

// maxTestEntries bounds the entries of the policies these tests register
// (runStep decodes replies to any of them).
const maxTestEntries = 16

func runStep(t *testing.T, g *Guest, s *abi.VPodStep) abi.VPodStepReply {
	t.Helper()
	body := call(t, g, abi.FuncVPodStep, 0, encStep(s))
	var r abi.VPodStepReply
	d := abi.NewDecoder(body)
	d.VPodStepReply(&r, maxTestEntries, len(s.Candidates))
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("step reply: %v, %d left", d.Err(), d.Remaining())
	}
	return r
}

func TestManifestDeclaresVPodPoints(t *testing.T) {
	g, _ := vpodGuest(t)
	var m abi.Manifest
	d := abi.NewDecoder(call(t, g, abi.FuncManifest, 0, nil))
	d.Manifest(&m)
	if m.VersionMinor != abi.VersionMinor || m.Plugins[1].Points != abi.PointVPodPredicate|abi.PointVPodPriority || m.Plugins[0].Points&abi.PointsVPod != 0 {
		t.Fatalf("manifest %+v", m)
	}
}

// TestVPodStepRunsPredicatesThenPriorities: predicates in policy order,
// each over the candidates still passing; the first refusal is the
// verdict; priorities score the candidates every predicate passed (the
// others 0); invalid entries refuse every pod ("invalid arguments") or
// fail every candidate's score; a failing scorer fails the candidates it
// was given.
func TestVPodStepRunsPredicatesThenPriorities(t *testing.T) {
	g, seen := vpodGuest(t)
	pol := &abi.VPodPolicy{ID: 7, Entries: []abi.VPodEntry{
		entry(abi.VPodPriority, `"ord"`),   // 0
		entry(abi.VPodPredicate, `"full"`), // 1
		entry(abi.VPodPredicate, `"odd"`),  // 2
		entry(abi.VPodPriority, `"free"`),  // 3
		entry(abi.VPodPriority, `"nope"`),  // 4: invalid
		entry(abi.VPodPriority, `"boom"`),  // 5
		entry(abi.VPodPredicate, ""),       // 6: invalid (no args)
	}}
	var pr abi.VPodPolicyReply
	d := abi.NewDecoder(call(t, g, abi.FuncVPodPolicy, 0, encPolicy(pol)))
	d.VPodPolicyReply(&pr, len(pol.Entries))
	if len(pr.Invalid) != 7 || pr.Invalid[0] != "" || pr.Invalid[4] != "invalid arguments" || !strings.Contains(pr.Invalid[6], "want") {
		t.Fatalf("policy reply %q", pr.Invalid)
	}
	call(t, g, abi.FuncVPodTopology, 0, encTopology(testTopology(3)))

	// Candidates 0..4 minus 2; free 1, 0, _, 2, 3: "full" refuses pod 1,
	// "odd" then sees 0, 3, 4 and refuses 3; the invalid predicate
	// refuses 0 and 4.
	step := &abi.VPodStep{Policy: 7, Topology: 3, Namespace: "ns", Name: "v", VReplicas: 2,
		Free: []int32{1, 0, 5, 2, 3}, Candidates: []uint32{0, 1, 3, 4}}
	*seen = nil
	r := runStep(t, g, step)
	want := abi.VPodStepReply{
		Verdicts: []abi.VPodVerdict{{Entry: 7, Code: abi.Unschedulable, Reason: "invalid arguments"}, {Entry: 2, Code: abi.UnschedulableAndUnresolvable, Reason: "no room"},
			{Entry: 3, Code: abi.Unschedulable, Reason: "odd ordinal"}, {Entry: 7, Code: abi.Unschedulable, Reason: "invalid arguments"}},
		Scores: []abi.VPodScores{{Entry: 0, Scores: []int64{0, 0, 0, 0}}, {Entry: 3, Scores: []int64{0, 0, 0, 0}},
			{Entry: 4, Scores: []int64{0, 0, 0, 0}}, {Entry: 5, Scores: []int64{0, 0, 0, 0}}},
		Errors: []abi.VPodScoreError{{Entry: 4, Candidate: 0, Message: "invalid arguments"}, {Entry: 4, Candidate: 1, Message: "invalid arguments"}, {Entry: 4, Candidate: 2, Message: "invalid arguments"}, {Entry: 4, Candidate: 3, Message: "invalid arguments"}},
	}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("reply\n got %+v\nwant %+v", r, want)
	}
	if w := []string{`filter "full" 0134`, `filter "odd" 034`}; !reflect.DeepEqual(*seen, w) {
		t.Fatalf("plugin calls %q, want %q", *seen, w)
	}

	// Without the invalid predicate: pods 0 and 4 pass and are scored.
	pol2 := &abi.VPodPolicy{ID: 7, Entries: pol.Entries[:6]}
	call(t, g, abi.FuncVPodPolicy, 0, encPolicy(pol2)) // replaces ID 7
	*seen = nil
	r = runStep(t, g, step)
	want.Verdicts[0], want.Verdicts[3] = abi.VPodVerdict{}, abi.VPodVerdict{}
	want.Scores[0].Scores = []int64{0, 0, 0, 4}
	want.Scores[1].Scores = []int64{-10, 0, 0, -30}
	want.Errors = append(want.Errors, abi.VPodScoreError{Entry: 5, Candidate: 0, Message: "boom"}, abi.VPodScoreError{Entry: 5, Candidate: 3, Message: "boom"})
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("reply\n got %+v\nwant %+v", r, want)
	}
	if w := []string{`filter "full" 0134`, `filter "odd" 034`, `score "ord" 04`, `score "free" 04`, `score "boom" 04`}; !reflect.DeepEqual(*seen, w) {
		t.Fatalf("plugin calls %q, want %q", *seen, w)
	}
}

// TestVPodStepSpreadAndSkip: the state carries the spreads with
// presence, and a Skip (no predicate verdict) becomes an Error.
func TestVPodStepSpreadAndSkip(t *testing.T) {
	g, _ := vpodGuest(t)
	call(t, g, abi.FuncVPodPolicy, 0, encPolicy(&abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{entry(abi.VPodPredicate, `"skip"`)}}))
	call(t, g, abi.FuncVPodTopology, 0, encTopology(testTopology(1)))
	r := runStep(t, g, &abi.VPodStep{Policy: 1, Topology: 1, Free: make([]int32, 5), Candidates: []uint32{2}})
	if v := r.Verdicts[0]; v.Entry != 1 || v.Code != abi.Error || !strings.Contains(v.Reason, "Skip") {
		t.Fatalf("verdict %+v", v)
	}
	s, err := plugin.NewVPodState(testTopology(1), &abi.VPodStep{Free: make([]int32, 5),
		PodSpread: []abi.VPodCount{{Index: 1, VReplicas: 0}, {Index: 3, VReplicas: 2}}, NodeSpread: []abi.VPodCount{{Index: 0, VReplicas: 0}, {Index: 1, VReplicas: 2}}, ZoneSpread: []abi.VPodCount{{Index: 0, VReplicas: 0}, {Index: 1, VReplicas: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	type sp struct {
		v  int32
		ok bool
	}
	var pods []sp
	for p := 0; p < 5; p++ {
		v, ok := s.PodSpread(p)
		pods = append(pods, sp{v, ok})
	}
	if !reflect.DeepEqual(pods, []sp{{0, false}, {0, true}, {0, false}, {2, true}, {0, false}}) {
		t.Errorf("pod spread %v", pods)
	}
	if v, ok := s.NodeSpread(2); v != 0 || ok {
		t.Errorf("node c spread %d %v", v, ok)
	}
	if s.PodZone(4) != 1 || s.ZoneName(s.PodZone(4)) != "z2" || s.NodeName(s.PodNode(2)) != "b" {
		t.Errorf("pod 4 zone %d, pod 2 node %q", s.PodZone(4), s.NodeName(s.PodNode(2)))
	}
	if v, ok := s.PodSpread(99); v != 0 || ok || s.Ordinal(-1) != 0 || s.ZoneName(7) != "" {
		t.Error("out-of-range reads are not zero values")
	}
}

// TestVPodCallsRefuseBadInput: every mistake is an error reply, never a
// panic, and a refused step leaves the guest usable.
func TestVPodCallsRefuseBadInput(t *testing.T) {
	good := &abi.VPodStep{Policy: 1, Topology: 2, Free: make([]int32, 5), Candidates: []uint32{0}}
	withStep := func(f func(s *abi.VPodStep)) []byte {
		s := *good
		f(&s)
		return encStep(&s)
	}
	g, _ := vpodGuest(t)
	for _, tc := range []struct {
		name string
		fn   abi.Func
		in   []byte
		want string
	}{
		{"step before any policy", abi.FuncVPodStep, encStep(good), "policy 1 is not registered"},
		{"policy naming a plugin out of range", abi.FuncVPodPolicy, encPolicy(&abi.VPodPolicy{ID: 9, Entries: []abi.VPodEntry{{Plugin: 5, Kind: abi.VPodPredicate}}}), "out of range"},
		{"policy naming a non-vpod plugin", abi.FuncVPodPolicy, encPolicy(&abi.VPodPolicy{ID: 9, Entries: []abi.VPodEntry{{Plugin: 0, Kind: abi.VPodPriority}}}), "not a vpod priority"},
		{"policy with trailing bytes", abi.FuncVPodPolicy, append(encPolicy(&abi.VPodPolicy{ID: 9}), 0), "trailing"},
		{"topology truncated", abi.FuncVPodTopology, encTopology(testTopology(2))[:5], ""},
	} {
		if got := callErr(g, tc.fn, 0, tc.in); got == "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: reply %q, want an error with %q", tc.name, got, tc.want)
		}
	}
	call(t, g, abi.FuncVPodPolicy, 0, encPolicy(&abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{entry(abi.VPodPredicate, `"odd"`)}}))
	if got := callErr(g, abi.FuncVPodStep, 0, encStep(good)); !strings.Contains(got, "topology generation 2") {
		t.Errorf("step before any topology: %q", got)
	}
	call(t, g, abi.FuncVPodTopology, 0, encTopology(testTopology(2)))
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown policy", withStep(func(s *abi.VPodStep) { s.Policy = 9 }), "policy 9 is not registered"},
		{"policy refused earlier", withStep(func(s *abi.VPodStep) { s.Policy = 9 }), "not registered"},
		{"other topology", withStep(func(s *abi.VPodStep) { s.Topology = 1 }), "topology generation 1"},
		{"candidate out of range", withStep(func(s *abi.VPodStep) { s.Candidates = []uint32{5} }), "candidate pod index 5"},
		{"free per pod", withStep(func(s *abi.VPodStep) { s.Free = s.Free[:4] }), "4 free capacities for 5"},
		{"pod spread out of range", withStep(func(s *abi.VPodStep) { s.PodSpread = []abi.VPodCount{{Index: 5, VReplicas: 1}} }), "pod spread index 5"},
		{"zone spread out of range", withStep(func(s *abi.VPodStep) { s.ZoneSpread = []abi.VPodCount{{Index: 2, VReplicas: 1}} }), "zone spread index 2"},
		{"node spread repeated", withStep(func(s *abi.VPodStep) {
			s.NodeSpread = []abi.VPodCount{{Index: 1, VReplicas: 1}, {Index: 1, VReplicas: 1}}
		}), "not strictly ascending"},
		{"step truncated", encStep(good)[:3], ""},
		{"step with trailing bytes", append(encStep(good), 1), "trailing"},
	} {
		if got := callErr(g, abi.FuncVPodStep, 0, tc.in); got == "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: reply %q, want an error with %q", tc.name, got, tc.want)
		}
	}
	if r := runStep(t, g, good); len(r.Verdicts) != 1 || r.Verdicts[0].Entry != 0 {
		t.Fatalf("after refusals: %+v", r)
	}
	// A malformed topology drops the one the guest had.
	callErr(g, abi.FuncVPodTopology, 0, []byte{1})
	if got := callErr(g, abi.FuncVPodStep, 0, encStep(good)); !strings.Contains(got, "topology generation 2") {
		t.Errorf("step after a malformed topology: %q", got)
	}

	// Before init, and in a module without vpod plugins.
	g2 := New(reg)
	if got := callErr(g2, abi.FuncVPodTopology, 0, encTopology(testTopology(1))); !strings.Contains(got, "before init") {
		t.Errorf("before init: %q", got)
	}
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g2, abi.FuncInit, 0, e.B)
	if got := callErr(g2, abi.FuncVPodTopology, 0, encTopology(testTopology(1))); !strings.Contains(got, "without vpod plugins") {
		t.Errorf("without vpod plugins: %q", got)
	}
}

// FuzzVPodCalls: whatever bytes arrive, the guest answers (OK or an
// error reply) and never panics.
func FuzzVPodCalls(f *testing.F) {
	f.Add(uint8(0), encPolicy(&abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{entry(abi.VPodPredicate, `"odd"`), entry(abi.VPodPriority, `"ord"`)}}))
	f.Add(uint8(1), encTopology(testTopology(2)))
	f.Add(uint8(2), encStep(&abi.VPodStep{Policy: 1, Topology: 2, Free: make([]int32, 5), PodSpread: []abi.VPodCount{{Index: 1, VReplicas: 2}}, Candidates: []uint32{0, 4}}))
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		g, _ := vpodGuest(t)
		call(t, g, abi.FuncVPodPolicy, 0, encPolicy(&abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{entry(abi.VPodPredicate, `"full"`), entry(abi.VPodPriority, `"free"`)}}))
		call(t, g, abi.FuncVPodTopology, 0, encTopology(testTopology(2)))
		fn := []abi.Func{abi.FuncVPodPolicy, abi.FuncVPodTopology, abi.FuncVPodStep}[which%3]
		copy(g.Input(len(b)), b)
		if r := g.Call(fn, 0, len(b)); len(r) == 0 {
			t.Fatal("empty reply")
		}
		// A valid step still runs afterwards, or names what is missing.
		in := encStep(&abi.VPodStep{Policy: 1, Topology: 2, Free: make([]int32, 5), Candidates: []uint32{1}})
		copy(g.Input(len(in)), in)
		g.Call(abi.FuncVPodStep, 0, len(in))
	})
}

// TestVPodStepRandomNeverPanics drives random steps against a random
// topology: a reply for each, well formed.
func TestVPodStepRandomNeverPanics(t *testing.T) {
	g, _ := vpodGuest(t)
	call(t, g, abi.FuncVPodPolicy, 0, encPolicy(&abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{entry(abi.VPodPredicate, `"odd"`), entry(abi.VPodPriority, `"free"`)}}))
	call(t, g, abi.FuncVPodTopology, 0, encTopology(testTopology(2)))
	rng := rand.New(rand.NewSource(3))
	for n := 0; n < 2000; n++ {
		s := &abi.VPodStep{Policy: uint32(rng.Intn(2)), Topology: uint64(1 + rng.Intn(2)), Free: make([]int32, 4+rng.Intn(2))}
		for i := rng.Intn(7); i > 0; i-- {
			s.Candidates = append(s.Candidates, uint32(rng.Intn(6)))
		}
		for i := rng.Intn(3); i > 0; i-- {
			s.PodSpread = append(s.PodSpread, abi.VPodCount{Index: uint32(rng.Intn(6)), VReplicas: int32(rng.Intn(3))})
		}
		in := encStep(s)
		copy(g.Input(len(in)), in)
		reply := g.Call(abi.FuncVPodStep, 0, len(in))
		if reply[0] == abi.ReplyOK {
			var r abi.VPodStepReply
			d := abi.NewDecoder(reply[1:])
			d.VPodStepReply(&r, 2, len(s.Candidates))
			if d.Err() != nil || len(r.Verdicts) != len(s.Candidates) || len(r.Scores) != 1 || len(r.Scores[0].Scores) != len(s.Candidates) {
				t.Fatalf("step %+v: reply %+v (%v)", s, r, d.Err())
			}
		}
	}
}
