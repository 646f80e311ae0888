package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPreemptionMetricsUseKubeSchedulerNamesAndRecordAtTheEnd(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Preemption()
	p.Attempt("default-scheduler")
	p.Attempt("other")
	p.Victims(3)
	p.GoroutineDone("error", 1500*time.Millisecond)
	p.GoroutineDone("success", 20*time.Millisecond)
	p.GoroutineDone("success", 40*time.Millisecond)
	if got := testutil.ToFloat64(p.attempts); got != 2 {
		t.Errorf("preemption_attempts_total = %v, want 2", got)
	}
	if got := testutil.ToFloat64(p.goroutines.WithLabelValues("success")); got != 2 {
		t.Errorf("preemption_goroutines_execution_total{result=success} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(p.goroutines.WithLabelValues("error")); got != 1 {
		t.Errorf("preemption_goroutines_execution_total{result=error} = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(reg, "scheduler_preemption_victims", "scheduler_preemption_goroutines_duration_seconds"); n != 3 {
		t.Errorf("%d victim/duration series, want 3 (one victims histogram, two results)", n)
	}
	var nilMetrics *Metrics
	nilMetrics.Preemption().Attempt("x") // must not panic
	nilMetrics.Preemption().GoroutineDone("success", time.Second)
}
