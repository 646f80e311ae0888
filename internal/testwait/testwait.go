// Package testwait is the one way tests wait for something another
// goroutine makes true: a condition checked over and over until it holds
// or a bound passes. Waiting for an ordering that the code under test can
// signal (a channel, a hook, a fake clock's waiters) is better still;
// this is for what can only be observed.
package testwait

import (
	"context"
	"testing"
	"time"
)

// Interval is the pause between two checks of Within and Eventually:
// short enough that a test does not wait noticeably longer than the
// condition takes, long enough not to starve the goroutines it waits
// for on a loaded machine.
const Interval = 5 * time.Millisecond

// Until checks cond at once, then every interval, until it holds (true)
// or ctx ends (false). Use it when the bound is the test's own context,
// or when each check costs a request and interval must be longer.
func Until(ctx context.Context, interval time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
			if cond() {
				return true
			}
		}
	}
}

// Within reports whether cond holds within timeout, checking it every
// Interval. The caller reports the failure, typically with state read
// after the wait.
func Within(timeout time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return Until(ctx, Interval, cond)
}

// Eventually fails the test with the message format and args unless
// cond holds within timeout.
func Eventually(tb testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	tb.Helper()
	if !Within(timeout, cond) {
		tb.Fatalf(format, args...)
	}
}
