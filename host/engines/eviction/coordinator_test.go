package eviction

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"

	clocktesting "k8s.io/utils/clock/testing"
)

func names(vs []Victim) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Pod.Name)
	}
	return out
}

func calls(m *fakeModule, fn abi.Func) int {
	n := 0
	for _, c := range m.called() {
		if strings.HasSuffix(c, ":"+fn.String()) {
			n++
		}
	}
	return n
}

// Grace handling (§4.3 step 4): a threshold is acted on only once it has
// been met in consecutive rounds for its grace period, read from the
// current answer; a NOT_MET round restarts the wait.
func TestThresholdGracePeriodAndReset(t *testing.T) {
	met := true
	grace := int64(10)
	p := &fakePolicy{name: "P", points: abi.PointEvictionThreshold,
		threshold: func(v *view) abi.ThresholdResult {
			if !met {
				return abi.ThresholdResult{}
			}
			return abi.ThresholdResult{Met: abi.HardMet, Scope: "cpu", GracePeriodSeconds: grace}
		},
		top: lowestPriority}
	e := newEnv(t, Settings{}, nil, p)
	e.node("n1", 1000)
	e.pod("n1", "a", 1, 100)

	step := func(d time.Duration, wantActed bool) {
		t.Helper()
		e.clock.Step(d)
		before := calls(e.mod, abi.FuncTopEvictionPods)
		r := e.round()
		acted := calls(e.mod, abi.FuncTopEvictionPods) > before
		if acted != wantActed {
			t.Fatalf("at %v: acted=%v, want %v (thresholds %+v)", e.clock.Now().Sub(t0), acted, wantActed, r.Thresholds)
		}
	}
	step(0, false)             // first observed now
	step(5*time.Second, false) // 5s < 10s
	step(5*time.Second, true)  // 10s: acted
	met = false
	step(5*time.Second, false) // NOT_MET resets
	met = true
	step(5*time.Second, false) // observed afresh
	step(9*time.Second, false)
	grace = 0 // the current answer's grace counts
	step(time.Second, true)
}

// Conditions (§4.3 step 5): a reported node condition becomes a taint
// under TaintPrefix at once, stays for the transition period after the
// last report, then goes; other taints are left alone.
func TestConditionTaintsAndTransitionPeriod(t *testing.T) {
	report := true
	p := &fakePolicy{name: "P", points: abi.PointEvictionThreshold,
		threshold: func(v *view) abi.ThresholdResult {
			if !report || v.node.Node.Name != "n1" {
				return abi.ThresholdResult{}
			}
			return abi.ThresholdResult{Met: abi.SoftMet, Scope: "memory", GracePeriodSeconds: 3600,
				Condition: &abi.EvictionCondition{Name: "MemoryPressure", Met: true,
					Effects: []abi.TaintEffect{abi.EffectNoSchedule, abi.EffectNoSchedule, abi.EffectPreferNoSchedule}}}
		}}
	e := newEnv(t, Settings{ConditionTransitionPeriod: time.Minute}, nil, p)
	e.cache.AddNode(abi.Node{Name: "n1", Taints: []abi.Taint{{Key: "dedicated", Value: "gpu", Effect: abi.EffectNoSchedule}}})
	e.node("n2", 1000)

	r := e.round()
	if len(r.Taints) != 1 || r.Taints[0].Node != "n1" {
		t.Fatalf("taint changes %+v", r.Taints)
	}
	want := []abi.Taint{{Key: TaintPrefix + "MemoryPressure", Effect: abi.EffectNoSchedule}, {Key: TaintPrefix + "MemoryPressure", Effect: abi.EffectPreferNoSchedule}}
	if !reflect.DeepEqual(r.Taints[0].After, want) {
		t.Fatalf("taints %v, want %v (duplicates dropped)", r.Taints[0].After, want)
	}
	// The scheduler's cache sees the taint, and keeps the node's own.
	n := e.snapNode("n1")
	if len(n.Taints) != 3 || n.Taints[0].Key != "dedicated" {
		t.Fatalf("node taints %v", n.Taints)
	}
	report = false
	e.clock.Step(30 * time.Second)
	if r := e.round(); len(r.Taints) != 0 {
		t.Fatalf("taints changed within the transition period: %+v", r.Taints)
	}
	e.clock.Step(31 * time.Second)
	r = e.round()
	if len(r.Taints) != 1 || len(r.Taints[0].After) != 0 {
		t.Fatalf("taints not removed after the transition period: %+v", r.Taints)
	}
	if n := e.snapNode("n1"); len(n.Taints) != 1 || n.Taints[0].Key != "dedicated" {
		t.Fatalf("node taints after removal %v", n.Taints)
	}
}

