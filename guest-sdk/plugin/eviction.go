package plugin

import "github.com/wasmsched/wasmsched/abi"

// Eviction policies (ABI v1.2). The host's eviction coordinator runs a
// Katalyst-style round over every node: it asks each policy, batched over
// the nodes, which pods to evict regardless of thresholds
// (EvictPodsPlugin), whether a threshold is met (ThresholdPlugin), and,
// on the nodes where one is met past its grace period, which pods should
// go (GetTopEvictionPods). Grace periods, aggregation across policies,
// throttling, taints and the API calls are the coordinator's; a policy
// only judges.
//
// Pods are named by their index in the node's mirrored pods
// (EvictionNode.Pods), and a policy may name only the candidates the host
// offers (critical, skipped, static, mirror and terminating pods never
// are). The SDK checks this before replying: naming another pod, or one
// pod twice, makes the whole call an error, because the host would refuse
// the reply anyway and a clear message helps the policy's author more.

// EvictionNode is what an eviction policy sees of one node in a round:
// the mirrored node with all its pods, the host's observation of it, and
// the pods it may name. The SDK reuses it from one node to the next: do
// not keep it (or Obs, Candidates) past the call that received it.
type EvictionNode struct {
	// NodeInfo is the mirror's node; Pods holds every pod on it (an
	// eviction module always gets pods).
	*NodeInfo
	// Obs is the node's eviction view: conditions, usage, and one
	// PodObservation per pod of NodeInfo.Pods. Never nil: empty when the
	// host sent none. Its Pods are nil when they do not match the
	// mirrored pods one for one (a host bug), so use PodObs to read them.
	Obs *abi.NodeObservation
	// Candidates are the pods the policy may name, as indexes into Pods,
	// each less than len(Pods).
	Candidates []uint32
}

// Pod returns the mirrored pod at index i (a candidate index), or nil if
// there is none.
func (n *EvictionNode) Pod(i uint32) *abi.Pod {
	if n.NodeInfo == nil || uint64(i) >= uint64(len(n.Pods)) {
		return nil
	}
	return &n.Pods[i]
}

// PodObs returns the observation of the pod at index i, or nil when the
// host sent none for it: "no data", which a policy must not read as zero
// usage.
func (n *EvictionNode) PodObs(i uint32) *abi.PodObservation {
	if n.Obs == nil || uint64(i) >= uint64(len(n.Obs.Pods)) {
		return nil
	}
	return &n.Obs.Pods[i]
}

// ThresholdPlugin is an eviction policy that watches a threshold per node
// (abi.PointEvictionThreshold), as Katalyst's ThresholdMet and
// GetTopEvictionPods.
type ThresholdPlugin interface {
	Plugin
	// ThresholdMet says whether the policy's threshold is met on the
	// node: NotMet, SoftMet or HardMet, with the scope (say, a resource
	// name) that comes back to GetTopEvictionPods, and optionally a
	// condition (a node taint while it is met; a NotMet answer is
	// ignored whole, condition included, as in Katalyst) and a narrower
	// candidate list for GetTopEvictionPods (each one of
	// node.Candidates).
	ThresholdMet(node *EvictionNode) abi.ThresholdResult
	// GetTopEvictionPods picks the pods to evict on a node whose
	// threshold is met past its grace period, most deserving first.
	// topN 1 is a hard threshold's query: at most topN pods, evicted at
	// once. topN 0 is a soft query: as many as the policy sees fit, up to
	// limit, of which the coordinator evicts at most one per round.
	// candidates are the pods to choose from (the threshold's own
	// candidate list when it gave one, else node.Candidates); limit is at
	// least 0 and at most len(candidates). The SDK keeps the first
	// limit (and topN) pods of the answer. gracePeriodSeconds nil leaves
	// each pod its terminationGracePeriodSeconds.
	GetTopEvictionPods(node *EvictionNode, topN int, scope string, candidates []uint32, limit int) (pods []uint32, gracePeriodSeconds *int64)
}

// EvictPodsPlugin is an eviction policy that names pods to evict
// regardless of thresholds (abi.PointEvictPods), as Katalyst's
// GetEvictPods: Force pods go at once (within the coordinator's burst),
// the others are soft candidates.
type EvictPodsPlugin interface {
	Plugin
	// GetEvictPods returns the node's pods to evict, each one of
	// node.Candidates, most deserving first (the SDK keeps the first
	// limit, which is at most len(node.Candidates)), and optionally a
	// condition to report on the node.
	GetEvictPods(node *EvictionNode, limit int) ([]abi.EvictPod, *abi.EvictionCondition)
}
