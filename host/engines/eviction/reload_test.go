package eviction

import (
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"

	"github.com/wasmsched/wasmsched/abi"
)

// Settings handed over while the coordinator runs apply at its next
// round: burst, the rate limiter's rate and burst, the skip keys.
func TestSetSettingsAppliesAtTheNextRound(t *testing.T) {
	e := newEnv(t, Settings{SyncPeriod: 10 * time.Second, Burst: 1, Rate: 1}, nil, &fakePolicy{name: "P", points: abi.PointEvictPods})
	e.coord.SetSettings(Settings{SyncPeriod: time.Minute, Burst: 4, Rate: 2, SkipLabels: []string{"keep"}})
	if s := e.coord.Settings(); s.Burst != 4 || s.SyncPeriod != time.Minute {
		t.Fatalf("Settings before the round: %+v", s)
	}
	e.round()
	if s := e.coord.settings; s.Burst != 4 || s.Rate != 2 || s.RateBurst != 4 {
		t.Fatalf("settings after the round: %+v", s)
	}
	if l, b := e.coord.limiter.Limit(), e.coord.limiter.Burst(); l != rate.Limit(2) || b != 4 {
		t.Fatalf("limiter after the round: %v/s burst %d", l, b)
	}
	if _, ok := e.coord.skip.labels["keep"]; !ok {
		t.Fatalf("skip labels after the round: %+v", e.coord.skip)
	}
}

// Run's rounds follow a new sync period from the change on: with an hour
// before it, one second after.
func TestRunFollowsANewSyncPeriod(t *testing.T) {
	e := newEnv(t, Settings{SyncPeriod: time.Hour}, nil, &fakePolicy{name: "P", points: abi.PointEvictPods})
	e.node("n1", 1000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.coord.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	for !e.clock.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	e.coord.SetSettings(Settings{SyncPeriod: time.Second})
	calls := func() int {
		e.mod.mu.Lock()
		defer e.mod.mu.Unlock()
		return len(e.mod.calls)
	}
	for i := 0; calls() == 0; i++ {
		if i == 1000 {
			t.Fatal("no round within 1000 steps of a second after the sync period became one second")
		}
		e.clock.Step(time.Second)
		time.Sleep(time.Millisecond)
	}
}

// The canary asks every policy on the current state and commits nothing:
// no kill, no taint, no threshold state; a failing policy is an error
// naming it and the call.
func TestCanaryCommitsNothing(t *testing.T) {
	evict := &fakePolicy{name: "E", points: abi.PointEvictPods, evictPods: func(v *view) abi.NodeEvictPods {
		return abi.NodeEvictPods{Pods: []abi.EvictPod{{Pod: 0, Force: true}}}
	}}
	thr := &fakePolicy{name: "T", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: lowestPriority}
	e := newEnv(t, Settings{}, nil, evict, thr)
	e.node("n1", 1000)
	e.pod("n1", "a", 1, 100)
	ctx := context.Background()
	if err := e.coord.Canary(ctx, e.coord.PolicySet(), 1); err != nil {
		t.Fatal(err)
	}
	e.mod.mu.Lock()
	got := strings.Join(e.mod.calls, " ")
	e.mod.mu.Unlock()
	if got != "E:evict_pods T:threshold_met T:top_eviction_pods" {
		t.Fatalf("calls %q", got)
	}
	if len(e.killer.submitted) != 0 || len(e.cluster.taints) != 0 || len(e.coord.state.thresholds) != 0 {
		t.Fatalf("the canary committed: kills %v taints %v thresholds %v", e.killer.names(), e.cluster.taints, e.coord.state.thresholds)
	}
	thr.trap = map[abi.Func]bool{abi.FuncThresholdMet: true}
	err := e.coord.Canary(ctx, e.coord.PolicySet(), 1)
	if err == nil || !strings.Contains(err.Error(), "eviction policy T") || !strings.Contains(err.Error(), "threshold_met") {
		t.Fatalf("a trapping policy: %v", err)
	}
}

// cachedUsage is a usage source that caches, recording the TTLs set.
type cachedUsage struct{ ttls []time.Duration }

func (u *cachedUsage) Usage(context.Context) (Usage, error) { return nil, nil }
func (u *cachedUsage) SetTTL(d time.Duration)               { u.ttls = append(u.ttls, d) }

// A new sync period makes a caching usage source keep a reading for half
// of it, so every round still gets a fresh one; other changes leave it.
func TestNewSyncPeriodSetsTheUsageTTL(t *testing.T) {
	u := &cachedUsage{}
	c := New(Options{Settings: Settings{SyncPeriod: time.Hour}, Cluster: &fakeCluster{cache: cache.New(0, nil)},
		Killer: &fakeKiller{}, Usage: u}, nil)
	c.SetSettings(Settings{SyncPeriod: time.Hour, Burst: 2})
	c.RunRound(context.Background())
	c.SetSettings(Settings{SyncPeriod: 10 * time.Second})
	c.RunRound(context.Background())
	if len(u.ttls) != 1 || u.ttls[0] != 5*time.Second {
		t.Fatalf("TTLs set: %v, want [5s]", u.ttls)
	}
}
