package cache

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeClock) step(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

func pod(uid, node string, cpu int64) *abi.Pod {
	return &abi.Pod{UID: uid, Name: uid, Namespace: "ns", NodeName: node,
		Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: cpu}}}}
}

func newCache(t *testing.T) (*Cache, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1000, 0)}
	c := New(10*time.Second, clk.now)
	c.AddNode(abi.Node{Name: "a", Allocatable: abi.Resources{MilliCPU: 1000}})
	c.AddNode(abi.Node{Name: "b", Allocatable: abi.Resources{MilliCPU: 1000}})
	return c, clk
}

func requested(c *Cache, node string) int64 {
	s := snapshot.New()
	c.UpdateSnapshot(s)
	return s.Get(node).Info.Requested.MilliCPU
}

func TestAssumeThenConfirm(t *testing.T) {
	c, clk := newCache(t)
	p := pod("p", "a", 300)
	if err := c.AssumePod(p); err != nil {
		t.Fatal(err)
	}
	if got := requested(c, "a"); got != 300 {
		t.Fatalf("assumed pod not counted: %d", got)
	}
	c.FinishBinding(p)
	if err := c.AddPod(pod("p", "a", 300)); err != nil {
		t.Fatal(err)
	}
	if c.IsAssumed("p") {
		t.Fatal("still assumed after confirmation")
	}
	clk.step(time.Hour)
	if exp := c.Cleanup(); len(exp) != 0 {
		t.Fatalf("a confirmed pod expired: %v", exp)
	}
	if got := requested(c, "a"); got != 300 {
		t.Fatalf("confirmed pod counted %d, want 300 once", got)
	}
}

func TestConfirmOnAnotherNodeMovesThePod(t *testing.T) {
	c, _ := newCache(t)
	if err := c.AssumePod(pod("p", "a", 300)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPod(pod("p", "b", 300)); err != nil {
		t.Fatal(err)
	}
	if a, b := requested(c, "a"), requested(c, "b"); a != 0 || b != 300 {
		t.Fatalf("a=%d b=%d, want 0 and 300", a, b)
	}
}

func TestForgetReleasesTheResources(t *testing.T) {
	c, _ := newCache(t)
	p := pod("p", "a", 300)
	if err := c.AssumePod(p); err != nil {
		t.Fatal(err)
	}
	if err := c.ForgetPod(p); err != nil {
		t.Fatal(err)
	}
	if got := requested(c, "a"); got != 0 {
		t.Fatalf("forgotten pod still counted: %d", got)
	}
	if err := c.ForgetPod(p); err == nil {
		t.Fatal("forgetting twice succeeded")
	}
}

func TestUnconfirmedAssumptionExpiresOnlyAfterBindingFinishedAndTTL(t *testing.T) {
	c, clk := newCache(t)
	p := pod("p", "a", 300)
	if err := c.AssumePod(p); err != nil {
		t.Fatal(err)
	}
	clk.step(time.Hour)
	if exp := c.Cleanup(); len(exp) != 0 {
		t.Fatal("expired while binding was still running")
	}
	c.FinishBinding(p)
	clk.step(9 * time.Second)
	if exp := c.Cleanup(); len(exp) != 0 {
		t.Fatal("expired before the TTL")
	}
	clk.step(2 * time.Second)
	if exp := c.Cleanup(); len(exp) != 1 || exp[0].UID != "p" {
		t.Fatalf("expired = %v, want p", exp)
	}
	if got := requested(c, "a"); got != 0 {
		t.Fatalf("expired pod still counted: %d", got)
	}
}

func TestBadTransitionsAreErrors(t *testing.T) {
	c, _ := newCache(t)
	if err := c.AssumePod(pod("x", "", 1)); err == nil {
		t.Error("assumed a pod with no node")
	}
	if err := c.AssumePod(pod("x", "nowhere", 1)); err == nil {
		t.Error("assumed a pod on a missing node")
	}
	if err := c.AddPod(pod("y", "a", 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPod(pod("y", "a", 1)); err == nil {
		t.Error("added a pod twice")
	}
	if err := c.AssumePod(pod("y", "a", 1)); err == nil {
		t.Error("assumed a pod already added")
	}
	if err := c.RemoveNode("a"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemovePod(pod("y", "a", 1)); err != nil {
		t.Errorf("removing a pod whose node is gone: %v", err)
	}
}

func TestConcurrentUseIsSafe(t *testing.T) {
	c, _ := newCache(t)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			s := snapshot.New()
			for i := 0; i < 200; i++ {
				p := pod(string(rune('a'+w))+string(rune('0'+i%10))+"-"+time.Duration(i).String(), "a", 1)
				if err := c.AssumePod(p); err != nil {
					t.Error(err)
					return
				}
				c.UpdateSnapshot(s)
				if i%2 == 0 {
					_ = c.ForgetPod(p)
				} else {
					_ = c.AddPod(p)
				}
			}
		}(w)
	}
	wg.Wait()
	if got := requested(c, "a"); got != 4*100 {
		t.Fatalf("requested = %d, want 400 (the confirmed half)", got)
	}
}

func TestPodsBoundToANodeNotYetSeenJoinItWhenItArrives(t *testing.T) {
	c := New(0, nil)
	early := &abi.Pod{UID: "early", Namespace: "ns", Name: "early", NodeName: "n1",
		Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 2000}}}}
	gone := &abi.Pod{UID: "gone", Namespace: "ns", Name: "gone", NodeName: "n1",
		Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 500}}}}
	for _, p := range []*abi.Pod{early, gone} {
		if err := c.AddPod(p); err != nil {
			t.Fatalf("add %s before its node: %v", p.Name, err)
		}
	}
	if err := c.RemovePod(gone); err != nil {
		t.Fatalf("remove a pod still waiting for its node: %v", err)
	}
	relabelled := *early
	relabelled.Labels = abi.Labels{{Key: "app", Value: "web"}}
	if err := c.UpdatePod(&relabelled); err != nil {
		t.Fatalf("update a waiting pod: %v", err)
	}
	c.AddNode(abi.Node{Name: "n1", Allocatable: abi.Resources{MilliCPU: 4000}})
	s := snapshot.New()
	c.UpdateSnapshot(s)
	ni := s.Get("n1")
	if ni == nil {
		t.Fatal("node missing from the snapshot")
	}
	if len(ni.Info.Pods) != 1 || ni.Info.Pods[0].UID != "early" || len(ni.Info.Pods[0].Labels) != 1 {
		t.Fatalf("pods on n1 = %+v, want the updated early pod only", ni.Info.Pods)
	}
	if got := ni.Info.Requested.MilliCPU; got != 2000 {
		t.Fatalf("requested cpu on n1 = %d, want 2000 (early's; gone was removed)", got)
	}
	if err := c.RemovePod(early); err != nil {
		t.Fatal(err)
	}
	c.UpdateSnapshot(s)
	if n := len(s.Get("n1").Info.Pods); n != 0 {
		t.Fatalf("%d pods left on n1 after removing early", n)
	}
}

