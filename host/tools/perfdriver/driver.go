// Package perfdriver is a scheduler_perf-shaped load driver that works
// against any kube-apiserver and any scheduler (wasmsched serve, upstream
// kube-scheduler): it creates fake nodes from scheduler_perf's node-default
// template, optional init pods, then the measured pods from pod-default in
// a fresh namespace, and measures SchedulingThroughput exactly as
// scheduler_perf does (see Sampler), so numbers from a real API server can
// be set beside upstream's thresholds and beside kube-scheduler on the same
// cluster.
package perfdriver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
)

// PodsPerNode is how many pod-default pods fit a node-default node: CPU
// (4 / 100m) binds before memory (32Gi / 500Mi = 65) and the pod limit
// (110). Run refuses workloads that could not all be placed, which would
// only end in a timeout.
const PodsPerNode = 40

// DefaultParallelism is the number of creating workers: scheduler_perf
// creates pods with 16 parallel workers too.
const DefaultParallelism = 16

// Options describe one run.
type Options struct {
	// Nodes is the number of nodes to create (node-default).
	Nodes int
	// Zones, when positive, labels nodes round-robin with zone-0..zone-(Zones-1).
	Zones int
	// InitPods are created before the measured pods, in their own
	// namespace, and are not measured. By default they are left pending for
	// the scheduler and the run waits until all are bound (scheduler_perf's
	// SchedulingBasic); with InitPodsBound they are created already bound,
	// round-robin over the nodes, which needs no scheduler.
	InitPods      int
	InitPodsBound bool
	// Pods is the number of measured pods (pod-default).
	Pods int
	// SchedulerName goes into every pending pod's spec.schedulerName;
	// empty means default-scheduler.
	SchedulerName string
	// Parallelism is the number of creating workers; 0 means
	// DefaultParallelism.
	Parallelism int
	// CreateQPS, when positive, paces pod creation (init and measured) to
	// that many pods per second; 0 creates as fast as the workers and the
	// client's own QPS allow, as scheduler_perf does.
	CreateQPS float64
	// Shape is what the measured pods look like: ShapeSchedulingBasic
	// (empty: the same) or ShapeSchedulingDaemonset, one pod per node
	// pinned to it the way the DaemonSet controller pins them (a
	// required node affinity on metadata.name), so Pods must equal Nodes.
	Shape string
	// SchedulerPID, when positive, is the measured scheduler's process on
	// this machine: the report then carries its peak RSS (VmHWM at the
	// end of the run) and its cold start (from the process's start to the
	// first pod of the run seen bound, so a scheduler started just
	// before the driver counts the creation of the nodes too).
	SchedulerPID int
	// StartScheduler, when set, starts the measured scheduler; the driver
	// then knows its process as if SchedulerPID named it, adds its CPU
	// time to the report, ends the run if it exits, and stops it before
	// cleaning up. It is called before the nodes are created, so the
	// scheduler runs throughout as in scheduler_perf, or with Backlog
	// once all measured pods exist.
	StartScheduler func(ctx context.Context) (Scheduler, error)
	// Backlog measures a backlog drain: no scheduler runs while the nodes,
	// the init pods (created bound, as nothing would place them) and the
	// measured pods are created; then StartScheduler starts one and the
	// run measures from that moment to the last measured pod seen bound.
	// A measured pod bound before then means another scheduler serves
	// SchedulerName, and fails the run.
	Backlog bool
	// EventsWait, when positive, has the driver count the Events the API
	// server holds for the measured pods once they are all bound
	// (Report.Events), waiting up to this long for a Scheduled Event for
	// every pod, since schedulers post Events after binding.
	EventsWait time.Duration
	// Label names the scheduler in the report (e.g. wasmsched,
	// kube-scheduler), for comparisons; both usually share SchedulerName.
	Label string
	// Timeout bounds the run before cleanup (0: none beyond ctx).
	Timeout time.Duration
	// Cleanup deletes the run's pods, namespaces and nodes at the end, even
	// after a failure or an interrupt.
	Cleanup bool
	// Log receives progress (Info) and cleanup problems; nil discards.
	Log hclog.Logger
	// Clock drives sampling and timing; nil means the real clock (tests
	// use a fake one).
	Clock clock.WithTicker
}

