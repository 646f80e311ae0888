package eviction

import (
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

func TestNodePressureArgs(t *testing.T) {
	argErrors(t, NodePressureRegistration, map[string]string{
		`{"conditions": [""]}`:                                 "conditions[0]",
		`{"conditions": ["Mem/Pressure"]}`:                     "conditions[0]",
		`{"conditions": ["MemoryPressure", 3]}`:                "conditions[1]",
		`{"conditions": []}`:                                   "conditions",
		`{"effects": ["NoSchedule", "Evict"]}`:                 "effects[1]",
		`{"effects": ["noschedule"]}`:                          "effects[0]",
		`{"effects": ["NoSchedule", "NoSchedule"]}`:            "effects[1]",
		`{"gracePeriodSeconds": -5}`:                           "gracePeriodSeconds",
		`{"condition": ["MemoryPressure"]}`:                    "condition",
		`{"conditions": ["MemoryPressure", "MemoryPressure"]}`: "conditions[1]",
	})
	p := threshold(t, NodePressureRegistration, `{"conditions": ["NetworkUnavailable"], "effects": ["NoExecute", "PreferNoSchedule"]}`).(*NodePressure)
	if !reflect.DeepEqual(p.conditions, []string{"NetworkUnavailable"}) ||
		!reflect.DeepEqual(p.effects, []abi.TaintEffect{abi.EffectNoExecute, abi.EffectPreferNoSchedule}) {
		t.Errorf("parsed %+v", p)
	}
	d := threshold(t, NodePressureRegistration, "").(*NodePressure)
	if !reflect.DeepEqual(d.conditions, []string{"MemoryPressure", "DiskPressure", "PIDPressure"}) ||
		!reflect.DeepEqual(d.effects, []abi.TaintEffect{abi.EffectNoSchedule}) || d.grace != 0 {
		t.Errorf("defaults %+v", d)
	}
}

func TestNodePressureThresholdMet(t *testing.T) {
	cond := func(typ string, st abi.ConditionStatus) abi.NodeCondition {
		return abi.NodeCondition{Type: typ, Status: st}
	}
	tests := []struct {
		name  string
		args  string
		conds []abi.NodeCondition
		want  string // the met condition; "" NotMet
		scope string
	}{
		{name: "no conditions", want: ""},
		{name: "all false", conds: []abi.NodeCondition{cond("MemoryPressure", abi.ConditionFalse), cond("Ready", abi.ConditionTrue)}},
		{name: "unknown is not true", conds: []abi.NodeCondition{cond("DiskPressure", abi.ConditionUnknown)}},
		{name: "memory", conds: []abi.NodeCondition{cond("Ready", abi.ConditionTrue), cond("MemoryPressure", abi.ConditionTrue)},
			want: "MemoryPressure", scope: "memory"},
		{name: "disk", conds: []abi.NodeCondition{cond("DiskPressure", abi.ConditionTrue)}, want: "DiskPressure", scope: "ephemeral-storage"},
		{name: "pid", conds: []abi.NodeCondition{cond("PIDPressure", abi.ConditionTrue)}, want: "PIDPressure", scope: "pids"},
		{name: "args order wins over the node's", conds: []abi.NodeCondition{cond("PIDPressure", abi.ConditionTrue), cond("MemoryPressure", abi.ConditionTrue)},
			want: "MemoryPressure", scope: "memory"},
		{name: "not listed", args: `{"conditions": ["DiskPressure"]}`, conds: []abi.NodeCondition{cond("MemoryPressure", abi.ConditionTrue)}},
		{name: "custom condition", args: `{"conditions": ["KernelDeadlock"]}`, conds: []abi.NodeCondition{cond("KernelDeadlock", abi.ConditionTrue)},
			want: "KernelDeadlock", scope: "KernelDeadlock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := threshold(t, NodePressureRegistration, tt.args)
			n := evNode(abi.Resources{Memory: gi}, tpod{name: "a"})
			n.Obs.Conditions = tt.conds
			r := p.ThresholdMet(n)
			if tt.want == "" {
				if r.Met != abi.NotMet || r.Condition != nil {
					t.Fatalf("want NotMet without condition, got %+v", r)
				}
				return
			}
			want := &abi.EvictionCondition{Kind: abi.ConditionNodeKind, Name: tt.want, Effects: []abi.TaintEffect{abi.EffectNoSchedule}, Met: true}
			if r.Met != abi.HardMet || r.Scope != tt.scope || !reflect.DeepEqual(r.Condition, want) {
				t.Fatalf("got %+v (condition %+v), want HardMet scope %s condition %+v", r, r.Condition, tt.scope, want)
			}
		})
	}
	p := threshold(t, NodePressureRegistration, `{"effects": ["NoExecute"], "gracePeriodSeconds": 15}`)
	n := evNode(abi.Resources{}, tpod{name: "a"})
	n.Obs.Conditions = []abi.NodeCondition{{Type: "MemoryPressure", Status: abi.ConditionTrue}}
	if r := p.ThresholdMet(n); r.GracePeriodSeconds != 15 || r.Condition.Effects[0] != abi.EffectNoExecute {
		t.Errorf("args not applied: %+v %+v", r, r.Condition)
	}
}

