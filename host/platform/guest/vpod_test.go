package guest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// vpodFake is a module with a vpod predicate (plugin 0), a vpod priority
// (plugin 1) and a Filter plugin (2), built for minor version minor. Its
// instances answer FuncVPodPolicy and FuncVPodStep with the bodies the
// test sets and count the calls.
type vpodFake struct {
	minor            uint16
	policyBody       []byte
	stepBody         []byte
	calls            map[abi.Func]int
	lastTopologySize int
}

func (f *vpodFake) NewInstance(context.Context) (guest.Instance, error) {
	return &vpodFakeInstance{f: f, in: make([]byte, 1<<12)}, nil
}
func (f *vpodFake) Close(context.Context) error { return nil }

type vpodFakeInstance struct {
	f  *vpodFake
	in []byte
}

func (i *vpodFakeInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, i.f.minor), nil
}

func (i *vpodFakeInstance) Input(_ context.Context, n int) ([]byte, error) {
	if n > len(i.in) {
		i.in = make([]byte, n)
	}
	return i.in[:n], nil
}

func (i *vpodFakeInstance) Call(_ context.Context, fn abi.Func, _ uint32, n int) ([]byte, error) {
	i.f.calls[fn]++
	e := abi.Encoder{}
	e.U8(abi.ReplyOK)
	switch fn {
	case abi.FuncManifest:
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: i.f.minor, Plugins: []abi.PluginInfo{
			{Name: "Pred", Points: abi.PointVPodPredicate}, {Name: "Prio", Points: abi.PointVPodPriority}, {Name: "F", Points: abi.PointFilter}}})
	case abi.FuncVPodPolicy:
		e.B = append(e.B, i.f.policyBody...)
	case abi.FuncVPodTopology:
		i.f.lastTopologySize = n
	case abi.FuncVPodStep:
		e.B = append(e.B, i.f.stepBody...)
	}
	return e.B, nil
}

func (i *vpodFakeInstance) Close(context.Context) error { return nil }

func vpodClient(t *testing.T, minor uint16) (*vpodFake, *guest.Client, error) {
	t.Helper()
	f := &vpodFake{minor: minor, calls: map[abi.Func]int{}}
	m, err := guest.Load(context.Background(), f, guest.PoolConfig{Name: "vpodfake", PoolSize: 1})
	if err != nil {
		return f, nil, err
	}
	c, err := m.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return f, c, nil
}

func policyBody(invalid ...string) []byte {
	var e abi.Encoder
	e.VPodPolicyReply(&abi.VPodPolicyReply{Invalid: invalid})
	return e.B
}

func stepBody(r abi.VPodStepReply) []byte {
	var e abi.Encoder
	e.VPodStepReply(&r)
	return e.B
}

func TestVPodPointsNeedMinor3(t *testing.T) {
	if _, _, err := vpodClient(t, 2); err == nil || !strings.Contains(err.Error(), "vpod points (VPodPredicate), which ABI v1.3 introduced") {
		t.Fatalf("a v1.2 module with vpod points: %v", err)
	}
	if _, _, err := vpodClient(t, 3); err != nil {
		t.Fatalf("a v1.3 module refused: %v", err)
	}
}

// testPolicy: predicate (entry 0), priority (1), predicate (2), priority (3).
func testPolicy() *abi.VPodPolicy {
	return &abi.VPodPolicy{ID: 4, Entries: []abi.VPodEntry{
		{Plugin: 0, Kind: abi.VPodPredicate}, {Plugin: 1, Kind: abi.VPodPriority, Args: []byte(`"{}"`)},
		{Plugin: 0, Kind: abi.VPodPredicate}, {Plugin: 1, Kind: abi.VPodPriority}}}
}

