package eviction

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/metrics"
)

// Kill modes (KillerOptions.Mode).
const (
	// ModeEviction posts policy/v1 Evictions, which honour
	// PodDisruptionBudgets.
	ModeEviction = "eviction"
	// ModeDelete deletes pods outright, ignoring PodDisruptionBudgets.
	ModeDelete = "delete"
)

// Reasons of the Events the killer records on the pods it kills, as
// Katalyst spells them (plus EvictBlocked, for wasmsched's handling of a
// PodDisruptionBudget refusal).
const (
	ReasonEvictCreated             = "EvictCreated"
	ReasonEvictSucceeded           = "EvictSucceeded"
	ReasonEvictFailed              = "EvictFailed"
	ReasonEvictBlocked             = "EvictBlocked"
	ReasonEvictExceededGracePeriod = "EvictExceededGracePeriod"
)

// Killer defaults, Katalyst's.
const (
	DefaultKillWorkers      = 10
	DefaultKillPollInterval = 5 * time.Second
	DefaultKillTimeoutFloor = 10 * time.Second
	// DefaultRetryAfter is how long a pod refused with 429 and no
	// Retry-After is left alone.
	DefaultRetryAfter = 5 * time.Second
)

// maxKillTimeout bounds max(1.5×grace, floor) so that an absurd grace
// period cannot overflow a time.Duration.
const maxKillTimeout = 365 * 24 * time.Hour

// MaxGracePeriodSeconds is the longest grace period the killer asks the
// API for (365 days): a longer one, from a policy or from the pod's
// spec, is cut to it. Grace periods become Durations in the kubelet and
// here, and one past about 292 years would wrap negative there.
const MaxGracePeriodSeconds = int64(maxKillTimeout / time.Second)

// MaxKillWorkers bounds KillerOptions.Workers: each is a goroutine.
const MaxKillWorkers = 1000

// KillRequest asks the killer to kill one pod.
type KillRequest struct {
	Pod *abi.Pod
	// GracePeriodSeconds comes from the policy. nil: the pod's
	// spec.terminationGracePeriodSeconds (Pod.TerminationGraceSeconds),
	// else 0. Negative: the request is refused (an EvictFailed Event,
	// counted failed, never retried). Over MaxGracePeriodSeconds (either
	// one): cut to it.
	GracePeriodSeconds *int64
	// Policy and Reason say who asked and why; they go into Events,
	// logs and messages.
	Policy, Reason string
	// ForceDelete is the policy's configuration saying force: when a
	// PodDisruptionBudget refuses the eviction (429), the killer waits
	// Retry-After (DefaultRetryAfter if none) and deletes the pod instead.
	ForceDelete bool
}

// KillItem is the workqueue item of one kill: the pod by namespace, name
// and UID, and the grace period. Two requests for one pod with different
// grace periods are different items; the rate limiter keeps its backoff
// per item.
type KillItem struct {
	Namespace, Name, UID string
	Grace                int64
}

// KillerOptions configure NewKiller; the zero value is Katalyst's
// configuration with the Eviction API.
type KillerOptions struct {
	// Mode is ModeEviction (default) or ModeDelete.
	Mode string
	// Workers is how many pods are killed at once (default 10, at most
	// MaxKillWorkers).
	Workers int
	// RateLimiter spaces every enqueue, the first included (default
	// workqueue.DefaultTypedControllerRateLimiter: 5ms..1000s per item,
	// 10 qps with a burst of 100 overall). Its delays run on real time.
	RateLimiter workqueue.TypedRateLimiter[KillItem]
	// Clock times the waits of a kill: polling, the timeout and
	// Retry-After (default the real clock).
	Clock clock.WithTicker
	// PollInterval is how often a killed pod is checked for being gone
	// (default 5s); the first check comes right after the kill.
	PollInterval time.Duration
	// TimeoutFloor bounds a kill's timeout from below (default 10s): the
	// pod must be gone max(1.5×grace, TimeoutFloor) after the kill was
	// accepted.
	TimeoutFloor time.Duration
	Log          hclog.Logger
	// Metrics counts kills by result; nil records nothing.
	Metrics *metrics.Eviction
	// OnBlocked is told when a PodDisruptionBudget refused to let the pod
	// with uid go and the policy does not force: the coordinator should
	// not offer the pod again before until. It is called from a worker
	// goroutine, never with the killer's lock held.
	OnBlocked func(uid string, until time.Time)
}

