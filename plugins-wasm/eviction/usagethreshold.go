package eviction

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
)

// UsageThresholdName is the plugin's name in an eviction profile.
const UsageThresholdName = "UsageThreshold"

// UsageThresholdRegistration lets a module register the plugin.
var UsageThresholdRegistration = plugin.Registration{Name: UsageThresholdName, New: NewUsageThreshold}

// UsageThreshold acts on measured usage (the metrics API): a node using
// more memory (or CPU) than a fraction of its allocatable is HardMet, and
// the pods using the most beyond their requests go first. Requests are
// what the scheduler packed by; usage beyond them is what overloads a
// node, so those pods are the ones to move.
type UsageThreshold struct {
	memory float64 // fraction of allocatable memory
	cpu    float64 // fraction of allocatable CPU; 0: not checked
	grace  int64
	rank   ranking
}

var _ plugin.ThresholdPlugin = (*UsageThreshold)(nil)

// maxUsageFraction bounds the fractions: usage can pass allocatable
// (allocatable is capacity minus reservations), but not tenfold.
const maxUsageFraction = 10

// NewUsageThreshold builds the plugin from its args: memory (default
// 0.9) and cpu (default unset: not checked), fractions of allocatable in
// (0, 10], and gracePeriodSeconds (default 0).
func NewUsageThreshold(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	if err := argparse.Map(args, "", "memory", "cpu", "gracePeriodSeconds"); err != nil {
		return nil, err
	}
	pl := &UsageThreshold{}
	var err error
	if pl.memory, _, err = rateArg(args, "memory", 0.9, maxUsageFraction, "10"); err != nil {
		return nil, err
	}
	if pl.cpu, _, err = rateArg(args, "cpu", 0, maxUsageFraction, "10"); err != nil {
		return nil, err
	}
	if pl.grace, err = graceArg(args); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name implements plugin.Plugin.
func (*UsageThreshold) Name() string { return UsageThresholdName }

// ThresholdMet compares the node's usage with the fractions of its
// allocatable, memory first: above one is HardMet, scoped to that
// resource. A node without usage data is NotMet: no data is not zero
// usage, and not a reason to evict either.
func (pl *UsageThreshold) ThresholdMet(node *plugin.EvictionNode) abi.ThresholdResult {
	u := node.Obs.Usage
	if u == nil {
		return abi.ThresholdResult{}
	}
	alloc := &node.Node.Allocatable
	if r, ok := pl.over(abi.ResourceMemory, pl.memory, u.Memory, alloc.Memory); ok {
		return r
	}
	if r, ok := pl.over(abi.ResourceCPU, pl.cpu, u.MilliCPU, alloc.MilliCPU); ok {
		return r
	}
	return abi.ThresholdResult{}
}

func (pl *UsageThreshold) over(scope string, fraction float64, used, alloc int64) (abi.ThresholdResult, bool) {
	if fraction <= 0 || alloc <= 0 {
		return abi.ThresholdResult{}, false
	}
	limit := fraction * float64(alloc)
	if float64(used) <= limit {
		return abi.ThresholdResult{}, false
	}
	return abi.ThresholdResult{Met: abi.HardMet, ThresholdValue: limit, ObservedValue: float64(used), Operator: ">",
		Scope: scope, GracePeriodSeconds: pl.grace}, true
}

// GetTopEvictionPods ranks the candidates with usage data by priority
// (lowest first), then by how far their usage of the scope resource
// (cpu, or else memory) exceeds their request (most first), then name;
// pods without usage data come last, by priority and name. A hard query
// takes topN; a soft one, which UsageThreshold never causes, one.
func (pl *UsageThreshold) GetTopEvictionPods(node *plugin.EvictionNode, topN int, scope string, candidates []uint32, limit int) ([]uint32, *int64) {
	request, usage := memoryRequest, memoryUsage
	if scope == abi.ResourceCPU {
		request, usage = cpuRequest, cpuUsage
	}
	rs := pl.rank.candidates(node, candidates, request, usage)
	sortRanked(rs, func(a, b *ranked) bool {
		if a.hasUsage != b.hasUsage {
			return a.hasUsage
		}
		if a.pod.Priority != b.pod.Priority {
			return a.pod.Priority < b.pod.Priority
		}
		if a.hasUsage && a.over() != b.over() {
			return a.over() > b.over()
		}
		return byName(a, b)
	})
	return pl.rank.firstN(rs, wanted(topN, limit)), nil
}
