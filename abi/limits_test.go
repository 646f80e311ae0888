package abi

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// The requests the limit tests decode replies to.
var (
	// Two nodes: slot 7 offers five candidates, slot 8 one; a burst of 3.
	limitEvictReq = &EvictionRequest{Limit: 3, Nodes: []EvictionNode{{Slot: 7, Candidates: []uint32{0, 1, 2, 3, 4}}, {Slot: 8, Candidates: []uint32{0}}}}
	// Three nodes: slot 7 asks for topN 2 of five, slot 8 for any number of
	// five (the burst of 3 bounds it), slot 9 for any number of one.
	limitTopReq = &TopEvictionRequest{Limit: 3, Nodes: []TopEvictionNode{
		{Slot: 7, TopN: 2, Candidates: []uint32{0, 1, 2, 3, 4}},
		{Slot: 8, Candidates: []uint32{0, 1, 2, 3, 4}},
		{Slot: 9, Candidates: []uint32{0}}}}
	// Two nodes: slot 4 offers two pods, slot 5 none.
	limitVictimNodes = []NodeCandidates{{Slot: 4, Pods: make([]VictimCandidate, 2)}, {Slot: 5}}
)

// Limits of the vpod and scheduling requests of the limit tests.
const (
	limitVPodEntries    = 3
	limitVPodCandidates = 2
	limitNodes          = 3
	limitCandidates     = 3
)

// seq is 0, 1, …, n-1.
func seq(n int) []uint32 {
	xs := make([]uint32, n)
	for i := range xs {
		xs[i] = uint32(i)
	}
	return xs
}

// strs is n copies of s.
func strs(n int, s string) []string {
	ss := make([]string, n)
	for i := range ss {
		ss[i] = s
	}
	return ss
}

func effects(n int) []TaintEffect {
	es := make([]TaintEffect, n)
	for i := range es {
		es[i] = EffectNoSchedule
	}
	return es
}

func encoded(f func(e *Encoder)) []byte {
	var e Encoder
	f(&e)
	return e.B
}

// limitCase is one bounded list of one reply: build encodes a reply whose
// list holds k elements (all else well formed), limit is the most the
// request allows, want the error's words for limit+1.
type limitCase struct {
	// reply names the decoder, for the fuzz targets' seeds: threshold,
	// evict, top, vpodpolicy, vpodstep, filter, score, status, victims,
	// rank or manifest.
	reply string
	name  string
	build func(k int) []byte
	limit int
	dec   func(d *Decoder)
	want  string
}

func thresholdResults(firstCands, firstEffects, results int) []ThresholdResult {
	rs := make([]ThresholdResult, results)
	rs[0].Candidates = seq(firstCands)
	if firstEffects > 0 {
		rs[0].Condition = &EvictionCondition{Name: "c", Effects: effects(firstEffects)}
	}
	return rs
}

func evictAnswers(answers int, first []EvictPod, firstEffects int) []NodeEvictPods {
	rs := make([]NodeEvictPods, answers)
	rs[0].Pods = first
	if firstEffects > 0 {
		rs[0].Condition = &EvictionCondition{Name: "c", Effects: effects(firstEffects)}
	}
	return rs
}

func evictPods(n int) []EvictPod {
	ps := make([]EvictPod, n)
	for i := range ps {
		ps[i].Pod = uint32(i)
	}
	return ps
}