// A pod placed for good is kept only in its node's Pods; GetPod,
// UpdatePod and RemovePod find it there, whether it was added directly,
// confirmed after an assumption, or waited for its node.
func TestPlacedPodsAreReadFromTheirNode(t *testing.T) {
	c, _ := newCache(t)
	direct := pod("direct", "a", 100)
	assumed := pod("assumed", "b", 200)
	if err := c.AddPod(direct); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(assumed); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPod(pod("assumed", "b", 200)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPod(pod("late", "c", 300)); err != nil {
		t.Fatal(err)
	}
	c.AddNode(abi.Node{Name: "c", Allocatable: abi.Resources{MilliCPU: 1000}})
	for uid, node := range map[string]string{"direct": "a", "assumed": "b", "late": "c"} {
		got := c.GetPod(uid)
		if got == nil || got.UID != uid || got.NodeName != node {
			t.Fatalf("GetPod(%s) = %+v", uid, got)
		}
		if c.pods[uid].pod != nil {
			t.Errorf("%s: the cache keeps a second copy", uid)
		}
	}
	if !reflect.DeepEqual(c.GetPod("direct"), direct) {
		t.Fatalf("GetPod = %+v, want %+v", c.GetPod("direct"), direct)
	}
	if err := c.UpdatePod(pod("direct", "a", 400)); err != nil {
		t.Fatal(err)
	}
	if got := requested(c, "a"); got != 400 {
		t.Fatalf("after update: %d requested, want 400", got)
	}
	for uid, node := range map[string]string{"direct": "a", "assumed": "b", "late": "c"} {
		if err := c.RemovePod(&abi.Pod{UID: uid, NodeName: node}); err != nil {
			t.Fatal(err)
		}
		if got := requested(c, node); got != 0 {
			t.Fatalf("after removing %s: %d requested on %s", uid, got, node)
		}
	}
	if c.GetPod("direct") != nil {
		t.Fatal("removed pod still found")
	}
}
