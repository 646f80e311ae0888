package preemption

import "time"

// Metrics is what preemption reports, kept as a small interface so this
// package needs no metrics library; the host wires it to Prometheus
// (scheduler_preemption_attempts_total, scheduler_preemption_victims,
// scheduler_preemption_goroutines_execution_total{result} and
// scheduler_preemption_goroutines_duration_seconds{result}). A nil
// Metrics records nothing.
type Metrics interface {
	// Attempt counts one PostFilter call, whatever its outcome.
	Attempt(profile string)
	// Victims observes the number of victims of the chosen candidate.
	Victims(n int)
	// GoroutineDone records an asynchronous preemption when its goroutine
	// ends: result is "success" or "error", d its whole duration.
	GoroutineDone(result string, d time.Duration)
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
