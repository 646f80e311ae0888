package podtopologyspread

import (
	"math"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// ignoredScore marks a node missing a topology key; NormalizeScore turns
// it into 0. Real raw scores are never negative (maxSkew >= 1).
const ignoredScore = -1

// preScoreState holds, per ScheduleAnyway constraint, the matching pod
// count of each domain present among the feasible nodes and the
// constraint's weight, and the raw score of every feasible node by slot
// (Score only indexes it). Hostname constraints are counted per node.
// Nothing in it changes after PreScore, so Clone shares it.
type preScoreState struct {
	cons       []constraint
	requireAll bool
	isHostname []bool
	vals       [][]string // vals[i][d]: topology value of domain d
	counts     [][]int64
	weights    []float64
	slots      slotTable
	nodeDom    [][]int32 // [i][slot]: domain of a feasible node, or -1
	scores     []int64   // [slot]: raw score of the slot's owner
}

// Clone implements plugin.StateData.
func (s *preScoreState) Clone() plugin.StateData { return s }

// topologyNormalizingWeight is log(size+2): counts in topologies with many
// domains weigh more, so small topologies are not watered down.
func topologyNormalizingWeight(size int) float64 { return math.Log(float64(size + 2)) }

// PreScore finds the domains of the feasible nodes, counts matching pods
// in them over all nodes and computes the feasible nodes' raw scores.
// Pods without ScheduleAnyway constraints skip Score.
func (pl *PodTopologySpread) PreScore(state *plugin.CycleState, pod *abi.Pod, nodes []*plugin.NodeInfo) *plugin.Status {
	all := pl.h.Nodes()
	if len(all) == 0 {
		return statusSkip
	}
	cons, err := pl.constraintsFor(pod, abi.ScheduleAnyway)
	if err != nil {
		return plugin.AsStatus(err)
	}
	if len(cons) == 0 {
		return statusSkip
	}
	// Only non-system-default constraints require nodes to have every
	// topology key, so nodes without a zone still get hostname spreading.
	buf := pl.slotBuf(state)
	s := &preScoreState{
		cons:       cons,
		requireAll: len(pod.TopologySpread) > 0 || !pl.systemDefaulted,
		isHostname: make([]bool, len(cons)),
		vals:       make([][]string, len(cons)),
		counts:     make([][]int64, len(cons)),
		weights:    make([]float64, len(cons)),
		slots:      buf.table(nodes),
	}
	nslots := len(s.slots.owners)
	s.nodeDom = buf.doms(len(cons), nslots)
	domains := make([]domainIndex, len(cons))
	zonal := false // some constraint counts over all nodes
	for i := range cons {
		s.isHostname[i] = cons[i].key == LabelHostname
		zonal = zonal || !s.isHostname[i]
		if s.isHostname[i] {
			continue // hostname constraints have no domains
		}
		for j := range s.nodeDom[i] {
			s.nodeDom[i][j] = -1
		}
	}
	scored := 0
	for _, ni := range nodes {
		if s.requireAll && !hasAllKeys(ni, cons) {
			continue
		}
		scored++
		if !zonal {
			continue // hostname constraints have no domains to number
		}
		owner := s.slots.slot(ni) >= 0
		for i := range cons {
			if s.isHostname[i] {
				continue
			}
			v, vid, _ := cons[i].value(ni)
			d, ok := domains[i].find(v, vid)
			if !ok {
				d = domains[i].add(v, vid)
				s.counts[i] = append(s.counts[i], 0)
			}
			if owner {
				s.nodeDom[i][ni.Slot] = d
			}
		}
	}
	for i := range cons {
		s.vals[i] = domains[i].vals
		size := len(s.counts[i])
		if s.isHostname[i] {
			size = scored
		}
		s.weights[i] = topologyNormalizingWeight(size)
	}
	if zonal {
		// Constraints outside, nodes inside (as PreFilter); hostname
		// constraints count each scored node itself, below.
		for i := range cons {
			if s.isHostname[i] {
				continue
			}
			c := &cons[i]
			nodeDom, counts := s.nodeDom[i], s.counts[i]
			for _, ni := range all {
				if s.requireAll && !hasAllKeys(ni, cons) {
					continue
				}
				if !c.includes(pod, &ni.Node) {
					continue
				}
				sl := int(ni.Slot)
				d := int32(-1)
				if sl < nslots && s.slots.owners[sl] == ni && nodeDom[sl] >= 0 {
					d = nodeDom[sl]
				} else {
					v, vid, _ := c.value(ni)
					dd, ok := domains[i].find(v, vid)
					if !ok {
						continue // no feasible node in this domain
					}
					d = dd
				}
				counts[d] += int64(countMatching(&ni.NodeInfo, c, pod))
			}
		}
	}
	// Every owner of the table is one of nodes and gets its score below;
	// other slots are never read (slotTable.slot), so no fill.
	s.scores = pl.scores.Make(state, nslots)
	s.scoreNodes(pod, nodes)
	state.Write(preScoreKey, s)
	return nil
}

// domain is the domain index of a node that has the key with value v,
// or -1.
func (s *preScoreState) domain(i int, ni *plugin.NodeInfo, v string) int32 {
	if sl := s.slots.slot(ni); sl >= 0 && s.nodeDom[i][sl] >= 0 {
		return s.nodeDom[i][sl]
	}
	return lookupDomain(s.vals[i], v)
}

// scoreNodes is rawScore for every node of the slot table, into scores.
// With one constraint, the usual case, the per-node body has no inner
// loop and no call (in Wasm each costs an interruption check); it
// computes what rawScore does, in the same order, so to the bit.
func (s *preScoreState) scoreNodes(pod *abi.Pod, nodes []*plugin.NodeInfo) {
	if len(s.cons) != 1 {
		for _, ni := range nodes {
			if sl := s.slots.slot(ni); sl >= 0 {
				s.scores[sl] = s.rawScore(pod, ni)
			}
		}
		return
	}
	c := &s.cons[0]
	hostname, w, skew := s.isHostname[0], s.weights[0], float64(c.maxSkew-1)
	nodeDom, counts := s.nodeDom[0], s.counts[0]
	for _, ni := range nodes {
		sl := s.slots.slot(ni)
		if sl < 0 {
			continue
		}
		if !c.topo.Has(ni) {
			if s.requireAll {
				s.scores[sl] = ignoredScore // a node missing any key is ignored
			} else {
				s.scores[sl] = 0
			}
			continue
		}
		// A node of the table that has the key got its domain in
		// PreScore's first pass, so rawScore's lookup by value is not
		// needed here.
		var cnt int64
		if hostname {
			cnt = int64(countMatching(&ni.NodeInfo, c, pod))
		} else if d := nodeDom[sl]; d >= 0 {
			cnt = counts[d]
		}
		s.scores[sl] = roundScore(float64(cnt)*w + skew)
	}
}

// rawScore sums, over the constraints whose key the node has, the
// matching count of the node's domain times the constraint's weight plus
// maxSkew-1.
func (s *preScoreState) rawScore(pod *abi.Pod, ni *plugin.NodeInfo) int64 {
	var score float64
	for i := range s.cons {
		c := &s.cons[i]
		v, _, ok := c.value(ni)
		if !ok {
			if s.requireAll {
				return ignoredScore // a node missing any key is ignored
			}
			continue
		}
		var cnt int64
		if s.isHostname[i] {
			cnt = int64(countMatching(&ni.NodeInfo, c, pod))
		} else if d := s.domain(i, ni, v); d >= 0 {
			cnt = s.counts[i][d]
		}
		score += float64(cnt)*s.weights[i] + float64(c.maxSkew-1)
	}
	return roundScore(score)
}

// roundScore is int64(math.Round(x)) (half away from zero) by
// truncation and one compare, inlined into the per-node loop: math.Round
// is a bit-twiddling function where truncation is one instruction
// (f64.trunc in Wasm, ROUNDSD natively).
//
//go:inline
func roundScore(x float64) int64 {
	neg := x < 0
	if neg {
		x = -x
	}
	t := math.Trunc(x)
	if x-t >= 0.5 {
		t++
	}
	if neg {
		t = -t
	}
	return int64(t)
}

// Score returns the raw score PreScore computed for the node (computing
// it for a node PreScore was not given). Lower is better;
// NormalizeScore inverts.
func (pl *PodTopologySpread) Score(state *plugin.CycleState, pod *abi.Pod, ni *plugin.NodeInfo) (int64, *plugin.Status) {
	s, ok := state.Read(preScoreKey).(*preScoreState)
	if !ok {
		return 0, statusNoPreScore
	}
	if sl := s.slots.slot(ni); sl >= 0 {
		return s.scores[sl], nil
	}
	return s.rawScore(pod, ni), nil
}

// NormalizeScore maps raw scores to [0, MaxScore], fewest matching pods
// best: MaxScore*(max+min-s)/max; ignored nodes get 0.
func (pl *PodTopologySpread) NormalizeScore(state *plugin.CycleState, _ *abi.Pod, scores []int64) *plugin.Status {
	if _, ok := state.Read(preScoreKey).(*preScoreState); !ok {
		return nil
	}
	var lo int64 = math.MaxInt64
	var hi int64
	for _, v := range scores {
		if v < 0 {
			continue
		}
		lo = min(lo, v)
		hi = max(hi, v)
	}
	for i, v := range scores {
		switch {
		case v < 0:
			scores[i] = 0
		case hi == 0:
			scores[i] = abi.MaxScore
		default:
			scores[i] = abi.MaxScore * (hi + lo - v) / hi
		}
	}
	return nil
}