// Killer kills pods asynchronously, Katalyst's pod killer: requests go
// into a rate-limited workqueue, and workers evict (or delete) each pod,
// then wait for it to be gone. Requests for one pod are deduplicated, and
// one pod is never killed by two workers at once.
type Killer struct {
	api     API
	opts    KillerOptions
	queue   workqueue.TypedRateLimitingInterface[KillItem]
	clock   clock.WithTicker
	log     hclog.Logger
	metrics *metrics.Eviction
	// deleting (ModeDelete) and floor (TimeoutFloor) may change while
	// the killer runs (Reconfigure): each kill reads them when it starts.
	deleting atomic.Bool
	floor    atomic.Int64

	mu      sync.Mutex
	pods    map[killPodKey]*killPod
	uids    map[string]int // UID → number of pods (by namespace/name/UID) held
	started bool
	stopped bool
}

// killPodKey names a pod as the dedup does: a pod recreated under the same
// name (a StatefulSet's) is another pod.
type killPodKey struct{ namespace, name, uid string }

// killPod is what the killer holds for one pod: its requests by grace
// period (normally one; a shorter grace supersedes a longer), and the kill
// a worker is running now.
type killPod struct {
	requests map[int64]*KillRequest
	active   *activeKill
}

// activeKill is a kill a worker is running. stop is closed when a request
// with a shorter grace period supersedes it, which ends its waits.
type activeKill struct {
	grace   int64
	stop    chan struct{}
	stopped bool
}

func (a *activeKill) supersede() {
	if !a.stopped {
		a.stopped = true
		close(a.stop)
	}
}

// NewKiller makes a killer over api. Nothing is killed before Run.
func NewKiller(api API, opts KillerOptions) *Killer {
	if opts.Workers <= 0 {
		opts.Workers = DefaultKillWorkers
	}
	opts.Workers = min(opts.Workers, MaxKillWorkers)
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[KillItem]()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultKillPollInterval
	}
	if opts.TimeoutFloor <= 0 {
		opts.TimeoutFloor = DefaultKillTimeoutFloor
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	k := &Killer{
		api:     api,
		opts:    opts,
		queue:   workqueue.NewTypedRateLimitingQueue(opts.RateLimiter),
		clock:   opts.Clock,
		log:     opts.Log,
		metrics: opts.Metrics,
		pods:    map[killPodKey]*killPod{},
		uids:    map[string]int{},
	}
	k.Reconfigure(opts)
	return k
}

// Reconfigure applies opts' Mode and TimeoutFloor (zero: the default) to
// the kills that start from now on, so a reload changes them without a
// restart; a kill in progress finishes as it began. The other options
// are fixed when the killer is made.
func (k *Killer) Reconfigure(opts KillerOptions) {
	switch opts.Mode {
	case ModeDelete:
		k.deleting.Store(true)
	case ModeEviction, "":
		k.deleting.Store(false)
	default:
		k.log.Warn("unknown kill mode, using the Eviction API", "mode", opts.Mode)
		k.deleting.Store(false)
	}
	floor := opts.TimeoutFloor
	if floor <= 0 {
		floor = DefaultKillTimeoutFloor
	}
	k.floor.Store(int64(floor))
}

// Mode is the kill mode the next kill uses (ModeEviction or ModeDelete).
func (k *Killer) Mode() string {
	if k.deleting.Load() {
		return ModeDelete
	}
	return ModeEviction
}

// TimeoutFloor is the timeout floor the next kill uses.
func (k *Killer) TimeoutFloor() time.Duration { return time.Duration(k.floor.Load()) }

// Submit queues kill requests; it never blocks on a kill. A request for a
// pod the killer already holds with a grace period no longer than the
// request's is skipped; a shorter grace period is queued as its own item
// and supersedes the longer one (whose kill, if running, stops waiting).
func (k *Killer) Submit(reqs []KillRequest) {
	for i := range reqs {
		k.submit(reqs[i])
	}
}

