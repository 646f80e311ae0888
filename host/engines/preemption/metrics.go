package preemption

import "time"

// Metrics is what preemption reports, kept as a small interface so this
// package needs no metrics library; the host wires it to Prometheus
// (scheduler_preemption_attempts_total, scheduler_preemption_victims,
// scheduler_preemption_goroutines_execution_total{result},
// scheduler_preemption_goroutines_duration_seconds{result} and
// wasmsched_eviction_api_blocked_total{caller="preemption"}). A nil
// Metrics records nothing.
type Metrics interface {
	// Attempt counts one PostFilter call, whatever its outcome.
	Attempt(profile string)
	// Victims observes the number of victims of the chosen candidate.
	Victims(n int)
	// GoroutineDone records an asynchronous preemption when its goroutine
	// ends: result is "success" or "error", d its whole duration.
	GoroutineDone(result string, d time.Duration)
	// EvictionBlocked counts one 429 from the Eviction API for a victim
	// (a dry run or a real eviction), whatever preemption did next
	// (wasmsched_eviction_api_blocked_total{caller="preemption"}).
	EvictionBlocked()
}

// Goroutine results for Metrics.GoroutineDone.
const (
	ResultSuccess = "success"
	ResultError   = "error"
)

type nopMetrics struct{}

func (nopMetrics) Attempt(string)                      {}
func (nopMetrics) Victims(int)                         {}
func (nopMetrics) GoroutineDone(string, time.Duration) {}
func (nopMetrics) EvictionBlocked()                    {}
