package plugintest

import (
	"sort"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Eviction policies (ABI v1.2) are tested on one node, built with
// MakeNode and AddPod, as the coordinator offers it in a round:
//
//	n := plugintest.EvictionNodeOf(plugintest.MakeNode().Name("n1").
//		AddPod(plugintest.MakePod().Name("a").Priority(10).Obj()).Obj())
//	victims := plugintest.EvictionRound(t, 3, n, p)

// EvictionNodeOf makes the view an eviction policy gets of node: every
// pod of node.Pods a candidate, and an observation with one (empty)
// PodObservation per pod. Set Obs' Usage, Conditions or Pods[i].Usage
// for a policy that reads them; narrow Candidates for pods the
// coordinator would protect (critical, static, mirror, terminating or
// skipped pods are never offered).
func EvictionNodeOf(node *plugin.NodeInfo) *plugin.EvictionNode {
	n := &plugin.EvictionNode{NodeInfo: node, Obs: &abi.NodeObservation{Pods: make([]abi.PodObservation, len(node.Pods))}}
	for i := range node.Pods {
		n.Candidates = append(n.Candidates, uint32(i))
	}
	return n
}

// limitOf is the SDK's limit for n candidates: the burst (0: none),
// never more than n.
func limitOf(burst, n int) int {
	if burst <= 0 || burst > n {
		return n
	}
	return burst
}

// checkNamed fails the test for a pod index a policy named that is not
// among candidates, or named twice: the SDK would turn the whole call
// into an error, and the host logs the policy as failed.
func checkNamed(tb testing.TB, p plugin.Plugin, call string, node *plugin.EvictionNode, named, candidates []uint32) bool {
	tb.Helper()
	seen := map[uint32]bool{}
	for _, i := range named {
		found := false
		for _, c := range candidates {
			found = found || c == i
		}
		if !found {
			tb.Errorf("plugin %s: %s on node %s named pod index %d, not one of the candidates %v: the call fails", p.Name(), call, node.Name(), i, candidates)
			return false
		}
		if seen[i] {
			tb.Errorf("plugin %s: %s on node %s named pod index %d twice: the call fails", p.Name(), call, node.Name(), i)
			return false
		}
		seen[i] = true
	}
	return true
}

// RunEvictPods runs p's GetEvictPods on node with the coordinator's burst
// as the limit (0: no limit) and returns its answer as the SDK sends it:
// cut to the limit. Naming a pod that is not a candidate, or one twice,
// fails the test and returns nothing, as the SDK fails the call.
func RunEvictPods(tb testing.TB, p plugin.Plugin, node *plugin.EvictionNode, burst int) ([]abi.EvictPod, *abi.EvictionCondition) {
	tb.Helper()
	ep, ok := p.(plugin.EvictPodsPlugin)
	if !ok {
		tb.Fatalf("plugin %s is no plugin.EvictPodsPlugin", p.Name())
	}
	limit := limitOf(burst, len(node.Candidates))
	pods, cond := ep.GetEvictPods(node, limit)
	named := make([]uint32, len(pods))
	for i := range pods {
		named[i] = pods[i].Pod
	}
	if !checkNamed(tb, p, "GetEvictPods", node, named, node.Candidates) {
		return nil, nil
	}
	if len(pods) > limit {
		pods = pods[:limit]
	}
	return pods, cond
}

// RunThresholdMet runs p's ThresholdMet on node. A candidate list naming
// a pod the node does not offer, or one twice, fails the test.
func RunThresholdMet(tb testing.TB, p plugin.Plugin, node *plugin.EvictionNode) abi.ThresholdResult {
	tb.Helper()
	tp, ok := p.(plugin.ThresholdPlugin)
	if !ok {
		tb.Fatalf("plugin %s is no plugin.ThresholdPlugin", p.Name())
	}
	r := tp.ThresholdMet(node)
	if !checkNamed(tb, p, "ThresholdMet", node, r.Candidates, node.Candidates) {
		r.Candidates = nil
	}
	return r
}

// RunTopEvictionPods asks p for the pods to evict for a threshold met with
// r, as the coordinator asks once the grace period has passed: topN 1 for
// HardMet, 0 (a soft query) otherwise; candidates are r.Candidates, or
// every candidate of node when r names none; the limit is the burst. It
// returns the answer as the SDK sends it (cut to the limit and to topN),
// or nothing for NotMet.
func RunTopEvictionPods(tb testing.TB, p plugin.Plugin, node *plugin.EvictionNode, r abi.ThresholdResult, burst int) ([]uint32, *int64) {
	tb.Helper()
	tp, ok := p.(plugin.ThresholdPlugin)
	if !ok {
		tb.Fatalf("plugin %s is no plugin.ThresholdPlugin", p.Name())
	}
	if r.Met == abi.NotMet {
		return nil, nil
	}
	cands := r.Candidates
	if len(cands) == 0 {
		cands = node.Candidates
	}
	topN := 0
	if r.Met == abi.HardMet {
		topN = 1
	}
	limit := limitOf(burst, len(cands))
	pods, grace := tp.GetTopEvictionPods(node, topN, r.Scope, cands, limit)
	if !checkNamed(tb, p, "GetTopEvictionPods", node, pods, cands) {
		return nil, nil
	}
	if len(pods) > limit {
		pods = pods[:limit]
	}
	if topN > 0 && len(pods) > topN {
		pods = pods[:topN]
	}
	return pods, grace
}

// EvictionVictim is a pod the coordinator evicts in a round.
type EvictionVictim struct {
	// Pod is the pod's index in the node's Pods.
	Pod uint32
	// Policy is the plugin that asked for it (the last one, when several did).
	Policy string
	// Scope is "force", "soft" (GetEvictPods) or the threshold's scope.
	Scope string
	// Reason is what the Event and the log say.
	Reason string
	// GracePeriodSeconds is the grace the eviction asks for; nil: the pod's own.
	GracePeriodSeconds *int64
}

type evictionCand struct {
	EvictionVictim
	pod *abi.Pod
}

// EvictionRound runs one round of the coordinator on one node with the
// given policies (each an EvictPodsPlugin, a ThresholdPlugin or both) and
// burst, every threshold's grace period taken as past, and returns the
// pods it evicts, in eviction order. As the coordinator does: GetEvictPods'
// Force pods and a HardMet threshold's pods (topN 1) are force victims;
// the other pods named are soft candidates, of which only the one least
// worth keeping goes; a pod named by several policies is one victim;
// victims go least worth keeping first (BestEffort pods, then lower
// priority, then force before memory before cpu before other scopes, then
// name), at most burst of them (0: no limit). Rate limits, taints,
// dry-run and PodDisruptionBudgets are the coordinator's and not
// modelled.
func EvictionRound(tb testing.TB, burst int, node *plugin.EvictionNode, policies ...plugin.Plugin) []EvictionVictim {
	tb.Helper()
	force, soft := map[uint32]*evictionCand{}, map[uint32]*evictionCand{}
	cand := func(p plugin.Plugin, idx uint32, scope, reason string, grace *int64) *evictionCand {
		return &evictionCand{EvictionVictim{Pod: idx, Policy: p.Name(), Scope: scope, Reason: reason, GracePeriodSeconds: grace}, node.Pod(idx)}
	}
	for _, p := range policies {
		_, isEvict := p.(plugin.EvictPodsPlugin)
		_, isThreshold := p.(plugin.ThresholdPlugin)
		if !isEvict && !isThreshold {
			tb.Fatalf("plugin %s is no eviction policy (plugin.EvictPodsPlugin or plugin.ThresholdPlugin)", p.Name())
		}
		if isEvict {
			pods, _ := RunEvictPods(tb, p, node, burst)
			for _, ep := range pods {
				if ep.Force {
					force[ep.Pod] = cand(p, ep.Pod, "force", ep.Reason, ep.GracePeriodSeconds)
				} else {
					soft[ep.Pod] = cand(p, ep.Pod, "soft", ep.Reason, ep.GracePeriodSeconds)
				}
			}
		}
		if !isThreshold {
			continue
		}
		r := RunThresholdMet(tb, p, node)
		pods, grace := RunTopEvictionPods(tb, p, node, r, burst)
		reason := "plugin " + p.Name() + " met threshold in scope " + r.Scope
		for _, idx := range pods {
			c := cand(p, idx, r.Scope, reason, grace)
			if r.Met != abi.HardMet {
				soft[idx] = c
				continue
			}
			if old := force[idx]; old != nil {
				c.Reason = old.Reason + "; " + c.Reason
				c.GracePeriodSeconds = old.GracePeriodSeconds
				if old.GracePeriodSeconds != nil && grace != nil && *grace > *old.GracePeriodSeconds {
					c.GracePeriodSeconds = grace
				}
			}
			force[idx] = c
		}
	}
	var list []*evictionCand
	var softs []*evictionCand
	for idx, c := range soft {
		if force[idx] == nil {
			softs = append(softs, c)
		}
	}
	if len(softs) > 0 {
		sortEvictionCands(softs)
		best := softs[len(softs)-1]
		force[best.Pod] = best
	}
	for _, c := range force {
		list = append(list, c)
	}
	sortEvictionCands(list)
	var out []EvictionVictim
	for i := len(list) - 1; i >= 0 && (burst <= 0 || len(out) < burst); i-- {
		out = append(out, list[i].EvictionVictim)
	}
	return out
}

// sortEvictionCands sorts least evictable first, as the coordinator's
// CandidateSort: non-BestEffort before BestEffort, higher priority first,
// then scope rank (force, memory, cpu, other), then name descending.
func sortEvictionCands(cs []*evictionCand) {
	rank := func(s string) int {
		switch s {
		case "force":
			return 1
		case "memory":
			return 2
		case "cpu":
			return 3
		}
		return 4
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if ra, rb := a.pod.QoS == abi.QoSBestEffort, b.pod.QoS == abi.QoSBestEffort; ra != rb {
			return rb
		}
		if a.pod.Priority != b.pod.Priority {
			return a.pod.Priority > b.pod.Priority
		}
		if ra, rb := rank(a.Scope), rank(b.Scope); ra != rb {
			return ra < rb
		}
		if a.pod.Name != b.pod.Name {
			return a.pod.Name > b.pod.Name
		}
		return a.pod.Namespace > b.pod.Namespace
	})
}
