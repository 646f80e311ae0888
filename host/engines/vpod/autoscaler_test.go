package vpod

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/internal/testwait"
)

// recordingEvictor records the evictions asked of it.
type recordingEvictor struct {
	mu   sync.Mutex
	got  []Eviction
	pods []*corev1.Pod
	err  error
}

func (r *recordingEvictor) evict(_ context.Context, pod *corev1.Pod, v VPod, p Placement) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, Eviction{VPod: v.Key, Pod: p.PodName, VReplicas: p.VReplicas})
	r.pods = append(r.pods, pod)
	return r.err
}

// fakeClock is a settable Options.Now.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestAutoscaler(t *testing.T) {
	policyNoSpread := &Policy{Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}
	zonePolicy := &Policy{Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 1, `{"MaxSkew": 1}`)}}
	nodePolicy := &Policy{Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 1, `{"MaxSkew": 1}`), prio("AvailabilityNodePriority", 1, `{"MaxSkew": 1}`)}}
	evenPolicy := &Policy{Predicates: []PolicyEntry{pred("EvenPodSpread", `{"MaxSkew": 1}`)}}
	tests := []struct {
		name      string
		strategy  Strategy
		sched     *Policy
		min       int32
		step      int32 // MaxScaleUpStep
		replicas  int
		nodes     int
		zones     int
		vpods     []VPod
		gone      []int // pods deleted
		reserved  map[Key]map[string]int32
		scaleDown bool
		want      AutoscaleResult
	}{{
		// ⌈25/10⌉ = 3.
		name: "MAXFILLUP scale up", strategy: StrategyMaxFillUp, replicas: 1, nodes: 1, zones: 1,
		vpods: []VPod{vp("a", 15, pl(0, 10)), vp("b", 10)},
		want:  AutoscaleResult{Replicas: 1, Target: 3, ScaleFactor: 1, Scaled: true},
	}, {
		// ⌈5/10⌉ = 1 < 3, but a scale-up pass never lowers the scale.
		name: "MAXFILLUP no scale down on a scale-up pass", strategy: StrategyMaxFillUp, replicas: 3, nodes: 1, zones: 1,
		vpods: []VPod{vp("a", 5, pl(0, 5))},
		want:  AutoscaleResult{Replicas: 3, Target: 3, ScaleFactor: 1},
	}, {
		name: "MAXFILLUP scale down", strategy: StrategyMaxFillUp, replicas: 3, nodes: 1, zones: 1, scaleDown: true,
		vpods: []VPod{vp("a", 5, pl(0, 5))},
		want:  AutoscaleResult{Replicas: 3, Target: 1, ScaleFactor: 1, Scaled: true},
	}, {
		// Knative's formula (a step too large to bound it): last
		// ordinal 1 (pods 0,1); pending 4 → ⌈4/10⌉ = 1 pod → 3.
		name: "policy pending", strategy: StrategyPolicy, sched: policyNoSpread, step: 100, replicas: 2, nodes: 2, zones: 1,
		vpods: []VPod{vp("a", 5, pl(0, 1))},
		want:  AutoscaleResult{Replicas: 2, Target: 3, ScaleFactor: 1, Scaled: true},
	}, {
		// The same by default: the vpods need ⌈5/10⌉ = 1 pod, the step
		// is that 1, and 2 pods are already need + step: no scale-up.
		name: "policy pending, bounded", strategy: StrategyPolicy, sched: policyNoSpread, replicas: 2, nodes: 2, zones: 1,
		vpods: []VPod{vp("a", 5, pl(0, 1))},
		want:  AutoscaleResult{Replicas: 2, Target: 2, Bounded: true, Wanted: 3, Bound: 2, Need: 1, ScaleFactor: 1},
	}, {
		// The reservation of a's 9 on pod 1 leaves 1 free there and 9
		// on pod 0: with EvenPodSpread a predicate, pods to add =
		// ⌈pending 4 / least non-zero free 1⌉ = 4 → 2 + 4.
		name: "policy pending, even pod spread", strategy: StrategyPolicy, sched: evenPolicy, step: 100, replicas: 2, nodes: 2, zones: 1,
		vpods:    []VPod{vp("a", 5, pl(0, 1))},
		reserved: map[Key]map[string]int32{key("a"): {pn(0): 1, pn(1): 9}},
		want:     AutoscaleResult{Replicas: 2, Target: 6, ScaleFactor: 1, Scaled: true},
	}, {
		// A step of 2: one pass adds at most 2, and the StatefulSet
		// never goes above need 1 + 2.
		name: "policy pending, even pod spread, step 2", strategy: StrategyPolicy, sched: evenPolicy, step: 2, replicas: 2, nodes: 2, zones: 1,
		vpods:    []VPod{vp("a", 5, pl(0, 1))},
		reserved: map[Key]map[string]int32{key("a"): {pn(0): 1, pn(1): 9}},
		want:     AutoscaleResult{Replicas: 2, Target: 3, Bounded: true, Wanted: 6, Bound: 3, Need: 1, ScaleFactor: 1, Scaled: true},
	}, {
		// From zero, one pass may add the need: 35 vreplicas, 4 pods.
		name: "policy from zero, bounded by the need", strategy: StrategyPolicy, sched: evenPolicy, replicas: 0, nodes: 2, zones: 1,
		vpods: []VPod{vp("a", 30), vp("b", 5)},
		want:  AutoscaleResult{Replicas: 0, Target: 4, ScaleFactor: 1, Scaled: true},
	}, {
		// The bound never lowers a target: a scale-down pass still
		// shrinks.
		name: "MAXFILLUP scale down unaffected", strategy: StrategyMaxFillUp, step: 1, replicas: 5, nodes: 1, zones: 1, scaleDown: true,
		vpods: []VPod{vp("a", 5, pl(0, 5))},
		want:  AutoscaleResult{Replicas: 5, Target: 1, ScaleFactor: 1, Scaled: true},
	}, {
		// Zone priority: factor 3 zones; pending 11 → 2 pods → ⌈2/3⌉·3
		// = 3 added to last ordinal 0 + 1.
		name: "zone scale factor", strategy: StrategyPolicy, sched: zonePolicy, replicas: 1, nodes: 3, zones: 3,
		vpods: []VPod{vp("a", 21, pl(0, 10))},
		want:  AutoscaleResult{Replicas: 1, Target: 4, ScaleFactor: 3, Scaled: true},
	}, {
		// Node priority wins over zone priority: factor 4 nodes.
		name: "node scale factor", strategy: StrategyPolicy, sched: nodePolicy, replicas: 1, nodes: 4, zones: 2,
		vpods: []VPod{vp("a", 21, pl(0, 10))},
		want:  AutoscaleResult{Replicas: 1, Target: 5, ScaleFactor: 4, Scaled: true},
	}, {
		// Nothing pending; pods 2 and 3 gone: last ordinal 1, so 2
		// replicas are enough.
		name: "policy scale down", strategy: StrategyPolicy, sched: policyNoSpread, replicas: 4, nodes: 2, zones: 1, scaleDown: true,
		vpods: []VPod{vp("a", 2, pl(0, 1), pl(1, 1))}, gone: []int{2, 3},
		want: AutoscaleResult{Replicas: 4, Target: 2, ScaleFactor: 1, Scaled: true},
	}, {
		// The last ordinal counts schedulable pods too (v1.16.0 code):
		// with pods 2 and 3 up the target stays 4; the pass compacts
		// instead (nothing to evict on pod 3).
		name: "policy last ordinal counts schedulable pods", strategy: StrategyPolicy, sched: policyNoSpread, replicas: 4, nodes: 2, zones: 1, scaleDown: true,
		vpods: []VPod{vp("a", 2, pl(0, 1), pl(1, 1))},
		want:  AutoscaleResult{Replicas: 4, Target: 4, ScaleFactor: 1, Compacted: true},
	}, {
		// No pods and no placements: last ordinal −1, target 0 + the
		// pods for 3 pending.
		name: "policy from zero", strategy: StrategyPolicy, sched: policyNoSpread, replicas: 0, nodes: 1, zones: 1,
		vpods: []VPod{vp("a", 3)},
		want:  AutoscaleResult{Replicas: 0, Target: 1, ScaleFactor: 1, Scaled: true},
	}, {
		// ⌈5/10⌉ = 1, MinReplicas 2.
		name: "MAXFILLUP_SPREAD min replicas", strategy: StrategyMaxFillUpSpread, min: 2, replicas: 1, nodes: 1, zones: 1,
		vpods: []VPod{vp("a", 5)},
		want:  AutoscaleResult{Replicas: 1, Target: 2, ScaleFactor: 1, Scaled: true},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := zonedCluster(tc.replicas, tc.nodes, tc.zones, tc.vpods...)
			for _, o := range tc.gone {
				c.DeletePod(pn(o))
			}
			var p *Policies
			if tc.sched != nil {
				var err error
				if p, err = fakePolicies(tc.sched, nil, newFakeModule("knative")); err != nil {
					t.Fatal(err)
				}
			}
			s := newSched(t, Settings{Capacity: 10, Strategy: tc.strategy, MinReplicas: tc.min, MaxScaleUpStep: tc.step, SchedPolicy: tc.sched}, c, p, Options{})
			if tc.reserved != nil {
				s.reserved = copyReserved(tc.reserved)
			}
			got, err := s.Autoscale(bg, tc.scaleDown)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("result %+v, want %+v", got, tc.want)
			}
			wantScaled := []int32(nil)
			if tc.want.Scaled {
				wantScaled = []int32{tc.want.Target}
			}
			if sc := c.Scaled(); !reflect.DeepEqual(sc, wantScaled) {
				t.Errorf("scale calls %v, want %v", sc, wantScaled)
			}
		})
	}
}

