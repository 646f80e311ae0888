package scheduler

import (
	"context"
	"sync"

	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
)

// DefaultMaxBindingsInFlight is the bound `wasmsched serve` puts on the
// bindings in flight unless told otherwise (--max-bindings-in-flight).
//
// Why a bound at all: a scheduling cycle takes about a millisecond and a
// binding (a pods/binding POST and its etcd write) much longer, so with a
// backlog an unbounded loop starts thousands of bindings at once. The API
// server serves at most 100 concurrent streams per HTTP/2 connection by
// default, so client-go opens more connections (hundreds were measured,
// each a TLS handshake the API server pays for), and the server then
// holds thousands of requests, each waiting longer than the last, and
// times out the ones it cannot finish in a minute; every timeout is a pod
// forgotten and sent to backoff (docs/PERFORMANCE.md, "Backlog drain").
//
// Why 64: with n bindings in flight at latency L the loop binds up to n/L
// pods a second, 3200 at 20 ms, more than the cycle feeds; 64 bindings
// and the informers' watches fit in the one connection's 100 streams; and
// 64 is below the concurrency API Priority and Fairness gives a
// scheduler's requests by default (about 98 seats for kube-scheduler's
// workload-high level, 245 shared for service accounts' workload-low).
//
// Why a fixed number rather than one adapted to the latency: when the
// server is slow, more requests in flight only raise L, not the rate, so
// growing the limit gains nothing; an adaptive limit needs a latency
// target to steer by, and latency moves with the cluster and, on a shared
// machine, with everything else; a fixed bound is one number an operator
// can read and set.
const DefaultMaxBindingsInFlight = 64

// bindingSlots is a counting semaphore over the binding cycles. The loop
// takes a slot before it pops a pod, so while it waits no pod has been
// popped or assumed: a pod in the cache as assumed always has a binding
// goroutine that will bind or forget it, and a shutdown while waiting has
// nothing to undo. The slot goes back when the cycle ends without a
// binding or when the binding goroutine ends (bound, failed and forgotten,
// or gone).
type bindingSlots struct {
	// tokens holds one token per slot taken; nil: no bound.
	tokens chan struct{}
	// closed ends a wait when the scheduler closes.
	closed    chan struct{}
	closeOnce sync.Once
	// onWait, if set, is called when take finds no free slot and is
	// about to wait (tests).
	onWait func()
}

func newBindingSlots(n int) *bindingSlots {
	b := &bindingSlots{closed: make(chan struct{})}
	if n > 0 {
		b.tokens = make(chan struct{}, n)
	}
	return b
}

// take waits for a free slot. It fails with ctx's error when ctx ends, or
// queue.ErrClosed once the scheduler is closed, as Pop would.
func (b *bindingSlots) take(ctx context.Context) error {
	if b.tokens == nil {
		return nil
	}
	select {
	case b.tokens <- struct{}{}:
		return nil
	default:
	}
	if b.onWait != nil {
		b.onWait()
	}
	select {
	case b.tokens <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.closed:
		return queue.ErrClosed
	}
}

// give returns a slot take handed out.
func (b *bindingSlots) give() {
	if b.tokens != nil {
		<-b.tokens
	}
}

// inFlight is the number of slots taken.
func (b *bindingSlots) inFlight() int { return len(b.tokens) }

// close wakes every wait, now and later.
func (b *bindingSlots) close() { b.closeOnce.Do(func() { close(b.closed) }) }

// BindingsInFlight is the number of binding slots taken: the bindings in
// flight, plus one while the loop runs a cycle or waits for a pod.
func (s *Scheduler) BindingsInFlight() int { return s.slots.inFlight() }
