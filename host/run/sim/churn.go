package sim

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/host/run/memapi"
)

// Churn drives a simulation the way scheduler_perf's PreemptionAsync does:
// the scheduling loop runs continuously (bindings and preemptions proceed
// in their goroutines, with the API latency the Env was started with),
// while pods arrive in the background at a fixed rate; it measures how
// fast the pods of one namespace get bound. The fake clock follows the
// wall clock so backoff expires as it would.
type Churn struct {
	// Namespace whose bindings are measured, and how many to wait for.
	Namespace string
	Measured  int
	// Arrivals are added one every Every, in the background.
	Arrivals []*corev1.Pod
	Every    time.Duration
	// Timeout bounds the run (default 5 minutes).
	Timeout time.Duration
}

// ErrChurnTimeout: the measured pods were not all bound in time; the
// result still says how far the run got.
var ErrChurnTimeout = errors.New("sim: churn timed out before the measured pods were bound")

// ChurnResult is what a Churn run measured.
type ChurnResult struct {
	Bound     int
	Elapsed   time.Duration
	PodsPerS  float64
	Arrived   int
	Preempted int // victims removed
}

// RunChurn runs c on e until the measured pods are bound (or the timeout).
func (e *Env) RunChurn(ctx context.Context, c Churn) (ChurnResult, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	done := make(chan struct{})
	start, clockStart := time.Now(), e.clock.Now()
	arrived := 0
	var arriveErr error
	wg.Add(2)
	go func() { // arrivals
		defer wg.Done()
		t := time.NewTicker(c.Every)
		defer t.Stop()
		for _, p := range c.Arrivals {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if err := e.AddPods(p); err != nil {
				arriveErr = err
				return
			}
			arrived++
		}
	}()
	go func() { // clock, backoff flush, and the finish line
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			e.clock.SetTime(clockStart.Add(time.Since(start)))
			e.Queue.FlushBackoffCompleted()
			if e.rec.boundInNamespace(c.Namespace) >= c.Measured {
				cancel()
			}
		}
	}()
	var err error
	for ctx.Err() == nil {
		if err = e.Scheduler.ScheduleOne(ctx); err != nil {
			break
		}
	}
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	e.Scheduler.WaitBindings()
	e.waitPreemptions()
	res := ChurnResult{Bound: e.rec.boundInNamespace(c.Namespace), Elapsed: elapsed, Arrived: arrived}
	res.PodsPerS = float64(res.Bound) / elapsed.Seconds()
	for _, t := range e.cluster.Timeline() {
		if (t.Op == memapi.OpDelete || t.Op == memapi.OpEvict) && t.Err == "" {
			res.Preempted++
		}
	}
	if arriveErr != nil {
		return res, arriveErr
	}
	if res.Bound < c.Measured {
		return res, ErrChurnTimeout
	}
	return res, nil
}
