package knative

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// level is what a spread priority evens out: pods, nodes or zones.
type level uint8

const (
	podLevel level = iota
	nodeLevel
	zoneLevel
)

// count is the number of pods, nodes or zones of the topology.
func (l level) count(s *plugin.VPodState) int {
	switch l {
	case nodeLevel:
		return s.NumNodes()
	case zoneLevel:
		return s.NumZones()
	}
	return s.NumPods()
}

// of is the pod itself, or its node or zone.
func (l level) of(s *plugin.VPodState, pod int) int {
	switch l {
	case nodeLevel:
		return s.PodNode(pod)
	case zoneLevel:
		return s.PodZone(pod)
	}
	return pod
}

// spread is the vpod's vreplicas at index i of the level, and presence.
func (l level) spread(s *plugin.VPodState, i int) (int32, bool) {
	switch l {
	case nodeLevel:
		return s.NodeSpread(i)
	case zoneLevel:
		return s.ZoneSpread(i)
	}
	return s.PodSpread(i)
}

// entries are the level's present spread entries.
func (l level) entries(s *plugin.VPodState) []abi.VPodCount {
	switch l {
	case nodeLevel:
		return s.NodeSpreadEntries()
	case zoneLevel:
		return s.ZoneSpreadEntries()
	}
	return s.PodSpreadEntries()
}

// AvailabilityNodePriority favours pods whose node holds few of the
// vpod's vreplicas compared with the other nodes: pod P on node n, where
// the vpod has c vreplicas, scores −Σ_m |c+1−s_m| over every other
// schedulable node m (with or without adapter pods), s_m the vpod's
// vreplicas there (0 if none). Args {"MaxSkew": int32}, decoded but not
// used in the score, as in Knative. 0 when the StatefulSet has no
// replicas.
type AvailabilityNodePriority struct{ named }

// NewVPodScorer implements plugin.VPodPriorityPlugin.
func (AvailabilityNodePriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return availabilityScorer(args, nodeLevel)
}

// AvailabilityZonePriority is AvailabilityNodePriority over the distinct
// zones of the schedulable nodes.
type AvailabilityZonePriority struct{ named }

// NewVPodScorer implements plugin.VPodPriorityPlugin.
func (AvailabilityZonePriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return availabilityScorer(args, zoneLevel)
}

func availabilityScorer(args []byte, l level) (plugin.VPodScorer, error) {
	return spreadScorer(args, l, func(s *plugin.VPodState, sums *absSums) {
		for m := l.count(s) - 1; m >= 0; m-- {
			v, _ := l.spread(s, m)
			sums.add(int64(v))
		}
	}, func(s *plugin.VPodState, sums *absSums, k int) int64 {
		c, _ := l.spread(s, k)
		// Σ over every node (zone), less P's own term |c+1−c| = 1.
		return -(sums.sum(int64(c)+1) - 1)
	})
}

// spreadScorer is the shape every spread priority shares: args with
// MaxSkew (decoded, unused in the score, as in Knative), 0 when the
// StatefulSet has no replicas, else the values collect adds to the sums
// and, per pod, score of its pod, node or zone k, computed once per k.
func spreadScorer(args []byte, l level, collect func(*plugin.VPodState, *absSums), score func(s *plugin.VPodState, sums *absSums, k int) int64) (plugin.VPodScorer, error) {
	if _, err := maxSkewArgs(args); err != nil {
		return nil, err
	}
	var sums absSums
	var memo levelMemo
	return func(s *plugin.VPodState, pods []int, scores []int64) error {
		if s.Replicas() <= 0 {
			return nil
		}
		sums.reset()
		collect(s, &sums)
		sums.prepare()
		memo.fill(s, l, pods, scores, func(k int) int64 { return score(s, &sums, k) })
		return nil
	}, nil
}

// levelMemo keeps the score of each node (zone) within one step: every
// pod of a node scores the same, and a hundred pods share a few zones.
type levelMemo struct {
	score []int64
	have  []bool
}