// Report is the outcome of a run. It is returned, partly filled, with the
// error of a run that failed or timed out, so what was measured is not lost.
type Report struct {
	// Run names the run: the measured namespace, the prefix of the node
	// names and the value of RunLabel on the nodes.
	Run string `json:"run"`
	// Label echoes Options.Label.
	Label string `json:"label,omitempty"`
	// Scheduler, Nodes, InitPods, InitPodsBound and Pods echo the options,
	// so a saved JSON report says what was measured.
	Scheduler     string `json:"scheduler"`
	Nodes         int    `json:"nodes"`
	InitPods      int    `json:"initPods"`
	InitPodsBound bool   `json:"initPodsBound"`
	Pods          int    `json:"pods"`
	// Bound is how many measured pods were seen bound.
	Bound int `json:"bound"`
	// InitSeconds is the time to create the init pods and, unless they
	// were created bound, to see them all bound.
	InitSeconds float64 `json:"initSeconds"`
	// CreateSeconds is the time to create the measured pods: if it is
	// close to WallSeconds, creation was the bottleneck.
	CreateSeconds float64 `json:"createSeconds"`
	// WallSeconds runs from the first measured create (with Backlog:
	// from the scheduler's start, after the last create) to the last
	// measured pod seen bound (to the end of the wait if not all were).
	WallSeconds float64 `json:"wallSeconds"`
	// PodsPerSecond is Bound / WallSeconds: with Backlog, the drain rate.
	PodsPerSecond float64 `json:"podsPerSecond"`
	// Backlog echoes Options.Backlog.
	Backlog bool `json:"backlog"`
	// Throughput is scheduler_perf's SchedulingThroughput; Samples holds
	// its raw samples in the order taken, pods/s.
	Throughput Throughput `json:"throughput"`
	Samples    []float64  `json:"samples"`
	// Complete says every node, init pod and measured pod was created
	// and every measured pod seen bound. When false, Incomplete says what
	// ended the run (a failed create, a timeout, an interrupt) and the
	// numbers cover only what was measured before it.
	Complete   bool   `json:"complete"`
	Incomplete string `json:"incomplete,omitempty"`
	// Shape echoes Options.Shape.
	Shape string `json:"shape"`
	// FirstBindSeconds runs from the first measured create (with
	// Backlog: from the scheduler's start) to the first measured pod seen
	// bound.
	FirstBindSeconds float64 `json:"firstBindSeconds"`
	// With Options.SchedulerPID: the scheduler's peak RSS in bytes, and
	// its cold start, from its process start to the first pod of the run
	// (init or measured) seen bound.
	SchedulerPeakRSSBytes int64   `json:"schedulerPeakRSSBytes,omitempty"`
	ColdStartSeconds      float64 `json:"coldStartSeconds,omitempty"`
	// SchedulerCPUSeconds is the scheduler's CPU time (user and system,
	// all threads) from its start to the end of the measurement (after the
	// Events were counted), read only for a scheduler the driver started
	// (Options.StartScheduler): another process's start is not the run's.
	// SchedulerCPUSecondsPerPod divides it by the pods the scheduler
	// placed: the measured ones, and the init pods unless created bound.
	SchedulerCPUSeconds       float64 `json:"schedulerCPUSeconds,omitempty"`
	SchedulerCPUSecondsPerPod float64 `json:"schedulerCPUSecondsPerPod,omitempty"`
	// Events is what the API server holds of the Events on the measured
	// pods (Options.EventsWait), and EventsWaitSeconds how long after the
	// last bind the count was taken (every pod had its Scheduled Event,
	// or the wait ended).
	Events            *EventCount `json:"events,omitempty"`
	EventsWaitSeconds float64     `json:"eventsWaitSeconds,omitempty"`
}

// The shapes of the measured pods (Options.Shape), named after
// scheduler_perf's test cases.
const (
	ShapeSchedulingBasic     = "SchedulingBasic"
	ShapeSchedulingDaemonset = "SchedulingDaemonset"
)

