package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
)

func TestEvictionMetricsAreRegisteredAndRecord(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e := m.Eviction()
	e.Victim("mem", "memory")
	e.Victim("mem", "memory")
	e.DryRunVictim("cpu")
	e.Kill(metrics.KillSucceeded)
	e.Kill(metrics.KillBlocked)
	e.Kill(metrics.KillBlocked)
	e.SetThresholdMet("mem", "n1", abi.HardMet)
	e.SetThresholdMet("mem", "n2", abi.SoftMet)
	e.SetThresholdMet("cpu", "n1", abi.NotMet)
	e.PolicyFailure("cpu", metrics.PolicyFailureTrap)
	e.Round(20 * time.Millisecond)

	want := `
# HELP wasmsched_eviction_kills_total ` + helpOf(t, reg, "wasmsched_eviction_kills_total") + `
# TYPE wasmsched_eviction_kills_total counter
wasmsched_eviction_kills_total{result="blocked"} 2
wasmsched_eviction_kills_total{result="succeeded"} 1
# HELP wasmsched_eviction_threshold_met ` + helpOf(t, reg, "wasmsched_eviction_threshold_met") + `
# TYPE wasmsched_eviction_threshold_met gauge
wasmsched_eviction_threshold_met{node="n1",policy="cpu"} 0
wasmsched_eviction_threshold_met{node="n1",policy="mem"} 2
wasmsched_eviction_threshold_met{node="n2",policy="mem"} 1
# HELP wasmsched_eviction_victims_total ` + helpOf(t, reg, "wasmsched_eviction_victims_total") + `
# TYPE wasmsched_eviction_victims_total counter
wasmsched_eviction_victims_total{policy="mem",scope="memory"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"wasmsched_eviction_kills_total", "wasmsched_eviction_threshold_met", "wasmsched_eviction_victims_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "wasmsched_eviction_dryrun_victims_total", "wasmsched_eviction_policy_failures_total",
		"wasmsched_eviction_rounds_total", "wasmsched_eviction_round_duration_seconds"); n != 4 {
		t.Errorf("dry-run, failures, rounds, duration: %d series, want 4", n)
	}

	// A node that left loses every policy's series; a removed policy too.
	e.DeleteNode("n1")
	if n := testutil.CollectAndCount(reg, "wasmsched_eviction_threshold_met"); n != 1 {
		t.Errorf("after DeleteNode(n1): %d threshold series, want 1", n)
	}
	e.SetThresholdMet("cpu", "n2", abi.SoftMet)
	e.DeletePolicy("mem")
	e.DeleteThresholdMet("cpu", "n2")
	if n := testutil.CollectAndCount(reg, "wasmsched_eviction_threshold_met"); n != 0 {
		t.Errorf("after deleting every series: %d threshold series, want 0", n)
	}
}

func helpOf(t *testing.T, g prometheus.Gatherer, name string) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetHelp()
		}
	}
	t.Fatalf("%s is not registered", name)
	return ""
}

func TestNilEvictionMetricsIsANoOp(t *testing.T) {
	var m *metrics.Metrics
	e := m.Eviction()
	if e != nil {
		t.Fatal("a nil Metrics gave eviction metrics")
	}
	e.Victim("p", "s")
	e.DryRunVictim("p")
	e.Kill(metrics.KillFailed)
	e.SetThresholdMet("p", "n", abi.HardMet)
	e.DeleteThresholdMet("p", "n")
	e.DeleteNode("n")
	e.DeletePolicy("p")
	e.PolicyFailure("p", metrics.PolicyFailureTimeout)
	e.Round(time.Second)
}

// Preemption and the eviction killer count the Eviction API's 429s in one
// family, a series per caller, both present from the start.
func TestEvictionAPIBlockedCountsPerCaller(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(reg, "wasmsched_eviction_api_blocked_total"); n != 2 {
		t.Fatalf("%d series before any refusal, want 2 (one per caller)", n)
	}
	m.Preemption().EvictionBlocked()
	m.Preemption().EvictionBlocked()
	m.Eviction().APIBlocked()
	want := `
# HELP wasmsched_eviction_api_blocked_total ` + helpOf(t, reg, "wasmsched_eviction_api_blocked_total") + `
# TYPE wasmsched_eviction_api_blocked_total counter
wasmsched_eviction_api_blocked_total{caller="eviction"} 1
wasmsched_eviction_api_blocked_total{caller="preemption"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "wasmsched_eviction_api_blocked_total"); err != nil {
		t.Error(err)
	}
	var none *metrics.Metrics
	none.Preemption().EvictionBlocked() // must not panic
	none.Eviction().APIBlocked()
}