func TestCompaction(t *testing.T) {
	t.Run("MAXFILLUP", func(t *testing.T) {
		// Target ⌈27/10⌉ = 3 = replicas. Pods 0,1 have 14 free ≥ the 2
		// used on the last pod: b's placement on pod 2 is evicted.
		c := zonedCluster(3, 1, 1, vp("a", 25, pl(0, 3), pl(1, 3)), vp("b", 2, pl(2, 2)))
		ev := &recordingEvictor{}
		clk := &fakeClock{t: time.Unix(1000, 0)}
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp, RefreshPeriod: time.Minute}, c, nil, Options{Evictor: ev.evict, Now: clk.now})
		got, err := s.Autoscale(bg, true)
		want := AutoscaleResult{Replicas: 3, Target: 3, ScaleFactor: 1, Compacted: true, Evictions: []Eviction{{VPod: key("b"), Pod: pn(2), VReplicas: 2}}}
		if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(ev.got, want.Evictions) || ev.pods[0] == nil || ev.pods[0].Name != pn(2) {
			t.Fatalf("%+v %v (evictor %v)", got, err, ev.got)
		}
		// Within the refresh period: no compaction.
		if got, _ := s.Autoscale(bg, true); got.Compacted {
			t.Fatalf("compacted again within the refresh period")
		}
		// A scale-up pass never compacts.
		clk.t = clk.t.Add(2 * time.Minute)
		if got, _ := s.Autoscale(bg, false); got.Compacted {
			t.Fatalf("compacted on a scale-up pass")
		}
		if got, _ := s.Autoscale(bg, true); !got.Compacted {
			t.Fatalf("no compaction after the refresh period")
		}
	})
	t.Run("MAXFILLUP no room", func(t *testing.T) {
		// a fills pods 0,1 but for 1 free: no room for b's 2.
		c := zonedCluster(3, 1, 1, vp("a", 21, pl(0, 9), pl(1, 10)), vp("b", 2, pl(2, 2)))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp}, c, nil, Options{})
		if got, err := s.Autoscale(bg, true); err != nil || got.Compacted {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("policy", func(t *testing.T) {
		// Last ordinal 2, nothing pending: target 3 = replicas. The
		// other pods have 18 free ≥ 1 used on pod 2, and 3−1 ≥ 1.
		pol := &Policy{Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}
		p, err := fakePolicies(pol, nil, newFakeModule("knative"))
		if err != nil {
			t.Fatal(err)
		}
		c := zonedCluster(3, 3, 1, vp("a", 3, pl(0, 2), pl(2, 1)))
		ev := &recordingEvictor{}
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyPolicy, SchedPolicy: pol}, c, p, Options{Evictor: ev.evict})
		got, err := s.Autoscale(bg, true)
		want := []Eviction{{VPod: key("a"), Pod: pn(2), VReplicas: 1}}
		if err != nil || !got.Compacted || !reflect.DeepEqual(got.Evictions, want) {
			t.Fatalf("%+v %v", got, err)
		}
	})
	t.Run("policy pod gone", func(t *testing.T) {
		// v1.16.0 needs the pod it evicts from: a placement on a missing
		// last pod fails the pass.
		pol := &Policy{}
		p, _ := fakePolicies(pol, nil, newFakeModule("knative"))
		c := zonedCluster(4, 3, 1, vp("a", 3, pl(0, 2), pl(3, 1)))
		c.DeletePod(pn(3))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyPolicy, SchedPolicy: pol}, c, p, Options{Evictor: (&recordingEvictor{}).evict})
		if _, err := s.Autoscale(bg, true); err == nil {
			t.Fatal("want an error for the missing pod")
		}
	})
	t.Run("MAXFILLUP_SPREAD", func(t *testing.T) {
		// Target ⌈15/10⌉ = 2 = replicas; a placement on pod 3 (past the
		// replicas, pod gone) is evicted with a nil pod.
		c := zonedCluster(2, 1, 1, vp("a", 15, pl(0, 5), pl(3, 10)))
		ev := &recordingEvictor{}
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread}, c, nil, Options{Evictor: ev.evict})
		got, err := s.Autoscale(bg, true)
		want := []Eviction{{VPod: key("a"), Pod: pn(3), VReplicas: 10}}
		if err != nil || !got.Compacted || !reflect.DeepEqual(got.Evictions, want) || ev.pods[0] != nil {
			t.Fatalf("%+v %v %v", got, err, ev.pods)
		}
	})
	t.Run("evictor error", func(t *testing.T) {
		c := zonedCluster(2, 1, 1, vp("a", 15, pl(0, 5), pl(3, 10)))
		ev := &recordingEvictor{err: errors.New("conflict")}
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUpSpread}, c, nil, Options{Evictor: ev.evict})
		if _, err := s.Autoscale(bg, true); err == nil {
			t.Fatal("want the evictor's error")
		}
	})
}

