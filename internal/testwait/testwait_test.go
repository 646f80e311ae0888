package testwait

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestWithinSeesAConditionThatBecomesTrue(t *testing.T) {
	var n atomic.Int32
	if !Within(5*time.Second, func() bool { return n.Add(1) >= 3 }) {
		t.Fatal("Within gave up on a condition that held at the third check")
	}
	if got := n.Load(); got != 3 {
		t.Errorf("cond checked %d times, want 3 (it stops once the condition holds)", got)
	}
}

func TestWithinGivesUpAfterTheTimeout(t *testing.T) {
	start := time.Now()
	if Within(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Within reported a condition that never held")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("gave up after %v, before the 20ms timeout", d)
	}
}

func TestUntilChecksOnceEvenWhenTheContextHasEnded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if !Until(ctx, time.Hour, func() bool { return true }) {
		t.Fatal("a condition that holds at once was not seen")
	}
	if Until(ctx, time.Hour, func() bool { return false }) {
		t.Fatal("Until reported a condition that never held")
	}
}
