package perfdriver

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

func pendingPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
}

func boundPod(name, node string) *corev1.Pod {
	p := pendingPod(name)
	p.Spec.NodeName = node
	return p
}

func TestBoundCounterCountsUnboundToBound(t *testing.T) {
	c := newBoundCounter(clock.RealClock{}, 3)
	c.observe(nil, pendingPod("a"))                     // created pending
	c.observe(pendingPod("a"), pendingPod("a"))         // still pending
	c.observe(pendingPod("a"), boundPod("a", "n1"))     // bound: 1
	c.observe(boundPod("a", "n1"), boundPod("a", "n1")) // already bound
	c.observe(nil, boundPod("b", "n1"))                 // seen bound first: 2
	c.observe(boundPod("b", "n1"), pendingPod("b"))     // cannot happen; never counts
	if n, _ := c.count(); n != 2 {
		t.Fatalf("bound = %d, want 2", n)
	}
	select {
	case <-c.done:
		t.Fatal("done before the target")
	default:
	}
	c.observe(pendingPod("c"), boundPod("c", "n2")) // 3: target
	<-c.done
	c.observe(pendingPod("d"), boundPod("d", "n2")) // past the target: no second close
	if n, _ := c.count(); n != 4 {
		t.Fatalf("bound = %d, want 4", n)
	}
	if z := newBoundCounter(clock.RealClock{}, 0); z.done == nil {
		t.Fatal("nil done")
	} else {
		<-z.done // nothing to wait for
	}
}

func TestWatchBoundFollowsTheNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := fake.NewClientset()
	c := newBoundCounter(clock.RealClock{}, 2)
	stop, err := watchBound(ctx, client, "ns", c)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	pods := client.CoreV1().Pods("ns")
	for _, p := range []*corev1.Pod{pendingPod("a"), boundPod("b", "n1")} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	other := boundPod("x", "n1")
	other.Namespace = "elsewhere"
	if _, err := client.CoreV1().Pods("elsewhere").Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Update(ctx, boundPod("a", "n2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		n, _ := c.count()
		t.Fatalf("saw %d bound, want 2", n)
	}
}

// TestSampleLoopOnAFakeClock drives the collector's loop tick by tick.
func TestSampleLoopOnAFakeClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))
	var bound atomic.Int64
	ticked := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []float64, 1)
	go func() {
		done <- sample(ctx, clk, func() int { return int(bound.Load()) }, func(b int) { ticked <- b })
	}()
	for !clk.HasWaiters() { // the ticker exists
		time.Sleep(time.Millisecond)
	}
	// 430: the last pod is bound between ticks; the driver stops sampling
	// then, so that partial interval is not sampled.
	for _, b := range []int64{0, 10, 20, 120, 120, 120, 420, 430} {
		bound.Store(b)
		if b == 430 {
			break
		}
		clk.Step(SampleInterval)
		if got := <-ticked; got != int(b) {
			t.Fatalf("tick read %d, want %d", got, b)
		}
	}
	cancel()
	// 0: ignored; 10: start (dropped); 20: 10/s; 120: 100/s; skip, skip; 420: 300/3s three times.
	if got, want := <-done, []float64{10, 100, 100, 100, 100}; !slices.Equal(got, want) {
		t.Fatalf("samples = %v, want %v", got, want)
	}
}
