package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Eviction calls (ABI v1.2). Every entry point reaches the plugin through
// a type assertion before it decodes anything, so a module without
// eviction policies links none of this beyond the dispatch: with no type
// implementing plugin.ThresholdPlugin or plugin.EvictPodsPlugin, TinyGo
// resolves the assertions to false and drops what follows them.

// evictionView is what the eviction calls keep: the host's observations,
// one per slot and dropped with its node, and what a call reuses per
// node. Only modules with an eviction policy get observations, yet every
// module's syncs drop them with their nodes; held by a pointer made on
// first use, that check would cost a Filter+Score module more bytes than
// its budget leaves, so the view is held by value (its storage is a few
// hundred bytes of memory).
type evictionView struct {
	obs    []*abi.NodeObservation // by slot
	evNode plugin.EvictionNode
	noObs  abi.NodeObservation // a node's observation when the host sent none
	cutObs abi.NodeObservation // one whose pods are not the node's, cut to its node part
	picked []uint32            // the pods a GetEvictPods named

	// A round asks about thousands of nodes: the requests and results
	// are decoded into and built in these, reused from call to call, so
	// a steady round allocates nothing per node for the collector to
	// chase.
	req     abi.EvictionRequest
	topReq  abi.TopEvictionRequest
	results []abi.ThresholdResult
}

// isEvictionPolicy reports whether p implements an eviction point.
func isEvictionPolicy(p plugin.Plugin) bool {
	if _, ok := p.(plugin.ThresholdPlugin); ok {
		return true
	}
	_, ok := p.(plugin.EvictPodsPlugin)
	return ok
}

// hasEvictionPlugin reports whether a configured plugin is an eviction
// policy: only such modules get (and keep) observations.
func (g *Guest) hasEvictionPlugin() bool {
	for _, p := range g.plugins {
		if isEvictionPolicy(p) {
			return true
		}
	}
	return false
}

// observe applies an observe request: the reset flag drops every
// observation, then each record replaces its slot's.
func (g *Guest) observe(in []byte) error {
	if !g.inited {
		return newError("observe before init")
	}
	if !g.hasEvictionPlugin() {
		return newError("observe: the module has no eviction plugin")
	}
	ev := &g.evict
	if len(in) > 0 && in[0]&abi.ObserveReset != 0 {
		ev.obs = nil
	}
	_, err := abi.ParseObserve(in, ev.setObservation)
	return err
}

// setObservation decodes one observe record into its slot. Like a node
// record, the bytes are copied once and the strings alias the copy.
func (ev *evictionView) setObservation(slot uint32, rec []byte) error {
	if slot >= maxSlot {
		return newError("observation slot out of range")
	}
	owned := append([]byte(nil), rec...)
	o := &abi.NodeObservation{}
	d := abi.NewAliasingDecoder(owned)
	d.NodeObservation(o)
	if d.Err() != nil {
		return d.Err()
	}
	if d.Remaining() != 0 {
		return newError("observation record has trailing bytes")
	}
	for int(slot) >= len(ev.obs) {
		ev.obs = append(ev.obs, nil)
	}
	ev.obs[slot] = o
	return nil
}

// dropObservation forgets a slot's observation with its node.
func (ev *evictionView) dropObservation(slot uint32) {
	if int(slot) < len(ev.obs) {
		ev.obs[slot] = nil
	}
}

// evictionNode fills the eviction view's reused evNode for one requested node, or
// returns nil when the mirror has no node in slot (the plugin is then not
// asked). A candidate index past the node's pods is an error: the host's
// candidates and the mirror disagree, and no policy could answer.
func (g *Guest) evictionNode(name string, slot uint32, candidates []uint32) (*plugin.EvictionNode, error) {
	if int(slot) >= len(g.mirror.nodes) || g.mirror.nodes[slot] == nil {
		return nil, nil
	}
	ni := g.mirror.nodes[slot]
	for _, c := range candidates {
		if uint64(c) >= uint64(len(ni.Pods)) {
			return nil, newError(name + ": node " + ni.Name() + ": candidate pod index " + utoa(uint64(c)) +
				" out of range (the node has " + utoa(uint64(len(ni.Pods))) + " pods)")
		}
	}
	ev := &g.evict
	obs := &ev.noObs
	ev.noObs = abi.NodeObservation{}
	if int(slot) < len(ev.obs) && ev.obs[slot] != nil {
		obs = ev.obs[slot]
		if len(obs.Pods) != len(ni.Pods) {
			// Not parallel to the mirrored pods: per-pod data would be
			// read against the wrong pods, so it counts as absent.
			ev.cutObs = *obs
			ev.cutObs.Pods = nil
			obs = &ev.cutObs
		}
	}
	ev.evNode = plugin.EvictionNode{NodeInfo: ni, Obs: obs, Candidates: candidates}
	return &ev.evNode, nil
}

// evictionLimit is the most pods a reply may name for a node with n
// candidates: the request's limit (0: none), never more than n.
func evictionLimit(limit uint32, n int) int {
	if limit == 0 || uint64(limit) > uint64(n) {
		return n
	}
	return int(limit)
}

// checkPicked refuses a pod a policy named that is not among candidates,
// or that it named twice: the host would refuse the whole reply.
func checkPicked(name string, n *plugin.EvictionNode, picked, candidates []uint32) error {
	for j, p := range picked {
		found := false
		for _, c := range candidates {
			found = found || c == p
		}
		if !found {
			return newError(name + ": node " + n.Name() + ": pod index " + utoa(uint64(p)) + " is not one of the candidates offered")
		}
		for _, q := range picked[:j] {
			if q == p {
				return newError(name + ": node " + n.Name() + ": pod index " + utoa(uint64(p)) + " is named twice")
			}
		}
	}
	return nil
}