// Run creates the nodes, the init pods and the measured pods of o through
// client and measures how fast the scheduler binds the measured ones. The
// client's QPS and burst should be high (scheduler_perf uses 5000/5000) so
// that creation is not what is measured.
func Run(ctx context.Context, client kubernetes.Interface, o Options) (rep *Report, err error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.SchedulerName == "" {
		o.SchedulerName = corev1.DefaultSchedulerName
	}
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	d := &driver{client: client, o: o, clk: clk, log: log, run: "perf-" + utilrand.String(5), namespaces: map[string]int{}, stopping: make(chan struct{})}
	if o.CreateQPS > 0 {
		d.limit = flowcontrol.NewTokenBucketRateLimiter(float32(o.CreateQPS), o.Parallelism)
	}
	if o.Shape == "" {
		o.Shape = ShapeSchedulingBasic
		d.o.Shape = o.Shape
	}
	rep = &Report{Run: d.run, Label: o.Label, Scheduler: o.SchedulerName, Nodes: o.Nodes, InitPods: o.InitPods, InitPodsBound: o.InitPodsBound,
		Pods: o.Pods, Shape: o.Shape, Backlog: o.Backlog}
	if o.SchedulerPID > 0 {
		started, err := processStart(o.SchedulerPID)
		if err != nil {
			return nil, err
		}
		d.schedStart = started
	}
	if o.Cleanup {
		defer func() {
			// Clean up after an interrupt or a timeout too.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
			defer cancel()
			if cerr := d.cleanup(cctx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up run %s: %w", d.run, cerr))
			}
		}()
	}
	// The scheduler is stopped after its facts are read and before the
	// cleanup (deferred above, so run later), which it need not watch.
	defer d.stopScheduler()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("run took longer than --timeout %s", o.Timeout))
		defer cancel()
	}
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	d.cancelRun = cancelRun
	err = d.execute(ctx, rep)
	if d.pid() > 0 {
		d.schedulerFacts(rep)
	}
	if err != nil {
		if exited := d.exited(); exited != nil && !errors.Is(err, exited) {
			// A create cut short by the scheduler's exit fails with "context
			// canceled"; say why the context ended.
			err = fmt.Errorf("%w (%w)", exited, err)
		}
		rep.Incomplete = err.Error()
		return rep, fmt.Errorf("run %s incomplete (%d of %d measured pods bound): %w", d.run, rep.Bound, o.Pods, err)
	}
	rep.Complete = true
	return rep, nil
}

func (o *Options) validate() error {
	switch {
	case o.Nodes <= 0:
		return fmt.Errorf("nodes: want at least 1, have %d", o.Nodes)
	case o.Pods <= 0:
		return fmt.Errorf("pods: want at least 1, have %d", o.Pods)
	case o.InitPods < 0:
		return fmt.Errorf("init pods: want 0 or more, have %d", o.InitPods)
	case o.InitPods+o.Pods > PodsPerNode*o.Nodes:
		return fmt.Errorf("%d init and %d measured pods do not fit %d nodes (%d pods of 100m CPU each)", o.InitPods, o.Pods, o.Nodes, PodsPerNode)
	case o.Shape != "" && o.Shape != ShapeSchedulingBasic && o.Shape != ShapeSchedulingDaemonset:
		return fmt.Errorf("shape: want %s or %s, not %q", ShapeSchedulingBasic, ShapeSchedulingDaemonset, o.Shape)
	case o.Shape == ShapeSchedulingDaemonset && o.Pods != o.Nodes:
		return fmt.Errorf("shape %s: one measured pod per node, so pods (%d) must equal nodes (%d)", ShapeSchedulingDaemonset, o.Pods, o.Nodes)
	case o.SchedulerPID < 0:
		return fmt.Errorf("scheduler pid: want a process id or 0 (none), have %d", o.SchedulerPID)
	case o.SchedulerPID > 0 && o.StartScheduler != nil:
		return errors.New("scheduler pid and a scheduler to start: give one, the driver measures the scheduler it starts")
	case o.Backlog && o.StartScheduler == nil:
		return errors.New("backlog: the driver starts the scheduler once every measured pod exists, so it needs the command that starts it")
	case o.Backlog && o.InitPods > 0 && !o.InitPodsBound:
		return fmt.Errorf("backlog: %d init pods would wait for a scheduler that is not running yet; create them bound", o.InitPods)
	case o.EventsWait < 0:
		return fmt.Errorf("events wait: want a duration of 0 (do not count Events) or more, have %s", o.EventsWait)
	}
	return nil
}

