// Package interpodaffinity is kube-scheduler's InterPodAffinity plugin as
// a wasmsched policy: it filters nodes by the incoming pod's required pod
// affinity and anti-affinity and by the required anti-affinity of pods
// already running, and scores nodes by preferred (anti-)affinity of both
// (plus existing pods' required affinity, weighted by
// hardPodAffinityWeight).
package interpodaffinity

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's.
const Name = "InterPodAffinity"

// Rejection reasons, kube-scheduler's wording.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

var (
	// Affinity cannot be fixed by preemption (removing pods never adds
	// a matching one); anti-affinity can.
	statusAffinity = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
	statusAnti     = plugin.NewStatus(abi.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
	statusExisting = plugin.NewStatus(abi.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
	statusSkip     = plugin.NewStatus(abi.Skip)
	statusNoPre    = plugin.NewStatus(abi.Error, "InterPodAffinity: no PreFilter state")
	statusNoScore  = plugin.NewStatus(abi.Error, "InterPodAffinity: no PreScore state")
)

var (
	preFilterKey = plugin.NewStateKey()
	preScoreKey  = plugin.NewStateKey()
)

// InterPodAffinity implements pod affinity and anti-affinity.
type InterPodAffinity struct {
	args Args
	h    plugin.Handle
	// topo caches the domains of topology keys per node slot across
	// cycles (see keyCache).
	topo []*keyCache
	// Per-cycle tables (node slots, domains), recycled across cycles.
	doms   plugin.Scratch[int32]
	counts plugin.Scratch[int64]
	// Term answers per pod group label set: PreFilter's required terms
	// and PreScore's preferred ones, one memo per term (beginMemos).
	filterMemos, scoreMemos plugin.LabelMemos
}

// beginMemos starts a memo of ms for each term of the lists, in order.
func beginMemos(ms *plugin.LabelMemos, lists ...[]term) {
	i := 0
	for _, ts := range lists {
		for j := range ts {
			ts[j].memo = ms.Begin(i)
			i++
		}
	}
}

var (
	_ plugin.PreFilterPlugin     = (*InterPodAffinity)(nil)
	_ plugin.PreFilterExtensions = (*InterPodAffinity)(nil)
	_ plugin.FilterPlugin        = (*InterPodAffinity)(nil)
	_ plugin.PreScorePlugin      = (*InterPodAffinity)(nil)
	_ plugin.ScorePlugin         = (*InterPodAffinity)(nil)
	_ plugin.ScoreNormalizer     = (*InterPodAffinity)(nil)
)

// Registration lets a module register the plugin with guest.Register. The
// plugin reads the pods on every node, so it wants them mirrored.
var Registration = plugin.Registration{Name: Name, New: New, WantsAffinityPods: true}

// New builds the plugin from InterPodAffinityArgs (see ParseArgs).
func New(args *abi.Value, h plugin.Handle) (plugin.Plugin, error) {
	a, err := ParseArgs(args)
	if err != nil {
		return nil, err
	}
	return &InterPodAffinity{args: a, h: h}, nil
}

// Name implements plugin.Plugin.
func (*InterPodAffinity) Name() string { return Name }

// preFilterState is what Filter needs: the incoming pod's compiled
// required terms, the topology index of the cycle, and three
// per-topology-pair counts, which AddPod and RemovePod keep up to date in
// what-if views.
type preFilterState struct {
	pod      *abi.Pod
	nsLabels abi.Labels // labels of the incoming pod's namespace
	ns       *nsCache
	// idx numbers the domains of every topology key the counts use;
	// shared (immutable) by clones.
	idx *topoIndex
	// affinity and anti are the pod's required terms; term.key indexes
	// idx.keys.
	affinity, anti []term
	// selfMatch: the pod matches all its own affinity terms.
	selfMatch bool
	// existing counts, per pair, the existing pods' required
	// anti-affinity terms that match the incoming pod; affinityCounts
	// the pods matching all the pod's affinity terms (once per term's
	// pair); antiCounts the pods matching each anti-affinity term.
	existing, affinityCounts, antiCounts topoCounts
}

// Clone implements plugin.StateData: the counts are copied, the compiled
// terms and the topology index (immutable) shared.
func (s *preFilterState) Clone() plugin.StateData {
	c := *s
	c.existing = s.existing.clone()
	c.affinityCounts = s.affinityCounts.clone()
	c.antiCounts = s.antiCounts.clone()
	return &c
}

// existingHit is an existing pod's required anti-affinity term, on node n,
// that matches the incoming pod.
type existingHit struct {
	ki int
	n  *plugin.NodeInfo
}

// PreFilter compiles the pod's required terms and counts, over every node
// of the cluster, the pods that match them and the existing pods (on the
// nodes with affinity pods) whose required anti-affinity the pod would
// violate. Nothing to check: Skip, found without visiting every node.
func (pl *InterPodAffinity) PreFilter(state *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	s := &preFilterState{pod: pod, ns: newNSCache(pl.h), idx: &topoIndex{}}
	var err error
	if pod.PodAffinity != nil {
		if s.affinity, err = compileTerms(pod, pod.PodAffinity.Required); err != nil {
			return plugin.AsStatus(err)
		}
	}
	if pod.PodAntiAffinity != nil {
		if s.anti, err = compileTerms(pod, pod.PodAntiAffinity.Required); err != nil {
			return plugin.AsStatus(err)
		}
	}
	for i := range s.affinity {
		s.affinity[i].key = s.idx.keyIndex(s.affinity[i].topoKey)
	}
	for i := range s.anti {
		s.anti[i].key = s.idx.keyIndex(s.anti[i].topoKey)
	}
	beginMemos(&pl.filterMemos, s.affinity, s.anti)
	s.nsLabels, _ = pl.h.NamespaceLabels(pod.Namespace)
	var hits []existingHit
	for _, n := range pl.h.NodesWithAffinityPods() {
		for _, p := range n.PodsWithRequiredAntiAffinity {
			if p.PodAntiAffinity == nil {
				continue
			}
			for i := range p.PodAntiAffinity.Required {
				t := &p.PodAntiAffinity.Required[i]
				if _, ok := n.Label(t.TopologyKey); !ok || !existingTermMatches(t, p, pod, s.nsLabels) {
					continue
				}
				hits = append(hits, existingHit{s.idx.keyIndex(t.TopologyKey), n})
			}
		}
	}
	incoming := len(s.affinity)+len(s.anti) > 0
	if !incoming && len(hits) == 0 {
		return statusSkip
	}
	nodes := pl.h.Nodes()
	s.idx.build(nodes, pl, state)
	s.existing = newTopoCounts(s.idx, pl, state)
	s.affinityCounts = newTopoCounts(s.idx, pl, state)
	s.antiCounts = newTopoCounts(s.idx, pl, state)
	for _, h := range hits {
		d, v := s.idx.domain(h.ki, h.n)
		s.existing.add(h.ki, d, s.idx.keys[h.ki], v, 1)
	}
	if incoming {
		s.countNodes(nodes)
	}
	self := single(pod)
	s.selfMatch = matchesAll(s.affinity, &self, s.ns)
	s.ns.frozen = true
	state.Write(preFilterKey, s)
	return nil
}

// updateExisting adds d for each required anti-affinity term of p (on
// node n) that matches the incoming pod.
func (s *preFilterState) updateExisting(p *abi.Pod, n *plugin.NodeInfo, delta int64) {
	if p.PodAntiAffinity == nil {
		return
	}
	for i := range p.PodAntiAffinity.Required {
		t := &p.PodAntiAffinity.Required[i]
		ki, d, v := s.idx.find(t.TopologyKey), int32(unknown), ""
		if ki >= 0 {
			d, v = s.idx.domain(ki, n)
		} else if lv, ok := n.Label(t.TopologyKey); ok {
			v = lv
		} else {
			d = noKey
		}
		if d == noKey || !existingTermMatches(t, p, s.pod, s.nsLabels) {
			continue
		}
		s.existing.add(ki, d, t.TopologyKey, v, delta)
	}
}

// countNodes adds the pods of every node to the counts of the incoming
// pod's terms they match (PreFilter). Terms outside, nodes inside: in
// Wasm every loop entry costs an interruption check, so the per-node
// body runs without an inner loop over terms. A node without pods
// counts nowhere: no call for it.
func (s *preFilterState) countNodes(nodes []*plugin.NodeInfo) {
	if len(s.affinity) > 0 {
		for _, n := range nodes {
			if len(n.PodGroups) == 0 {
				continue
			}
			var pods int64
			for gi := range n.PodGroups {
				if g := &n.PodGroups[gi]; matchesAll(s.affinity, g, s.ns) {
					pods += int64(g.Count)
				}
			}
			s.addAffinity(n, pods)
		}
	}
	for i := range s.anti {
		t := &s.anti[i]
		for _, n := range nodes {
			if len(n.PodGroups) == 0 {
				continue
			}
			d, v := s.idx.domain(t.key, n)
			if d == noKey {
				continue
			}
			if pods, _ := t.matchingPods(n, s.ns); pods != 0 {
				s.antiCounts.add(t.key, d, t.topoKey, v, pods)
			}
		}
	}
}

// updateIncoming adds delta (1 or -1) pods like p, on node n, to the
// counts of the incoming pod's terms p matches (AddPod, RemovePod).
func (s *preFilterState) updateIncoming(p *abi.Pod, n *plugin.NodeInfo, delta int64) {
	g := single(p)
	if matchesAll(s.affinity, &g, s.ns) {
		s.addAffinity(n, delta)
	}
	for i := range s.anti {
		t := &s.anti[i]
		if d, v := s.idx.domain(t.key, n); d != noKey && t.matchesOther(&g, s.ns) {
			s.antiCounts.add(t.key, d, t.topoKey, v, delta)
		}
	}
}

// addAffinity adds pods that match all the incoming pod's affinity
// terms, on node n, to each term's domain of n.
func (s *preFilterState) addAffinity(n *plugin.NodeInfo, pods int64) {
	if pods == 0 {
		return
	}
	for i := range s.affinity {
		t := &s.affinity[i]
		if d, v := s.idx.domain(t.key, n); d != noKey {
			s.affinityCounts.add(t.key, d, t.topoKey, v, pods)
		}
	}
}

// AddPod implements plugin.PreFilterExtensions.
func (pl *InterPodAffinity) AddPod(state *plugin.CycleState, _, podToAdd *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	return updateWithPod(state, podToAdd, node, 1)
}

// RemovePod implements plugin.PreFilterExtensions.
func (pl *InterPodAffinity) RemovePod(state *plugin.CycleState, _, podToRemove *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	return updateWithPod(state, podToRemove, node, -1)
}

func updateWithPod(state *plugin.CycleState, p *abi.Pod, node *plugin.NodeInfo, d int64) *plugin.Status {
	s, ok := state.Read(preFilterKey).(*preFilterState)
	if !ok {
		return nil // PreFilter skipped: Filter will not run either
	}
	s.updateExisting(p, node, d)
	s.updateIncoming(p, node, d)
	return nil
}

// Filter checks, in upstream's order, the pod's required affinity, its
// required anti-affinity, then the existing pods' anti-affinity.
func (pl *InterPodAffinity) Filter(state *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	s, ok := state.Read(preFilterKey).(*preFilterState)
	if !ok {
		return statusNoPre
	}
	if !s.satisfiesAffinity(node) {
		return statusAffinity
	}
	if !s.satisfiesAnti(node) {
		return statusAnti
	}
	if !s.satisfiesExisting(node) {
		return statusExisting
	}
	return nil
}

// satisfiesAffinity: the node has every term's topology key, and each
// term's domain holds a matching pod — unless no pod anywhere matches and
// the pod matches its own terms (the first pod of a group).
func (s *preFilterState) satisfiesAffinity(node *plugin.NodeInfo) bool {
	podsExist := true
	for i := range s.affinity {
		t := &s.affinity[i]
		d, v := s.idx.domain(t.key, node)
		if d == noKey {
			return false
		}
		if s.affinityCounts.get(t.key, d, t.topoKey, v) <= 0 {
			podsExist = false
		}
	}
	return podsExist || (s.selfMatch && s.affinityCounts.Len() == 0)
}

// satisfiesAnti: no anti-affinity term's domain of the node holds a
// matching pod.
func (s *preFilterState) satisfiesAnti(node *plugin.NodeInfo) bool {
	for i := range s.anti {
		t := &s.anti[i]
		if d, v := s.idx.domain(t.key, node); s.antiCounts.get(t.key, d, t.topoKey, v) > 0 {
			return false
		}
	}
	return true
}

// satisfiesExisting: no domain of the node holds an existing pod whose
// required anti-affinity the incoming pod matches.
func (s *preFilterState) satisfiesExisting(node *plugin.NodeInfo) bool {
	if s.existing.nonzero == 0 {
		return true
	}
	for ki, k := range s.idx.keys {
		if d, v := s.idx.domain(ki, node); s.existing.get(ki, d, k, v) > 0 {
			return false
		}
	}
	if s.existing.extra == nil {
		return true
	}
	// Keys only pods added in what-ifs brought (rare).
	for k, m := range s.existing.extra {
		if s.idx.find(k) >= 0 {
			continue
		}
		if v, ok := node.Label(k); ok && m[v] > 0 {
			return false
		}
	}
	return true
}
