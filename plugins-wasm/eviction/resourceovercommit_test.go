package eviction

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

func TestResourceOvercommitArgs(t *testing.T) {
	argErrors(t, ResourceOvercommitRegistration, map[string]string{
		`{"resources": ["gpu"]}`:                     "resources[0]",
		`{"resources": []}`:                          "resources",
		`{"resources": ["cpu", "cpu"]}`:              "resources[1]",
		`{"resources": "cpu"}`:                       "resources",
		`{"hardRate": 0}`:                            "hardRate",
		`{"hardRate": -1.5}`:                         "hardRate",
		`{"hardRate": "1"}`:                          "hardRate",
		`{"softRate": 0}`:                            "softRate",
		`{"hardRate": 1.2, "softRate": 1.3}`:         "softRate",
		`{"softRate": 1.5}`:                          "softRate", // above the default hardRate 1.0
		`{"gracePeriodSeconds": -1}`:                 "gracePeriodSeconds",
		`{"gracePeriodSeconds": 1.5}`:                "gracePeriodSeconds",
		`{"hardrate": 1}`:                            "hardrate",
		`{"resources": ["ephemeral-storage", null]}`: "resources[1]",
	})
	p := threshold(t, ResourceOvercommitRegistration, `{"resources": ["memory", "ephemeral-storage"], "hardRate": 2, "softRate": 1.5, "gracePeriodSeconds": 30}`).(*ResourceOvercommit)
	if p.hardRate != 2 || p.softRate != 1.5 || p.grace != 30 || len(p.resources) != 2 || p.resources[1] != "ephemeral-storage" {
		t.Errorf("parsed %+v", p)
	}
	d := threshold(t, ResourceOvercommitRegistration, "").(*ResourceOvercommit)
	if d.hardRate != 1 || d.softRate != 0 || d.grace != 0 || len(d.resources) != 2 || d.resources[0] != "cpu" || d.resources[1] != "memory" {
		t.Errorf("defaults %+v", d)
	}
}

func TestResourceOvercommitThresholdMet(t *testing.T) {
	alloc := abi.Resources{MilliCPU: 4000, Memory: 8 * gi}
	tests := []struct {
		name      string
		args      string
		pods      []tpod
		cands     []uint32 // nil: all
		met       abi.MetType
		scope     string
		threshold float64
		observed  float64
	}{
		{name: "fits", pods: []tpod{{name: "a", cpu: 2000, mem: 4 * gi}, {name: "b", cpu: 2000, mem: 4 * gi}}, met: abi.NotMet},
		{name: "cpu over", pods: []tpod{{name: "a", cpu: 3000}, {name: "b", cpu: 1500}},
			met: abi.HardMet, scope: "cpu", threshold: 4000, observed: 4500},
		{name: "both over: the first resource wins", pods: []tpod{{name: "a", cpu: 5000, mem: 9 * gi}},
			met: abi.HardMet, scope: "cpu", threshold: 4000, observed: 5000},
		{name: "resources order decides", args: `{"resources": ["memory", "cpu"]}`, pods: []tpod{{name: "a", cpu: 5000, mem: 9 * gi}},
			met: abi.HardMet, scope: "memory", threshold: float64(8 * gi), observed: float64(9 * gi)},
		{name: "only candidates count", pods: []tpod{{name: "critical", cpu: 3000}, {name: "b", cpu: 1500}}, cands: []uint32{1},
			met: abi.NotMet},
		{name: "hard rate", args: `{"hardRate": 1.5}`, pods: []tpod{{name: "a", cpu: 5000}}, met: abi.NotMet},
		{name: "soft met under hard", args: `{"hardRate": 1.5, "softRate": 1.1}`, pods: []tpod{{name: "a", cpu: 5000}},
			met: abi.SoftMet, scope: "cpu", threshold: 4400, observed: 5000},
		{name: "hard beats soft on a later resource", args: `{"softRate": 0.5}`, pods: []tpod{{name: "a", cpu: 3000, mem: 9 * gi}},
			met: abi.HardMet, scope: "memory", threshold: float64(8 * gi), observed: float64(9 * gi)},
		{name: "exactly at the rate is not over", pods: []tpod{{name: "a", cpu: 4000}}, met: abi.NotMet},
		{name: "no allocatable is not judged", args: `{"resources": ["ephemeral-storage"]}`, pods: []tpod{{name: "a", cpu: 1}}, met: abi.NotMet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := threshold(t, ResourceOvercommitRegistration, tt.args)
			n := evNode(alloc, tt.pods...)
			if tt.cands != nil {
				n.Candidates = tt.cands
			}
			r := p.ThresholdMet(n)
			if r.Met != tt.met {
				t.Fatalf("met %s, want %s (%+v)", r.Met, tt.met, r)
			}
			if tt.met == abi.NotMet {
				if r.Scope != "" || r.Condition != nil {
					t.Errorf("NotMet carries %+v", r)
				}
				return
			}
			if r.Scope != tt.scope || r.ThresholdValue != tt.threshold || r.ObservedValue != tt.observed || r.Operator != ">" {
				t.Errorf("result %+v, want scope %s threshold %v observed %v", r, tt.scope, tt.threshold, tt.observed)
			}
		})
	}
	r := threshold(t, ResourceOvercommitRegistration, `{"gracePeriodSeconds": 60}`).ThresholdMet(evNode(alloc, tpod{name: "a", cpu: 5000}))
	if r.GracePeriodSeconds != 60 {
		t.Errorf("grace %d, want 60", r.GracePeriodSeconds)
	}
}

