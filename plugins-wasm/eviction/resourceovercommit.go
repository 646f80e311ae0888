package eviction

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/argparse"
)

// ResourceOvercommitName is the plugin's name in an eviction profile.
const ResourceOvercommitName = "ResourceOvercommit"

// ResourceOvercommitRegistration lets a module register the plugin.
var ResourceOvercommitRegistration = plugin.Registration{Name: ResourceOvercommitName, New: NewResourceOvercommit}

// ResourceOvercommit is Katalyst's example eviction plugin: a node whose
// evictable pods request more of a resource than hardRate × allocatable
// is overcommitted (HardMet), more than softRate × allocatable nearly so
// (SoftMet). Only the candidate pods count: critical and skipped pods
// cannot be evicted, so counting them would make a threshold no eviction
// can clear.
type ResourceOvercommit struct {
	resources []string
	hardRate  float64
	softRate  float64 // 0: no soft threshold
	grace     int64
	rank      ranking
}

var _ plugin.ThresholdPlugin = (*ResourceOvercommit)(nil)

// overcommitResources are the resources the plugin can judge: those
// every node reports allocatable and every pod may request.
var overcommitResources = []string{abi.ResourceCPU, abi.ResourceMemory, abi.ResourceEphemeralStorage}

// NewResourceOvercommit builds the plugin from its args: resources
// (default cpu and memory), hardRate (default 1.0), softRate (unset: no
// soft threshold; at most hardRate) and gracePeriodSeconds (default 0).
func NewResourceOvercommit(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	if err := argparse.Map(args, "", "resources", "hardRate", "softRate", "gracePeriodSeconds"); err != nil {
		return nil, err
	}
	pl := &ResourceOvercommit{}
	var err error
	if pl.resources, err = stringsArg(args, "resources", []string{abi.ResourceCPU, abi.ResourceMemory}); err != nil {
		return nil, err
	}
	for i, r := range pl.resources {
		known := false
		for _, k := range overcommitResources {
			known = known || r == k
		}
		if !known {
			return nil, argparse.Invalid(argparse.Index("resources", i), argparse.Quote(r), "must be cpu, memory or ephemeral-storage")
		}
	}
	if pl.hardRate, _, err = rateArg(args, "hardRate", 1, 0, ""); err != nil {
		return nil, err
	}
	if pl.softRate, _, err = rateArg(args, "softRate", 0, pl.hardRate, "hardRate"); err != nil {
		return nil, err
	}
	if pl.grace, err = graceArg(args); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name implements plugin.Plugin.
func (*ResourceOvercommit) Name() string { return ResourceOvercommitName }

// ThresholdMet sums the candidates' requests per resource, in the order
// of the resources arg: the first resource over hardRate × allocatable
// is HardMet; failing that, the first over softRate × allocatable is
// SoftMet. A resource the node reports no allocatable of is not judged
// (any request would be "over" a zero the node never meant).
func (pl *ResourceOvercommit) ThresholdMet(node *plugin.EvictionNode) abi.ThresholdResult {
	var sum abi.Resources
	for _, c := range node.Candidates {
		if p := node.Pod(c); p != nil {
			addPodRequests(&sum, p)
		}
	}
	alloc := &node.Node.Allocatable
	if r, ok := pl.over(&sum, alloc, abi.HardMet, pl.hardRate); ok {
		return r
	}
	if pl.softRate > 0 {
		if r, ok := pl.over(&sum, alloc, abi.SoftMet, pl.softRate); ok {
			return r
		}
	}
	return abi.ThresholdResult{}
}

// over finds the first resource whose sum exceeds rate × allocatable.
func (pl *ResourceOvercommit) over(sum, alloc *abi.Resources, met abi.MetType, rate float64) (abi.ThresholdResult, bool) {
	for _, name := range pl.resources {
		a := alloc.Get(name)
		if a <= 0 {
			continue
		}
		limit, used := rate*float64(a), float64(sum.Get(name))
		if used > limit {
			return abi.ThresholdResult{Met: met, ThresholdValue: limit, ObservedValue: used, Operator: ">",
				Scope: name, GracePeriodSeconds: pl.grace}, true
		}
	}
	return abi.ThresholdResult{}, false
}

// GetTopEvictionPods ranks the candidates least worth keeping first:
// lower priority, then a larger request of the scope resource, then name.
// A hard query takes the first topN. A soft query keeps the longest run
// of the most worth keeping whose requests stay within softRate ×
// allocatable and names the others (at least one), least worth keeping
// first, up to limit.
func (pl *ResourceOvercommit) GetTopEvictionPods(node *plugin.EvictionNode, topN int, scope string, candidates []uint32, limit int) ([]uint32, *int64) {
	rs := pl.rank.candidates(node, candidates, func(r *abi.Resources) int64 { return r.Get(scope) }, nil)
	sortRanked(rs, func(a, b *ranked) bool {
		if a.pod.Priority != b.pod.Priority {
			return a.pod.Priority < b.pod.Priority
		}
		if a.request != b.request {
			return a.request > b.request
		}
		return byName(a, b)
	})
	if topN > 0 {
		return pl.rank.firstN(rs, min(topN, limit)), nil
	}
	if pl.softRate <= 0 {
		return nil, nil // no soft threshold, so no soft query is ours
	}
	// The most worth keeping are at the end: keep them from there while
	// they fit.
	budget := pl.softRate * float64(node.Node.Allocatable.Get(scope))
	var kept float64
	m := len(rs)
	for m > 0 && kept+float64(rs[m-1].request) <= budget {
		kept += float64(rs[m-1].request)
		m--
	}
	if m == 0 && len(rs) > 0 {
		m = 1
	}
	return pl.rank.firstN(rs[:m], limit), nil
}
