package eviction

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wasmsched/wasmsched/abi"
)

// TaintPrefix starts the key of every taint the coordinator manages: a
// node condition NAME reported by a policy becomes the taint
// eviction.wasmsched.io/NAME. Taints with this prefix belong to the
// coordinator, which adds and removes them with swap semantics; nothing
// else should set them.
const TaintPrefix = "eviction.wasmsched.io/"

// MaxNodeConditions bounds the conditions (each a managed taint, per
// effect) the coordinator keeps per node: condition names come from
// guests, and a policy naming a new one every round would otherwise
// grow a node's taints for a whole transition period. Past the bound the
// conditions observed longest ago are forgotten first.
const MaxNodeConditions = 16

// Seconds converts a count of seconds that came from a guest, a
// configuration or an API answer into a Duration, saturating at the
// largest (and smallest) Duration instead of wrapping:
// time.Duration(s)*time.Second overflows past about 292 years, and a
// grace period wrapped negative would be acted on at once.
func Seconds(s int64) time.Duration {
	const limit = int64(math.MaxInt64 / int64(time.Second))
	switch {
	case s > limit:
		return math.MaxInt64
	case s < -limit:
		return math.MinInt64
	}
	return time.Duration(s) * time.Second
}

// thresholdKey identifies one policy's threshold on one node.
type thresholdKey struct{ policy, node string }

// threshold is the state kept per policy and node between rounds.
type threshold struct {
	// firstObserved is when the threshold was first seen met in the
	// current run of consecutive met rounds.
	firstObserved time.Time
}

// condition is a node condition some policy reported met.
type condition struct {
	lastObserved time.Time
	effects      []abi.TaintEffect
}

// state is what the coordinator remembers between rounds. Only the
// round goroutine touches it.
type state struct {
	thresholds map[thresholdKey]*threshold
	// conditions are by node, then by name, at most MaxNodeConditions
	// per node.
	conditions map[string]map[string]*condition
	// blocked pods (by UID) are not offered to policies before the time
	// given: the Eviction API refused them (429, a PodDisruptionBudget)
	// and said when to come back.
	blocked map[string]time.Time
}

func newState() *state {
	return &state{thresholds: map[thresholdKey]*threshold{}, conditions: map[string]map[string]*condition{}, blocked: map[string]time.Time{}}
}

// observeThreshold updates a policy's threshold on a node from this
// round's answer and reports whether it is to be acted on: met, and met
// in consecutive rounds for at least its (current) grace period. The
// grace period saturates (Seconds): one too long for a Duration is never
// over. A negative one (the policy client refuses those) is never acted
// on.
func (s *state) observeThreshold(policy, node string, r *abi.ThresholdResult, now time.Time) bool {
	k := thresholdKey{policy, node}
	if r.Met == abi.NotMet {
		delete(s.thresholds, k) // a round of NOT_MET restarts the grace period
		return false
	}
	t := s.thresholds[k]
	if t == nil {
		t = &threshold{firstObserved: now}
		s.thresholds[k] = t
	}
	if r.GracePeriodSeconds < 0 {
		return false
	}
	return now.Sub(t.firstObserved) >= Seconds(r.GracePeriodSeconds)
}

// unmetThreshold ends a policy's run of met rounds on a node: a round
// without its answer (the call failed) counts as not met.
func (s *state) unmetThreshold(policy, node string) {
	delete(s.thresholds, thresholdKey{policy, node})
}

// forgetThresholds drops the state of nodes and policies that are gone.
func (s *state) forgetThresholds(keep func(thresholdKey) bool) {
	for k := range s.thresholds {
		if !keep(k) {
			delete(s.thresholds, k)
		}
	}
}

// observeCondition records that a node condition was reported met now.
// The effects are the last report's valid ones, each once (so at most
// three, whatever the report's length). A new condition on a node that
// has MaxNodeConditions already replaces the one observed longest ago.
func (s *state) observeCondition(node string, c *abi.EvictionCondition, now time.Time) {
	if c == nil || !c.Met || c.Kind != abi.ConditionNodeKind {
		return
	}
	conds := s.conditions[node]
	if conds == nil {
		conds = map[string]*condition{}
		s.conditions[node] = conds
	}
	if _, ok := conds[c.Name]; !ok && len(conds) >= MaxNodeConditions {
		delete(conds, oldestCondition(conds))
	}
	conds[c.Name] = &condition{lastObserved: now, effects: distinctEffects(c.Effects)}
}

// oldestCondition names the condition observed longest ago (of two
// observed together, the greater name, so the choice is deterministic).
func oldestCondition(conds map[string]*condition) string {
	oldest := ""
	var at time.Time
	for name, c := range conds {
		if oldest == "" || c.lastObserved.Before(at) || c.lastObserved.Equal(at) && name > oldest {
			oldest, at = name, c.lastObserved
		}
	}
	return oldest
}

// distinctEffects keeps the valid taint effects of es, each once, in
// their first order.
func distinctEffects(es []abi.TaintEffect) []abi.TaintEffect {
	var out []abi.TaintEffect
	for _, e := range es {
		if e >= abi.EffectNoSchedule && e <= abi.EffectNoExecute && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// desiredTaints lists, per node, the taints of the conditions last
// observed less than the transition period ago (Katalyst's
// conditionsObservedSince: a period of 0 keeps none), sorted, without
// duplicates or invalid effects; the others are forgotten.
func (s *state) desiredTaints(now time.Time, transition time.Duration) map[string][]abi.Taint {
	out := map[string][]abi.Taint{}
	for node, conds := range s.conditions {
		for name, c := range conds {
			if now.Sub(c.lastObserved) >= transition { // active strictly within the period, as in Katalyst
				delete(conds, name)
				continue
			}
			for _, e := range c.effects { // valid and distinct (observeCondition)
				out[node] = append(out[node], abi.Taint{Key: TaintPrefix + name, Effect: e})
			}
		}
		if len(conds) == 0 {
			delete(s.conditions, node)
		}
	}
	for _, ts := range out {
		sortTaints(ts)
	}
	return out
}

// Managed reports whether a taint key belongs to the coordinator.
func Managed(key string) bool { return strings.HasPrefix(key, TaintPrefix) }

// SwapTaints returns have with its managed taints replaced by want,
// the others kept in place: what Cluster.SetEvictionTaints writes.
func SwapTaints(have, want []abi.Taint) []abi.Taint {
	out := make([]abi.Taint, 0, len(have)+len(want))
	for _, t := range have {
		if !Managed(t.Key) {
			out = append(out, t)
		}
	}
	return append(out, want...)
}

// managedTaints returns a node's taints under TaintPrefix, sorted.
func managedTaints(n *abi.Node) []abi.Taint {
	var out []abi.Taint
	for _, t := range n.Taints {
		if Managed(t.Key) {
			out = append(out, t)
		}
	}
	sortTaints(out)
	return out
}

func sortTaints(ts []abi.Taint) {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Key != ts[j].Key {
			return ts[i].Key < ts[j].Key
		}
		return ts[i].Effect < ts[j].Effect
	})
}