// evictionCall runs FuncEvictPods on an EvictPodsPlugin, or
// FuncThresholdMet or FuncTopEvictionPods on a ThresholdPlugin. One
// entry point for the three keeps what a module without eviction
// policies links to one check and one error.
func (g *Guest) evictionCall(fn abi.Func, arg uint32, in []byte) error {
	pl, err := g.pluginAt(fn, arg, false) // no cycle needed
	if err != nil {
		return err
	}
	if p, ok := pl.(plugin.EvictPodsPlugin); ok && fn == abi.FuncEvictPods {
		return g.evictPods(p, in)
	}
	if p, ok := pl.(plugin.ThresholdPlugin); ok && fn != abi.FuncEvictPods {
		if fn == abi.FuncThresholdMet {
			return g.thresholdMet(p, in)
		}
		return g.topEvictionPods(p, in)
	}
	return newError(pl.Name() + " does not implement " + fn.String())
}

func (g *Guest) evictPods(p plugin.EvictPodsPlugin, in []byte) error {
	name := p.Name()
	defer g.running(name)()
	req := &g.evict.req
	if err := g.codec.decodeWhole(in, "eviction request", func(d *abi.Decoder) { d.EvictionRequest(req) }); err != nil {
		return err
	}
	replies := make([]abi.NodeEvictPods, len(req.Nodes))
	for i := range req.Nodes {
		rn := &req.Nodes[i]
		n, err := g.evictionNode(name, rn.Slot, rn.Candidates)
		if err != nil {
			return err
		}
		if n == nil {
			continue
		}
		limit := evictionLimit(req.Limit, len(rn.Candidates))
		pods, cond := p.GetEvictPods(n, limit)
		ev := &g.evict
		ev.picked = ev.picked[:0]
		for j := range pods {
			ev.picked = append(ev.picked, pods[j].Pod)
		}
		if err := checkPicked(name, n, ev.picked, rn.Candidates); err != nil {
			return err
		}
		if len(pods) > limit {
			pods = pods[:limit]
		}
		if len(pods) > 0 {
			replies[i].Pods = append([]abi.EvictPod(nil), pods...)
		}
		replies[i].Condition = cond
	}
	g.codec.enc.EvictPodsReply(replies)
	return nil
}

func (g *Guest) thresholdMet(p plugin.ThresholdPlugin, in []byte) error {
	name := p.Name()
	defer g.running(name)()
	req := &g.evict.req
	if err := g.codec.decodeWhole(in, "eviction request", func(d *abi.Decoder) { d.EvictionRequest(req) }); err != nil {
		return err
	}
	results := resize(g.evict.results, len(req.Nodes))
	g.evict.results = results
	clear(results)
	for i := range req.Nodes {
		rn := &req.Nodes[i]
		n, err := g.evictionNode(name, rn.Slot, rn.Candidates)
		if err != nil {
			return err
		}
		if n == nil {
			continue // NotMet: there is nothing to judge
		}
		r := p.ThresholdMet(n)
		if err := checkPicked(name, n, r.Candidates, rn.Candidates); err != nil {
			return err
		}
		if len(r.Candidates) > 0 {
			r.Candidates = append([]uint32(nil), r.Candidates...)
		}
		results[i] = r
	}
	g.codec.enc.ThresholdMetReply(results)
	return nil
}

// maxTopN keeps a topN the host sent positive on 32-bit ints.
const maxTopN = 1 << 30

func (g *Guest) topEvictionPods(p plugin.ThresholdPlugin, in []byte) error {
	name := p.Name()
	defer g.running(name)()
	req := &g.evict.topReq
	if err := g.codec.decodeWhole(in, "eviction request", func(d *abi.Decoder) { d.TopEvictionRequest(req) }); err != nil {
		return err
	}
	replies := make([]abi.TopEvictionPods, len(req.Nodes))
	for i := range req.Nodes {
		rn := &req.Nodes[i]
		n, err := g.evictionNode(name, rn.Slot, rn.Candidates)
		if err != nil {
			return err
		}
		if n == nil {
			continue
		}
		topN := int(min(rn.TopN, maxTopN))
		limit := evictionLimit(req.Limit, len(rn.Candidates))
		pods, grace := p.GetTopEvictionPods(n, topN, rn.Scope, rn.Candidates, limit)
		if err := checkPicked(name, n, pods, rn.Candidates); err != nil {
			return err
		}
		if len(pods) > limit {
			pods = pods[:limit]
		}
		if topN > 0 && len(pods) > topN {
			pods = pods[:topN]
		}
		if len(pods) > 0 {
			replies[i].Pods = append([]uint32(nil), pods...)
		}
		replies[i].GracePeriodSeconds = grace
	}
	g.codec.enc.TopEvictionReply(replies)
	return nil
}

// addAnnotationKeys merges keys into the sorted, duplicate-free set;
// empty keys name no annotation and are left out.
func addAnnotationKeys(set, keys []string) []string {
	for _, k := range keys {
		if k == "" {
			continue
		}
		i := 0
		for i < len(set) && set[i] < k {
			i++
		}
		if i < len(set) && set[i] == k {
			continue
		}
		set = append(set, "")
		copy(set[i+1:], set[i:])
		set[i] = k
	}
	return set
}

// utoa formats an unsigned integer for messages without strconv.
func utoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}