func (e *env) snapNode(name string) abi.Node {
	e.t.Helper()
	c := &fakeCluster{cache: e.cache}
	s := newSnap()
	c.UpdateSnapshot(s)
	ni := s.Get(name)
	if ni == nil {
		e.t.Fatalf("node %s not in cache", name)
	}
	return ni.Info.Node
}

// Force merge (§4.3 step 7): two hard thresholds naming the same pod make
// one victim with both reasons (the later policy's first, as Katalyst's
// collectTopEvictionPods joins them), the longer grace period,
// attributed to the later policy.
func TestForceMergeAcrossPolicies(t *testing.T) {
	g5, g30 := int64(5), int64(30)
	top := func(g *int64) func(v *view, n *abi.TopEvictionNode) abi.TopEvictionPods {
		return func(v *view, n *abi.TopEvictionNode) abi.TopEvictionPods {
			r := lowestPriority(v, n)
			r.GracePeriodSeconds = g
			return r
		}
	}
	a := &fakePolicy{name: "A", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: top(&g30)}
	b := &fakePolicy{name: "B", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: top(&g5)}
	e := newEnv(t, Settings{}, nil, a, b)
	e.node("n1", 1000)
	e.pod("n1", "low", 1, 100)
	e.pod("n1", "high", 100, 100)
	r := e.round()
	if len(r.Victims) != 1 || r.Victims[0].Pod.Name != "low" {
		t.Fatalf("victims %v", names(r.Victims))
	}
	v := r.Victims[0]
	if v.Policy != "B" || *v.Grace != 30 || !strings.HasPrefix(v.Reason, "plugin B met") || !strings.Contains(v.Reason, "; plugin A met") {
		t.Fatalf("merged victim %+v (grace %d)", v, *v.Grace)
	}
	if len(e.killer.submitted) != 1 || *e.killer.submitted[0].GracePeriodSeconds != 30 {
		t.Fatalf("killer got %+v", e.killer.submitted)
	}
}

// GetEvictPods (§4.3 step 3a): a later policy's entry for the same pod
// replaces the earlier one.
func TestEvictPodsLaterPolicyOverwrites(t *testing.T) {
	a := &fakePolicy{name: "A", points: abi.PointEvictPods, evictPods: evictNamed(true, "x")}
	b := &fakePolicy{name: "B", points: abi.PointEvictPods, evictPods: evictNamed(true, "x")}
	e := newEnv(t, Settings{}, nil, a, b)
	e.node("n1", 1000)
	e.pod("n1", "x", 1, 100)
	r := e.round()
	if len(r.Victims) != 1 || r.Victims[0].Policy != "B" || r.Victims[0].Scope != ScopeForce {
		t.Fatalf("victims %+v", r.Victims)
	}
}

