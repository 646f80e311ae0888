// Package memapi is an in-memory stand-in for the parts of the Kubernetes
// API the scheduler writes to: pods/binding, the victim condition, pod
// deletion, the Eviction API (which honours PodDisruptionBudgets and
// answers 429 when one allows no disruption; also as a dry run), and
// nominatedNodeName. It tells a Watcher about every change, as informers
// would. Latency and failures (429, 500, NotFound) can be injected, so the
// simulation, tests and benchmarks drive asynchronous preemption the way
// a slow or unhappy API server would. Every call is written to a timeline.
package memapi

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
)

// Watcher is told about changes, as the scheduler's informers would tell it.
type Watcher interface {
	OnPodUpdate(old, pod *abi.Pod)
	OnPodDelete(pod *abi.Pod)
	OnPDB(p *abi.PDB)
}

// Op names an API call, for injection and the timeline.
type Op string

// The calls.
const (
	OpBind     Op = "bind"
	OpMark     Op = "mark-victim"
	OpDelete   Op = "delete"
	OpEvict    Op = "evict"
	OpNominate Op = "nominate"
	OpEvent    Op = "event"
	// OpEvictDryRun is preemption asking the Eviction API whether it
	// would evict a pod now (dryRun: All): budgets are checked, nothing
	// changes.
	OpEvictDryRun Op = "evict-dry-run"
	// The eviction coordinator's calls, told apart from preemption's.
	OpEvictionEvict  Op = "eviction-evict"
	OpEvictionDelete Op = "eviction-delete"
	// OpScaleDown is a StatefulSet controller deleting a pod whose ordinal
	// is at or above the new replica count (a vpod autoscaler scaled the
	// adapter StatefulSet down).
	OpScaleDown Op = "scale-down"
)

// Injectable failures: the errors preemption and the eviction killer
// tell apart. Their text is what a user of simulate reads in its
// timeline, so it says what the API answered and never names this
// package. A budget's refusal is a *podremoval.RefusedError naming the
// budget (it is ErrTooManyRequests for errors.Is).
var (
	ErrTooManyRequests = podremoval.ErrTooManyRequests
	ErrNotFound        = podremoval.ErrNotFound
	// ErrConflict is a 409: for a removal, its UID precondition failing
	// because another pod has the name now.
	ErrConflict = podremoval.ErrConflict
	ErrInternal = errors.New("internal error (500)")
)

// Entry is one line of the timeline.
type Entry struct {
	// Seq orders entries; At is the wall time since the cluster started.
	Seq  int           `json:"seq"`
	At   time.Duration `json:"at"`
	Op   Op            `json:"op"`
	Pod  string        `json:"pod"` // namespace/name
	Node string        `json:"node,omitempty"`
	// Detail: the nominated node, the event reason and message, ...
	Detail string `json:"detail,omitempty"`
	Err    string `json:"error,omitempty"`
	// Code is the HTTP status a real API server would have answered a
	// failed call with (404, 409, 429, 500; 0: none known), so readers
	// tell a budget's refusal from a failure without parsing Err.
	Code int `json:"code,omitempty"`
}

// Cluster is the in-memory API. Safe for concurrent use.
type Cluster struct {
	mu       sync.Mutex
	pods     map[string]*abi.Pod // by UID
	pdbs     map[string]*abi.PDB // by namespace/name
	watch    Watcher
	latency  time.Duration
	inject   func(op Op, pod *abi.Pod) error
	start    time.Time
	timeline []Entry
}

// New returns an empty cluster that reports to w (nil: nobody).
func New(w Watcher) *Cluster {
	return &Cluster{pods: map[string]*abi.Pod{}, pdbs: map[string]*abi.PDB{}, watch: w, start: time.Now()}
}

// SetWatcher sets who is told about changes.
func (c *Cluster) SetWatcher(w Watcher) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch = w
}

// SetLatency makes every write but nominations and events take d (status
// patches of nominations go through a background queue in a real
// cluster, so they do not hold the caller).
func (c *Cluster) SetLatency(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latency = d
}

// Inject sets a function consulted before every call: a non-nil error
// fails the call with it (after the latency), leaving the cluster as it was.
func (c *Cluster) Inject(f func(op Op, pod *abi.Pod) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inject = f
}

// AddPod stores a pod (no notification: the caller feeds the scheduler).
func (c *Cluster) AddPod(p *abi.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods[p.UID] = p
}

// SetPDB stores a budget (no notification).
func (c *Cluster) SetPDB(p *abi.PDB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pdbs[p.Namespace+"/"+p.Name] = p
}

// Pod returns a pod by UID, or nil.
func (c *Cluster) Pod(uid string) *abi.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[uid]
}