func TestResourceOvercommitTopEvictionPods(t *testing.T) {
	alloc := abi.Resources{MilliCPU: 4000, Memory: 8 * gi}
	pods := []tpod{
		{name: "high", prio: 100, cpu: 3000},
		{name: "low-small", prio: 0, cpu: 500},
		{name: "low-big", prio: 0, cpu: 2000},
		{name: "low-big-b", prio: 0, cpu: 2000},
		{name: "mid", prio: 10, cpu: 100},
	}
	tests := []struct {
		name  string
		args  string
		topN  int
		limit int
		cands []uint32
		want  string
	}{
		// Priority, then request descending, then name.
		{name: "hard: one", topN: 1, limit: 3, want: "low-big"},
		{name: "hard: topN 3", topN: 3, limit: 5, want: "low-big,low-big-b,low-small"},
		{name: "hard: limit below topN", topN: 3, limit: 2, want: "low-big,low-big-b"},
		{name: "hard: only the candidates", topN: 2, limit: 5, cands: []uint32{0, 4}, want: "mid,high"},
		// Soft, softRate 0.5 of 4000m = 2000m: keep high? 3000 > 2000,
		// so nothing is kept from the top and every pod is named.
		{name: "soft: nothing fits", args: `{"softRate": 0.5}`, limit: 5, want: "low-big,low-big-b,low-small,mid,high"},
		// softRate 1.0: keep high (3000), then mid (3100), then
		// low-small (3600); low-big-b would make 5600.
		{name: "soft: the rest of the kept prefix", args: `{"softRate": 1}`, limit: 5, want: "low-big,low-big-b"},
		{name: "soft: limit keeps the least worth keeping", args: `{"softRate": 1}`, limit: 1, want: "low-big"},
		// Everything fits in 2 × 4000m: still one pod, the least worth keeping.
		{name: "soft: at least one", args: `{"hardRate": 3, "softRate": 2.5}`, limit: 5, want: "low-big"},
		{name: "soft without softRate", limit: 5, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := threshold(t, ResourceOvercommitRegistration, tt.args)
			n := evNode(alloc, pods...)
			cands := n.Candidates
			if tt.cands != nil {
				cands = tt.cands
			}
			got, grace := p.GetTopEvictionPods(n, tt.topN, "cpu", cands, tt.limit)
			if names(n, got) != tt.want || grace != nil {
				t.Errorf("got %s (grace %v), want %s", names(n, got), grace, tt.want)
			}
		})
	}
}