// At most one soft victim per node and round (§4.3 step 9), the last by
// CandidateSort; soft candidates already forced are not counted twice.
func TestOneSoftVictimPerNodeAndRound(t *testing.T) {
	soft := &fakePolicy{name: "S", points: abi.PointEvictPods, evictPods: evictNamed(false, "s1", "s2", "s3", "f")}
	force := &fakePolicy{name: "F", points: abi.PointEvictPods, evictPods: evictNamed(true, "f")}
	e := newEnv(t, Settings{Burst: 5}, nil, soft, force)
	e.node("n1", 1000)
	e.node("n2", 1000)
	e.pod("n1", "s1", 10, 100)
	e.pod("n1", "s2", 5, 100) // lowest priority: the soft victim
	e.pod("n1", "s3", 20, 100)
	e.pod("n1", "f", 0, 100)
	e.pod("n2", "s1", 10, 100, func(p *abi.Pod) { p.UID = "uid-s1-n2" })
	r := e.round()
	got := map[string][]string{}
	for _, v := range r.Victims {
		got[v.Node] = append(got[v.Node], v.Pod.Name+"/"+v.Scope)
	}
	want := map[string][]string{"n1": {"f/force", "s2/soft"}, "n2": {"s1/soft"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("victims %v, want %v", got, want)
	}
}

// The burst (§4.3 step 9) caps victims per node and round; the most
// evictable go first (lowest priority), the rest wait for later rounds.
func TestBurstPerNodeAndRound(t *testing.T) {
	p := &fakePolicy{name: "T", points: abi.PointEvictPods, evictPods: evictNamed(true, "a", "b", "c")}
	e := newEnv(t, Settings{Burst: 3}, nil, p)
	e.node("n1", 1000)
	for i, n := range []string{"a", "b", "c"} {
		e.pod("n1", n, int32(10*i), 100)
	}
	e2 := newEnv(t, Settings{Burst: 2}, nil, &fakePolicy{name: "T", points: abi.PointEvictPods, evictPods: evictNamed(true, "a", "b")})
	e2.node("n1", 1000)
	e2.pod("n1", "a", 30, 100)
	e2.pod("n1", "b", 1, 100)
	e2.pod("n1", "c", 0, 100) // not named
	if r := e.round(); !reflect.DeepEqual(names(r.Victims), []string{"a", "b", "c"}) {
		t.Fatalf("burst 3: victims %v", names(r.Victims))
	}
	if r := e2.round(); !reflect.DeepEqual(names(r.Victims), []string{"b", "a"}) {
		t.Fatalf("burst 2: victims %v, want lowest priority first", names(r.Victims))
	}
	// A policy asking for more than the burst on a node is refused whole.
	e3 := newEnv(t, Settings{Burst: 2}, nil, &fakePolicy{name: "T", points: abi.PointEvictPods, evictPods: evictNamed(true, "a", "b", "c")})
	e3.node("n1", 1000)
	for _, n := range []string{"a", "b", "c"} {
		e3.pod("n1", n, 1, 100)
	}
	if r := e3.round(); len(r.Victims) != 0 || len(r.Failures) != 1 || !strings.Contains(r.Failures[0].Err.Error(), "limit") {
		t.Fatalf("over the burst: victims %v failures %+v", names(r.Victims), r.Failures)
	}
}

// The cluster-wide rate limit holds back victims beyond its bucket.
func TestClusterWideRateLimit(t *testing.T) {
	p := &fakePolicy{name: "T", points: abi.PointEvictPods, evictPods: evictNamed(true, "a", "b", "c")}
	e := newEnv(t, Settings{Burst: 3, Rate: 1, RateBurst: 4}, nil, p)
	for _, n := range []string{"n1", "n2"} {
		e.node(n, 1000)
		for _, pn := range []string{"a", "b", "c"} {
			e.pod(n, pn, 1, 100, func(p *abi.Pod) { p.UID = n + pn })
		}
	}
	r := e.round()
	if len(r.Victims) != 4 || r.Throttled != 2 {
		t.Fatalf("victims %d throttled %d, want 4 and 2", len(r.Victims), r.Throttled)
	}
	e.clock.Step(time.Second) // one token more
	r = e.round()
	if len(r.Victims) != 1 {
		t.Fatalf("after 1s: %d victims, want 1", len(r.Victims))
	}
}

// CandidateSort (§4.4): least evictable first; the victim is the last.
func TestCandidateSort(t *testing.T) {
	mk := func(name string, qos abi.QoSClass, prio int32, scope string) *candidate {
		return &candidate{pod: &abi.Pod{Name: name, QoS: qos, Priority: prio}, scope: scope}
	}
	cs := []*candidate{
		mk("be-high", abi.QoSBestEffort, 100, ScopeForce),
		mk("a", abi.QoSBurstable, 5, "cpu"),
		mk("b", abi.QoSBurstable, 5, "memory"),
		mk("c", abi.QoSBurstable, 5, ScopeForce),
		mk("d", abi.QoSBurstable, 5, ScopeSoft),
		mk("e", abi.QoSBurstable, 5, "ephemeral-storage"),
		mk("z", abi.QoSGuaranteed, 50, "cpu"),
		mk("y", abi.QoSGuaranteed, 50, "cpu"),
		mk("be-low", abi.QoSBestEffort, 1, "cpu"),
	}
	sortCandidates(cs)
	var got []string
	for _, c := range cs {
		got = append(got, c.pod.Name)
	}
	want := []string{"z", "y", "c", "b", "a", "e", "d", "be-high", "be-low"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// Filters (§4.3 step 2): critical, static, mirror, terminating and
// skipped pods are never offered; nor are pods the killer holds or the
// Eviction API refused until Retry-After passes.
func TestCandidateFilters(t *testing.T) {
	var offered []string
	p := &fakePolicy{name: "P", points: abi.PointEvictPods, evictPods: func(v *view) abi.NodeEvictPods {
		offered = offered[:0]
		for _, i := range v.candidates {
			offered = append(offered, v.node.Pods[i].Name)
		}
		return abi.NodeEvictPods{}
	}}
	e := newEnv(t, Settings{SkipAnnotations: []string{"keep.me/please"}, SkipLabels: []string{"protected"}}, nil, p)
	e.node("n1", 100000)
	e.pod("n1", "plain", 1, 1)
	e.pod("n1", "static", 1, 1, func(p *abi.Pod) { p.Static = true })
	e.pod("n1", "mirror", 1, 1, func(p *abi.Pod) { p.Mirror = true })
	e.pod("n1", "critical", abi.SystemCriticalPriority, 1)
	e.pod("n1", "terminating", 1, 1, func(p *abi.Pod) { p.Terminating = true })
	e.pod("n1", "annotated", 1, 1, func(p *abi.Pod) { p.Annotations = abi.Labels{{Key: "keep.me/please", Value: ""}} })
	e.pod("n1", "labelled", 1, 1, func(p *abi.Pod) { p.Labels = abi.Labels{{Key: "protected", Value: "x"}} })
	e.pod("n1", "held", 1, 1)
	e.pod("n1", "blocked", 1, 1)
	e.killer.held["uid-held"] = true
	e.coord.Blocked("uid-blocked", t0.Add(10*time.Second))
	e.round()
	if !reflect.DeepEqual(offered, []string{"plain"}) {
		t.Fatalf("offered %v, want only plain", offered)
	}
	e.clock.Step(10 * time.Second)
	e.round()
	if !reflect.DeepEqual(offered, []string{"plain", "blocked"}) {
		t.Fatalf("after Retry-After: offered %v", offered)
	}
}

// Dry run: a dry-run policy's pods are counted and reported but never
// evicted; its thresholds still lead to TopEvictionPods; its conditions
// taint nothing.
func TestDryRunEvictsAndTaintsNothing(t *testing.T) {
	p := &fakePolicy{name: "D", points: abi.PointEvictionThreshold | abi.PointEvictPods,
		evictPods: func(v *view) abi.NodeEvictPods {
			r := evictNamed(true, "a")(v)
			r.Condition = &abi.EvictionCondition{Name: "Pressure", Met: true, Effects: []abi.TaintEffect{abi.EffectNoSchedule}}
			return r
		},
		threshold: hard(0, "n1"), top: lowestPriority}
	e := newEnv(t, Settings{}, []PolicySpec{{Plugin: "D", DryRun: true}}, p)
	e.node("n1", 1000)
	e.pod("n1", "a", 5, 100)
	e.pod("n1", "b", 1, 100)
	r := e.round()
	if len(r.Victims) != 0 || len(e.killer.submitted) != 0 || len(r.Taints) != 0 {
		t.Fatalf("dry run evicted %v / tainted %+v", names(r.Victims), r.Taints)
	}
	if got := names(r.DryRun); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("dry-run victims %v, want a (EvictPods) and b (top of the threshold)", got)
	}
}

// Failure safety: a trap, a garbage reply, a pod not offered, a reply for
// the wrong number of nodes: that call's answer is dropped whole and
// counted; the other policies' evictions go ahead, and (as in Katalyst) a
// failed EvictPods does not stop the same policy's threshold pass.
func TestFailingPolicyCallsEvictNothing(t *testing.T) {
	var badIndex abi.Encoder
	badIndex.EvictPodsReply([]abi.NodeEvictPods{{Pods: []abi.EvictPod{{Pod: 0, Force: true}}}}) // "crit" is never offered
	var wrongCount abi.Encoder
	wrongCount.EvictPodsReply(nil)
	var tooMany abi.Encoder
	tooMany.TopEvictionReply([]abi.TopEvictionPods{{Pods: []uint32{1, 2}}}) // hard: topN is 1
	cases := map[string]*fakePolicy{
		"trap":          {trap: map[abi.Func]bool{abi.FuncEvictPods: true}},
		"garbage":       {raw: map[abi.Func][]byte{abi.FuncEvictPods: {0xff, 0xff, 0xff}}},
		"not offered":   {raw: map[abi.Func][]byte{abi.FuncEvictPods: badIndex.B}},
		"wrong count":   {raw: map[abi.Func][]byte{abi.FuncEvictPods: wrongCount.B}},
		"top over topN": {raw: map[abi.Func][]byte{abi.FuncTopEvictionPods: tooMany.B}},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			bad.name, bad.points = "Bad", abi.PointEvictPods|abi.PointEvictionThreshold
			bad.evictPods = evictNamed(true, "b1")
			bad.threshold = hard(0, "n1")
			bad.top = lowestPriority
			good := &fakePolicy{name: "Good", points: abi.PointEvictPods, evictPods: evictNamed(true, "g")}
			e := newEnv(t, Settings{Burst: 5}, nil, bad, good)
			e.node("n1", 1000)
			e.pod("n1", "crit", abi.SystemCriticalPriority, 1)
			e.pod("n1", "b1", 50, 1)
			e.pod("n1", "b2", 1, 1)
			e.pod("n1", "g", 60, 1)
			r := e.round()
			if len(r.Failures) != 1 || r.Failures[0].Policy != "Bad" {
				t.Fatalf("failures %+v", r.Failures)
			}
			got := map[string]bool{}
			for _, v := range r.Victims {
				got[v.Pod.Name] = true
			}
			if !got["g"] || got["crit"] {
				t.Fatalf("victims %v", names(r.Victims))
			}
			failedCall := r.Failures[0].Call
			if failedCall == "evict_pods" && got["b1"] {
				t.Fatalf("a dropped EvictPods answer still evicted b1: %v", names(r.Victims))
			}
			if failedCall == "evict_pods" && !got["b2"] {
				t.Fatalf("the threshold pass did not run after a failed EvictPods: %v", names(r.Victims))
			}
			if failedCall == "top_eviction_pods" && got["b2"] {
				t.Fatalf("a dropped TopEvictionPods answer still evicted b2: %v", names(r.Victims))
			}
		})
	}
}

