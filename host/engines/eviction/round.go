package eviction

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/internal/convert"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// Round is what one round did, for logs, tests and `simulate`.
type Round struct {
	At time.Time
	// Victims are the pods handed to the killer, per node most evictable
	// first.
	Victims []Victim
	// DryRun are the pods dry-run policies would have had evicted.
	DryRun []Victim
	// Thresholds are the thresholds met this round.
	Thresholds []Threshold
	// Taints are the nodes whose managed taints changed (or failed to).
	Taints []TaintChange
	// Failures are the policy calls whose answers were dropped.
	Failures []Failure
	// Throttled counts victims held back by the cluster-wide rate limit.
	Throttled int

	// rec is the round's decision record, when a sink wants it.
	rec *decision.Eviction
}

// Record is the round's decision record (nil when no sink wanted it).
func (r *Round) Record() *decision.Eviction { return r.rec }

// Victim is a pod chosen for eviction and who asked for it.
type Victim struct {
	Pod    *abi.Pod
	Node   string
	Policy string
	// Scope is "force", "soft", or a threshold's scope (a resource name).
	Scope  string
	Reason string
	Grace  *int64

	forceDelete bool
}

// Threshold is a policy's threshold met on a node.
type Threshold struct {
	Policy, Node     string
	Met              abi.MetType
	Scope            string
	Observed, Target float64
	// Acted: met past its grace period, so the policy was asked for pods.
	Acted bool
}

// TaintChange is a node whose managed taints were swapped.
type TaintChange struct {
	Node          string
	Before, After []abi.Taint
	Err           error
}

// Failure is a policy call whose answer the round dropped whole.
type Failure struct {
	Policy, Call string
	Err          error
}

// withClient runs fn on an instance of the policy's module, its mirror
// and eviction view brought up to date first.
func (c *Coordinator) withClient(ctx context.Context, p *Policy, fn func(*guest.Client) error) error {
	cl, err := p.pool.Get(ctx)
	if err != nil {
		return err
	}
	defer p.pool.Put(ctx, cl)
	if err := cl.Sync(ctx, c.snap); err != nil {
		return err
	}
	if err := cl.Observe(ctx, c.tables[p.table]); err != nil {
		return err
	}
	return fn(cl)
}

// fail records a dropped call: counted, logged, reported.
func (c *Coordinator) fail(round *Round, p *Policy, call string, err error) {
	c.metrics.PolicyFailure(p.Plugin, errReason(err))
	c.log.Warn("eviction policy call failed; its answer is dropped this round", "policy", p.Plugin, "call", call, "error", err)
	round.Failures = append(round.Failures, Failure{Policy: p.Plugin, Call: call, Err: err})
	if round.rec != nil {
		round.rec.Fail(p.Plugin, call, err)
	}
}