// schedulerFacts fills in the scheduler process's peak RSS, cold start
// and, for one the driver started, CPU time; a process that went away
// leaves them out, with a log line.
func (d *driver) schedulerFacts(rep *Report) {
	pid := d.pid()
	if rss, err := peakRSS(pid); err != nil {
		d.log.Warn("no peak RSS for the scheduler", "error", err)
	} else {
		rep.SchedulerPeakRSSBytes = rss
	}
	if d.sched != nil {
		if cpu, err := cpuSeconds(pid); err != nil {
			d.log.Warn("no CPU time for the scheduler", "error", err)
		} else {
			rep.SchedulerCPUSeconds = cpu
			placed := rep.Bound
			if !rep.InitPodsBound {
				placed += rep.InitPods
			}
			if placed > 0 {
				rep.SchedulerCPUSecondsPerPod = cpu / float64(placed)
			}
		}
	}
	d.mu.Lock()
	first := d.firstBind
	d.mu.Unlock()
	if !first.IsZero() {
		rep.ColdStartSeconds = first.Sub(d.schedStart).Seconds()
	}
}

// sawFirstBind records when the run's first pod was seen bound (the
// earliest of the counters'), for the cold start.
func (d *driver) sawFirstBind(c *boundCounter) {
	t := c.firstBound()
	if t.IsZero() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.firstBind.IsZero() || t.Before(d.firstBind) {
		d.firstBind = t
	}
}

// driver holds the state of one run.
type driver struct {
	client kubernetes.Interface
	o      Options
	clk    clock.WithTicker
	log    hclog.Logger
	run    string
	limit  flowcontrol.RateLimiter // paces pod creation; nil: unpaced

	schedStart time.Time // the scheduler process's start (Options.SchedulerPID, or the one started)
	cancelRun  context.CancelCauseFunc
	stopping   chan struct{} // closed before the driver stops the scheduler it started

	mu         sync.Mutex
	namespaces map[string]int // created: how many pods to delete from each
	firstBind  time.Time      // the run's first pod seen bound
	sched      Scheduler      // the scheduler the driver started, if any
	exitErr    error          // how it ended, if it did before the driver stopped it
}

// pid is the measured scheduler's process: the one started, or
// Options.SchedulerPID.
func (d *driver) pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.sched != nil {
		return d.sched.PID()
	}
	return d.o.SchedulerPID
}

// exited says how the scheduler the driver started ended, if it did so
// on its own during the run.
func (d *driver) exited() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.exitErr
}

// startScheduler starts the measured scheduler and watches it: if it ends
// before the driver stops it, the run ends with how it ended.
func (d *driver) startScheduler(ctx context.Context) error {
	s, err := d.o.StartScheduler(ctx)
	if err != nil {
		return fmt.Errorf("start the scheduler: %w", err)
	}
	d.mu.Lock()
	d.sched = s
	d.mu.Unlock()
	started, err := processStart(s.PID())
	if err != nil {
		// The process ended at once (a bad command): say how it ended.
		select {
		case <-s.Exited():
			err = s.Err()
		case <-time.After(time.Second):
		}
		d.mu.Lock()
		d.exitErr = err
		d.mu.Unlock()
		return err
	}
	d.schedStart = started
	d.log.Info("scheduler started", "pid", s.PID())
	go func() {
		select {
		case <-s.Exited():
			err := s.Err()
			d.mu.Lock()
			d.exitErr = err
			d.mu.Unlock()
			d.cancelRun(err)
		case <-d.stopping:
		}
	}()
	return nil
}

// stopScheduler stops the scheduler the driver started, if any.
func (d *driver) stopScheduler() {
	close(d.stopping)
	d.mu.Lock()
	s := d.sched
	d.mu.Unlock()
	if s == nil {
		return
	}
	if err := s.Stop(); err != nil && d.exited() == nil {
		d.log.Warn("stopping the scheduler", "error", err)
	}
}

func (d *driver) execute(ctx context.Context, rep *Report) error {
	ns, err := d.namespace(ctx, d.run, d.o.Pods)
	if err != nil {
		return err
	}
	if d.o.StartScheduler != nil && !d.o.Backlog {
		if err := d.startScheduler(ctx); err != nil {
			return err
		}
	}
	start := d.clk.Now()
	if err := d.createNodes(ctx); err != nil {
		return err
	}
	d.log.Info("nodes created", "run", d.run, "nodes", d.o.Nodes, "seconds", d.clk.Since(start).Seconds())

	if d.o.InitPods > 0 {
		start := d.clk.Now()
		if err := d.initPods(ctx); err != nil {
			return err
		}
		rep.InitSeconds = d.clk.Since(start).Seconds()
		d.log.Info("init pods in place", "pods", d.o.InitPods, "seconds", rep.InitSeconds)
	}
	return d.measure(ctx, ns, rep)
}

