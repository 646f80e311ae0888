package perfdriver

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// boundCounter counts, from informer events, the pods of one namespace
// that go from unbound to bound: scheduler_perf's definition of a
// scheduled pod (an Add that already carries a node counts too, as there).
// It also remembers when the count last grew, for the wall time, and
// closes done when it reaches target.
type boundCounter struct {
	clock  clock.PassiveClock
	target int
	done   chan struct{}

	mu    sync.Mutex
	bound int
	first time.Time
	last  time.Time
}

func newBoundCounter(clk clock.PassiveClock, target int) *boundCounter {
	c := &boundCounter{clock: clk, target: target, done: make(chan struct{})}
	if target <= 0 {
		close(c.done)
	}
	return c
}

// observe handles one informer event; old is nil for an Add.
func (c *boundCounter) observe(old, pod *corev1.Pod) {
	if pod == nil || pod.Spec.NodeName == "" || (old != nil && old.Spec.NodeName != "") {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bound++
	c.last = c.clock.Now()
	if c.bound == 1 {
		c.first = c.last
	}
	if c.bound == c.target {
		close(c.done)
	}
}

// count returns the number of pods seen bound and when the last one was.
func (c *boundCounter) count() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bound, c.last
}

// firstBound returns when the first pod was seen bound (zero: none yet).
func (c *boundCounter) firstBound() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

// watchBound starts a pod informer on namespace feeding c and waits for
// its cache to sync, so every pod created afterwards is seen unbound
// first. The returned stop ends the informer.
func watchBound(ctx context.Context, client kubernetes.Interface, namespace string, c *boundCounter) (stop func(), err error) {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p, _ := obj.(*corev1.Pod)
			c.observe(nil, p)
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, _ := oldObj.(*corev1.Pod)
			p, _ := newObj.(*corev1.Pod)
			if o != nil {
				c.observe(o, p)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("pod informer for namespace %q: %w", namespace, err)
	}
	ictx, cancel := context.WithCancel(ctx)
	stop = func() { cancel(); f.Shutdown() }
	f.Start(ictx.Done())
	if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		stop()
		return nil, fmt.Errorf("pod informer for namespace %q did not sync: %w", namespace, context.Cause(ctx))
	}
	return stop, nil
}

// sample reads count every SampleInterval of clk until ctx ends and
// returns the Sampler's samples. onTick, if set, sees every count read
// (progress logs; tests use it to step a fake clock in lockstep).
func sample(ctx context.Context, clk clock.WithTicker, count func() int, onTick func(bound int)) []float64 {
	t := clk.NewTicker(SampleInterval)
	defer t.Stop()
	var s Sampler
	for {
		select {
		case <-ctx.Done():
			return s.Samples()
		case <-t.C():
			// The actual time, not the tick's: a late tick covers a longer
			// interval (scheduler_perf does the same).
			b := count()
			s.Tick(clk.Now(), b)
			if onTick != nil {
				onTick(b)
			}
		}
	}
}
