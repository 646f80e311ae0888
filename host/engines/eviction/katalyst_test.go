package eviction

import (
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// The rules of Katalyst's evictionmanager (v0.5.47, manager.go and
// eviction_resp_collector.go) that a round follows call for call.

// graceTop answers a top-N query as lowestPriority does, with grace g.
func graceTop(g *int64) func(v *view, n *abi.TopEvictionNode) abi.TopEvictionPods {
	return func(v *view, n *abi.TopEvictionNode) abi.TopEvictionPods {
		r := lowestPriority(v, n)
		r.GracePeriodSeconds = g
		return r
	}
}

// Order of calls (collectEvictionResult): every policy's evict_pods and
// threshold_met (in that order per policy) come before any
// top_eviction_pods, so a hard threshold's
// pod is merged into the force answers of every policy, whatever the
// policies' order, and a later policy's force answer never replaces it.
func TestRoundAsksEveryPolicyBeforeAnyTop(t *testing.T) {
	g30, g5 := int64(30), int64(5)
	a := &fakePolicy{name: "A", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: graceTop(&g30)}
	b := &fakePolicy{name: "B", points: abi.PointEvictPods | abi.PointEvictionThreshold, threshold: hard(0), evictPods: func(v *view) abi.NodeEvictPods {
		r := evictNamed(true, "x")(v)
		for i := range r.Pods {
			r.Pods[i].GracePeriodSeconds = &g5
		}
		return r
	}}
	e := newEnv(t, Settings{}, nil, a, b)
	e.node("n1", 1000)
	e.pod("n1", "x", 1, 100)
	r := e.round()
	// Per policy evict_pods then threshold_met, as Katalyst asks each
	// plugin; top_eviction_pods after all of them.
	wantCalls := []string{"A:threshold_met", "B:evict_pods", "B:threshold_met", "A:top_eviction_pods"}
	if got := e.mod.called(); !reflect.DeepEqual(got, wantCalls) {
		t.Errorf("calls %v, want %v", got, wantCalls)
	}
	if len(r.Victims) != 1 {
		t.Fatalf("victims %+v", r.Victims)
	}
	v := r.Victims[0]
	wantReason := "plugin A met threshold in scope cpu, target 1m, observed 2m; named x"
	if v.Policy != "A" || v.Scope != "cpu" || v.Reason != wantReason || v.Grace == nil || *v.Grace != 30 {
		t.Fatalf("victim policy %q scope %q reason %q grace %v; want A, cpu, %q, 30", v.Policy, v.Scope, v.Reason, ptrString(v.Grace), wantReason)
	}
}

func ptrString(g *int64) string {
	if g == nil {
		return "nil"
	}
	return time.Duration(*g * int64(time.Second)).String()
}

// Merging (collectTopEvictionPods): the newest reason first, the longer
// grace period of the two, and the newer one's when the older had none;
// the newer policy is named.
func TestForceMergeNewestReasonFirst(t *testing.T) {
	g5, g30 := int64(5), int64(30)
	cases := []struct {
		name      string
		ga, gb    *int64
		wantGrace *int64
	}{
		{"older none", nil, &g5, &g5},
		{"newer none", &g30, nil, &g30},
		{"both", &g5, &g30, &g30},
		{"both, older longer", &g30, &g5, &g30},
		{"neither", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := &fakePolicy{name: "A", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: graceTop(tc.ga)}
			b := &fakePolicy{name: "B", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: graceTop(tc.gb)}
			e := newEnv(t, Settings{}, nil, a, b)
			e.node("n1", 1000)
			e.pod("n1", "x", 1, 100)
			r := e.round()
			if len(r.Victims) != 1 {
				t.Fatalf("victims %+v", r.Victims)
			}
			v := r.Victims[0]
			const want = "plugin B met threshold in scope cpu, target 1m, observed 2m; plugin A met threshold in scope cpu, target 1m, observed 2m"
			if v.Policy != "B" || v.Reason != want {
				t.Errorf("policy %q reason %q, want B and %q", v.Policy, v.Reason, want)
			}
			if ptrString(v.Grace) != ptrString(tc.wantGrace) {
				t.Errorf("grace %s, want %s", ptrString(v.Grace), ptrString(tc.wantGrace))
			}
		})
	}
}

// Conditions (collectMetThreshold): a threshold_met answer of NOT_MET is
// ignored whole, its condition with it; an evict_pods answer's met
// condition counts.
func TestConditionOfNotMetAnswerIgnored(t *testing.T) {
	cond := &abi.EvictionCondition{Name: "Pressure", Met: true, Effects: []abi.TaintEffect{abi.EffectNoSchedule}}
	p := &fakePolicy{name: "P", points: abi.PointEvictionThreshold,
		threshold: func(v *view) abi.ThresholdResult { return abi.ThresholdResult{Met: abi.NotMet, Condition: cond} }}
	e := newEnv(t, Settings{ConditionTransitionPeriod: time.Minute}, nil, p)
	e.node("n1", 1000)
	if r := e.round(); len(r.Taints) != 0 {
		t.Fatalf("a NOT_MET answer's condition tainted: %+v", r.Taints)
	}
	q := &fakePolicy{name: "Q", points: abi.PointEvictPods,
		evictPods: func(v *view) abi.NodeEvictPods { return abi.NodeEvictPods{Condition: cond} }}
	e2 := newEnv(t, Settings{ConditionTransitionPeriod: time.Minute}, nil, q)
	e2.node("n1", 1000)
	if r := e2.round(); len(r.Taints) != 1 {
		t.Fatalf("an evict_pods answer's condition did not taint: %+v", r.Taints)
	}
}