func limitCases() []limitCase {
	thresh := func(d *Decoder) { d.ThresholdMetReply(limitEvictReq) }
	evict := func(d *Decoder) { d.EvictPodsReply(limitEvictReq) }
	topPods := func(d *Decoder) { d.TopEvictionReply(limitTopReq) }
	topAnswer := func(node, k int) []TopEvictionPods {
		rs := make([]TopEvictionPods, len(limitTopReq.Nodes))
		rs[node].Pods = seq(k)
		return rs
	}
	step := func(d *Decoder) { d.VPodStepReply(&VPodStepReply{}, limitVPodEntries, limitVPodCandidates) }
	filter := func(d *Decoder) { d.FilterReply(&FilterReply{}, limitNodes) }
	victims := func(d *Decoder) { d.SelectVictimsReply(nil, limitVictimNodes) }
	manifest := func(plugins, keys int) []byte {
		m := Manifest{VersionMajor: 1, VersionMinor: VersionMinor, AnnotationKeys: strs(keys, "k")}
		for i := range plugins {
			m.Plugins = append(m.Plugins, PluginInfo{Name: "P" + Itoa(int64(i)), Points: PointFilter})
		}
		return encoded(func(e *Encoder) { e.Manifest(&m) })
	}
	return []limitCase{
		{"threshold", "threshold results", func(k int) []byte {
			return encoded(func(e *Encoder) { e.ThresholdMetReply(thresholdResults(0, 0, k)) })
		}, 2, thresh, "eviction threshold reply: 3 results for 2 nodes sent"},
		{"threshold", "threshold candidates", func(k int) []byte {
			return encoded(func(e *Encoder) { e.ThresholdMetReply(thresholdResults(k, 0, 2)) })
		}, 5, thresh, "eviction threshold reply: node slot 7: 6 candidates for 5 offered"},
		{"threshold", "threshold condition effects", func(k int) []byte {
			return encoded(func(e *Encoder) { e.ThresholdMetReply(thresholdResults(0, k, 2)) })
		}, MaxConditionEffects, thresh, "eviction threshold reply: node slot 7: 4 condition effects for 3 allowed (abi.MaxConditionEffects)"},
		{"evict", "evict pods answers", func(k int) []byte {
			return encoded(func(e *Encoder) { e.EvictPodsReply(evictAnswers(k, nil, 0)) })
		}, 2, evict, "eviction evict-pods reply: 3 answers for 2 nodes sent"},
		{"evict", "evict pods, the limit per node", func(k int) []byte {
			return encoded(func(e *Encoder) { e.EvictPodsReply(evictAnswers(2, evictPods(k), 0)) })
		}, 3, evict, "eviction evict-pods reply: node slot 7: 4 pods for 3 allowed (the limit per node)"},
		{"evict", "evict pods, the candidates offered", func(k int) []byte {
			return encoded(func(e *Encoder) {
				rs := evictAnswers(2, nil, 0)
				rs[1].Pods = evictPods(k)
				e.EvictPodsReply(rs)
			})
		}, 1, evict, "eviction evict-pods reply: node slot 8: 2 pods for 1 offered"},
		{"evict", "evict pods condition effects", func(k int) []byte {
			return encoded(func(e *Encoder) { e.EvictPodsReply(evictAnswers(2, nil, k)) })
		}, MaxConditionEffects, evict, "eviction evict-pods reply: node slot 7: 4 condition effects for 3 allowed"},
		{"top", "top pods answers", func(k int) []byte {
			return encoded(func(e *Encoder) { e.TopEvictionReply(make([]TopEvictionPods, k)) })
		}, 3, topPods, "eviction top-pods reply: 4 answers for 3 nodes sent"},
		{"top", "top pods, topN", func(k int) []byte {
			return encoded(func(e *Encoder) { e.TopEvictionReply(topAnswer(0, k)) })
		}, 2, topPods, "eviction top-pods reply: node slot 7: 3 pods for 2 allowed (topN)"},
		{"top", "top pods, the limit per node", func(k int) []byte {
			return encoded(func(e *Encoder) { e.TopEvictionReply(topAnswer(1, k)) })
		}, 3, topPods, "eviction top-pods reply: node slot 8: 4 pods for 3 allowed (the limit per node)"},
		{"top", "top pods, the candidates offered", func(k int) []byte {
			return encoded(func(e *Encoder) { e.TopEvictionReply(topAnswer(2, k)) })
		}, 1, topPods, "eviction top-pods reply: node slot 9: 2 pods for 1 offered"},
		{"vpodpolicy", "vpod policy answers", func(k int) []byte {
			return encoded(func(e *Encoder) { e.VPodPolicyReply(&VPodPolicyReply{Invalid: strs(k, "")}) })
		}, limitVPodEntries, func(d *Decoder) { d.VPodPolicyReply(&VPodPolicyReply{}, limitVPodEntries) },
			"vpod policy reply: 4 answers for 3 policy entries"},
		{"vpodstep", "vpod step verdicts", func(k int) []byte {
			return encoded(func(e *Encoder) { e.VPodStepReply(&VPodStepReply{Verdicts: make([]VPodVerdict, k)}) })
		}, limitVPodCandidates, step, "vpod step reply: 3 verdicts for 2 candidates"},
		{"vpodstep", "vpod step score lists", func(k int) []byte {
			return encoded(func(e *Encoder) { e.VPodStepReply(&VPodStepReply{Scores: make([]VPodScores, k)}) })
		}, limitVPodEntries, step, "vpod step reply: 4 score lists for 3 policy entries"},
		{"vpodstep", "vpod step scores", func(k int) []byte {
			return encoded(func(e *Encoder) {
				e.VPodStepReply(&VPodStepReply{Scores: []VPodScores{{Entry: 1, Scores: make([]int64, k)}}})
			})
		}, limitVPodCandidates, step, "vpod step reply: score list 0: 3 scores for 2 candidates"},
		{"vpodstep", "vpod step score errors", func(k int) []byte {
			return encoded(func(e *Encoder) { e.VPodStepReply(&VPodStepReply{Errors: make([]VPodScoreError, k)}) })
		}, limitVPodEntries * limitVPodCandidates, step, "vpod step reply: 7 score errors for 6 entry and candidate pairs"},
		{"filter", "filter verdicts", func(k int) []byte {
			return encoded(func(e *Encoder) { e.FilterReply(&FilterReply{Indexes: make([]uint16, k)}) })
		}, limitNodes, filter, "filter reply: 4 verdicts for 3 nodes sent"},
		{"filter", "filter entries", func(k int) []byte {
			return encoded(func(e *Encoder) {
				e.FilterReply(&FilterReply{Indexes: []uint16{1}, Entries: make([]FilterEntry, k)})
			})
		}, limitNodes, filter, "filter reply: 4 entries for 3 nodes sent"},
		{"filter", "filter reasons", func(k int) []byte {
			return encoded(func(e *Encoder) {
				e.FilterReply(&FilterReply{Indexes: []uint16{1}, Entries: []FilterEntry{{Code: Unschedulable, Reasons: strs(k, "r")}}})
			})
		}, MaxReasons, filter, "filter reply: entry 1: 65 reasons for 64 allowed (abi.MaxReasons)"},
		{"score", "scores", func(k int) []byte {
			return encoded(func(e *Encoder) {
				e.U32(uint32(k))
				for range k {
					e.U64(uint64(MaxScore))
				}
			})
		}, limitNodes, func(d *Decoder) { d.ScoreReply(nil, limitNodes) }, "score reply: 4 scores for 3 nodes sent"},
		{"status", "plugin status reasons", func(k int) []byte {
			return encoded(func(e *Encoder) { e.PluginStatus(&PluginStatus{Code: Unschedulable, Reasons: strs(k, "r")}) })
		}, MaxReasons, func(d *Decoder) { d.PluginStatus(&PluginStatus{}) }, "plugin status: 65 reasons for 64 allowed (abi.MaxReasons)"},
		{"status", "plugin status node names", func(k int) []byte {
			return encoded(func(e *Encoder) { e.PluginStatus(&PluginStatus{Narrowed: true, Nodes: strs(k, "")}) })
		}, MaxNarrowedNodes, func(d *Decoder) { d.PluginStatus(&PluginStatus{}) },
			"plugin status: 65536 node names for 65535 allowed (abi.MaxNarrowedNodes)"},
		{"victims", "select victims answers", func(k int) []byte {
			return encoded(func(e *Encoder) { e.SelectVictimsReply(make([]NodeVictims, k)) })
		}, len(limitVictimNodes), victims, "select victims reply: 3 answers for 2 nodes sent"},
		{"victims", "select victims reasons", func(k int) []byte {
			return encoded(func(e *Encoder) { e.SelectVictimsReply([]NodeVictims{{Reasons: strs(k, "r")}, {}}) })
		}, MaxReasons, victims, "select victims reply: node slot 4: 65 reasons for 64 allowed"},
		{"victims", "select victims victims", func(k int) []byte {
			return encoded(func(e *Encoder) { e.SelectVictimsReply([]NodeVictims{{Victims: make([]VictimChoice, k)}, {}}) })
		}, 2, victims, "select victims reply: node slot 4: 3 victims for 2 pods offered"},
		{"rank", "rank candidates", func(k int) []byte {
			return encoded(func(e *Encoder) {
				order := make([]int, k)
				e.RankCandidatesReply(order)
			})
		}, limitCandidates, func(d *Decoder) { d.RankCandidatesReply(nil, limitCandidates) },
			"rank candidates reply: 4 indexes for 3 candidates sent"},
		{"manifest", "manifest plugins", func(k int) []byte { return manifest(k, 0) }, MaxPlugins,
			func(d *Decoder) { d.Manifest(&Manifest{}) }, "manifest: 257 plugins for 256 allowed (abi.MaxPlugins)"},
		{"manifest", "manifest annotation keys", func(k int) []byte { return manifest(1, k) }, MaxAnnotationKeys,
			func(d *Decoder) { d.Manifest(&Manifest{}) }, "manifest: 257 annotation keys for 256 allowed (abi.MaxAnnotationKeys)"},
	}
}

