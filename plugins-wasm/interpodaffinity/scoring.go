package interpodaffinity

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// preScoreState is the score of each topology domain, per key; immutable
// once built.
type preScoreState struct {
	keys []string
	vals []map[string]int64
}

// Clone implements plugin.StateData.
func (s *preScoreState) Clone() plugin.StateData { return s }

// add adds d to domain (k, v), creating the entry even when d is 0, as
// upstream does (an entry, not its value, decides Skip).
func (s *preScoreState) add(k, v string, d int64) {
	ki := -1
	for i := range s.keys {
		if s.keys[i] == k {
			ki = i
			break
		}
	}
	if ki < 0 {
		ki = len(s.keys)
		s.keys = append(s.keys, k)
		s.vals = append(s.vals, map[string]int64{})
	}
	s.vals[ki][v] += d
}

// PreScore builds the domain scores over every node of the cluster: the
// incoming pod's preferred terms count matching pods (per pod group), and
// each existing pod with affinity scores its domain by its own terms that
// the incoming pod matches.
func (pl *InterPodAffinity) PreScore(state *plugin.CycleState, pod *abi.Pod, nodes []*plugin.NodeInfo) *plugin.Status {
	if len(nodes) == 0 {
		return statusSkip
	}
	var pref, prefAnti []term
	var err error
	if pod.PodAffinity != nil {
		if pref, err = compileWeighted(pod, pod.PodAffinity.Preferred); err != nil {
			return plugin.AsStatus(err)
		}
	}
	if pod.PodAntiAffinity != nil {
		if prefAnti, err = compileWeighted(pod, pod.PodAntiAffinity.Preferred); err != nil {
			return plugin.AsStatus(err)
		}
	}
	hasConstraints := len(pref)+len(prefAnti) > 0
	if pl.args.IgnorePreferredTermsOfExistingPods && !hasConstraints {
		return statusSkip
	}
	nsLabels, _ := pl.h.NamespaceLabels(pod.Namespace)
	cache := newNSCache(pl.h)
	s := &preScoreState{}
	for _, n := range pl.h.Nodes() {
		if len(n.Node.Labels) == 0 {
			continue
		}
		if hasConstraints {
			for gi := range n.PodGroups {
				g := &n.PodGroups[gi]
				scoreGroup(s, pref, g, n, 1, cache)
				scoreGroup(s, prefAnti, g, n, -1, cache)
			}
		}
		for _, p := range n.PodsWithAffinity {
			pl.scoreExisting(s, p, n, pod, nsLabels)
		}
	}
	if len(s.keys) == 0 {
		return statusSkip
	}
	state.Write(preScoreKey, s)
	return nil
}

// scoreGroup adds sign*weight per pod of group g for each term it matches.
func scoreGroup(s *preScoreState, ts []term, g *abi.PodGroup, n *plugin.NodeInfo, sign int64, c *nsCache) {
	for i := range ts {
		t := &ts[i]
		if v, ok := n.Label(t.topoKey); ok && t.matchesOther(g.Namespace, g.Labels, c) {
			s.add(t.topoKey, v, sign*int64(t.weight)*int64(g.Count))
		}
	}
}

// scoreExisting adds the terms of existing pod p (on node n) that the
// incoming pod matches: required affinity with hardPodAffinityWeight,
// preferred affinity with +weight, preferred anti-affinity with -weight.
func (pl *InterPodAffinity) scoreExisting(s *preScoreState, p *abi.Pod, n *plugin.NodeInfo, pod *abi.Pod, nsLabels abi.Labels) {
	if a := p.PodAffinity; a != nil {
		if w := pl.args.HardPodAffinityWeight; w > 0 {
			for i := range a.Required {
				scoreExistingTerm(s, &a.Required[i], w, p, n, pod, nsLabels)
			}
		}
		for i := range a.Preferred {
			scoreExistingTerm(s, &a.Preferred[i].Term, a.Preferred[i].Weight, p, n, pod, nsLabels)
		}
	}
	if a := p.PodAntiAffinity; a != nil {
		for i := range a.Preferred {
			scoreExistingTerm(s, &a.Preferred[i].Term, -a.Preferred[i].Weight, p, n, pod, nsLabels)
		}
	}
}

func scoreExistingTerm(s *preScoreState, t *abi.PodAffinityTerm, w int32, p *abi.Pod, n *plugin.NodeInfo, pod *abi.Pod, nsLabels abi.Labels) {
	if v, ok := n.Label(t.TopologyKey); ok && existingTermMatches(t, p, pod, nsLabels) {
		s.add(t.TopologyKey, v, int64(w))
	}
}

// Score sums the scores of the node's domains.
func (pl *InterPodAffinity) Score(state *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	s, ok := state.Read(preScoreKey).(*preScoreState)
	if !ok {
		return 0, statusNoScore
	}
	var score int64
	for ki, k := range s.keys {
		if v, ok := node.Label(k); ok {
			score += s.vals[ki][v]
		}
	}
	return score, nil
}

// NormalizeScore maps the scores linearly onto [0, MaxScore], the lowest
// to 0 and the highest to MaxScore; all equal gives all 0.
func (pl *InterPodAffinity) NormalizeScore(state *plugin.CycleState, _ *abi.Pod, scores []int64) *plugin.Status {
	s, ok := state.Read(preScoreKey).(*preScoreState)
	if !ok || len(s.keys) == 0 || len(scores) == 0 {
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
