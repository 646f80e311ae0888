package plugin

import "github.com/wasmsched/wasmsched/abi"

// Remembering a selector's answer per label set.
//
// Pods of one workload share their labels, and the mirror numbers the
// label sets of node pod groups (abi.PodGroup.LabelsID), so a plugin that
// matches one selector against every group of every node (topology
// spreading, inter-pod affinity) asks the same question once per node
// that runs the workload. A LabelMemo remembers the answers for one
// predicate: the plugin takes a MemoRef with Begin when it builds the
// predicate (in PreFilter or PreScore) and asks through it.

// LabelMemo holds one predicate's answers per label set. The zero value
// is ready; a plugin keeps its memos across cycles so their storage is
// reused.
type LabelMemo struct {
	gen uint32
	// marks[id] is gen<<1 | answer for the label set numbered id; an
	// entry of another generation is unknown.
	marks []uint32
}

// maxMemoGen is where generations start over (with the marks cleared).
const maxMemoGen = 1 << 30

// maxMemoID bounds the label set numbers remembered (the string table's
// own bound); larger ones are matched every time.
const maxMemoID = 1 << 16

// Begin forgets every answer and returns the reference that asks for a
// new predicate. References from earlier Begins stop answering (their
// Get reports unknown and their Put is ignored), so a state still holding
// one is never told another predicate's answers.
func (m *LabelMemo) Begin() MemoRef {
	m.gen++
	if m.gen == maxMemoGen {
		clear(m.marks)
		m.gen = 1
	}
	return MemoRef{m: m, gen: m.gen}
}

// MemoRef asks one LabelMemo for one predicate. The zero value remembers
// nothing.
type MemoRef struct {
	m   *LabelMemo
	gen uint32
}

// Get returns the remembered answer for the label set numbered id, and
// whether there is one.
//
//go:inline
func (r MemoRef) Get(id uint32) (answer, known bool) {
	if r.m == nil || id == 0 || r.m.gen != r.gen || int(id) >= len(r.m.marks) {
		return false, false
	}
	e := r.m.marks[id]
	return e&1 == 1, e>>1 == r.gen
}

// Put remembers the answer for the label set numbered id.
func (r MemoRef) Put(id uint32, answer bool) {
	if r.m == nil || id == 0 || id > maxMemoID || r.m.gen != r.gen {
		return
	}
	if int(id) >= len(r.m.marks) {
		n := 2 * len(r.m.marks)
		if n <= int(id) {
			n = int(id) + 1
		}
		if n > maxMemoID+1 {
			n = maxMemoID + 1
		}
		grown := make([]uint32, n)
		copy(grown, r.m.marks)
		r.m.marks = grown
	}
	e := r.gen << 1
	if answer {
		e |= 1
	}
	r.m.marks[id] = e
}

// MatchesGroup is Matches(g.Labels), remembered through r per label set.
// Plugins call it per pod group of every node, so the remembered answer
// is inlined into their loops and only a first match is a call.
//
//go:inline
func (s *Selector) MatchesGroup(g *abi.PodGroup, r MemoRef) bool {
	if v, ok := r.Get(g.LabelsID); ok {
		return v
	}
	return s.matchAndRemember(g, r)
}

// matchAndRemember is MatchesGroup's first answer for a label set.
//
//go:noinline
func (s *Selector) matchAndRemember(g *abi.PodGroup, r MemoRef) bool {
	v := s.Matches(g.Labels)
	r.Put(g.LabelsID, v)
	return v
}

// LabelMemos is a growing set of memos a plugin numbers itself (one per
// constraint or term). The zero value is empty.
type LabelMemos struct {
	memos []*LabelMemo
}

// Begin starts memo i on a new predicate (see LabelMemo.Begin).
func (ms *LabelMemos) Begin(i int) MemoRef {
	for len(ms.memos) <= i {
		ms.memos = append(ms.memos, new(LabelMemo))
	}
	return ms.memos[i].Begin()
}