// namespace creates a namespace named name and remembers it, and that it
// will hold pods pod-0..pod-(pods-1), for cleanup.
func (d *driver) namespace(ctx context.Context, name string, pods int) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := d.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("create namespace %q: %w", name, err)
	}
	d.mu.Lock()
	d.namespaces[name] = pods
	d.mu.Unlock()
	return name, nil
}

// createNodes creates the nodes, then sets their status, which create
// ignores.
func (d *driver) createNodes(ctx context.Context) error {
	return parallel(ctx, d.o.Nodes, d.o.Parallelism, nil, func(ctx context.Context, i int) error {
		n := Node(d.run, i, d.o.Zones)
		created, err := d.client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create node %q: %w", n.Name, err)
		}
		created.Status = n.Status
		if _, err := d.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("set the status of node %q: %w", n.Name, err)
		}
		return nil
	})
}

// initPods creates the init pods in their own namespace: bound round-robin,
// or pending, and then waits until the scheduler has bound them all.
func (d *driver) initPods(ctx context.Context) error {
	ns, err := d.namespace(ctx, d.run+"-init", d.o.InitPods)
	if err != nil {
		return err
	}
	if d.o.InitPodsBound {
		return d.createPods(ctx, ns, d.o.InitPods, func(i int) string { return nodeName(d.run, i%d.o.Nodes) })
	}
	c := newBoundCounter(d.clk, d.o.InitPods)
	stop, err := watchBound(ctx, d.client, ns, c)
	if err != nil {
		return err
	}
	defer stop()
	defer d.sawFirstBind(c)
	if err := d.createPods(ctx, ns, d.o.InitPods, nil); err != nil {
		return err
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		bound, _ := c.count()
		return fmt.Errorf("waiting for init pods: %d of %d bound: %w", bound, d.o.InitPods, context.Cause(ctx))
	}
}

// measure creates the measured pods with the collector running, as
// scheduler_perf's createPods op with collectMetrics does, and waits until
// all are bound. The collector stops as soon as the last pod is seen
// bound; scheduler_perf polls for that every second, so it sometimes
// records one more sample, covering a partial interval. With Backlog the
// pods are all created first, and the scheduler started, collector and
// clock with it.
func (d *driver) measure(ctx context.Context, ns string, rep *Report) error {
	c := newBoundCounter(d.clk, d.o.Pods)
	stop, err := watchBound(ctx, d.client, ns, c)
	if err != nil {
		return err
	}
	defer stop()

	var pin func(i int) string
	if d.o.Shape == ShapeSchedulingDaemonset {
		pin = func(i int) string { return nodeName(d.run, i) }
	}
	if d.o.Backlog {
		start := d.clk.Now()
		err := d.createPodsPinned(ctx, ns, d.o.Pods, pin)
		rep.CreateSeconds = d.clk.Since(start).Seconds()
		if err != nil {
			return err
		}
		d.log.Info("measured pods created", "pods", d.o.Pods, "seconds", rep.CreateSeconds)
		if n, _ := c.count(); n > 0 {
			return fmt.Errorf("%d measured pods were bound before the scheduler was started: another scheduler serves spec.schedulerName %q", n, d.o.SchedulerName)
		}
	}

	sctx, stopSampling := context.WithCancel(ctx)
	samples := make(chan []float64, 1)
	go func() {
		samples <- sample(sctx, d.clk, func() int { n, _ := c.count(); return n }, func(bound int) {
			d.log.Info("measuring", "bound", bound, "want", d.o.Pods)
		})
	}()

	start := d.clk.Now()
	var createErr error
	if d.o.Backlog {
		createErr = d.startScheduler(ctx)
	} else {
		createErr = d.createPodsPinned(ctx, ns, d.o.Pods, pin)
		rep.CreateSeconds = d.clk.Since(start).Seconds()
		if createErr == nil {
			d.log.Info("measured pods created", "pods", d.o.Pods, "seconds", rep.CreateSeconds)
		}
	}
	if createErr == nil {
		select {
		case <-c.done:
		case <-ctx.Done():
		}
	}
	stopSampling()
	rep.Samples = <-samples
	rep.Throughput = Summarize(rep.Samples)
	bound, last := c.count()
	rep.Bound = bound
	d.sawFirstBind(c)
	if first := c.firstBound(); !first.IsZero() {
		rep.FirstBindSeconds = first.Sub(start).Seconds()
	}
	if bound == d.o.Pods {
		rep.WallSeconds = last.Sub(start).Seconds()
	} else {
		rep.WallSeconds = d.clk.Since(start).Seconds()
	}
	if rep.WallSeconds > 0 {
		rep.PodsPerSecond = float64(bound) / rep.WallSeconds
	}
	switch {
	case createErr != nil:
		return createErr
	case bound < d.o.Pods:
		return fmt.Errorf("%d of %d measured pods bound: %w", bound, d.o.Pods, context.Cause(ctx))
	}
	if d.o.EventsWait > 0 {
		ev, waited, err := waitEvents(ctx, d.client, d.clk, ns, d.o.Pods, d.o.EventsWait)
		rep.Events, rep.EventsWaitSeconds = &ev, waited.Seconds()
		if err != nil {
			return err
		}
		d.log.Info("events counted", "podsScheduled", ev.PodsScheduled, "pods", d.o.Pods, "failedBindings", ev.FailedBindings, "seconds", rep.EventsWaitSeconds)
	}
	return nil
}