// TestReplyCountsAtAndPastTheLimit: for every bounded list of every reply
// the host decodes, a reply with exactly as many elements as the request
// allows decodes, and one with one more is refused with a LimitError
// naming the reply, the count and the limit.
func TestReplyCountsAtAndPastTheLimit(t *testing.T) {
	for _, tc := range limitCases() {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(tc.build(tc.limit))
			tc.dec(d)
			if d.Err() != nil || d.Remaining() != 0 {
				t.Fatalf("at the limit (%d): %v, %d bytes left", tc.limit, d.Err(), d.Remaining())
			}
			d = NewDecoder(tc.build(tc.limit + 1))
			tc.dec(d)
			var le *LimitError
			if !errors.As(d.Err(), &le) || le.Count != uint64(tc.limit+1) || le.Limit != tc.limit || !strings.Contains(le.Error(), tc.want) {
				t.Fatalf("one past the limit: %v; want a LimitError saying %q", d.Err(), tc.want)
			}
		})
	}
}

// TestCountRefusesWhatTheInputCannotHold: whatever the limit, a count is
// refused when the bytes left cannot hold that many elements at their
// smallest encoding, before anything is allocated for them.
func TestCountRefusesWhatTheInputCannotHold(t *testing.T) {
	in := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // count 3, then 10 bytes
	if n := NewDecoder(in).Count(3); n != 3 {
		t.Errorf("Count(3) over 10 bytes: %d, want 3", n)
	}
	d := NewDecoder(in)
	if n := d.Count(4); n != 0 || d.Err() == nil || !strings.Contains(d.Err().Error(), "list count exceeds input") {
		t.Errorf("Count(4) over 10 bytes: %d, %v; want refused", n, d.Err())
	}
	d = NewDecoder(in)
	if n := d.countUpTo(4, top(1000, "r", "x", "y")); n != 0 || d.Err() == nil || !strings.Contains(d.Err().Error(), "list count exceeds input") {
		t.Errorf("countUpTo(4) within its limit over 10 bytes: %d, %v; want refused", n, d.Err())
	}
	d = NewDecoder([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	if n := d.countUpTo(1, top(1<<62, "r", "x", "y")); n != 0 || d.Err() == nil {
		t.Errorf("count 2^64-1: %d, %v; want refused", n, d.Err())
	}
}

func TestLimitErrorNamesHugeCounts(t *testing.T) {
	e := &LimitError{Reply: "r", Count: 1<<64 - 1, Items: "x", Limit: 5, Of: "y", Offset: 10}
	if got, want := e.Error(), "abi: r: 18446744073709551615 x for 5 y (at byte 10)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// hugeList is a reply of prefix, then a uvarint count n, then n copies of
// elem: n well-formed elements, the cheapest way to make a decoder that
// trusts a count allocate n of its element type.
func hugeList(prefix []byte, n int, elem []byte) []byte {
	b := make([]byte, 0, len(prefix)+10+n*len(elem))
	b = append(b, prefix...)
	var e Encoder
	e.Uvarint(uint64(n))
	b = append(b, e.B...)
	for range n {
		b = append(b, elem...)
	}
	return b
}

// hugeReplySize is the size of the forged replies of
// TestHugeRepliesAllocateLittle.
const hugeReplySize = 32 << 20

// TestHugeRepliesAllocateLittle: a reply of tens of megabytes whose list
// counts claim millions of well-formed elements, in every bounded list of
// every reply, is refused having allocated almost nothing: no more than
// 1/1024 of its size (a decoder that trusted the count allocated 10–24
// host bytes per wire byte, and more while growing a slice).
func TestHugeRepliesAllocateLittle(t *testing.T) {
	per := func(size int) int { return hugeReplySize / size }
	one := []byte{1}
	for _, tc := range []struct {
		name  string
		reply []byte
		dec   func(d *Decoder)
	}{
		{"threshold results", hugeList(nil, per(22), make([]byte, 22)), func(d *Decoder) { d.ThresholdMetReply(limitEvictReq) }},
		{"threshold candidates", hugeList(append(one, make([]byte, 21)...), per(1), []byte{0}), func(d *Decoder) { d.ThresholdMetReply(limitEvictReq) }},
		{"evict pods answers", hugeList(nil, per(2), []byte{0, 0}), func(d *Decoder) { d.EvictPodsReply(limitEvictReq) }},
		{"evict pods pods", hugeList(one, per(4), []byte{0, 0, 0, 0}), func(d *Decoder) { d.EvictPodsReply(limitEvictReq) }},
		{"top pods answers", hugeList(nil, per(2), []byte{0, 0}), func(d *Decoder) { d.TopEvictionReply(limitTopReq) }},
		{"top pods pods", hugeList(one, per(1), []byte{0}), func(d *Decoder) { d.TopEvictionReply(limitTopReq) }},
		{"vpod policy answers", hugeList(nil, per(1), []byte{0}), func(d *Decoder) { d.VPodPolicyReply(&VPodPolicyReply{}, limitVPodEntries) }},
		{"vpod step verdicts", hugeList(nil, per(1), []byte{0}), func(d *Decoder) {
			d.VPodStepReply(&VPodStepReply{}, limitVPodEntries, limitVPodCandidates)
		}},
		{"vpod step scores", hugeList([]byte{0, 1, 1}, per(1), []byte{0}), func(d *Decoder) {
			d.VPodStepReply(&VPodStepReply{}, limitVPodEntries, limitVPodCandidates)
		}},
		{"vpod step score errors", hugeList([]byte{0, 0}, per(3), []byte{0, 0, 0}), func(d *Decoder) {
			d.VPodStepReply(&VPodStepReply{}, limitVPodEntries, limitVPodCandidates)
		}},
		{"filter verdicts", append(encoded(func(e *Encoder) { e.U32(hugeReplySize / 2) }), make([]byte, hugeReplySize)...),
			func(d *Decoder) { d.FilterReply(&FilterReply{}, limitNodes) }},
		{"filter entries", hugeList([]byte{0, 0, 0, 0}, per(2), []byte{2, 0}), func(d *Decoder) { d.FilterReply(&FilterReply{}, limitNodes) }},
		{"filter reasons", hugeList([]byte{0, 0, 0, 0, 1, 2}, per(1), []byte{0}), func(d *Decoder) { d.FilterReply(&FilterReply{}, limitNodes) }},
		{"scores", append(encoded(func(e *Encoder) { e.U32(hugeReplySize / 8) }), make([]byte, hugeReplySize)...),
			func(d *Decoder) { d.ScoreReply(nil, limitNodes) }},
		{"plugin status reasons", hugeList([]byte{2}, per(1), []byte{0}), func(d *Decoder) { d.PluginStatus(&PluginStatus{}) }},
		{"plugin status node names", hugeList([]byte{0, 0, 1}, per(1), []byte{0}), func(d *Decoder) { d.PluginStatus(&PluginStatus{}) }},
		{"select victims answers", hugeList(nil, per(3), []byte{0, 0, 0}), func(d *Decoder) { d.SelectVictimsReply(nil, limitVictimNodes) }},
		{"select victims victims", hugeList([]byte{1, 0, 0}, per(2), []byte{0, 0}), func(d *Decoder) { d.SelectVictimsReply(nil, limitVictimNodes) }},
		{"rank candidates", hugeList(nil, per(1), []byte{0}), func(d *Decoder) { d.RankCandidatesReply(nil, limitCandidates) }},
		{"manifest plugins", hugeList([]byte{1, 0, 5, 0, 0}, per(2), []byte{0, 2}), func(d *Decoder) { d.Manifest(&Manifest{}) }},
		{"manifest annotation keys", hugeList([]byte{1, 0, 5, 0, 0, 0}, per(1), []byte{0}), func(d *Decoder) { d.Manifest(&Manifest{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := allocatedBy(func() {
				d := NewDecoder(tc.reply)
				tc.dec(d)
				err = d.Err()
			})
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("a %d-byte reply: %v; want a LimitError", len(tc.reply), err)
			}
			if limit := uint64(len(tc.reply) / 1024); n > limit {
				t.Errorf("decoding a %d-byte reply allocated %d bytes; want at most %d", len(tc.reply), n, limit)
			}
		})
	}
}

// allocatedBy is the bytes allocated while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