// askPolicy is the first half of a round for one policy, as Katalyst's
// collectEvictionResult runs it: evict_pods, then threshold_met, over
// every node in one batched call each. It returns the top_eviction_pods
// query for the nodes where a threshold is met past its grace period
// (nil if none), which askTop sends once every policy has been asked.
// Each answer is taken whole or dropped whole; as in Katalyst, a failed
// evict_pods does not stop the threshold pass, and a failed
// threshold_met ends the consecutive rounds its grace periods count.
func (c *Coordinator) askPolicy(ctx context.Context, p *Policy, nodes []*nodeRound, now time.Time, round *Round) *topQuery {
	req := abi.EvictionRequest{Limit: uint32(c.settings.Burst), Nodes: make([]abi.EvictionNode, len(nodes))}
	for i, nr := range nodes {
		req.Nodes[i] = abi.EvictionNode{Slot: nr.ni.Slot, Candidates: nr.candidates}
	}
	if p.points.Has(abi.PointEvictPods) {
		var rs []abi.NodeEvictPods
		err := c.withClient(ctx, p, func(cl *guest.Client) (err error) {
			rs, err = cl.EvictPods(ctx, p.index, &req)
			return err
		})
		if err != nil {
			c.fail(round, p, abi.FuncEvictPods.String(), err)
		} else {
			c.takeEvictPods(p, nodes, rs, now, round)
		}
	}
	if !p.points.Has(abi.PointEvictionThreshold) {
		return nil
	}
	var rs []abi.ThresholdResult
	err := c.withClient(ctx, p, func(cl *guest.Client) (err error) {
		rs, err = cl.ThresholdMet(ctx, p.index, &req)
		return err
	})
	if err != nil {
		c.fail(round, p, abi.FuncThresholdMet.String(), err)
		// No answer is not a met threshold: Katalyst leaves the plugin
		// out of the round's met thresholds, which restarts its grace
		// period.
		// The gauge says the same: a series the policy reported goes
		// back to not met rather than keeping the last answer.
		for _, nr := range nodes {
			name := nr.ni.Info.Node.Name
			c.state.unmetThreshold(p.Plugin, name)
			if k := (thresholdKey{p.Plugin, name}); c.gauges[k] {
				c.metrics.SetThresholdMet(p.Plugin, name, abi.NotMet)
			}
		}
		return nil
	}
	return c.takeThresholds(p, nodes, rs, now, round)
}

// topQuery is a policy's top_eviction_pods query of a round, kept until
// every policy has answered evict_pods and threshold_met.
type topQuery struct {
	p   *Policy
	req abi.TopEvictionRequest
	// rs are the policy's threshold_met answers, by node index; acted
	// the node index of each req.Nodes entry.
	rs    []abi.ThresholdResult
	acted []int
}

func (c *Coordinator) takeEvictPods(p *Policy, nodes []*nodeRound, rs []abi.NodeEvictPods, now time.Time, round *Round) {
	for i := range min(len(rs), len(nodes)) { // the client checked the count; never index past it
		nr := nodes[i]
		var ans *decision.EvictionAnswer
		if round.rec != nil && len(rs[i].Pods) > 0 {
			ans = &decision.EvictionAnswer{Policy: p.Plugin, Node: nr.ni.Info.Node.Name, Call: abi.FuncEvictPods.String(), DryRun: p.DryRun}
		}
		for _, ep := range rs[i].Pods {
			if ans != nil {
				scope := ScopeSoft
				if ep.Force {
					scope = ScopeForce
				}
				ans.Pods = append(ans.Pods, decision.EvictionPod{Pod: podAt(nr, ep.Pod), Scope: scope, Reason: ep.Reason})
			}
			cand, ok := c.named(p, nr, ep.Pod)
			if !ok {
				ignored(round, p, nr, ep.Pod)
				continue
			}
			cand.scope = ScopeSoft
			if ep.Force {
				cand.scope = ScopeForce
			}
			cand.reason, cand.grace = ep.Reason, ep.GracePeriodSeconds
			switch {
			case p.DryRun:
				c.dryRun(round, cand)
			case ep.Force:
				nr.force[cand.pod.UID] = cand // a later policy overwrites, as in Katalyst
			default:
				nr.soft[cand.pod.UID] = cand
			}
		}
		if ans != nil {
			round.rec.Answer(*ans)
		}
		if !p.DryRun {
			c.state.observeCondition(nr.ni.Info.Node.Name, rs[i].Condition, now)
		}
	}
}

