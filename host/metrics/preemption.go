package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PreemptionMetrics are kube-scheduler's preemption metrics. It satisfies
// host/engines/preemption's Metrics interface (without importing it, which would
// make an import cycle through the framework); a nil value records
// nothing.
type PreemptionMetrics struct {
	attempts          prometheus.Counter
	victims           prometheus.Observer
	goroutines        *prometheus.CounterVec
	goroutineDuration *prometheus.HistogramVec
	// apiBlocked is wasmsched_eviction_api_blocked_total{caller="preemption"}.
	apiBlocked prometheus.Counter
}

func newPreemptionMetrics() *PreemptionMetrics {
	return &PreemptionMetrics{
		attempts: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: SchedulerSubsystem,
			Name:      "preemption_attempts_total",
			Help:      "Total preemption attempts in the cluster till now (one per PostFilter call).",
		}),
		victims: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: SchedulerSubsystem,
			Name:      "preemption_victims",
			Help:      "Number of selected preemption victims.",
			Buckets:   prometheus.ExponentialBuckets(1, 2, 7),
		}),
		goroutines: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: SchedulerSubsystem,
			Name:      "preemption_goroutines_execution_total",
			Help:      "Number of asynchronous preemptions (their API calls), by result, counted when they end.",
		}, []string{"result"}),
		goroutineDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: SchedulerSubsystem,
			Name:      "preemption_goroutines_duration_seconds",
			Help:      "Duration in seconds of asynchronous preemptions, by result, observed when they end.",
			Buckets:   prometheus.ExponentialBuckets(0.01, 2, 20),
		}, []string{"result"}),
	}
}

func (p *PreemptionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.attempts, p.victims.(prometheus.Collector), p.goroutines, p.goroutineDuration}
}

// Preemption returns the preemption metrics (nil when m is nil).
func (m *Metrics) Preemption() *PreemptionMetrics {
	if m == nil {
		return nil
	}
	return m.preemption
}

// Attempt counts one PostFilter call. kube-scheduler's counter has no
// profile label, so the profile is not recorded.
func (p *PreemptionMetrics) Attempt(string) {
	if p != nil {
		p.attempts.Inc()
	}
}

// Victims observes the victim count of the chosen candidate.
func (p *PreemptionMetrics) Victims(n int) {
	if p != nil {
		p.victims.Observe(float64(n))
	}
}

// GoroutineDone records an asynchronous preemption when it ends, with its
// real result and whole duration (upstream evaluated both when the
// goroutine started; see behaviour notes in ARCHITECTURE.md).
func (p *PreemptionMetrics) GoroutineDone(result string, d time.Duration) {
	if p != nil {
		p.goroutines.WithLabelValues(result).Inc()
		p.goroutineDuration.WithLabelValues(result).Observe(d.Seconds())
	}
}