func TestEnsureVPodPolicyAndTopologyAreSentOnce(t *testing.T) {
	ctx := context.Background()
	f, c, err := vpodClient(t, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := testPolicy()
	f.policyBody = policyBody("", "bad\x1b[2J args", "", "")
	r, err := c.EnsureVPodPolicy(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Invalid[1] != "bad args" {
		t.Errorf("invalid message %q not cleaned", r.Invalid[1])
	}
	if r2, err := c.EnsureVPodPolicy(ctx, p); err != nil || r2 != r || f.calls[abi.FuncVPodPolicy] != 1 {
		t.Fatalf("second ensure: %v, %d calls", err, f.calls[abi.FuncVPodPolicy])
	}
	// A new policy under the same ID is sent again.
	p2 := testPolicy()
	if _, err := c.EnsureVPodPolicy(ctx, p2); err != nil || f.calls[abi.FuncVPodPolicy] != 2 {
		t.Fatalf("new policy: %v, %d calls", err, f.calls[abi.FuncVPodPolicy])
	}
	// Entries the module cannot serve are refused before any call.
	for _, bad := range []*abi.VPodPolicy{
		{ID: 5, Entries: []abi.VPodEntry{{Plugin: 3, Kind: abi.VPodPredicate}}},
		{ID: 5, Entries: []abi.VPodEntry{{Plugin: 0, Kind: abi.VPodPriority}}},
		{ID: 5, Entries: []abi.VPodEntry{{Plugin: 2, Kind: abi.VPodPredicate}}},
		{ID: 5, Entries: []abi.VPodEntry{{Plugin: 0, Kind: 7}}},
	} {
		if _, err := c.EnsureVPodPolicy(ctx, bad); err == nil {
			t.Errorf("policy %+v accepted", bad.Entries)
		}
	}
	if f.calls[abi.FuncVPodPolicy] != 2 {
		t.Errorf("refused policies reached the guest: %d calls", f.calls[abi.FuncVPodPolicy])
	}

	topo := &abi.VPodTopology{Generation: 3, Pods: []abi.VPodPod{{Ordinal: 0}}, Nodes: []abi.VPodNode{{Name: "n"}}, Zones: []string{"z"}}
	for k := 0; k < 2; k++ {
		if err := c.VPodTopology(ctx, topo); err != nil {
			t.Fatal(err)
		}
	}
	if f.calls[abi.FuncVPodTopology] != 1 || f.lastTopologySize == 0 {
		t.Fatalf("topology sent %d times", f.calls[abi.FuncVPodTopology])
	}
	topo2 := *topo
	topo2.Generation = 4
	if err := c.VPodTopology(ctx, &topo2); err != nil || f.calls[abi.FuncVPodTopology] != 2 {
		t.Fatalf("new generation: %v, sent %d times", err, f.calls[abi.FuncVPodTopology])
	}

	// A policy reply with the wrong count is invalid and loses the
	// instance.
	f.policyBody = policyBody("")
	_, err = c.EnsureVPodPolicy(ctx, testPolicy())
	if !errors.Is(err, guest.ErrInvalidReply) || !errors.Is(err, guest.ErrInstanceBroken) || !c.Broken() {
		t.Fatalf("short policy reply: %v (broken %v)", err, c.Broken())
	}
}

func TestVPodStepChecksItsPreconditions(t *testing.T) {
	ctx := context.Background()
	f, c, err := vpodClient(t, 3)
	if err != nil {
		t.Fatal(err)
	}
	p := testPolicy()
	s := &abi.VPodStep{Policy: 4, Topology: 1, Free: []int32{1}, Candidates: []uint32{0}}
	if _, err := c.VPodStep(ctx, p, s); err == nil || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("unregistered policy: %v", err)
	}
	f.policyBody = policyBody("", "", "", "")
	if _, err := c.EnsureVPodPolicy(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.VPodStep(ctx, p, s); err == nil || !strings.Contains(err.Error(), "topology generation 1") {
		t.Fatalf("topology not sent: %v", err)
	}
	if err := c.VPodTopology(ctx, &abi.VPodTopology{Generation: 1}); err != nil {
		t.Fatal(err)
	}
	s.Policy = 5
	if _, err := c.VPodStep(ctx, p, s); err == nil || !strings.Contains(err.Error(), "names policy 5") {
		t.Fatalf("step of another policy: %v", err)
	}
	if f.calls[abi.FuncVPodStep] != 0 {
		t.Fatalf("a refused step reached the guest")
	}
}

// TestVPodStepReplyIsValidated: every rule of the reply, one broken at a
// time; counts that do not match the request lose the instance.
func TestVPodStepReplyIsValidated(t *testing.T) {
	ctx := context.Background()
	good := func() abi.VPodStepReply {
		return abi.VPodStepReply{
			Verdicts: []abi.VPodVerdict{{}, {Entry: 3, Code: abi.UnschedulableAndUnresolvable, Reason: "no\nroom"}},
			Scores:   []abi.VPodScores{{Entry: 1, Scores: []int64{-5, 0}}, {Entry: 3, Scores: []int64{1 << 40, 0}}},
			Errors:   []abi.VPodScoreError{{Entry: 3, Candidate: 1, Message: "invalid arguments"}},
		}
	}
	for _, tc := range []struct {
		name   string
		change func(r *abi.VPodStepReply)
		want   string // "" = accepted
		broken bool
	}{
		{"good", func(*abi.VPodStepReply) {}, "", false},
		{"no errors, Error code", func(r *abi.VPodStepReply) { r.Errors = nil; r.Verdicts[0] = abi.VPodVerdict{Entry: 1, Code: abi.Error} }, "", false},
		{"one verdict short", func(r *abi.VPodStepReply) { r.Verdicts = r.Verdicts[:1] }, "1 verdicts for 2 candidates", true},
		{"verdict names a priority", func(r *abi.VPodStepReply) { r.Verdicts[1].Entry = 2 }, "entry 1, which is no predicate", false},
		{"verdict entry out of range", func(r *abi.VPodStepReply) { r.Verdicts[1].Entry = 5 }, "entry 4, which is no predicate", false},
		{"verdict code Skip", func(r *abi.VPodStepReply) { r.Verdicts[1].Code = abi.Skip }, "status code 5 is not one a vpod predicate may return", false},
		{"verdict code Success", func(r *abi.VPodStepReply) { r.Verdicts[1].Code = abi.Success }, "status code 0", false},
		{"a priority without scores", func(r *abi.VPodStepReply) { r.Scores = r.Scores[:1] }, "no scores for priority entry 3", true},
		{"priorities out of order", func(r *abi.VPodStepReply) { r.Scores[0], r.Scores[1] = r.Scores[1], r.Scores[0] }, "want each priority entry once, in policy order", true},
		{"a priority twice", func(r *abi.VPodStepReply) { r.Scores = append(r.Scores, r.Scores[1]) }, "scores 2 name entry 3", true},
		{"scores for a predicate", func(r *abi.VPodStepReply) { r.Scores[0].Entry = 0 }, "scores 0 name entry 0", true},
		{"one score short", func(r *abi.VPodStepReply) { r.Scores[1].Scores = r.Scores[1].Scores[:1] }, "1 scores for 2 candidates", true},
		{"error for a predicate", func(r *abi.VPodStepReply) { r.Errors[0].Entry = 2 }, "names entry 2, which is no priority", false},
		{"error for a candidate out of range", func(r *abi.VPodStepReply) { r.Errors[0].Candidate = 2 }, "names candidate 2 of 2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c, err := vpodClient(t, 3)
			if err != nil {
				t.Fatal(err)
			}
			p := testPolicy()
			f.policyBody = policyBody("", "", "", "")
			if _, err := c.EnsureVPodPolicy(ctx, p); err != nil {
				t.Fatal(err)
			}
			if err := c.VPodTopology(ctx, &abi.VPodTopology{Generation: 1}); err != nil {
				t.Fatal(err)
			}
			r := good()
			tc.change(&r)
			f.stepBody = stepBody(r)
			got, err := c.VPodStep(ctx, p, &abi.VPodStep{Policy: 4, Topology: 1, Free: []int32{1, 2}, Candidates: []uint32{0, 1}})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(got.Verdicts) != 2 || (got.Verdicts[1].Entry == 3 && got.Verdicts[1].Reason != "no room") {
					t.Fatalf("reply %+v (reason not cleaned?)", got)
				}
				return
			}
			var ce *guest.CallError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, guest.ErrInvalidReply) || !errors.As(err, &ce) {
				t.Fatalf("err = %v, want an ErrInvalidReply CallError with %q", err, tc.want)
			}
			if c.Broken() != tc.broken || errors.Is(err, guest.ErrInstanceBroken) != tc.broken {
				t.Fatalf("broken = %v, want %v", c.Broken(), tc.broken)
			}
		})
	}
}

