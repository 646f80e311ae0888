package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
)

// Values of the result label of wasmsched_eviction_kills_total: how one
// kill attempt of the eviction coordinator's pod killer ended. Each
// attempt counts exactly once.
const (
	// KillSucceeded: the eviction (or delete) was accepted and the pod
	// was gone before the timeout.
	KillSucceeded = "succeeded"
	// KillFailed: the request was refused (a negative grace period, an
	// API error other than 429); the killer retries with backoff unless
	// the request itself was invalid.
	KillFailed = "failed"
	// KillBlocked: a PodDisruptionBudget allowed no disruption (429) and
	// the policy does not force; the pod stays and is reconsidered later.
	KillBlocked = "blocked"
	// KillForced: a PodDisruptionBudget refused the eviction, the policy
	// forces, and the pod was deleted after Retry-After and is gone.
	KillForced = "forced"
	// KillTimeout: the pod was still there when the kill's timeout
	// (max(1.5×grace, floor)) passed; the killer retries.
	KillTimeout = "timeout"
)

// Suggested values of the reason label of
// wasmsched_eviction_policy_failures_total and
// wasmsched_vpod_policy_failures_total: why a policy's answer was
// dropped. PolicyFailureMalformedReply is a reply the host could not
// decode (the instance is lost); PolicyFailureInvalidReply one that
// decoded but says what the ABI does not allow.
const (
	PolicyFailureTrap           = "trap"
	PolicyFailureTimeout        = "timeout"
	PolicyFailureInvalidReply   = "invalid_reply"
	PolicyFailureMalformedReply = "malformed_reply"
	PolicyFailureError          = "error"
)

// Eviction are the eviction coordinator's metrics (host/engines/eviction). A nil
// value records nothing, so the coordinator and its killer need no
// metrics to run.
type Eviction struct {
	victims        *prometheus.CounterVec
	dryRunVictims  *prometheus.CounterVec
	kills          *prometheus.CounterVec
	thresholdMet   *prometheus.GaugeVec
	policyFailures *prometheus.CounterVec
	rounds         prometheus.Counter
	roundDuration  prometheus.Histogram
	// apiBlocked is wasmsched_eviction_api_blocked_total{caller="eviction"}.
	apiBlocked prometheus.Counter
}

func newEvictionMetrics() *Eviction {
	return &Eviction{
		victims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "eviction_victims_total",
			Help: "Number of pods the eviction coordinator chose to evict, by the policy that named them and the scope " +
				"(the threshold's scope, or 'force'/'soft' for pods named regardless of thresholds).",
		}, []string{"policy", "scope"}),
		dryRunVictims: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "eviction_dryrun_victims_total",
			Help:      "Number of pods a dry-run eviction policy would have evicted (nothing was killed), by policy.",
		}, []string{"policy"}),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "eviction_kills_total",
			Help: "Number of pod kill attempts by the eviction killer, by how each ended: 'succeeded' (the pod is gone), " +
				"'failed' (refused or an API error; retried with backoff), 'blocked' (a PodDisruptionBudget allowed no " +
				"disruption; the pod stays), 'forced' (deleted after a PodDisruptionBudget refusal, as the policy forces), " +
				"'timeout' (still there after max(1.5×grace, floor); retried).",
		}, []string{"result"}),
		thresholdMet: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: WasmSubsystem,
			Name:      "eviction_threshold_met",
			Help: "State of an eviction policy's threshold on a node at the last round: 0 not met, 1 soft met, 2 hard met. " +
				"A round in which the policy's threshold_met call failed reads 0, as the coordinator treats it (the grace period restarts). " +
				"Series of nodes that left the cluster are removed.",
		}, []string{"policy", "node"}),
		policyFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "eviction_policy_failures_total",
			Help: "Number of eviction rounds in which a policy's answer was skipped, by policy and reason " +
				"(trap, timeout, invalid_reply, error).",
		}, []string{"policy", "reason"}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "eviction_rounds_total",
			Help:      "Number of eviction coordinator rounds run.",
		}),
		roundDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: WasmSubsystem,
			Name:      "eviction_round_duration_seconds",
			Help:      "Duration in seconds of one eviction coordinator round (observe, ask the policies, choose, submit kills).",
			Buckets:   prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
	}
}

func (e *Eviction) collectors() []prometheus.Collector {
	return []prometheus.Collector{e.victims, e.dryRunVictims, e.kills, e.thresholdMet, e.policyFailures, e.rounds, e.roundDuration}
}

// Eviction returns the eviction coordinator's metrics (nil when m is nil).
func (m *Metrics) Eviction() *Eviction {
	if m == nil {
		return nil
	}
	return m.eviction
}

// Victim counts one pod chosen for eviction by policy under scope.
func (e *Eviction) Victim(policy, scope string) {
	if e != nil {
		e.victims.WithLabelValues(policy, scope).Inc()
	}
}

// DryRunVictim counts one pod a dry-run policy would have evicted.
func (e *Eviction) DryRunVictim(policy string) {
	if e != nil {
		e.dryRunVictims.WithLabelValues(policy).Inc()
	}
}

// Kill counts one kill attempt that ended with result (KillSucceeded, ...).
func (e *Eviction) Kill(result string) {
	if e != nil {
		e.kills.WithLabelValues(result).Inc()
	}
}

// SetThresholdMet records the state of policy's threshold on node.
func (e *Eviction) SetThresholdMet(policy, node string, met abi.MetType) {
	if e != nil {
		e.thresholdMet.WithLabelValues(policy, node).Set(float64(met))
	}
}

// DeleteThresholdMet removes the series of policy on node, for a policy
// that no longer reports on the node.
func (e *Eviction) DeleteThresholdMet(policy, node string) {
	if e != nil {
		e.thresholdMet.DeleteLabelValues(policy, node)
	}
}

// DeleteNode removes every policy's threshold series of node: a node that
// left the cluster must not keep a series forever.
func (e *Eviction) DeleteNode(node string) {
	if e != nil {
		e.thresholdMet.DeletePartialMatch(prometheus.Labels{"node": node})
	}
}

// DeletePolicy removes every threshold series of policy, for a policy
// that a configuration reload removed.
func (e *Eviction) DeletePolicy(policy string) {
	if e != nil {
		e.thresholdMet.DeletePartialMatch(prometheus.Labels{"policy": policy})
	}
}

// PolicyFailure counts one round in which policy's answer was skipped for
// reason (PolicyFailureTrap, ...).
func (e *Eviction) PolicyFailure(policy, reason string) {
	if e != nil {
		e.policyFailures.WithLabelValues(policy, reason).Inc()
	}
}

// Round counts one coordinator round that took d.
func (e *Eviction) Round(d time.Duration) {
	if e != nil {
		e.rounds.Inc()
		e.roundDuration.Observe(d.Seconds())
	}
}