// failCountingCluster counts the StatefulSet reads that failed: one per
// autoscaler pass that found no StatefulSet.
type failCountingCluster struct {
	*StaticCluster
	failed atomic.Int32
}

func (c *failCountingCluster) Replicas(ctx context.Context) (int32, error) {
	r, err := c.StaticCluster.Replicas(ctx)
	if err != nil {
		c.failed.Add(1)
	}
	return r, err
}

// TestRun: a trigger makes a scale-up pass; a failing pass is retried.
func TestRun(t *testing.T) {
	c := &failCountingCluster{StaticCluster: zonedCluster(1, 1, 1, vp("a", 25))}
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp, RefreshPeriod: time.Hour, RetryPeriod: 10 * time.Millisecond}, c, nil, Options{})
	ctx, cancel := context.WithCancel(bg)
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	s.Trigger()
	waitFor(t, func() bool { return reflect.DeepEqual(c.Scaled(), []int32{3}) })
	// The StatefulSet disappears: the pass fails and is retried until
	// it comes back.
	c.DeleteStatefulSet()
	c.SetVPod(vp("a", 45))
	s.Trigger()
	// The triggered pass and at least one retry fail before it comes back.
	waitFor(t, func() bool { return c.failed.Load() >= 2 })
	c.SetReplicas(3)
	waitFor(t, func() bool { return reflect.DeepEqual(c.Scaled(), []int32{3, 5}) })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, 5*time.Second, cond, "condition not met in time")
}

// TestConcurrentUse runs Schedule, Autoscale, Reserved and SetPolicies
// at once (for the race detector).
func TestConcurrentUse(t *testing.T) {
	p, err := fakePolicies(lowestOrdinal, highestOrdinalOut, newFakeModule("knative"))
	if err != nil {
		t.Fatal(err)
	}
	var vpods []VPod
	for i := 0; i < 8; i++ {
		vpods = append(vpods, vp(string(rune('a'+i)), int32(i+1)))
	}
	c := zonedCluster(4, 2, 2, vpods...)
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyPolicy, SchedPolicy: lowestOrdinal, DeschedPolicy: highestOrdinalOut}, c, p, Options{})
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				switch g {
				case 0:
					v := vpods[i%len(vpods)]
					v.VReplicas = int32(i % 5)
					if ps, err := s.Schedule(bg, v); err == nil {
						c.Commit(v.Key, ps)
					}
				case 1:
					_, _ = s.Autoscale(bg, i%2 == 0)
				case 2:
					_ = s.Reserved()
					s.SetPolicies(p)
				}
			}
		}(g)
	}
	wg.Wait()
}
