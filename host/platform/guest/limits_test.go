package guest_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// fixedReplies is a module whose instances answer each function with the
// whole reply (header included) the test set for it, returned as is: no
// copy, so a test can measure what the host allocates to read it. Its
// one plugin "P" implements every extension point of the host's ABI.
type fixedReplies struct {
	replies map[abi.Func][]byte
}

func (f *fixedReplies) NewInstance(context.Context) (guest.Instance, error) {
	return &fixedInstance{f: f, in: make([]byte, 1<<12)}, nil
}
func (f *fixedReplies) Close(context.Context) error { return nil }

type fixedInstance struct {
	f  *fixedReplies
	in []byte
}

func (i *fixedInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, abi.VersionMinor), nil
}

func (i *fixedInstance) Input(_ context.Context, n int) ([]byte, error) {
	if n > len(i.in) {
		i.in = make([]byte, n)
	}
	return i.in[:n], nil
}

// okOnly is the reply of a call that returns nothing.
var okOnly = []byte{abi.ReplyOK}

func (i *fixedInstance) Call(_ context.Context, fn abi.Func, _ uint32, _ int) ([]byte, error) {
	if r, ok := i.f.replies[fn]; ok {
		return r, nil
	}
	if fn == abi.FuncManifest {
		var e abi.Encoder
		e.U8(abi.ReplyOK)
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor, Plugins: []abi.PluginInfo{
			{Name: "P", Points: abi.PointPreFilter | abi.PointFilter | abi.PointPreScore | abi.PointScore | abi.PointPreemption |
				abi.PointEvictionThreshold | abi.PointEvictPods | abi.PointVPodPredicate | abi.PointVPodPriority}}})
		return e.B, nil
	}
	return okOnly, nil
}

func (i *fixedInstance) Close(context.Context) error { return nil }