func (k *Killer) submit(req KillRequest) {
	pod := req.Pod
	if pod == nil {
		k.log.Warn("kill request without a pod ignored", "policy", req.Policy, "reason", req.Reason)
		return
	}
	if pod.Name == "" || pod.UID == "" {
		k.log.Warn("kill request for a pod without a name or UID refused", "policy", req.Policy,
			"pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
		k.metrics.Kill(metrics.KillFailed)
		return
	}
	grace, err := gracePeriod(&req)
	if err != nil {
		k.log.Warn("kill request refused", "pod", pod.Namespace+"/"+pod.Name, "policy", req.Policy, "error", err)
		k.api.Event(pod, true, ReasonEvictFailed, fmt.Sprintf("Eviction by policy %s (%s) refused: %v", req.Policy, req.Reason, err))
		k.metrics.Kill(metrics.KillFailed)
		return
	}
	key := killPodKey{pod.Namespace, pod.Name, pod.UID}

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		k.log.Debug("killer stopped, kill request dropped", "pod", pod.Namespace+"/"+pod.Name)
		return
	}
	kp := k.pods[key]
	if kp == nil {
		kp = &killPod{requests: map[int64]*KillRequest{}}
		k.pods[key] = kp
		k.uids[pod.UID]++
	}
	if kp.active != nil && kp.active.grace <= grace && !kp.active.stopped {
		k.log.Debug("pod already being killed", "pod", pod.Namespace+"/"+pod.Name, "grace", grace, "policy", req.Policy)
		return
	}
	for g := range kp.requests {
		if g <= grace {
			k.log.Debug("pod already queued for a kill", "pod", pod.Namespace+"/"+pod.Name, "grace", g, "policy", req.Policy)
			return
		}
	}
	// Every request held has a longer grace: the new one supersedes them.
	// Their items may still sit in the queue; a worker that takes one
	// finds no request and forgets it.
	clear(kp.requests)
	if kp.active != nil {
		kp.active.supersede()
	}
	r := req
	kp.requests[grace] = &r
	k.queue.AddRateLimited(KillItem{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, Grace: grace})
}

// gracePeriod resolves a request's grace period: the policy's, else the
// pod's own, else 0, cut to MaxGracePeriodSeconds; a negative one from
// the policy is an error.
func gracePeriod(req *KillRequest) (int64, error) {
	if g := req.GracePeriodSeconds; g != nil {
		if *g < 0 {
			return 0, fmt.Errorf("negative grace period %ds", *g)
		}
		return min(*g, MaxGracePeriodSeconds), nil
	}
	if g := req.Pod.TerminationGraceSeconds; g != nil && *g > 0 {
		return min(*g, MaxGracePeriodSeconds), nil
	}
	return 0, nil
}

// killTimeout is max(1.5×grace, floor), at most maxKillTimeout.
func killTimeout(grace int64, floor time.Duration) time.Duration {
	if grace >= int64(maxKillTimeout/time.Second) {
		return maxKillTimeout
	}
	return min(max(Seconds(max(grace, 0))*3/2, floor), maxKillTimeout)
}

// Holds says whether a pod with this UID is queued or being killed; the
// coordinator does not offer such pods to policies again.
func (k *Killer) Holds(uid string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.uids[uid] > 0
}

// Idle says whether nothing is queued or being killed.
func (k *Killer) Idle() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pods) == 0
}

// Run runs the workers until ctx is done, then shuts the queue down and
// returns when every worker has. A killer runs once: a second Run
// returns at once, and requests submitted after Run returned are dropped.
func (k *Killer) Run(ctx context.Context) {
	k.mu.Lock()
	if k.started {
		k.mu.Unlock()
		return
	}
	k.started = true
	k.mu.Unlock()

	var wg sync.WaitGroup
	for range k.opts.Workers {
		wg.Go(func() {
			for {
				item, shutdown := k.queue.Get()
				if shutdown {
					return
				}
				k.process(ctx, item)
			}
		})
	}
	<-ctx.Done()
	k.mu.Lock()
	k.stopped = true
	k.mu.Unlock()
	k.queue.ShutDown()
	wg.Wait()

	k.mu.Lock()
	clear(k.pods)
	clear(k.uids)
	k.mu.Unlock()
}

