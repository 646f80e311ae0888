package noderesources

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

var balancedPreScoreKey = plugin.NewStateKey()

// BalancedAllocation is NodeResourcesBalancedAllocation: it prefers nodes
// whose balance the pod improves, the balance being how close the
// requested fractions of the configured resources are to each other.
type BalancedAllocation struct {
	resources []resourceSpec
	// requested and allocatable are Score's per-node scratch space, one
	// entry per resource, allocated once with the plugin: a guest runs one
	// call at a time and builds its own plugin objects, so no lock is
	// needed, and TinyGo would move stack arrays passed as slices to the
	// heap on every call.
	requested, allocated, allocatable []int64
}

// NewBalancedAllocation builds the plugin from
// NodeResourcesBalancedAllocationArgs (see ParseBalancedAllocationArgs).
func NewBalancedAllocation(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	a, err := ParseBalancedAllocationArgs(args)
	if err != nil {
		return nil, err
	}
	b := &BalancedAllocation{}
	for _, r := range a.Resources {
		b.resources = append(b.resources, newResourceSpec(r.Name, r.Weight))
	}
	b.requested = make([]int64, len(b.resources))
	b.allocated = make([]int64, len(b.resources))
	b.allocatable = make([]int64, len(b.resources))
	return b, nil
}

// Name implements plugin.Plugin.
func (*BalancedAllocation) Name() string { return BalancedAllocationName }

// PreScore computes the pod's requests (no non-zero defaults: this plugin
// uses actual requests, as upstream). A best-effort pod, requesting none of
// the resources, skips Score so that such pods do not all pile onto the
// same balanced node (kubernetes#129138).
func (b *BalancedAllocation) PreScore(state *plugin.CycleState, pod *abi.Pod, _ []*plugin.NodeInfo) *plugin.Status {
	reqs := podRequestList(pod, b.resources, true)
	if isBestEffort(reqs) {
		return statusSkip
	}
	state.Write(balancedPreScoreKey, &requestList{requests: reqs})
	return nil
}

func isBestEffort(reqs []int64) bool {
	for _, r := range reqs {
		if r != 0 {
			return false
		}
	}
	return true
}

// Score rates the change in the node's balance the pod makes, as
// kube-scheduler does since v1.37: with b(x) = (1 - std(fractions)) *
// MaxScore over the requested/allocatable fractions, it is MaxScore/2 +
// (MaxScore/2 + b(with the pod) - b(without it))/2, in integer
// arithmetic. A change of nothing scores 75; a pod that evens the node
// out scores towards 100, one that unbalances it towards 50. Scoring the
// balance with the pod alone would prefer an already balanced node even
// when the pod fits a lopsided one better.
func (b *BalancedAllocation) Score(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	rl, ok := state.Read(balancedPreScoreKey).(*requestList)
	if !ok {
		// PreScore did not run (or skipped): compute the requests once
		// and keep them for the cycle's other nodes.
		rl = &requestList{requests: podRequestList(pod, b.resources, true)}
		rl.bestEffort = isBestEffort(rl.requests)
		state.Write(balancedPreScoreKey, rl)
	}
	if rl.bestEffort {
		return 0, nil // PreScore would have skipped Score
	}
	requested, allocated, allocatable := b.requested, b.allocated, b.allocatable
	n := &node.NodeInfo
	for i := range b.resources {
		allocatable[i], requested[i] = b.resources[i].allocatableRequested(n, rl.requests[i], true)
		allocated[i] = requested[i] - rl.requests[i]
	}
	with, without := balancedScore(requested, allocatable), balancedScore(allocated, allocatable)
	return abi.MaxScore/2 + (abi.MaxScore/2+with-without)/2, nil
}