// takeThresholds records a policy's threshold_met answers and returns
// its top_eviction_pods query for the nodes past their grace period (nil
// if none). A NOT_MET answer is ignored whole, its condition with it, as
// Katalyst's collectMetThreshold does.
func (c *Coordinator) takeThresholds(p *Policy, nodes []*nodeRound, rs []abi.ThresholdResult, now time.Time, round *Round) *topQuery {
	q := &topQuery{p: p, rs: rs, req: abi.TopEvictionRequest{Limit: uint32(c.settings.Burst)}}
	for i := range min(len(rs), len(nodes)) {
		r, nr := &rs[i], nodes[i]
		name := nr.ni.Info.Node.Name
		k := thresholdKey{p.Plugin, name}
		if r.Met != abi.NotMet || c.gauges[k] {
			c.metrics.SetThresholdMet(p.Plugin, name, r.Met)
			c.gauges[k] = true
		}
		act := c.state.observeThreshold(p.Plugin, name, r, now)
		if r.Met == abi.NotMet {
			continue
		}
		if round.rec != nil {
			round.rec.Answer(decision.EvictionAnswer{Policy: p.Plugin, Node: name, Call: abi.FuncThresholdMet.String(), DryRun: p.DryRun,
				Met: r.Met.String(), Scope: r.Scope, Observed: r.ObservedValue, Target: r.ThresholdValue, Acted: act})
		}
		if !p.DryRun {
			c.state.observeCondition(name, r.Condition, now)
		}
		round.Thresholds = append(round.Thresholds, Threshold{Policy: p.Plugin, Node: name, Met: r.Met, Scope: r.Scope,
			Observed: r.ObservedValue, Target: r.ThresholdValue, Acted: act})
		if !act {
			continue
		}
		cands := r.Candidates
		if len(cands) == 0 {
			cands = nr.candidates
		}
		topN := uint32(0) // a soft query: as many as the policy sees fit
		if r.Met == abi.HardMet {
			topN = 1
		}
		q.req.Nodes = append(q.req.Nodes, abi.TopEvictionNode{Slot: nr.ni.Slot, TopN: topN, Scope: r.Scope, Candidates: cands})
		q.acted = append(q.acted, i)
	}
	if len(q.req.Nodes) == 0 {
		return nil
	}
	return q
}

// askTop is the second half of a round for one policy: its
// top_eviction_pods query, asked once every policy has answered
// evict_pods and threshold_met, so that a hard threshold's pod is
// merged into every force answer of the round (mergeForce).
func (c *Coordinator) askTop(ctx context.Context, q *topQuery, nodes []*nodeRound, round *Round) {
	p := q.p
	var trs []abi.TopEvictionPods
	err := c.withClient(ctx, p, func(cl *guest.Client) (err error) {
		trs, err = cl.TopEvictionPods(ctx, p.index, &q.req)
		return err
	})
	if err != nil {
		c.fail(round, p, abi.FuncTopEvictionPods.String(), err)
		return
	}
	for j := range min(len(trs), len(q.acted)) {
		i := q.acted[j]
		r, nr := &q.rs[i], nodes[i]
		var ans *decision.EvictionAnswer
		if round.rec != nil {
			ans = &decision.EvictionAnswer{Policy: p.Plugin, Node: nr.ni.Info.Node.Name, Call: abi.FuncTopEvictionPods.String(), DryRun: p.DryRun,
				Met: r.Met.String(), Scope: r.Scope}
		}
		for _, idx := range trs[j].Pods {
			reason := fmt.Sprintf("plugin %s met threshold in scope %s, target %s, observed %s",
				p.Plugin, r.Scope, convert.Quantity(r.Scope, r.ThresholdValue), convert.Quantity(r.Scope, r.ObservedValue))
			if ans != nil {
				ans.Pods = append(ans.Pods, decision.EvictionPod{Pod: podAt(nr, idx), Scope: r.Scope, Reason: reason})
			}
			cand, ok := c.named(p, nr, idx)
			if !ok {
				ignored(round, p, nr, idx)
				continue
			}
			cand.scope, cand.grace = r.Scope, trs[j].GracePeriodSeconds
			cand.reason = reason
			switch {
			case p.DryRun:
				c.dryRun(round, cand)
			case r.Met == abi.HardMet:
				if old := nr.force[cand.pod.UID]; old != nil && round.rec != nil {
					round.rec.Add(&round.rec.Merged, decision.EvictionPod{Pod: podName(cand.pod), Node: cand.node, Policy: old.policy + "+" + cand.policy,
						Scope: cand.scope, Reason: "named by two force answers; one entry keeps both reasons"})
				}
				mergeForce(nr.force, cand)
			default:
				nr.soft[cand.pod.UID] = cand
			}
		}
		if ans != nil {
			round.rec.Answer(*ans)
		}
	}
}

