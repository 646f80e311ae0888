package e2e

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// countingBinder is the real Binder, counting the bindings that failed.
type countingBinder struct {
	kube.Binder
	failed atomic.Int64
}

func (b *countingBinder) Bind(ctx context.Context, pod *abi.Pod, node string) error {
	err := b.Binder.Bind(ctx, pod, node)
	if err != nil {
		b.failed.Add(1)
	}
	return err
}

// TestEventsUnderABacklog: serve, with serve's clients (protobuf, Events
// on a clientset and rate limit of their own), starts on a backlog of
// pods created before it; every pod is bound with no binding failed, and
// every pod gets its Scheduled Event (counted through events.k8s.io/v1,
// a series counting each repeat): under a backlog the Events are late,
// never lost. At serve's default 50 QPS and at the 5000 of
// docs/PERFORMANCE.md's recipe.
func TestEventsUnderABacklog(t *testing.T) {
	for _, qps := range []float32{50, 5000} {
		t.Run(fmt.Sprintf("qps=%v", qps), func(t *testing.T) { eventsUnderABacklog(t, qps) })
	}
}

func eventsUnderABacklog(t *testing.T, qps float32) {
	const nodes, pods, ns = 40, 2000, "backlog"
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range nodes {
		createNode(t, ctx, admin, node(fmt.Sprintf("n%d", i), "64"))
	}
	// The backlog: created as fast as a client without a rate limit can.
	creator, err := kube.Client(kubeconfig, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, pods)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < pods; i += 16 {
				p := pod(fmt.Sprintf("p-%04d", i), "", "10m")
				p.Namespace = ns
				if _, err := creator.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create the backlog: %v", err)
	}
	t.Logf("%d pods created in %v", pods, time.Since(start).Round(time.Millisecond))

	// serve's clients: protobuf, Events on a clientset of their own.
	rc, err := kube.RESTConfig(kubeconfig, qps, 2*int(qps))
	if err != nil {
		t.Fatal(err)
	}
	pc := rest.CopyConfig(rc)
	pc.ContentType = config.ContentTypeProtobuf
	client, err := kubernetes.NewForConfig(pc)
	if err != nil {
		t.Fatal(err)
	}
	eventClient, err := kubernetes.NewForConfig(pc)
	if err != nil {
		t.Fatal(err)
	}
	binder := &countingBinder{Binder: kube.Binder{Client: client}}

	// Sample the process's goroutines and heap while the backlog drains:
	// every Event waiting for its rate limiter holds a goroutine.
	var peakG, peakHeap atomic.Uint64
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for sampleCtx.Err() == nil {
			if g := uint64(runtime.NumGoroutine()); g > peakG.Load() {
				peakG.Store(g)
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakHeap.Load() {
				peakHeap.Store(ms.HeapInuse)
			}
			select {
			case <-sampleCtx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	defer func() { stopSampling(); <-sampled }()

	start = time.Now()
	startServe(t, ctx, kube.ServeOptions{Client: client, EventClient: eventClient, RESTConfig: rc, Config: config.Default(), Binder: binder})
	bound := func() int {
		list, err := admin.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0
		}
		n := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	waitForEvery(t, ctx, time.Second, "every pod to be bound", func() bool { return bound() == pods })
	boundIn := time.Since(start)
	var perPod map[string]int
	scheduled := func() bool {
		evs, err := admin.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		if err != nil {
			return false
		}
		perPod = map[string]int{}
		for _, e := range evs.Items {
			perPod[e.Regarding.Name] += occurrences(e)
		}
		return len(perPod) == pods
	}
	if !waitUntil(ctx, time.Second, scheduled) {
		t.Fatalf("%d of %d pods have a Scheduled Event", len(perPod), pods)
	}
	stopSampling()
	<-sampled
	t.Logf("backlog of %d: bound in %v, every Scheduled Event posted in %v; peak %d goroutines, peak heap in use %d MiB",
		pods, boundIn.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), peakG.Load(), peakHeap.Load()>>20)
	for p, n := range perPod {
		if n != 1 {
			t.Errorf("pod %s has %d Scheduled Events", p, n)
		}
	}
	if n := binder.failed.Load(); n != 0 {
		t.Errorf("%d bindings failed", n)
	}
	// The same Events, read through core/v1 (as kubectl describe does).
	if legacy, err := admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"}); err != nil || len(legacy.Items) != pods {
		t.Errorf("core/v1 view: %d Scheduled Events (%v), want %d: the same Events, seen through the older API", len(legacy.Items), err, pods)
	}
}

// waitUntil reports whether cond holds before ctx ends, checking every
// interval (a check here lists thousands of objects).
func waitUntil(ctx context.Context, interval time.Duration, cond func() bool) bool {
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(interval):
		}
	}
}

func waitForEvery(t *testing.T, ctx context.Context, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	if !waitUntil(ctx, interval, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestFailedSchedulingRepeatsBecomeASeries: a pod that keeps failing the
// same way (retried each time an assigned pod goes) gets, as from
// kube-scheduler, one Event before its condition is written and one
// after, which becomes a series; the API server accepts the series'
// write. (client-go's broadcaster writes a series when it starts, then
// its count every 30 minutes and when it ends, six minutes after the
// last repeat: in between the count the API shows is behind.)
func TestFailedSchedulingRepeatsBecomeASeries(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createNode(t, ctx, client, node("n1", "4"))
	reg := metrics.NewRegistry()
	met, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: config.Default(), Metrics: met})
	unschedulable := func() float64 {
		return testmetrics.Value(t, reg, "scheduler_schedule_attempts_total", testmetrics.Labels{"result": metrics.ResultUnschedulable})
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("too-big", "", "10"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "too-big's first failure", func() bool { return unschedulable() >= 1 })
	// Each bound pod that goes is a chance for too-big to fit: a retry.
	for i := range 4 {
		name := fmt.Sprintf("small-%d", i)
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod(name, "", "100m"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, name+" to be bound", func() bool { return boundTo(ctx, client, name) == "n1" })
		before := unschedulable()
		if err := client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "too-big to be retried", func() bool { return unschedulable() > before })
	}
	var evs []string
	waitFor(t, ctx, "a FailedScheduling series", func() bool {
		evs = nil
		series := false
		for _, e := range events(ctx, client, "too-big") {
			if e.Reason == "FailedScheduling" {
				evs = append(evs, fmt.Sprintf("rv %s ×%d", e.Regarding.ResourceVersion, occurrences(e)))
				series = series || e.Series != nil && e.Series.Count >= 2
			}
		}
		return series
	})
	t.Logf("%v failures; FailedScheduling Events: %v", unschedulable(), evs)
	if len(evs) > 2 {
		t.Errorf("%d FailedScheduling Events %v for one unchanged failure: want at most 2 (before and after the condition)", len(evs), evs)
	}
}