func TestNodePressureRanksAsKubelet(t *testing.T) {
	pods := []tpod{
		{name: "guaranteed", prio: 0, mem: 2 * gi, useMem: gi},      // under its request
		{name: "hog-high", prio: 1000, mem: gi, useMem: 3 * gi},     // over by 2Gi, high priority
		{name: "hog-small", prio: 0, mem: gi, useMem: gi + gi/2},    // over by 0.5Gi
		{name: "hog-big", prio: 0, mem: gi, useMem: 4 * gi},         // over by 3Gi
		{name: "unmeasured", prio: 0, mem: 0, noUsage: true},        // no data: never over
		{name: "besteffort", prio: 0, mem: 0, useMem: 0},            // data, not over
		{name: "unmeasured-low", prio: -10, mem: gi, noUsage: true}, // lowest priority, no data
		{name: "at-request", prio: 0, mem: gi, useMem: gi},          // exactly its request: not over
	}
	n := evNode(abi.Resources{Memory: 16 * gi}, pods...)
	p := threshold(t, NodePressureRegistration, "")
	all, _ := p.GetTopEvictionPods(n, 8, "memory", n.Candidates, 8)
	// Over their request first (priority, then excess), then the others
	// by priority; among equal priority, pods with data (by excess: 0,
	// then -1Gi) before the unmeasured.
	want := "hog-big,hog-small,hog-high,unmeasured-low,at-request,besteffort,guaranteed,unmeasured"
	if got := names(n, all); got != want {
		t.Errorf("ranking\n got %s\nwant %s", got, want)
	}
	// A hard query takes one; the scope does not change the ranking.
	for _, scope := range []string{"memory", "ephemeral-storage", "pids"} {
		if got, _ := p.GetTopEvictionPods(n, 1, scope, n.Candidates, 3); names(n, got) != "hog-big" {
			t.Errorf("scope %s: got %s, want hog-big", scope, names(n, got))
		}
	}
	// Only the candidates offered.
	if got, _ := p.GetTopEvictionPods(n, 1, "memory", []uint32{0, 4, 5}, 3); names(n, got) != "besteffort" {
		t.Errorf("candidates guaranteed, unmeasured, besteffort: got %s, want besteffort", names(n, got))
	}
	// Per-pod observations absent (the SDK hides a mismatched record):
	// nobody is over, so priority then name.
	n.Obs.Pods = nil
	if got, _ := p.GetTopEvictionPods(n, 2, "memory", n.Candidates, 3); names(n, got) != "unmeasured-low,at-request" {
		t.Errorf("without observations: got %s", names(n, got))
	}
}