// fill sets each pod's score to score(k) of its node, zone or own index
// k at level l, computing score once per k.
func (m *levelMemo) fill(s *plugin.VPodState, l level, pods []int, scores []int64, score func(k int) int64) {
	n := l.count(s)
	if cap(m.score) < n {
		m.score, m.have = make([]int64, n), make([]bool, n)
	}
	m.score, m.have = m.score[:n], m.have[:n]
	clear(m.have)
	for i, p := range pods {
		k := l.of(s, p)
		if !m.have[k] {
			m.score[k], m.have[k] = score(k), true
		}
		scores[i] = m.score[k]
	}
}

// RemoveWithEvenPodSpreadPriority picks the pod to take a vreplica off
// when a vpod scales down so that the pods stay even: pod P, holding c,
// scores −Σ_Q |c−1−o| over the other pods Q present in the vpod's pod
// spread (even with 0). Args {"MaxSkew": int32}, decoded, not used. 0
// when the StatefulSet has no replicas.
type RemoveWithEvenPodSpreadPriority struct{ named }

// NewVPodScorer implements plugin.VPodPriorityPlugin.
func (RemoveWithEvenPodSpreadPriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return removeScorer(args, podLevel)
}

// RemoveWithAvailabilityNodePriority is RemoveWithEvenPodSpreadPriority
// over nodes: c is the vpod's vreplicas on P's node, and the other nodes
// counted are those present in the vpod's node spread.
type RemoveWithAvailabilityNodePriority struct{ named }

// NewVPodScorer implements plugin.VPodPriorityPlugin.
func (RemoveWithAvailabilityNodePriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return removeScorer(args, nodeLevel)
}

// RemoveWithAvailabilityZonePriority is RemoveWithEvenPodSpreadPriority
// over zones.
type RemoveWithAvailabilityZonePriority struct{ named }

// NewVPodScorer implements plugin.VPodPriorityPlugin.
func (RemoveWithAvailabilityZonePriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return removeScorer(args, zoneLevel)
}

func removeScorer(args []byte, l level) (plugin.VPodScorer, error) {
	return spreadScorer(args, l, func(s *plugin.VPodState, sums *absSums) {
		for _, e := range l.entries(s) {
			sums.add(int64(e.VReplicas))
		}
	}, func(s *plugin.VPodState, sums *absSums, k int) int64 {
		c, present := l.spread(s, k)
		penalty := sums.sum(int64(c) - 1)
		if present {
			penalty -= 1 // its own term, |c−1−c|
		}
		return -penalty
	})
}

// LowestOrdinalPriority favours low ordinals: −ordinal (Knative's
// MaxUint64 − ordinal). It takes no args: given some, it runs as if it
// had none and says so (plugin.IgnoredArgs), as Knative ignores them.
type LowestOrdinalPriority struct{ named }

// NewVPodScorer implements plugin.VPodPriorityPlugin.
func (lp LowestOrdinalPriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return func(s *plugin.VPodState, pods []int, scores []int64) error {
		for i, p := range pods {
			scores[i] = -int64(s.Ordinal(p))
		}
		return nil
	}, plugin.IgnoredArgs(lp.Name(), args)
}

// RemoveWithHighestOrdinalPriority takes vreplicas off high ordinals
// first: +ordinal. It takes no args: given some, it runs as if it had
// none and says so (plugin.IgnoredArgs), as Knative ignores them.
type RemoveWithHighestOrdinalPriority struct{ named }

// NewVPodScorer implements plugin.VPodPriorityPlugin.
func (rp RemoveWithHighestOrdinalPriority) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return func(s *plugin.VPodState, pods []int, scores []int64) error {
		for i, p := range pods {
			scores[i] = int64(s.Ordinal(p))
		}
		return nil
	}, plugin.IgnoredArgs(rp.Name(), args)
}
