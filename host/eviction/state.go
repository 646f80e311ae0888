package eviction

import (
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

// thresholdKey identifies one policy's threshold on one node.
type thresholdKey struct{ policy, node string }

// threshold is the state kept per policy and node between rounds.
type threshold struct {
	// firstObserved is when the threshold was first seen met in the
	// current run of consecutive met rounds.
	firstObserved time.Time
}

// conditionKey identifies a condition on a node.
type conditionKey struct{ node, name string }

// condition is a node condition some policy reported met.
type condition struct {
	lastObserved time.Time
	effects      []abi.TaintEffect
}

// state is what the coordinator remembers between rounds. Only the
// round goroutine touches it.
type state struct {
	thresholds map[thresholdKey]*threshold
	conditions map[conditionKey]*condition
	// blocked pods (by UID) are not offered to policies before the time
	// given: the Eviction API refused them (429, a PodDisruptionBudget)
	// and said when to come back.
	blocked map[string]time.Time
}

func newState() *state {
	return &state{thresholds: map[thresholdKey]*threshold{}, conditions: map[conditionKey]*condition{}, blocked: map[string]time.Time{}}
}

// observeThreshold updates a policy's threshold on a node from this
// round's answer and reports whether it is to be acted on: met, and met
// in consecutive rounds for at least its (current) grace period.
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
	return now.Sub(t.firstObserved) >= time.Duration(r.GracePeriodSeconds)*time.Second
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
// The effects are the last report's.
func (s *state) observeCondition(node string, c *abi.EvictionCondition, now time.Time) {
	if c == nil || !c.Met || c.Kind != abi.ConditionNodeKind {
		return
	}
	s.conditions[conditionKey{node, c.Name}] = &condition{lastObserved: now, effects: c.Effects}
}

// desiredTaints lists, per node, the taints of the conditions observed
// within the transition period, sorted, without duplicates or invalid
// effects; conditions older than that are forgotten.
func (s *state) desiredTaints(now time.Time, transition time.Duration) map[string][]abi.Taint {
	out := map[string][]abi.Taint{}
	for k, c := range s.conditions {
		if now.Sub(c.lastObserved) > transition {
			delete(s.conditions, k)
			continue
		}
		for _, e := range c.effects {
			if e < abi.EffectNoSchedule || e > abi.EffectNoExecute {
				continue
			}
			t := abi.Taint{Key: TaintPrefix + k.name, Effect: e}
			dup := false
			for _, have := range out[k.node] {
				dup = dup || have == t
			}
			if !dup {
				out[k.node] = append(out[k.node], t)
			}
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