// outcome is how a kill ended for the queue.
type outcome int

const (
	// killDone: the pod is gone, was never there, or must stay (a
	// PodDisruptionBudget refusal); forget the item.
	killDone outcome = iota
	// killRetry: try again after the rate limiter's backoff.
	killRetry
	// killStopped: the kill was interrupted (superseded, or the killer is
	// stopping); what happens next depends on why.
	killStopped
)

// process runs one item: checks that its request still stands and that
// no other worker kills the pod, kills it, and requeues or forgets it.
func (k *Killer) process(ctx context.Context, item KillItem) {
	defer k.queue.Done(item)
	if ctx.Err() != nil {
		return
	}
	key := killPodKey{item.Namespace, item.Name, item.UID}

	k.mu.Lock()
	kp := k.pods[key]
	var req *KillRequest
	if kp != nil {
		req = kp.requests[item.Grace]
	}
	if req == nil { // superseded by a shorter grace, or the killer stopped
		k.mu.Unlock()
		k.queue.Forget(item)
		return
	}
	if kp.active != nil {
		// Another item of this pod is being killed (its kill is ending,
		// having been superseded): come back after a backoff.
		k.mu.Unlock()
		k.queue.AddRateLimited(item)
		return
	}
	act := &activeKill{grace: item.Grace, stop: make(chan struct{})}
	kp.active = act
	k.mu.Unlock()

	out := k.kill(ctx, req, item.Grace, act.stop)

	k.mu.Lock()
	defer k.mu.Unlock()
	kp.active = nil
	current := kp.requests[item.Grace] == req
	switch {
	case !current || out == killDone:
		// Done, or superseded meanwhile: the shorter grace's item (if
		// any) takes over.
		if current {
			delete(kp.requests, item.Grace)
		}
		k.queue.Forget(item)
	case out == killRetry:
		k.queue.AddRateLimited(item)
	default: // stopped with ctx: Run clears everything
	}
	if len(kp.requests) == 0 && kp.active == nil && k.pods[key] == kp {
		delete(k.pods, key)
		if k.uids[key.uid]--; k.uids[key.uid] <= 0 {
			delete(k.uids, key.uid)
		}
	}
}