func fixedClient(t testing.TB, f *fixedReplies) *guest.Client {
	t.Helper()
	m, err := guest.Load(context.Background(), f, guest.PoolConfig{Name: "fixed", PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// okBody is a whole OK reply with the body enc writes.
func okBody(enc func(e *abi.Encoder)) []byte {
	var e abi.Encoder
	e.U8(abi.ReplyOK)
	enc(&e)
	return e.B
}

// repeated is an OK reply of a uvarint count n followed by n copies of
// elem: a list of n well-formed elements, the cheapest way to make a
// decoder that trusts a count allocate n of its element type.
func repeated(prefix []byte, n int, elem []byte) []byte {
	var e abi.Encoder
	e.U8(abi.ReplyOK)
	e.B = append(e.B, prefix...)
	e.Uvarint(uint64(n))
	e.B = append(e.B, make([]byte, 0, n*len(elem))...)
	for range n {
		e.B = append(e.B, elem...)
	}
	return e.B
}

// hugeWire is the size of the forged replies: big enough that a decoder
// allocating per element what the count claims shows up plainly.
const hugeWire = 8 << 20

// allocated is the bytes the host allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hugeReply is a call whose reply is megabytes of well-formed elements in
// a list the request bounds to a handful.
type hugeReply struct {
	name  string
	fn    abi.Func
	reply []byte
	// vpod: register the policy p and a topology before the call.
	vpod bool
	call func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error
	want string // words of the error: the reply, the count and the limit
}

var (
	evictReq = &abi.EvictionRequest{Limit: 2, Nodes: []abi.EvictionNode{{Slot: 3, Candidates: []uint32{0, 1, 2}}}}
	topReq   = &abi.TopEvictionRequest{Limit: 2, Nodes: []abi.TopEvictionNode{{Slot: 3, TopN: 1, Candidates: []uint32{0, 1}}}}
)

func hugeReplies() []hugeReply {
	// Element counts that fill about hugeWire bytes.
	per := func(size int) int { return hugeWire / size }
	step := &abi.VPodStep{Policy: 9, Topology: 1, Free: []int32{1, 1}, Candidates: []uint32{0, 1}}
	thresholdElem := make([]byte, 22) // NOT_MET, zero values, empty strings, no condition, no candidates
	return []hugeReply{
		{name: "eviction threshold", fn: abi.FuncThresholdMet, reply: repeated(nil, per(22), thresholdElem),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.ThresholdMet(ctx, 0, evictReq)
				return err
			},
			want: "eviction threshold reply: 381300 results for 1 nodes sent"},
		{name: "eviction top pods", fn: abi.FuncTopEvictionPods, reply: repeated(nil, per(2), []byte{0, 0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.TopEvictionPods(ctx, 0, topReq)
				return err
			},
			want: "eviction top-pods reply: 4194304 answers for 1 nodes sent"},
		{name: "eviction top pods, one node's pods", fn: abi.FuncTopEvictionPods, reply: repeated([]byte{1}, per(1), []byte{0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.TopEvictionPods(ctx, 0, topReq)
				return err
			},
			want: "node slot 3: 8388608 pods for 1 allowed (topN)"},
		{name: "eviction evict pods", fn: abi.FuncEvictPods, reply: repeated(nil, per(2), []byte{0, 0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.EvictPods(ctx, 0, evictReq)
				return err
			},
			want: "eviction evict-pods reply: 4194304 answers for 1 nodes sent"},
		{name: "eviction evict pods, one node's pods", fn: abi.FuncEvictPods, reply: repeated([]byte{1}, per(4), []byte{0, 0, 0, 0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.EvictPods(ctx, 0, evictReq)
				return err
			},
			want: "node slot 3: 2097152 pods for 2 allowed (the limit per node)"},
		{name: "vpod policy", fn: abi.FuncVPodPolicy, reply: repeated(nil, per(1), []byte{0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.EnsureVPodPolicy(ctx, p)
				return err
			},
			want: "vpod policy reply: 8388608 answers for 2 policy entries"},
		{name: "vpod step verdicts", fn: abi.FuncVPodStep, reply: repeated(nil, per(1), []byte{0}), vpod: true,
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.VPodStep(ctx, p, step)
				return err
			},
			want: "vpod step reply: 8388608 verdicts for 2 candidates"},
		{name: "filter entries", fn: abi.FuncFilter, reply: repeated([]byte{1, 0, 0, 0, 1, 0}, per(2), []byte{2, 0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.Filter(ctx, 0, []uint32{0})
				return err
			},
			want: "filter reply: 4194304 entries for 1 nodes sent"},
		{name: "score", fn: abi.FuncScore, reply: okBody(func(e *abi.Encoder) { e.U32(hugeWire / 8); e.B = append(e.B, make([]byte, hugeWire)...) }),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.Score(ctx, 0, []uint32{0})
				return err
			},
			want: "score reply: 1048576 scores for 1 nodes sent"},
		{name: "prefilter reasons", fn: abi.FuncPreFilter, reply: repeated([]byte{byte(abi.Unschedulable)}, per(1), []byte{0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.PreFilter(ctx, 0)
				return err
			},
			want: "plugin status: 8388608 reasons for 64 allowed"},
		{name: "select victims", fn: abi.FuncSelectVictims, reply: repeated(nil, per(3), []byte{0, 0, 0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.SelectVictims(ctx, 0, []abi.NodeCandidates{{Slot: 1}})
				return err
			},
			want: "select victims reply: 2796202 answers for 1 nodes sent"},
		{name: "rank candidates", fn: abi.FuncRankCandidates, reply: repeated(nil, per(1), []byte{0}),
			call: func(ctx context.Context, c *guest.Client, p *abi.VPodPolicy) error {
				_, err := c.RankCandidates(ctx, 0, []abi.Candidate{{Slot: 1}})
				return err
			},
			want: "rank candidates reply: 8388608 indexes for 1 candidates sent"},
	}
}

// twoEntries is a vpod policy of one predicate and one priority, both
// served by plugin P.
func twoEntries() *abi.VPodPolicy {
	return &abi.VPodPolicy{ID: 9, Entries: []abi.VPodEntry{{Plugin: 0, Kind: abi.VPodPredicate}, {Plugin: 0, Kind: abi.VPodPriority}}}
}

// registerVPod registers p with c and sends it topology generation 1.
func registerVPod(t *testing.T, f *fixedReplies, c *guest.Client, p *abi.VPodPolicy) {
	t.Helper()
	f.replies[abi.FuncVPodPolicy] = okBody(func(e *abi.Encoder) { e.VPodPolicyReply(&abi.VPodPolicyReply{Invalid: make([]string, len(p.Entries))}) })
	if _, err := c.EnsureVPodPolicy(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := c.VPodTopology(context.Background(), &abi.VPodTopology{Generation: 1}); err != nil {
		t.Fatal(err)
	}
}

// TestHugeRepliesAreRefusedBeforeAllocating: a reply of megabytes whose
// lists claim far more elements than the request allows is refused as
// an invalid reply naming the reply, the count and the limit, the
// instance is lost, and reading it allocated a small fraction of its
// size (a decoder trusting the count allocates 10–24 host bytes per wire
// byte).
func TestHugeRepliesAreRefusedBeforeAllocating(t *testing.T) {
	ctx := context.Background()
	for _, tc := range hugeReplies() {
		t.Run(tc.name, func(t *testing.T) {
			f := &fixedReplies{replies: map[abi.Func][]byte{}}
			c := fixedClient(t, f)
			p := twoEntries()
			if tc.vpod {
				registerVPod(t, f, c, p)
			}
			f.replies[tc.fn] = tc.reply
			var err error
			n := allocated(func() { err = tc.call(ctx, c, p) })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want one saying %q", err, tc.want)
			}
			if !errors.Is(err, guest.ErrInvalidReply) || !errors.Is(err, guest.ErrInstanceBroken) || !c.Broken() {
				t.Errorf("err = %v (broken %v); want an invalid reply that loses the instance", err, c.Broken())
			}
			if limit := uint64(len(tc.reply) / 64); n > limit {
				t.Errorf("reading a %d-byte reply allocated %d bytes; want at most %d", len(tc.reply), n, limit)
			}
		})
	}
}

// TestHugeManifestIsRefusedBeforeAllocating: a manifest claiming millions
// of plugins fails Load, naming the count and the limit, without the host
// allocating for them.
func TestHugeManifestIsRefusedBeforeAllocating(t *testing.T) {
	var head abi.Encoder
	head.U16(abi.VersionMajor)
	head.U16(abi.VersionMinor)
	head.Uvarint(0)
	f := &fixedReplies{replies: map[abi.Func][]byte{abi.FuncManifest: repeated(head.B, hugeWire/2, []byte{0, 1})}}
	var err error
	n := allocated(func() { _, err = guest.Load(context.Background(), f, guest.PoolConfig{Name: "fixed", PoolSize: 1}) })
	if err == nil || !strings.Contains(err.Error(), "manifest: 4194304 plugins for 256 allowed") {
		t.Fatalf("err = %v; want the plugin count and its limit", err)
	}
	if limit := uint64(hugeWire / 64); n > limit {
		t.Errorf("reading a %d-byte manifest allocated %d bytes; want at most %d", hugeWire, n, limit)
	}
}

// FuzzEvictionReplyValidation feeds arbitrary reply bodies to the three
// eviction calls, seeded with replies at and past their limits: none may
// panic, and what is accepted names at most the pods the request allows,
// each among its node's candidates and once.
func FuzzEvictionReplyValidation(f *testing.F) {
	f.Add(uint8(0), okBody(func(e *abi.Encoder) {
		e.EvictPodsReply([]abi.NodeEvictPods{{Pods: []abi.EvictPod{{Pod: 0}, {Pod: 1}}}})
	})[1:])
	f.Add(uint8(0), okBody(func(e *abi.Encoder) {
		e.EvictPodsReply([]abi.NodeEvictPods{{Pods: []abi.EvictPod{{Pod: 0}, {Pod: 1}, {Pod: 2}}}})
	})[1:])
	f.Add(uint8(1), okBody(func(e *abi.Encoder) {
		e.ThresholdMetReply([]abi.ThresholdResult{{Met: abi.HardMet, Candidates: []uint32{0, 1, 2}}})
	})[1:])
	f.Add(uint8(1), okBody(func(e *abi.Encoder) {
		e.ThresholdMetReply([]abi.ThresholdResult{{Met: abi.HardMet, Candidates: []uint32{0, 1, 2, 3}}})
	})[1:])
	f.Add(uint8(2), okBody(func(e *abi.Encoder) { e.TopEvictionReply([]abi.TopEvictionPods{{Pods: []uint32{1}}}) })[1:])
	f.Add(uint8(2), okBody(func(e *abi.Encoder) { e.TopEvictionReply([]abi.TopEvictionPods{{Pods: []uint32{1, 0}}}) })[1:])
	f.Add(uint8(2), []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		fr := &fixedReplies{replies: map[abi.Func][]byte{}}
		c := fixedClient(t, fr)
		reply := append([]byte{abi.ReplyOK}, body...)
		offered := func(picked []uint32, cands []uint32, most int) {
			if len(picked) > most {
				t.Fatalf("accepted %d pods, limit %d", len(picked), most)
			}
			seen := map[uint32]bool{}
			for _, p := range picked {
				ok := false
				for _, c := range cands {
					ok = ok || c == p
				}
				if !ok || seen[p] {
					t.Fatalf("accepted pod %d (candidates %v, seen %v)", p, cands, seen)
				}
				seen[p] = true
			}
		}
		switch which % 3 {
		case 0:
			fr.replies[abi.FuncEvictPods] = reply
			if rs, err := c.EvictPods(ctx, 0, evictReq); err == nil {
				var picked []uint32
				for _, p := range rs[0].Pods {
					picked = append(picked, p.Pod)
				}
				offered(picked, evictReq.Nodes[0].Candidates, int(evictReq.Limit))
			}
		case 1:
			fr.replies[abi.FuncThresholdMet] = reply
			if rs, err := c.ThresholdMet(ctx, 0, evictReq); err == nil {
				offered(rs[0].Candidates, evictReq.Nodes[0].Candidates, len(evictReq.Nodes[0].Candidates))
			}
		case 2:
			fr.replies[abi.FuncTopEvictionPods] = reply
			if rs, err := c.TopEvictionPods(ctx, 0, topReq); err == nil {
				offered(rs[0].Pods, topReq.Nodes[0].Candidates, int(topReq.Nodes[0].TopN))
			}
		}
	})
}