// createPods creates n pods in ns, paced by the driver's limiter; node, if
// set, names the node each pod is created bound to.
func (d *driver) createPods(ctx context.Context, ns string, n int, node func(i int) string) error {
	return parallel(ctx, n, d.o.Parallelism, d.limit, func(ctx context.Context, i int) error {
		nodeName := ""
		if node != nil {
			nodeName = node(i)
		}
		p := Pod(ns, i, d.o.SchedulerName, nodeName)
		if _, err := d.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", ns, p.Name, err)
		}
		return nil
	})
}

// createPodsPinned creates n pending pods in ns, paced as createPods;
// pin, if set, names the node each pod's required node affinity pins
// it to (a DaemonSet's pods).
func (d *driver) createPodsPinned(ctx context.Context, ns string, n int, pin func(i int) string) error {
	if pin == nil {
		return d.createPods(ctx, ns, n, nil)
	}
	return parallel(ctx, n, d.o.Parallelism, d.limit, func(ctx context.Context, i int) error {
		p := DaemonPod(ns, i, d.o.SchedulerName, pin(i))
		if _, err := d.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", ns, p.Name, err)
		}
		return nil
	})
}

// cleanup deletes the run's pods, namespaces and nodes by name, in
// parallel, and carries on past failures. Pods are deleted at once: with
// no kubelet, nothing would complete a graceful deletion of a bound pod.
// One request per object rather than DeleteCollection, which the API
// server cuts off at its request timeout (60s) when thousands of pods are
// deleted on a busy machine. Without a namespace controller (a bare API
// server) the emptied namespaces stay Terminating, and their Events stay
// until they expire (1h); both are harmless.
func (d *driver) cleanup(ctx context.Context) error {
	d.mu.Lock()
	namespaces := maps.Clone(d.namespaces)
	d.mu.Unlock()
	var (
		mu     sync.Mutex
		errs   []error
		failed int
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if failed++; len(errs) < 5 {
			errs = append(errs, err)
		}
	}
	now := int64(0)
	for ns, pods := range namespaces {
		_ = parallel(ctx, pods, d.o.Parallelism, nil, func(ctx context.Context, i int) error {
			name := fmt.Sprintf("pod-%d", i)
			if err := d.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &now}); err != nil && !apierrors.IsNotFound(err) {
				fail(fmt.Errorf("delete pod %s/%s: %w", ns, name, err))
			}
			return nil
		})
		if err := d.client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fail(fmt.Errorf("delete namespace %q: %w", ns, err))
		}
	}
	_ = parallel(ctx, d.o.Nodes, d.o.Parallelism, nil, func(ctx context.Context, i int) error {
		name := nodeName(d.run, i)
		if err := d.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			fail(fmt.Errorf("delete node %q: %w", name, err))
		}
		return nil
	})
	if failed > len(errs) {
		errs = append(errs, fmt.Errorf("and %d more failures", failed-len(errs)))
	}
	if ctx.Err() != nil {
		failed++
		errs = append(errs, fmt.Errorf("cleanup cut short: %w", context.Cause(ctx)))
	}
	if failed == 0 {
		d.log.Info("cleaned up", "run", d.run)
	}
	return errors.Join(errs...)
}

// parallel calls f for 0..n-1 from up to workers goroutines, each call
// first waiting for limit when it is set. The first error stops the rest
// and is returned.
func parallel(ctx context.Context, n, workers int, limit flowcontrol.RateLimiter, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if limit != nil {
					if err := limit.Wait(ctx); err != nil {
						cancel(err)
						return
					}
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}
