package eviction

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// ranked is one candidate pod with the keys the policies sort by,
// computed once per call rather than once per comparison.
type ranked struct {
	idx      uint32
	pod      *abi.Pod
	request  int64 // of the resource the sort is about
	usage    int64 // valid when hasUsage
	hasUsage bool
}

// over is usage − request; meaningful only with usage data.
func (r *ranked) over() int64 { return r.usage - r.request }

// ranking is a plugin's memory for ranking candidates, reused from node
// to node and round to round: a round ranks a node's pods wherever a
// threshold is met, and a guest allocating per node would keep its
// collector busy. What candidates and firstN return is valid until the
// next call.
type ranking struct {
	rs  []ranked
	out []uint32
}

// candidates builds the ranked list of candidates; request and usage
// pick the numbers the sort is about (usage may be nil: no usage read).
func (k *ranking) candidates(node *plugin.EvictionNode, candidates []uint32, request func(*abi.Resources) int64, usage func(*abi.Usage) int64) []ranked {
	rs := k.rs[:0]
	if cap(rs) < len(candidates) {
		rs = make([]ranked, 0, len(candidates))
	}
	for _, c := range candidates {
		p := node.Pod(c)
		if p == nil {
			continue // the SDK never offers one; nothing to rank if it did
		}
		r := ranked{idx: c, pod: p}
		var req abi.Resources
		addPodRequests(&req, p)
		r.request = request(&req)
		if usage != nil {
			if o := node.PodObs(c); o != nil && o.Usage != nil {
				r.usage, r.hasUsage = usage(o.Usage), true
			}
		}
		rs = append(rs, r)
	}
	k.rs = rs
	return rs
}

// addPodRequests adds a pod's abi.PodRequests to sum. A pod of app
// containers only, without pod-level requests (nearly every pod), is
// summed in place: abi.PodRequests copies each container's requests
// first, and a policy sums every pod of every node each round.
func addPodRequests(sum *abi.Resources, p *abi.Pod) {
	if len(p.InitContainers) > 0 || p.PodLevel != nil {
		r := abi.PodRequests(p)
		sum.AddAll(&r)
		return
	}
	for i := range p.Containers {
		addResources(sum, &p.Containers[i].Requests)
	}
	addResources(sum, &p.Overhead)
}

// addResources is abi.Resources.AddAll with the common case, no scalar
// resources, written out.
func addResources(sum, r *abi.Resources) {
	sum.MilliCPU += r.MilliCPU
	sum.Memory += r.Memory
	sum.EphemeralStorage += r.EphemeralStorage
	if len(r.Scalars) > 0 {
		for _, s := range r.Scalars {
			sum.Add(s.Name, s.Value)
		}
	}
}

// sortRanked sorts rs by less, an insertion sort: candidate lists hold
// one node's pods (at most a few hundred), and a sort package would cost
// every module that links this one a kilobyte or more.
func sortRanked(rs []ranked, less func(a, b *ranked) bool) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && less(&rs[j], &rs[j-1]); j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// byName orders equal pods by name ascending, then namespace and index,
// so every ranking is a total order and the Wasm build and its native
// twin answer alike.
func byName(a, b *ranked) bool {
	if a.pod.Name != b.pod.Name {
		return a.pod.Name < b.pod.Name
	}
	if a.pod.Namespace != b.pod.Namespace {
		return a.pod.Namespace < b.pod.Namespace
	}
	return a.idx < b.idx
}

// firstN returns the indexes of the first n ranked pods.
func (k *ranking) firstN(rs []ranked, n int) []uint32 {
	n = min(n, len(rs))
	if cap(k.out) < n {
		k.out = make([]uint32, n)
	}
	out := k.out[:n]
	for i := range out {
		out[i] = rs[i].idx
	}
	return out
}

// wanted is how many pods a top-eviction query asks for: topN for a hard
// query; for a soft one (topN 0), one at a time (the coordinator evicts
// at most one soft victim per round anyway); never more than limit.
func wanted(topN, limit int) int {
	if topN <= 0 {
		topN = 1
	}
	return min(topN, limit)
}

func memoryRequest(r *abi.Resources) int64 { return r.Memory }
func cpuRequest(r *abi.Resources) int64    { return r.MilliCPU }
func memoryUsage(u *abi.Usage) int64       { return u.Memory }
func cpuUsage(u *abi.Usage) int64          { return u.MilliCPU }