// A deleted node's state goes with it, and rounds keep working.
func TestNodeRemovedBetweenRounds(t *testing.T) {
	p := &fakePolicy{name: "P", points: abi.PointEvictionThreshold, threshold: hard(60, "n1", "n2"), top: lowestPriority}
	e := newEnv(t, Settings{}, nil, p)
	e.node("n1", 1000)
	e.node("n2", 1000)
	e.pod("n2", "x", 1, 1)
	e.round()
	if len(e.coord.state.thresholds) != 2 {
		t.Fatalf("thresholds %v", e.coord.state.thresholds)
	}
	if err := e.cache.RemoveNode("n1"); err != nil {
		t.Fatal(err)
	}
	e.clock.Step(time.Minute)
	r := e.round()
	if len(e.coord.state.thresholds) != 1 || len(r.Victims) != 1 || r.Victims[0].Node != "n2" {
		t.Fatalf("after removal: thresholds %v victims %+v", e.coord.state.thresholds, r.Victims)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	e := newEnv(t, Settings{SyncPeriod: time.Second}, nil, &fakePolicy{name: "P", points: abi.PointEvictPods})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.coord.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// Policies see each round's usage and conditions: a new reading reaches
// the guest's observations, an unchanged one is not sent again, and a
// node without data is "no data" (nil), never zero.
func TestObservationsFollowUsage(t *testing.T) {
	var seen []string
	p := &fakePolicy{name: "U", points: abi.PointEvictionThreshold, threshold: func(v *view) abi.ThresholdResult {
		s := v.node.Node.Name + "="
		if v.obs.Usage == nil {
			s += "nodata"
		} else {
			s += fmt.Sprint(v.obs.Usage.Memory)
		}
		for i, po := range v.obs.Pods {
			s += "," + v.node.Pods[i].Name + ":"
			if po.Usage == nil {
				s += "nodata"
			} else {
				s += fmt.Sprint(po.Usage.Memory)
			}
			if po.Flags&abi.PodCritical != 0 {
				s += "!"
			}
		}
		seen = append(seen, s)
		return abi.ThresholdResult{}
	}}
	e := newEnv(t, Settings{}, nil, p)
	e.node("n1", 1000)
	e.node("n2", 1000)
	e.pod("n1", "a", 1, 1)
	e.pod("n1", "crit", abi.SystemCriticalPriority, 1)
	u := &mapUsage{nodes: map[string]*abi.Usage{"n1": {Memory: 10}}, pods: map[string]*abi.Usage{"default/a": {Memory: 5}}}
	e.coord.usage = u
	e.round()
	want := []string{"n1=10,a:5,crit:nodata!", "n2=nodata"}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("round 1 saw %q, want %q", seen, want)
	}
	seen = nil
	e.coord.usage = &mapUsage{nodes: map[string]*abi.Usage{"n1": {Memory: 20}}, pods: map[string]*abi.Usage{"default/a": {Memory: 7}}}
	e.round()
	if want := []string{"n1=20,a:7,crit:nodata!", "n2=nodata"}; !reflect.DeepEqual(seen, want) {
		t.Fatalf("round 2 saw %q, want %q", seen, want)
	}
}

// With no policies the coordinator still removes the taints it manages
// (left by an earlier configuration), then stops copying the cluster
// each round until its policies change.
func TestNoPoliciesGoIdleAfterTaintsAreClean(t *testing.T) {
	c := cache.New(0, nil)
	e := &env{t: t, cache: c, cluster: &fakeCluster{cache: c}, killer: &fakeKiller{held: map[string]bool{}}, clock: clocktesting.NewFakeClock(t0)}
	counted := &countingCluster{Cluster: e.cluster}
	e.coord = New(Options{Cluster: counted, Killer: e.killer, Clock: e.clock}, nil)
	e.cache.AddNode(abi.Node{Name: "n1", Taints: []abi.Taint{{Key: TaintPrefix + "MemoryPressure", Effect: abi.EffectNoSchedule}}})
	e.node("n2", 1000)

	if r := e.round(); len(r.Taints) != 1 || r.Taints[0].Node != "n1" || len(r.Taints[0].After) != 0 {
		t.Fatalf("first round with no policies: taint changes %+v, want n1's managed taint removed", r.Taints)
	}
	e.round() // nothing left to change: the coordinator goes idle
	if counted.updates != 2 {
		t.Fatalf("%d snapshot updates in two rounds, want 2", counted.updates)
	}
	if n := len(e.coord.snap.Nodes()); n != 0 {
		t.Fatalf("idle coordinator holds a snapshot of %d nodes, want none", n)
	}
	for range 3 {
		e.round()
	}
	if counted.updates != 2 {
		t.Fatalf("idle rounds updated the snapshot: %d updates, want 2", counted.updates)
	}

	// Another set (a reload) ends it: the next round looks at the
	// cluster again and sees a managed taint that appeared meanwhile.
	n1, _ := e.cache.Node("n1")
	n1.Taints = append(n1.Taints, abi.Taint{Key: TaintPrefix + "DiskPressure", Effect: abi.EffectNoSchedule})
	e.cache.AddNode(n1)
	e.coord.SetPolicies(&PolicySet{})
	if r := e.round(); len(r.Taints) != 1 || r.Taints[0].Node != "n1" {
		t.Fatalf("round after a new set: taint changes %+v, want n1's new managed taint removed", r.Taints)
	}
	if counted.updates != 3 {
		t.Fatalf("%d snapshot updates after a new set, want 3", counted.updates)
	}
}

// countingCluster counts snapshot updates.
type countingCluster struct {
	Cluster
	updates int
}

func (c *countingCluster) UpdateSnapshot(dst *snapshot.Snapshot) {
	c.updates++
	c.Cluster.UpdateSnapshot(dst)
}
