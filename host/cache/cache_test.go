package cache

import (
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/snapshot"
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