// kill kills the pod of req once (Katalyst's evict): check it is still
// the same pod, evict or delete it, then wait for it to be gone.
func (k *Killer) kill(ctx context.Context, req *KillRequest, grace int64, stop <-chan struct{}) outcome {
	pod := req.Pod
	name := pod.Namespace + "/" + pod.Name
	log := k.log.With("pod", name, "uid", pod.UID, "policy", req.Policy, "grace", grace)

	switch gone, err := k.gone(ctx, pod); {
	case ctx.Err() != nil:
		return killStopped
	case err != nil:
		return k.failed(log, req, "read", err)
	case gone:
		log.Debug("pod gone before its kill")
		return killDone
	}

	timeout := killTimeout(grace, time.Duration(k.floor.Load()))
	call, what := k.api.EvictPod, "eviction"
	if k.deleting.Load() {
		call, what = k.api.DeletePod, "deletion"
	}
	g := grace
	err := call(ctx, pod, &g)
	forced := false
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return killStopped
	case errors.Is(err, podremoval.ErrNotFound):
		log.Debug("pod gone at its kill")
		k.metrics.Kill(metrics.KillSucceeded)
		return killDone
	case errors.Is(err, podremoval.ErrTooManyRequests):
		tooMany := &podremoval.RefusedError{} // no Retry-After, no budget named
		errors.As(err, &tooMany)
		k.metrics.APIBlocked()
		wait := tooMany.RetryAfter
		if wait <= 0 {
			wait = DefaultRetryAfter
		}
		log = log.With("pdb", tooMany.PDB, "retry_after", tooMany.RetryAfter)
		if !req.ForceDelete {
			until := k.clock.Now().Add(wait)
			log.Warn("the Eviction API refused the eviction (429); the pod stays", "until", until, "error", err)
			k.api.Event(pod, true, ReasonEvictBlocked, fmt.Sprintf(
				"Eviction by policy %s (%s) refused: a PodDisruptionBudget allows no disruption now (%v); the pod stays and is not reconsidered before %s",
				req.Policy, req.Reason, err, until.UTC().Format(time.RFC3339)))
			k.metrics.Kill(metrics.KillBlocked)
			if k.opts.OnBlocked != nil {
				k.opts.OnBlocked(pod.UID, until)
			}
			return killDone
		}
		wait = min(wait, timeout)
		log.Warn("the Eviction API refused the eviction (429); deleting the pod as the policy forces", "after", wait, "error", err)
		k.api.Event(pod, true, ReasonEvictBlocked, fmt.Sprintf(
			"Eviction by policy %s (%s) refused by a PodDisruptionBudget (%v); the policy forces: deleting the pod in %s",
			req.Policy, req.Reason, err, wait))
		if !k.sleep(ctx, stop, wait) {
			return killStopped
		}
		forced, what = true, "forced deletion"
		g = grace
		switch err := k.api.DeletePod(ctx, pod, &g); {
		case err == nil:
		case ctx.Err() != nil:
			return killStopped
		case errors.Is(err, podremoval.ErrNotFound):
			k.metrics.Kill(metrics.KillForced)
			return killDone
		default:
			return k.failed(log, req, what, err)
		}
	default:
		return k.failed(log, req, what, err)
	}

	accepted := k.clock.Now()
	deadline := accepted.Add(timeout)
	log.Info("pod kill accepted", "kill", what, "timeout", timeout)
	k.api.Event(pod, false, ReasonEvictCreated, fmt.Sprintf("Pod %s accepted for policy %s (%s), grace period %ds",
		what, req.Policy, req.Reason, grace))
	for {
		gone, err := k.gone(ctx, pod)
		if ctx.Err() != nil {
			return killStopped
		}
		if err != nil {
			log.Debug("checking that the pod is gone failed", "error", err)
		}
		if gone {
			log.Info("pod gone", "after", k.clock.Since(accepted))
			k.api.Event(pod, false, ReasonEvictSucceeded, fmt.Sprintf("Pod gone after its %s for policy %s (%s)", what, req.Policy, req.Reason))
			if forced {
				k.metrics.Kill(metrics.KillForced)
			} else {
				k.metrics.Kill(metrics.KillSucceeded)
			}
			return killDone
		}
		now := k.clock.Now()
		if !now.Before(deadline) {
			log.Warn("pod still there after the kill's timeout; retrying", "timeout", timeout)
			k.api.Event(pod, true, ReasonEvictExceededGracePeriod, fmt.Sprintf(
				"Pod still there %s after its %s for policy %s (%s) was accepted; retrying", timeout, what, req.Policy, req.Reason))
			k.metrics.Kill(metrics.KillTimeout)
			return killRetry
		}
		if !k.sleep(ctx, stop, min(k.opts.PollInterval, deadline.Sub(now))) {
			return killStopped
		}
	}
}

// failed records a kill that failed with err: a Warning Event, the
// failed count, and a retry after the backoff.
func (k *Killer) failed(log hclog.Logger, req *KillRequest, what string, err error) outcome {
	log.Warn("pod kill failed; retrying after a backoff", "step", what, "error", err)
	k.api.Event(req.Pod, true, ReasonEvictFailed, fmt.Sprintf("Pod %s for policy %s (%s) failed: %v", what, req.Policy, req.Reason, err))
	k.metrics.Kill(metrics.KillFailed)
	return killRetry
}

// gone reads the pod from the API: it is gone when it does not exist or
// the name now belongs to another pod (a recreated StatefulSet pod).
func (k *Killer) gone(ctx context.Context, pod *abi.Pod) (bool, error) {
	uid, err := k.api.PodUID(ctx, pod.Namespace, pod.Name)
	switch {
	case errors.Is(err, podremoval.ErrNotFound):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return uid != pod.UID, nil
}

// sleep waits d on the killer's clock; false if ctx ended or stop closed
// first.
func (k *Killer) sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := k.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
}