// FuzzVPodStepReply: arbitrary reply bodies never panic the client, and
// what it accepts keeps every rule.
func FuzzVPodStepReply(f *testing.F) {
	f.Add(stepBody(abi.VPodStepReply{Verdicts: []abi.VPodVerdict{{}, {Entry: 1, Code: abi.Unschedulable}},
		Scores: []abi.VPodScores{{Entry: 1, Scores: []int64{1, 2}}, {Entry: 3, Scores: []int64{3, 4}}}}))
	f.Add(stepBody(abi.VPodStepReply{Verdicts: []abi.VPodVerdict{{Entry: 2, Code: 9}}}))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, body []byte) {
		fk, c, err := vpodClient(t, 3)
		if err != nil {
			t.Fatal(err)
		}
		p := testPolicy()
		fk.policyBody = policyBody("", "", "", "")
		if _, err := c.EnsureVPodPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := c.VPodTopology(ctx, &abi.VPodTopology{Generation: 1}); err != nil {
			t.Fatal(err)
		}
		fk.stepBody = body
		r, err := c.VPodStep(ctx, p, &abi.VPodStep{Policy: 4, Topology: 1, Free: []int32{1, 2}, Candidates: []uint32{0, 1}})
		if err != nil {
			return
		}
		if len(r.Verdicts) != 2 || len(r.Scores) != 2 || r.Scores[0].Entry != 1 || r.Scores[1].Entry != 3 {
			t.Fatalf("accepted %+v", r)
		}
		for _, v := range r.Verdicts {
			if v.Entry != 0 && (v.Entry != 1 && v.Entry != 3 || v.Code != abi.Unschedulable && v.Code != abi.UnschedulableAndUnresolvable && v.Code != abi.Error) {
				t.Fatalf("accepted verdict %+v", v)
			}
		}
		for _, x := range r.Errors {
			if (x.Entry != 1 && x.Entry != 3) || x.Candidate > 1 || guest.Text(x.Message) != x.Message {
				t.Fatalf("accepted error %+v", x)
			}
		}
	})
}
