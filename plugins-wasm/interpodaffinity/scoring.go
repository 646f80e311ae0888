package interpodaffinity

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// preScoreState is the score of each topology domain, per key of idx,
// and their sum per node slot; immutable once built.
type preScoreState struct {
	idx *topoIndex
	// vals[ki][d] is the score of domain d of key ki.
	vals [][]int64
	// bySlot[slot] is the score of the node in slot (idx.bySlot).
	bySlot []int64
}

// Clone implements plugin.StateData.
func (s *preScoreState) Clone() plugin.StateData { return s }

// scoreHit is an existing pod's term on node n that the incoming pod
// matches, adding w to n's domain under key ki.
type scoreHit struct {
	ki int
	w  int64
	n  *plugin.NodeInfo
}

// PreScore builds the domain scores over every node of the cluster: the
// incoming pod's preferred terms count matching pods (per pod group), and
// each existing pod with affinity (on the nodes with affinity pods) scores
// its domain by its own terms that the incoming pod matches. A domain
// score exists once some term adds to it, even 0, as upstream: none at
// all is Skip.
func (pl *InterPodAffinity) PreScore(state *plugin.CycleState, pod *abi.Pod, nodes []*plugin.NodeInfo) *plugin.Status {
	if len(nodes) == 0 {
		return statusSkip
	}
	// The preferred affinity terms (weight > 0), then the preferred
	// anti-affinity ones (weight < 0).
	var terms []term
	var err error
	if pod.PodAffinity != nil {
		if terms, err = compileWeighted(terms, pod, pod.PodAffinity.Preferred, 1); err != nil {
			return plugin.AsStatus(err)
		}
	}
	if pod.PodAntiAffinity != nil {
		if terms, err = compileWeighted(terms, pod, pod.PodAntiAffinity.Preferred, -1); err != nil {
			return plugin.AsStatus(err)
		}
	}
	hasConstraints := len(terms) > 0
	if pl.args.IgnorePreferredTermsOfExistingPods && !hasConstraints {
		return statusSkip
	}
	idx := &topoIndex{}
	for i := range terms {
		terms[i].key = idx.keyIndex(terms[i].topoKey)
	}
	beginMemos(&pl.scoreMemos, terms)
	nsLabels, _ := pl.h.NamespaceLabels(pod.Namespace)
	var hits []scoreHit
	for _, n := range pl.h.NodesWithAffinityPods() {
		if len(n.Node.Labels) == 0 {
			continue
		}
		for _, p := range n.PodsWithAffinity {
			hits = pl.scoreExisting(hits, idx, p, n, pod, nsLabels)
		}
	}
	if !hasConstraints && len(hits) == 0 {
		return statusSkip
	}
	all := pl.h.Nodes()
	idx.build(all, pl, state)
	s := &preScoreState{idx: idx, vals: make([][]int64, len(idx.keys))}
	for ki := range s.vals {
		s.vals[ki] = pl.counts.Make(state, int(idx.ndom[ki]))
	}
	any := len(hits) > 0
	for _, h := range hits {
		if d, _ := idx.domain(h.ki, h.n); d >= 0 {
			s.vals[h.ki][d] += h.w
		}
	}
	if hasConstraints {
		cache := newNSCache(pl.h)
		// Terms outside, nodes inside (see countNodes).
		for i := range terms {
			t := &terms[i]
			vals := s.vals[t.key]
			for _, n := range all {
				// Without labels a node is in no domain; without pods
				// it adds to none.
				if len(n.Node.Labels) == 0 || len(n.PodGroups) == 0 {
					continue
				}
				d, _ := idx.domain(t.key, n)
				if d < 0 {
					continue
				}
				if pods, matched := t.matchingPods(n, cache); matched {
					vals[d] += int64(t.weight) * pods
					any = true
				}
			}
		}
	}
	if !any {
		return statusSkip
	}
	if idx.bySlot && len(idx.dom) > 0 {
		s.bySlot = pl.counts.Make(state, len(idx.dom[0]))
		for ki, dom := range idx.dom {
			for slot, d := range dom {
				if d >= 0 {
					s.bySlot[slot] += s.vals[ki][d]
				}
			}
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// scoreExisting appends the terms of existing pod p (on node n) that the
// incoming pod matches: required affinity with hardPodAffinityWeight,
// preferred affinity with +weight, preferred anti-affinity with -weight.
func (pl *InterPodAffinity) scoreExisting(hits []scoreHit, idx *topoIndex, p *abi.Pod, n *plugin.NodeInfo, pod *abi.Pod, nsLabels abi.Labels) []scoreHit {
	if a := p.PodAffinity; a != nil {
		if w := pl.args.HardPodAffinityWeight; w > 0 {
			for i := range a.Required {
				hits = scoreExistingTerm(hits, idx, &a.Required[i], w, p, n, pod, nsLabels)
			}
		}
		for i := range a.Preferred {
			hits = scoreExistingTerm(hits, idx, &a.Preferred[i].Term, a.Preferred[i].Weight, p, n, pod, nsLabels)
		}
	}
	if a := p.PodAntiAffinity; a != nil {
		for i := range a.Preferred {
			hits = scoreExistingTerm(hits, idx, &a.Preferred[i].Term, -a.Preferred[i].Weight, p, n, pod, nsLabels)
		}
	}
	return hits
}

func scoreExistingTerm(hits []scoreHit, idx *topoIndex, t *abi.PodAffinityTerm, w int32, p *abi.Pod, n *plugin.NodeInfo, pod *abi.Pod, nsLabels abi.Labels) []scoreHit {
	if _, ok := n.Label(t.TopologyKey); ok && existingTermMatches(t, p, pod, nsLabels) {
		hits = append(hits, scoreHit{idx.keyIndex(t.TopologyKey), int64(w), n})
	}
	return hits
}

// Score sums the scores of the node's domains.
func (pl *InterPodAffinity) Score(state *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	s, ok := state.Read(preScoreKey).(*preScoreState)
	if !ok {
		return 0, statusNoScore
	}
	if int(node.Slot) < len(s.bySlot) {
		return s.bySlot[node.Slot], nil
	}
	var score int64
	for ki := range s.idx.keys {
		if d, _ := s.idx.domain(ki, node); d >= 0 {
			score += s.vals[ki][d]
		}
	}
	return score, nil
}

// NormalizeScore maps the scores linearly onto [0, MaxScore], the lowest
// to 0 and the highest to MaxScore; all equal gives all 0.
func (pl *InterPodAffinity) NormalizeScore(state *plugin.CycleState, _ *abi.Pod, scores []int64) *plugin.Status {
	_, ok := state.Read(preScoreKey).(*preScoreState)
	if !ok || len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0], scores[0]
	for _, v := range scores {
		lo, hi = min(lo, v), max(hi, v)
	}
	diff := hi - lo
	for i, v := range scores {
		var f float64
		if diff > 0 {
			// float as upstream, so truncation agrees to the unit
			f = float64(abi.MaxScore) * (float64(v-lo) / float64(diff))
		}
		scores[i] = int64(f)
	}
	return nil
}
