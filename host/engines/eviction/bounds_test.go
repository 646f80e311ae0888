package eviction

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
)

// Seconds saturates instead of wrapping.
func TestSecondsSaturates(t *testing.T) {
	limit := int64(math.MaxInt64 / int64(time.Second))
	for _, tc := range []struct {
		in   int64
		want time.Duration
	}{
		{0, 0}, {1, time.Second}, {-1, -time.Second},
		{limit, time.Duration(limit) * time.Second},
		{limit + 1, math.MaxInt64},
		{1 << 62, math.MaxInt64},
		{math.MaxInt64, math.MaxInt64},
		{-limit - 1, math.MinInt64},
		{math.MinInt64, math.MinInt64},
	} {
		if got := Seconds(tc.in); got != tc.want {
			t.Errorf("Seconds(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// A threshold's grace period too long for a Duration (2^63-1 seconds,
// 2^62, the first value whose nanoseconds overflow) is never over: the
// threshold is not acted on at once, nor a century later. A wrapped
// Duration would be zero or negative and let the pods go at once.
func TestThresholdGraceSaturates(t *testing.T) {
	limit := int64(math.MaxInt64 / int64(time.Second))
	for _, grace := range []int64{math.MaxInt64, 1 << 62, limit + 1} {
		t.Run(fmt.Sprint(grace), func(t *testing.T) {
			p := &fakePolicy{name: "P", points: abi.PointEvictionThreshold, threshold: hard(grace, "n1"), top: lowestPriority}
			e := newEnv(t, Settings{}, nil, p)
			e.node("n1", 1000)
			e.pod("n1", "a", 1, 100)
			for _, step := range []time.Duration{0, time.Hour, 100 * 365 * 24 * time.Hour} {
				e.clock.Step(step)
				r := e.round()
				if len(r.Victims) != 0 || calls(e.mod, abi.FuncTopEvictionPods) != 0 {
					t.Fatalf("after %v: acted on a grace period of %ds (victims %v)", e.clock.Now().Sub(t0), grace, names(r.Victims))
				}
			}
		})
	}
}

// A negative grace period (which the policy client refuses) is never
// acted on by the coordinator's state either.
func TestNegativeThresholdGraceNeverActs(t *testing.T) {
	s := newState()
	for _, g := range []int64{-1, math.MinInt64} {
		r := &abi.ThresholdResult{Met: abi.HardMet, GracePeriodSeconds: g}
		if s.observeThreshold("P", "n1", r, t0) || s.observeThreshold("P", "n1", r, t0.Add(time.Hour)) {
			t.Errorf("grace %d: acted on", g)
		}
	}
	if !s.observeThreshold("P", "n1", &abi.ThresholdResult{Met: abi.HardMet}, t0.Add(time.Hour)) {
		t.Error("grace 0 not acted on")
	}
}

// The killer never asks the API for a grace period over
// MaxGracePeriodSeconds, from a policy or from the pod's spec, and its
// timeout stays bounded for any grace.
func TestKillerGraceSaturates(t *testing.T) {
	for _, tc := range []struct {
		name         string
		policy, spec *int64
	}{
		{"policy 2^63-1", i64(math.MaxInt64), nil},
		{"policy just over", i64(MaxGracePeriodSeconds + 1), i64(30)},
		{"pod spec 2^63-1", nil, i64(math.MaxInt64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newKillerEnv(t, nil)
			e.api.goneOnKill = true
			p := killPodFixture("a", "u1", tc.spec)
			e.api.add(p)
			e.k.Submit([]KillRequest{{Pod: p, GracePeriodSeconds: tc.policy, Policy: "mem", Reason: "pressure"}})
			e.run()
			waitUntil(t, "the killer to be idle", e.k.Idle)
			evicts, _, _ := e.api.snapshot()
			if want := []killCall{{"u1", MaxGracePeriodSeconds, true}}; !slices.Equal(evicts, want) {
				t.Errorf("evictions %v, want %v", evicts, want)
			}
			e.wantKills(map[string]float64{metrics.KillSucceeded: 1})
		})
	}
	for _, g := range []int64{math.MaxInt64, MaxGracePeriodSeconds, -1, math.MinInt64} {
		if d := killTimeout(g, time.Second); d <= 0 || d > maxKillTimeout {
			t.Errorf("killTimeout(%d) = %v", g, d)
		}
	}
	if d := killTimeout(0, math.MaxInt64); d != maxKillTimeout {
		t.Errorf("killTimeout with a floor of MaxInt64 = %v", d)
	}
}

// A policy naming a new node condition every round makes no more than
// MaxNodeConditions taints' worth of conditions on a node; the newest
// stay, and a report's repeated effects count once.
func TestNodeConditionsAreBounded(t *testing.T) {
	round := 0
	p := &fakePolicy{name: "P", points: abi.PointEvictPods, evictPods: func(v *view) abi.NodeEvictPods {
		// As many effects as a reply may carry (abi.MaxConditionEffects),
		// all the same: they count once.
		effects := make([]abi.TaintEffect, abi.MaxConditionEffects)
		for i := range effects {
			effects[i] = abi.EffectNoSchedule
		}
		return abi.NodeEvictPods{Condition: &abi.EvictionCondition{Name: fmt.Sprintf("C%03d", round), Met: true, Effects: effects}}
	}}
	e := newEnv(t, Settings{ConditionTransitionPeriod: time.Hour}, nil, p)
	e.node("n1", 1000)
	const rounds = 3 * MaxNodeConditions
	for round = 0; round < rounds; round++ {
		e.clock.Step(time.Second)
		e.round()
	}
	taints := e.snapNode("n1").Taints
	if len(taints) != MaxNodeConditions {
		t.Fatalf("%d taints after %d conditions, want %d", len(taints), rounds, MaxNodeConditions)
	}
	if want := fmt.Sprintf("%sC%03d", TaintPrefix, rounds-1); !slices.ContainsFunc(taints, func(t abi.Taint) bool { return t.Key == want }) {
		t.Fatalf("the newest condition %s is not among the taints %v", want, taints)
	}
	if want := fmt.Sprintf("%sC%03d", TaintPrefix, rounds-MaxNodeConditions-1); slices.ContainsFunc(taints, func(t abi.Taint) bool { return t.Key == want }) {
		t.Fatalf("an old condition %s stayed: %v", want, taints)
	}
}

// Settings built without a configuration are brought within the
// configuration's bounds: a burst that would wrap the uint32 limit sent
// to guests, a NaN or infinite rate.
func TestSettingsAreBounded(t *testing.T) {
	s, notes := Settings{Burst: 1<<32 + 2, SyncPeriod: math.MaxInt64, ConditionTransitionPeriod: math.MaxInt64}.bounded()
	if s.Burst != config.MaxEvictionBurst || s.SyncPeriod != config.MaxEvictionSyncPeriod ||
		s.ConditionTransitionPeriod != config.MaxEvictionConditionTransitionPeriod || len(notes) != 3 {
		t.Fatalf("bounded %+v, notes %q", s, notes)
	}
	if !strings.Contains(strings.Join(notes, ";"), "burst 4294967298 is over 1000") {
		t.Errorf("notes %q do not name the burst", notes)
	}
	if s, _ := (Settings{Rate: math.NaN()}).bounded(); s.Rate != DefaultRate || s.RateBurst != max(DefaultBurst, int(DefaultRate)) {
		t.Errorf("NaN rate: %+v", s)
	}
	if s, _ := (Settings{Rate: math.Inf(1)}).bounded(); s.RateBurst != config.MaxEvictionRateBurst {
		t.Errorf("infinite rate: rate burst %d", s.RateBurst)
	}
	e := newEnv(t, Settings{Burst: 1<<32 + 2}, nil, &fakePolicy{name: "P", points: abi.PointEvictPods})
	if got := e.coord.Settings().Burst; got != config.MaxEvictionBurst {
		t.Fatalf("coordinator burst %d", got)
	}
}

// The policies and a module's annotation keys are bounded, the error
// naming the field.
func TestPolicyCountsAreBounded(t *testing.T) {
	specs := make([]PolicySpec, config.MaxEvictionPolicies+1)
	for i := range specs {
		specs[i] = PolicySpec{Plugin: "P"}
	}
	mod := &fakeModule{policies: []*fakePolicy{{name: "P", points: abi.PointEvictPods}}}
	if _, err := buildFake(t, mod, specs); err == nil || !strings.Contains(err.Error(), "eviction.policies: 65 policies, more than the limit of 64") {
		t.Fatalf("err = %v", err)
	}
	mod = &fakeModule{policies: []*fakePolicy{{name: "P", points: abi.PointEvictPods}}}
	for i := 0; i <= MaxAnnotationKeys; i++ {
		mod.keys = append(mod.keys, fmt.Sprintf("k%03d", i))
	}
	_, err := buildFake(t, mod, []PolicySpec{{Plugin: "P"}})
	if err == nil || !strings.Contains(err.Error(), `eviction.policies[0].plugin: module "fake" asks for 65 annotation keys (annotationKeys), more than the limit of 64`) {
		t.Fatalf("err = %v", err)
	}
}
