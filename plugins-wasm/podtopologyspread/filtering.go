package podtopologyspread

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// preFilterState holds, per DoNotSchedule constraint, the matching pod
// count of every domain (topology value) and the global minimum.
type preFilterState struct {
	cons []constraint // shared, immutable
	// domains[i] maps a topology value of constraint i to its index in
	// counts[i]; shared, immutable (AddPod/RemovePod never add domains).
	domains []map[string]int
	counts  [][]int32 // deep-copied by Clone
	mins    []int32   // min of counts[i]; deep-copied by Clone
}

// Clone implements plugin.StateData: counts and minimums are copied,
// since AddPod/RemovePod change them on the copy.
func (s *preFilterState) Clone() plugin.StateData {
	c := &preFilterState{cons: s.cons, domains: s.domains,
		counts: make([][]int32, len(s.counts)), mins: append([]int32(nil), s.mins...)}
	for i := range s.counts {
		c.counts[i] = append([]int32(nil), s.counts[i]...)
	}
	return c
}

// globalMin is the minimum matching count over the constraint's
// domains, or 0 when there are fewer domains than minDomains.
func (s *preFilterState) globalMin(i int) int32 {
	if len(s.counts[i]) < int(s.cons[i].minDomains) {
		return 0
	}
	return s.mins[i]
}

func (s *preFilterState) recomputeMin(i int) {
	m := int32(1<<31 - 1) // no domain: nothing to be skewed against
	for _, n := range s.counts[i] {
		m = min(m, n)
	}
	s.mins[i] = m
}

// PreFilter counts matching pods per domain over all nodes, once per
// cycle. A pod without DoNotSchedule constraints skips Filter.
func (pl *PodTopologySpread) PreFilter(state *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	cons, err := pl.constraintsFor(pod, abi.DoNotSchedule)
	if err != nil {
		return plugin.AsStatus(err)
	}
	if len(cons) == 0 {
		return statusSkip
	}
	s := &preFilterState{cons: cons, domains: make([]map[string]int, len(cons)),
		counts: make([][]int32, len(cons)), mins: make([]int32, len(cons))}
	for i := range cons {
		s.domains[i] = map[string]int{}
	}
	for _, ni := range pl.h.Nodes() {
		node := &ni.Node
		if !hasAllKeys(node, cons) {
			continue
		}
		for i := range cons {
			c := &cons[i]
			if !c.includes(pod, node) {
				continue
			}
			v, _ := node.Labels.Get(c.key)
			d, ok := s.domains[i][v]
			if !ok {
				d = len(s.counts[i])
				s.domains[i][v] = d
				s.counts[i] = append(s.counts[i], 0)
			}
			s.counts[i][d] += countMatching(&ni.NodeInfo, &c.sel, pod.Namespace)
		}
	}
	for i := range cons {
		s.recomputeMin(i)
	}
	state.Write(preFilterKey, s)
	return nil
}

// Filter: for each DoNotSchedule constraint, the node must have the
// topology key, and count(domain) + selfMatch - globalMin <= maxSkew.
func (pl *PodTopologySpread) Filter(state *plugin.CycleState, pod *abi.Pod, ni *plugin.NodeInfo) *plugin.Status {
	s, ok := state.Read(preFilterKey).(*preFilterState)
	if !ok {
		return plugin.NewStatus(abi.Error, "PodTopologySpread: PreFilter state missing")
	}
	for i := range s.cons {
		c := &s.cons[i]
		v, ok := ni.Node.Labels.Get(c.key)
		if !ok {
			return statusNoLabel
		}
		var n int32
		if d, ok := s.domains[i][v]; ok {
			n = s.counts[i][d]
		}
		if c.selfMatch {
			n++
		}
		if int64(n)-int64(s.globalMin(i)) > int64(c.maxSkew) {
			return statusNotMatch
		}
	}
	return nil
}

// AddPod counts a pod the host adds (a nominated pod) on node.
func (pl *PodTopologySpread) AddPod(state *plugin.CycleState, podToSchedule, podToAdd *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	pl.update(state, podToSchedule, podToAdd, node, 1)
	return nil
}

// RemovePod uncounts a pod the host removes (a preemption victim).
func (pl *PodTopologySpread) RemovePod(state *plugin.CycleState, podToSchedule, podToRemove *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	pl.update(state, podToSchedule, podToRemove, node, -1)
	return nil
}

func (pl *PodTopologySpread) update(state *plugin.CycleState, pod, other *abi.Pod, ni *plugin.NodeInfo, delta int32) {
	s, ok := state.Read(preFilterKey).(*preFilterState)
	if !ok || other.Namespace != pod.Namespace || !hasAllKeys(&ni.Node, s.cons) {
		return
	}
	for i := range s.cons {
		c := &s.cons[i]
		if !c.sel.Matches(other.Labels) || !c.includes(pod, &ni.Node) {
			continue
		}
		v, _ := ni.Node.Labels.Get(c.key)
		d, ok := s.domains[i][v]
		if !ok {
			continue // a node PreFilter did not see; upstream would add a domain
		}
		s.counts[i][d] += delta
		s.recomputeMin(i)
	}
}