// PodByName returns the pod now named namespace/name, or nil: the
// eviction killer checks whether a pod is gone or was recreated.
func (c *Cluster) PodByName(namespace, name string) *abi.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pods {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// PDB returns a budget, or nil.
func (c *Cluster) PDB(namespace, name string) *abi.PDB {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pdbs[namespace+"/"+name]
}

// Timeline returns a copy of the calls so far.
func (c *Cluster) Timeline() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Entry(nil), c.timeline...)
}

// call waits the latency, consults the injector and logs the call; it
// returns the injected error, if any.
func (c *Cluster) call(ctx context.Context, op Op, pod *abi.Pod, slow bool) error {
	c.mu.Lock()
	lat, inject := c.latency, c.inject
	c.mu.Unlock()
	if slow && lat > 0 {
		t := time.NewTimer(lat)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	if inject != nil {
		return inject(op, pod)
	}
	return nil
}

func (c *Cluster) logLocked(op Op, pod *abi.Pod, node, detail string, err error) {
	e := Entry{Seq: len(c.timeline) + 1, At: time.Since(c.start), Op: op, Pod: pod.Namespace + "/" + pod.Name, Node: node, Detail: detail}
	if err != nil {
		e.Err, e.Code = err.Error(), codeOf(err)
	}
	c.timeline = append(c.timeline, e)
}

// codeOf is the HTTP status of a failed call's error (0: not known).
func codeOf(err error) int {
	switch {
	case errors.Is(err, podremoval.ErrNotFound):
		return 404
	case errors.Is(err, podremoval.ErrConflict):
		return 409
	case errors.Is(err, podremoval.ErrTooManyRequests):
		return 429
	case errors.Is(err, ErrInternal):
		return 500
	}
	return 0
}

func (c *Cluster) fail(op Op, pod *abi.Pod, node string, err error) error {
	c.mu.Lock()
	c.logLocked(op, pod, node, "", err)
	c.mu.Unlock()
	return err
}

// Bind implements framework.Binder.
func (c *Cluster) Bind(ctx context.Context, pod *abi.Pod, node string) error {
	if err := c.call(ctx, OpBind, pod, true); err != nil {
		return c.fail(OpBind, pod, node, err)
	}
	c.mu.Lock()
	old := c.pods[pod.UID]
	if old == nil || old.NodeName != "" {
		c.logLocked(OpBind, pod, node, "", scheduler.ErrPodGone)
		c.mu.Unlock()
		return fmt.Errorf("bind %s/%s: %w", pod.Namespace, pod.Name, scheduler.ErrPodGone)
	}
	bound := *old
	bound.NodeName = node
	bound.NominatedNodeName = ""
	c.pods[pod.UID] = &bound
	c.logLocked(OpBind, pod, node, "", nil)
	w := c.watch
	c.mu.Unlock()
	if w != nil {
		w.OnPodUpdate(old, &bound)
	}
	return nil
}

// MarkVictim implements preemption.API.
func (c *Cluster) MarkVictim(ctx context.Context, victim *abi.Pod, message string) error {
	if err := c.call(ctx, OpMark, victim, true); err != nil {
		return c.fail(OpMark, victim, victim.NodeName, err)
	}
	old, err := c.lockVictim(OpMark, victim)
	if err != nil {
		return err
	}
	c.logLocked(OpMark, victim, old.NodeName, message, nil)
	if old.PreemptedByScheduler {
		c.mu.Unlock()
		return nil
	}
	marked := *old
	marked.PreemptedByScheduler = true
	c.pods[victim.UID] = &marked
	w := c.watch
	c.mu.Unlock()
	if w != nil {
		w.OnPodUpdate(old, &marked)
	}
	return nil
}

// lockVictim takes the cluster's lock and returns the stored victim; if
// it is gone, it logs op as NotFound, unlocks and returns ErrNotFound.
func (c *Cluster) lockVictim(op Op, victim *abi.Pod) (*abi.Pod, error) {
	c.mu.Lock()
	old := c.pods[victim.UID]
	if old == nil {
		err := fmt.Errorf("pod %s/%s: %w", victim.Namespace, victim.Name, ErrNotFound)
		c.logLocked(op, victim, victim.NodeName, "", err)
		c.mu.Unlock()
		return nil, err
	}
	return old, nil
}

// DeletePod implements podremoval.Remover for preemption: the call is
// recorded as OpDelete. The pod goes at once, whatever the grace period.
func (c *Cluster) DeletePod(ctx context.Context, victim *abi.Pod, _ *int64) error {
	return c.DeleteAs(ctx, victim, OpDelete)
}

// DeleteAs is DeletePod recording the call as op (OpDelete for
// preemption, OpEvictionDelete for the eviction killer).
func (c *Cluster) DeleteAs(ctx context.Context, victim *abi.Pod, op Op) error {
	if err := c.call(ctx, op, victim, true); err != nil {
		return c.fail(op, victim, victim.NodeName, err)
	}
	old, err := c.lockVictim(op, victim)
	if err != nil {
		return err
	}
	delete(c.pods, victim.UID)
	c.logLocked(op, victim, old.NodeName, "", nil)
	w := c.watch
	c.mu.Unlock()
	if w != nil {
		w.OnPodDelete(old)
	}
	return nil
}

// EvictPod implements podremoval.Remover for preemption (recorded as
// OpEvict) with the Eviction API's budget check: every budget in the
// pod's namespace whose selector matches it (an empty selector matches
// every pod, as the API defines) must allow a disruption, unless it
// already lists the pod; then each is spent and the pod deleted at once,
// whatever the grace period. Otherwise ErrTooManyRequests.
func (c *Cluster) EvictPod(ctx context.Context, victim *abi.Pod, _ *int64) error {
	return c.EvictAs(ctx, victim, OpEvict)
}

// EvictAs is EvictPod recording the call as op (OpEvict for preemption,
// OpEvictionEvict for the eviction killer).
func (c *Cluster) EvictAs(ctx context.Context, victim *abi.Pod, op Op) error {
	return c.evict(ctx, victim, op, false)
}

// EvictPodDryRun implements podremoval.DryRunEvictor: the Eviction API
// with dryRun: All answers as EvictPod would now (429 when a budget
// allows no disruption, NotFound when the pod is gone) but spends no
// budget and removes nothing. Injected failures see OpEvictDryRun.
func (c *Cluster) EvictPodDryRun(ctx context.Context, victim *abi.Pod) error {
	return c.evict(ctx, victim, OpEvictDryRun, true)
}

var (
	_ preemption.API           = (*Cluster)(nil)
	_ podremoval.DryRunEvictor = (*Cluster)(nil)
)

// evict is the Eviction API; dry checks the budgets only.
func (c *Cluster) evict(ctx context.Context, victim *abi.Pod, op Op, dry bool) error {
	if err := c.call(ctx, op, victim, true); err != nil {
		return c.fail(op, victim, victim.NodeName, err)
	}
	old, err := c.lockVictim(op, victim)
	if err != nil {
		return err
	}
	var spend []*abi.PDB
	for _, p := range c.pdbs {
		if p.Namespace != old.Namespace {
			continue
		}
		sel, err := plugin.NewSelector(p.Selector)
		if err != nil || !sel.Matches(old.Labels) || listed(p, old.Name) {
			continue
		}
		if p.DisruptionsAllowed <= 0 {
			err := &podremoval.RefusedError{PDB: p.Name, Err: fmt.Errorf("%d disruptions allowed", max(p.DisruptionsAllowed, 0))}
			c.logLocked(op, victim, old.NodeName, "", err)
			c.mu.Unlock()
			return err
		}
		spend = append(spend, p)
	}
	if dry {
		c.logLocked(op, victim, old.NodeName, "dry run", nil)
		c.mu.Unlock()
		return nil
	}
	var changed []*abi.PDB
	for _, p := range spend {
		np := *p
		np.DisruptionsAllowed--
		np.DisruptedPods = append(append([]string(nil), p.DisruptedPods...), old.Name)
		c.pdbs[np.Namespace+"/"+np.Name] = &np
		changed = append(changed, &np)
	}
	delete(c.pods, victim.UID)
	c.logLocked(op, victim, old.NodeName, "", nil)
	w := c.watch
	c.mu.Unlock()
	if w != nil {
		for _, p := range changed {
			w.OnPDB(p)
		}
		w.OnPodDelete(old)
	}
	return nil
}

func listed(p *abi.PDB, name string) bool {
	for _, n := range p.DisruptedPods {
		if n == name {
			return true
		}
	}
	return false
}

// SetNomination implements preemption.API (no latency: see SetLatency).
func (c *Cluster) SetNomination(ctx context.Context, pod *abi.Pod, node string) error {
	if err := c.call(ctx, OpNominate, pod, false); err != nil {
		return c.fail(OpNominate, pod, node, err)
	}
	c.mu.Lock()
	old := c.pods[pod.UID]
	if old == nil || old.NodeName != "" {
		c.mu.Unlock()
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, ErrNotFound)
	}
	c.logLocked(OpNominate, pod, node, "", nil)
	if old.NominatedNodeName == node {
		c.mu.Unlock()
		return nil
	}
	np := *old
	np.NominatedNodeName = node
	c.pods[pod.UID] = &np
	w := c.watch
	c.mu.Unlock()
	if w != nil {
		w.OnPodUpdate(old, &np)
	}
	return nil
}

// Event implements preemption.API.
func (c *Cluster) Event(pod *abi.Pod, warning bool, reason, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kind := "Normal"
	if warning {
		kind = "Warning"
	}
	c.logLocked(OpEvent, pod, pod.NodeName, kind+" "+reason+": "+message, nil)
}
