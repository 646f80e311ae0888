package eviction

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

func TestUsageThresholdArgs(t *testing.T) {
	argErrors(t, UsageThresholdRegistration, map[string]string{
		`{"memory": 0}`:               "memory",
		`{"memory": 10.5}`:            "memory",
		`{"memory": "90%"}`:           "memory",
		`{"cpu": -0.1}`:               "cpu",
		`{"cpu": 11}`:                 "cpu",
		`{"gracePeriodSeconds": "1"}`: "gracePeriodSeconds",
		`{"disk": 0.5}`:               "disk",
	})
	p := threshold(t, UsageThresholdRegistration, `{"memory": 1, "cpu": 0.75, "gracePeriodSeconds": 5}`).(*UsageThreshold)
	if p.memory != 1 || p.cpu != 0.75 || p.grace != 5 {
		t.Errorf("parsed %+v", p)
	}
	d := threshold(t, UsageThresholdRegistration, `{"cpu": null}`).(*UsageThreshold)
	if d.memory != 0.9 || d.cpu != 0 || d.grace != 0 {
		t.Errorf("defaults %+v", d)
	}
	if x := threshold(t, UsageThresholdRegistration, `{"memory": 10}`).(*UsageThreshold); x.memory != 10 {
		t.Errorf("10 is allowed: %+v", x)
	}
}

func TestUsageThresholdThresholdMet(t *testing.T) {
	alloc := abi.Resources{MilliCPU: 4000, Memory: 10 * gi}
	tests := []struct {
		name     string
		args     string
		usage    *abi.Usage
		met      abi.MetType
		scope    string
		observed float64
	}{
		{name: "no usage data", usage: nil, met: abi.NotMet},
		{name: "memory under 0.9", usage: &abi.Usage{Memory: 9 * gi, MilliCPU: 9000}, met: abi.NotMet},
		{name: "memory over 0.9", usage: &abi.Usage{Memory: 9*gi + 1}, met: abi.HardMet, scope: "memory", observed: float64(9*gi + 1)},
		{name: "cpu unset is not checked", usage: &abi.Usage{MilliCPU: 100000}, met: abi.NotMet},
		{name: "cpu over", args: `{"cpu": 0.5}`, usage: &abi.Usage{MilliCPU: 2001}, met: abi.HardMet, scope: "cpu", observed: 2001},
		{name: "memory checked first", args: `{"cpu": 0.5}`, usage: &abi.Usage{MilliCPU: 4000, Memory: 10 * gi}, met: abi.HardMet, scope: "memory", observed: float64(10 * gi)},
		{name: "fraction above one", args: `{"memory": 1.5}`, usage: &abi.Usage{Memory: 12 * gi}, met: abi.NotMet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := threshold(t, UsageThresholdRegistration, tt.args)
			n := evNode(alloc, tpod{name: "a"})
			n.Obs.Usage = tt.usage
			r := p.ThresholdMet(n)
			if r.Met != tt.met {
				t.Fatalf("met %s, want %s (%+v)", r.Met, tt.met, r)
			}
			if tt.met != abi.NotMet && (r.Scope != tt.scope || r.ObservedValue != tt.observed || r.Operator != ">") {
				t.Errorf("result %+v, want scope %s observed %v", r, tt.scope, tt.observed)
			}
		})
	}
	n := evNode(alloc)
	n.Obs.Usage = &abi.Usage{Memory: 10 * gi}
	if r := threshold(t, UsageThresholdRegistration, `{"gracePeriodSeconds": 90}`).ThresholdMet(n); r.GracePeriodSeconds != 90 || r.ThresholdValue != 0.9*float64(10*gi) {
		t.Errorf("grace/threshold %+v", r)
	}
}

func TestUsageThresholdTopEvictionPods(t *testing.T) {
	pods := []tpod{
		{name: "high", prio: 100, mem: gi, useMem: 5 * gi, cpu: 100, useCPU: 100},
		{name: "low-a", prio: 0, mem: gi, useMem: 2 * gi, cpu: 1000, useCPU: 500},
		{name: "low-b", prio: 0, mem: gi, useMem: 3 * gi, cpu: 100, useCPU: 900},
		{name: "low-nodata", prio: -5, mem: gi, noUsage: true},
		{name: "low-c", prio: 0, mem: 4 * gi, useMem: gi, cpu: 100, useCPU: 900},
	}
	n := evNode(abi.Resources{MilliCPU: 4000, Memory: 16 * gi}, pods...)
	p := threshold(t, UsageThresholdRegistration, "")
	tests := []struct {
		scope string
		topN  int
		limit int
		want  string
	}{
		// Memory: priority, then usage − request (2Gi, 1Gi, −3Gi), the
		// unmeasured pod last despite its lowest priority.
		{"memory", 5, 5, "low-b,low-a,low-c,high,low-nodata"},
		{"memory", 1, 3, "low-b"},
		// CPU: excess 800m (low-b, low-c: by name), −500m (low-a).
		{"cpu", 5, 5, "low-b,low-c,low-a,high,low-nodata"},
		{"cpu", 2, 1, "low-b"},
		// A soft query (never caused by this policy) names one.
		{"memory", 0, 5, "low-b"},
	}
	for _, tt := range tests {
		got, grace := p.GetTopEvictionPods(n, tt.topN, tt.scope, n.Candidates, tt.limit)
		if names(n, got) != tt.want || grace != nil {
			t.Errorf("scope %s topN %d limit %d: got %s, want %s", tt.scope, tt.topN, tt.limit, names(n, got), tt.want)
		}
	}
}