// named makes the candidate for the pod p named by index on nr, with the
// policy's attribution, or refuses it (logged) when the pod was not
// offered: a protected pod never becomes a candidate, whatever a reply
// says.
func (c *Coordinator) named(p *Policy, nr *nodeRound, idx uint32) (*candidate, bool) {
	cand, ok := nr.candidateAt(idx)
	if !ok {
		c.log.Error("eviction policy named a pod that was not offered; ignored", "policy", p.Plugin,
			"node", nr.ni.Info.Node.Name, "pod_index", idx)
		return nil, false
	}
	cand.policy, cand.forceDelete = p.Plugin, p.Force
	return cand, true
}

// mergeForce adds a hard threshold's pod to the force set as Katalyst's
// collectTopEvictionPods does: a pod already there keeps one entry, with
// the new reason first, then the earlier one (cut to guest.MaxText, as an
// Event message is), the longer of the two grace periods (either one
// when the other is unset), and the new policy and scope; forceDelete
// holds if either policy asked for it.
func mergeForce(force map[string]*candidate, cand *candidate) {
	old := force[cand.pod.UID]
	if old == nil {
		force[cand.pod.UID] = cand
		return
	}
	merged := *cand
	merged.reason = guest.Text(cand.reason + "; " + old.reason)
	if old.grace != nil && (cand.grace == nil || *old.grace > *cand.grace) {
		merged.grace = old.grace
	}
	merged.forceDelete = old.forceDelete || cand.forceDelete
	force[cand.pod.UID] = &merged
}

func (c *Coordinator) dryRun(round *Round, cand *candidate) {
	c.metrics.DryRunVictim(cand.policy)
	c.log.Info("dry-run eviction policy would evict a pod", "policy", cand.policy, "pod", cand.pod.Namespace+"/"+cand.pod.Name,
		"node", cand.node, "scope", cand.scope, "reason", cand.reason)
	round.DryRun = append(round.DryRun, victimOf(cand))
	if round.rec != nil {
		round.rec.Add(&round.rec.DryRun, recPod(cand, ""))
	}
}

// podName is a pod's namespace/name.
func podName(p *abi.Pod) string { return p.Namespace + "/" + p.Name }

// podAt names the pod at index idx of nr, for a record ("#idx" when a
// reply named an index past the node's pods).
func podAt(nr *nodeRound, idx uint32) string {
	if int64(idx) < int64(len(nr.ni.Info.Pods)) {
		return podName(&nr.ni.Info.Pods[idx])
	}
	return fmt.Sprintf("#%d", idx)
}

// ignored records a pod a policy named that was not offered.
func ignored(round *Round, p *Policy, nr *nodeRound, idx uint32) {
	if round.rec != nil {
		round.rec.Add(&round.rec.Ignored, decision.EvictionPod{Pod: podAt(nr, idx), Node: nr.ni.Info.Node.Name, Policy: p.Plugin,
			Reason: "named but not offered (protected, held or blocked): refused"})
	}
}

// recPod is a candidate as a record names it, why overriding its reason
// when set.
func recPod(c *candidate, why string) decision.EvictionPod {
	r := c.reason
	if why != "" {
		r = why
	}
	return decision.EvictionPod{Pod: podName(c.pod), Node: c.node, Policy: c.policy, Scope: c.scope, Reason: r}
}

func victimOf(c *candidate) Victim {
	return Victim{Pod: c.pod, Node: c.node, Policy: c.policy, Scope: c.scope, Reason: c.reason, Grace: c.grace, forceDelete: c.forceDelete}
}

