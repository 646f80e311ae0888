package metrics

import "github.com/prometheus/client_golang/prometheus"

// Values of the caller label of wasmsched_eviction_api_blocked_total: who
// posted the eviction the Eviction API refused.
const (
	// CallerPreemption: a preemption victim's eviction (real or dry run).
	CallerPreemption = "preemption"
	// CallerEviction: the eviction coordinator's pod killer.
	CallerEviction = "eviction"
)

// newEvictionAPIBlocked is the counter of 429 answers from the Eviction
// API, shared by preemption and the eviction killer so that one series per
// caller says how often a PodDisruptionBudget stood in the way, whatever
// each caller did next (try the next node, delete instead, leave the pod).
func newEvictionAPIBlocked() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: WasmSubsystem,
		Name:      "eviction_api_blocked_total",
		Help: "Number of evictions the Eviction API refused with 429 (a PodDisruptionBudget allows no disruption now, " +
			"or its status is not up to date), by caller: 'preemption' (a victim's eviction or dry run) or 'eviction' " +
			"(the eviction killer). Each answer counts once, as soon as it arrives: these requests are not retried " +
			"behind the caller's back.",
	}, []string{"caller"})
}

// wireEvictionAPIBlocked hands each caller its series, resolved once (both
// exist from the start, at zero).
func (m *Metrics) wireEvictionAPIBlocked() {
	m.preemption.apiBlocked = m.apiBlocked.WithLabelValues(CallerPreemption)
	m.eviction.apiBlocked = m.apiBlocked.WithLabelValues(CallerEviction)
}

// EvictionBlocked counts one 429 the Eviction API gave a preemption
// victim's eviction (host/engines/preemption's Metrics).
func (p *PreemptionMetrics) EvictionBlocked() {
	if p != nil && p.apiBlocked != nil {
		p.apiBlocked.Inc()
	}
}

// APIBlocked counts one 429 the Eviction API gave the eviction killer,
// forced or not (wasmsched_eviction_kills_total then says how the kill
// ended).
func (e *Eviction) APIBlocked() {
	if e != nil && e.apiBlocked != nil {
		e.apiBlocked.Inc()
	}
}
