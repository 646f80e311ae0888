package abi

// Decoding preemption requests into reused storage (guest side). A
// select_victims request over 500 nodes carries 2000 victim candidates;
// decoded the plain way, each costs a string per UID, namespace and name,
// a label list and a guard, and the allocations made TinyGo's collector
// walk the whole mirror over and over. VictimScratch keeps flat arrays the
// requests decode into, and with an aliasing Decoder the strings point
// into the input: nothing is allocated once the arrays have grown.

// VictimScratch is the storage SelectVictimsRequestInto and
// RankCandidatesRequestInto decode into. What they return is valid until
// the next call with the same scratch (and, with an aliasing decoder,
// while the input is unchanged).
type VictimScratch struct {
	nodes  []NodeCandidates
	cands  []Candidate
	pods   []VictimCandidate
	spans  []victimSpan // per pod: where its labels and guard are
	labels Labels
	guards []int32
	starts []int // per node or candidate: its first pod
}

// victimSpan locates a pod's labels in VictimScratch.labels and its guard
// in guards (-1: none), filled in once the arrays stop growing.
type victimSpan struct {
	labelsAt, labelsLen int
	guard               int
}

func (s *VictimScratch) reset() {
	s.pods, s.spans, s.labels, s.guards, s.starts = s.pods[:0], s.spans[:0], s.labels[:0], s.guards[:0], s.starts[:0]
}

// victims reads a list<VictimCandidate> onto the scratch's arrays; it
// reads the fields VictimCandidate does, in the same order.
func (d *Decoder) victims(s *VictimScratch) {
	s.starts = append(s.starts, len(s.pods))
	n := d.Count(7)
	for i := 0; i < n && d.err == nil; i++ {
		s.pods = append(s.pods, VictimCandidate{})
		v := &s.pods[len(s.pods)-1]
		v.UID = d.String()
		v.Namespace = d.String()
		v.Name = d.String()
		sp := victimSpan{labelsAt: len(s.labels), guard: -1}
		sp.labelsLen = d.Count(2)
		for k := 0; k < sp.labelsLen && d.err == nil; k++ {
			s.labels = append(s.labels, Label{Key: d.String(), Value: d.String()})
		}
		v.Priority = d.Int32()
		v.StartTime = d.Varint()
		if d.Optional() {
			sp.guard = len(s.guards)
			s.guards = append(s.guards, d.Int32())
		}
		s.spans = append(s.spans, sp)
	}
}

// link points every pod at its labels and guard, now that no array grows
// any more.
func (s *VictimScratch) link() {
	for i := range s.pods {
		sp := &s.spans[i]
		v := &s.pods[i]
		v.Labels = nil
		if sp.labelsLen > 0 {
			v.Labels = s.labels[sp.labelsAt : sp.labelsAt+sp.labelsLen : sp.labelsAt+sp.labelsLen]
		}
		v.DisruptionGuard = nil
		if sp.guard >= 0 {
			v.DisruptionGuard = &s.guards[sp.guard]
		}
	}
}

// podsOf returns the pods of the i-th list read, nil if it had none.
func (s *VictimScratch) podsOf(i int) []VictimCandidate {
	end := len(s.pods)
	if i+1 < len(s.starts) {
		end = s.starts[i+1]
	}
	if s.starts[i] == end {
		return nil
	}
	return s.pods[s.starts[i]:end:end]
}

// SelectVictimsRequestInto reads the input of FuncSelectVictims as
// SelectVictimsRequest does, into s's storage. On a decoding error it
// returns nil (see Err).
func (d *Decoder) SelectVictimsRequestInto(s *VictimScratch) []NodeCandidates {
	s.reset()
	n := d.Count(5)
	s.nodes = s.nodes[:0]
	for i := 0; i < n && d.err == nil; i++ {
		s.nodes = append(s.nodes, NodeCandidates{Slot: d.U32()})
		d.victims(s)
	}
	if d.err != nil || n == 0 {
		return nil
	}
	s.link()
	for i := range s.nodes {
		s.nodes[i].Pods = s.podsOf(i)
	}
	return s.nodes
}

// RankCandidatesRequestInto reads the input of FuncRankCandidates as
// RankCandidatesRequest does, into s's storage. On a decoding error it
// returns nil (see Err).
func (d *Decoder) RankCandidatesRequestInto(s *VictimScratch) []Candidate {
	s.reset()
	n := d.Count(6)
	s.cands = s.cands[:0]
	for i := 0; i < n && d.err == nil; i++ {
		s.cands = append(s.cands, Candidate{Slot: d.U32(), NumPDBViolations: d.Int32()})
		d.victims(s)
	}
	if d.err != nil || n == 0 {
		return nil
	}
	s.link()
	for i := range s.cands {
		s.cands[i].Victims = s.podsOf(i)
	}
	return s.cands
}