// applyTaints swaps each node's managed taints for those of its active
// conditions.
func (c *Coordinator) applyTaints(ctx context.Context, now time.Time, round *Round) {
	want := c.state.desiredTaints(now, c.settings.ConditionTransitionPeriod)
	for _, ni := range c.snap.Nodes() {
		name := ni.Info.Node.Name
		have := managedTaints(&ni.Info.Node)
		if slices.Equal(have, want[name]) {
			continue
		}
		err := c.cluster.SetEvictionTaints(ctx, name, want[name])
		if err != nil {
			c.log.Warn("eviction: could not update node taints; next round retries", "node", name, "error", err)
		} else {
			c.log.Info("eviction: node taints updated", "node", name, "taints", taintsString(want[name]))
		}
		round.Taints = append(round.Taints, TaintChange{Node: name, Before: have, After: want[name], Err: err})
	}
}

// selectVictims picks each node's victims: the force set, plus the one
// soft candidate least worth keeping, sorted by CandidateSort, the most
// evictable burst of them, within the cluster-wide rate.
func (c *Coordinator) selectVictims(nodes []*nodeRound, now time.Time, round *Round) {
	if len(nodes) == 0 {
		return
	}
	// Start at a different node each round, so that under the rate
	// limit no node always goes first.
	first := int(now.UnixNano()/int64(time.Millisecond)) % len(nodes)
	if first < 0 {
		first = -first
	}
	for k := range nodes {
		nr := nodes[(first+k)%len(nodes)]
		for uid, cand := range nr.soft {
			if nr.force[uid] != nil {
				if round.rec != nil {
					round.rec.Add(&round.rec.NotChosen, recPod(cand, "a force answer names it too: evicted as force, not soft"))
				}
				delete(nr.soft, uid)
			}
		}
		if len(nr.soft) > 0 {
			soft := make([]*candidate, 0, len(nr.soft))
			for _, cand := range nr.soft {
				if cand.guard == 0 {
					soft = append(soft, cand)
				}
			}
			if len(soft) > 0 {
				sortCandidates(soft)
				best := soft[len(soft)-1] // at most one soft victim per node and round
				nr.force[best.pod.UID] = best
				if round.rec != nil {
					for _, cand := range soft[:len(soft)-1] {
						round.rec.Add(&round.rec.NotChosen, recPod(cand, "one soft victim per node and round: "+podName(best.pod)+" sorts as more evictable"))
					}
				}
			}
		}
		if len(nr.force) == 0 {
			continue
		}
		list := make([]*candidate, 0, len(nr.force))
		for _, cand := range nr.force {
			if cand.guard == 0 {
				list = append(list, cand)
			}
		}
		sortCandidates(list)
		if over := len(list) - c.settings.Burst; over > 0 && round.rec != nil {
			for _, cand := range list[:over] {
				round.rec.Add(&round.rec.NotChosen, recPod(cand, fmt.Sprintf("past the burst of %d pods per node and round", c.settings.Burst)))
			}
		}
		for i, n := len(list)-1, 0; i >= 0 && n < c.settings.Burst; i, n = i-1, n+1 {
			cand := list[i]
			if !c.limiter.AllowN(now, 1) {
				round.Throttled++
				if round.rec != nil {
					round.rec.Add(&round.rec.Throttled, recPod(cand, ""))
				}
				continue
			}
			if round.rec != nil {
				round.rec.Add(&round.rec.Evicted, recPod(cand, ""))
			}
			c.metrics.Victim(cand.policy, cand.scope)
			c.log.Info("evicting pod", "policy", cand.policy, "pod", cand.pod.Namespace+"/"+cand.pod.Name,
				"node", cand.node, "scope", cand.scope, "reason", cand.reason)
			round.Victims = append(round.Victims, victimOf(cand))
		}
	}
}

func taintsString(ts []abi.Taint) string {
	s := ""
	for i, t := range ts {
		if i > 0 {
			s += ","
		}
		s += t.Key + ":" + t.Effect.String()
	}
	if s == "" {
		return "none"
	}
	return s
}