// Conditions (conditionsObservedSince): a condition is active while it
// was last reported less than the transition period ago; at exactly the
// period it is gone.
func TestConditionExpiresAtTransitionPeriod(t *testing.T) {
	report := true
	p := &fakePolicy{name: "P", points: abi.PointEvictPods, evictPods: func(v *view) abi.NodeEvictPods {
		if !report {
			return abi.NodeEvictPods{}
		}
		return abi.NodeEvictPods{Condition: &abi.EvictionCondition{Name: "Pressure", Met: true, Effects: []abi.TaintEffect{abi.EffectNoSchedule}}}
	}}
	e := newEnv(t, Settings{ConditionTransitionPeriod: time.Minute}, nil, p)
	e.node("n1", 1000)
	if r := e.round(); len(r.Taints) != 1 || len(r.Taints[0].After) != 1 {
		t.Fatalf("no taint: %+v", r.Taints)
	}
	report = false
	e.clock.Step(time.Minute - time.Nanosecond)
	if r := e.round(); len(r.Taints) != 0 {
		t.Fatalf("taint changed within the transition period: %+v", r.Taints)
	}
	e.clock.Step(time.Nanosecond)
	if r := e.round(); len(r.Taints) != 1 || len(r.Taints[0].After) != 0 {
		t.Fatalf("taint kept at exactly the transition period: %+v", r.Taints)
	}
}

// Grace periods (thresholdsFirstObservedAt): a round whose threshold_met
// fails (a trap, an invalid reply) leaves the threshold out of the met
// set, so the next met round starts the grace period afresh.
func TestFailedThresholdMetRestartsGracePeriod(t *testing.T) {
	var garbage abi.Encoder
	garbage.ThresholdMetReply([]abi.ThresholdResult{{Met: abi.HardMet, GracePeriodSeconds: -1}})
	for name, fail := range map[string]func(p *fakePolicy){
		"trap":          func(p *fakePolicy) { p.trap = map[abi.Func]bool{abi.FuncThresholdMet: true} },
		"invalid reply": func(p *fakePolicy) { p.raw = map[abi.Func][]byte{abi.FuncThresholdMet: garbage.B} },
	} {
		t.Run(name, func(t *testing.T) {
			p := &fakePolicy{name: "P", points: abi.PointEvictionThreshold, threshold: hard(10, "n1"), top: lowestPriority}
			e := newEnv(t, Settings{}, nil, p)
			e.node("n1", 1000)
			e.pod("n1", "x", 1, 100)
			step := func(d time.Duration, wantActed bool) {
				t.Helper()
				e.clock.Step(d)
				before := calls(e.mod, abi.FuncTopEvictionPods)
				r := e.round()
				if acted := calls(e.mod, abi.FuncTopEvictionPods) > before; acted != wantActed {
					t.Fatalf("at %v: acted=%v, want %v (failures %+v)", e.clock.Now().Sub(t0), acted, wantActed, r.Failures)
				}
			}
			step(0, false) // first observed
			fail(p)
			step(5*time.Second, false) // the call fails
			p.trap, p.raw = nil, nil
			step(5*time.Second, false) // observed afresh at 10s
			step(9*time.Second, false)
			step(time.Second, true) // 10s after 10s
		})
	}
}

// The threshold gauge follows the coordinator: a round whose
// threshold_met fails reads not met (0), not the last answer, since the
// failure restarts the grace period; the next answer sets it again.
func TestFailedThresholdMetResetsGauge(t *testing.T) {
	p := &fakePolicy{name: "P", points: abi.PointEvictionThreshold, threshold: hard(10, "n1"), top: lowestPriority}
	e := newEnv(t, Settings{}, nil, p)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	e.coord.metrics = m.Eviction()
	e.node("n1", 1000)
	e.pod("n1", "x", 1, 100)
	gauge := func() float64 {
		return testmetrics.Value(t, reg, "wasmsched_eviction_threshold_met", testmetrics.Labels{"policy": "P", "node": "n1"})
	}
	e.round()
	if got := gauge(); got != float64(abi.HardMet) {
		t.Fatalf("after a hard answer: gauge = %v, want %d", got, abi.HardMet)
	}
	p.trap = map[abi.Func]bool{abi.FuncThresholdMet: true}
	e.clock.Step(time.Second)
	e.round()
	if got := gauge(); got != float64(abi.NotMet) {
		t.Fatalf("after a failed threshold_met: gauge = %v, want %d (not met)", got, abi.NotMet)
	}
	p.trap = nil
	e.clock.Step(time.Second)
	e.round()
	if got := gauge(); got != float64(abi.HardMet) {
		t.Fatalf("after the policy answers again: gauge = %v, want %d", got, abi.HardMet)
	}
}
