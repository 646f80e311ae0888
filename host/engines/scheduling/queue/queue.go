package queue

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"k8s.io/utils/clock"
)

// Defaults, as in kube-scheduler.
const (
	DefaultInitialBackoff             = 1 * time.Second
	DefaultMaxBackoff                 = 10 * time.Second
	DefaultMaxInUnschedulable         = 5 * time.Minute
	DefaultBackoffFlushInterval       = 1 * time.Second
	DefaultUnschedulableFlushInterval = 30 * time.Second
)

// flight is what the queue knows about a popped pod while its scheduling
// (and binding) cycle runs: the caller owns the QueuedPodInfo, so
// everything that happens to the pod meanwhile is noted here and applied
// when the pod comes back.
type flight struct {
	seq      uint64   // events with a larger sequence number arrived in flight
	pod      *abi.Pod // the newest known version of the pod
	updated  bool     // its spec changed in flight: worth another try
	deleted  bool     // deleted in flight: drop it when it comes back
	activate bool     // Activate was called in flight: straight to activeQ
	requeue  bool     // Requeue was called in flight: to backoffQ or activeQ
}

// flightEvent is a cluster event that arrived while some pod was in flight.
type flightEvent struct {
	seq      uint64
	event    ClusterEvent
	preCheck func(*abi.Pod) bool
}

// PriorityQueue is the scheduling queue: activeQ, backoffQ and
// unschedulablePods plus the nominator, all behind one lock. See the
// package documentation for how pods move between them.
type PriorityQueue struct {
	clock              clock.WithTicker
	initialBackoff     time.Duration
	maxBackoff         time.Duration
	maxInUnschedulable time.Duration
	backoffFlush       time.Duration
	leftoverFlush      time.Duration
	preEnqueue         func(*abi.Pod) []PreEnqueuePlugin
	pluginEvents       map[string][]ClusterEvent

	mu            sync.RWMutex
	activeQ       *podHeap
	backoffQ      *podHeap
	unschedulable map[string]*QueuedPodInfo
	inFlight      map[string]*flight
	events        []flightEvent
	eventSeq      uint64
	insertSeq     uint64
	nominator     nominator
	// wake is closed when a pod enters activeQ while a Pop waits on it.
	wake     chan struct{}
	wakeUsed bool
	closed   bool
	closedCh chan struct{}
}

// New returns an empty queue; call Run to start its flush loops.
func New(opts Options) *PriorityQueue {
	q := &PriorityQueue{
		clock:              opts.Clock,
		initialBackoff:     opts.InitialBackoff,
		maxBackoff:         opts.MaxBackoff,
		maxInUnschedulable: opts.MaxInUnschedulable,
		backoffFlush:       opts.BackoffFlushInterval,
		leftoverFlush:      opts.UnschedulableFlushInterval,
		preEnqueue:         opts.PreEnqueue,
		pluginEvents:       make(map[string][]ClusterEvent, len(opts.PluginEvents)),
		unschedulable:      map[string]*QueuedPodInfo{},
		inFlight:           map[string]*flight{},
		nominator:          newNominator(),
		wake:               make(chan struct{}),
		closedCh:           make(chan struct{}),
	}
	if q.clock == nil {
		q.clock = clock.RealClock{}
	}
	if q.initialBackoff <= 0 {
		q.initialBackoff = DefaultInitialBackoff
	}
	if q.maxBackoff <= 0 {
		q.maxBackoff = DefaultMaxBackoff
	}
	q.maxBackoff = max(q.maxBackoff, q.initialBackoff)
	if q.maxInUnschedulable <= 0 {
		q.maxInUnschedulable = DefaultMaxInUnschedulable
	}
	if q.backoffFlush <= 0 {
		q.backoffFlush = DefaultBackoffFlushInterval
	}
	if q.leftoverFlush <= 0 {
		q.leftoverFlush = DefaultUnschedulableFlushInterval
	}
	for name, evs := range opts.PluginEvents {
		q.pluginEvents[name] = append([]ClusterEvent{}, evs...)
	}
	q.activeQ = newPodHeap(func(a, b *QueuedPodInfo) bool {
		if a.Pod.Priority != b.Pod.Priority {
			return a.Pod.Priority > b.Pod.Priority
		}
		if !a.Timestamp.Equal(b.Timestamp) {
			return a.Timestamp.Before(b.Timestamp)
		}
		return a.seq < b.seq
	})
	q.backoffQ = newPodHeap(func(a, b *QueuedPodInfo) bool {
		if !a.expiry.Equal(b.expiry) {
			return a.expiry.Before(b.expiry)
		}
		return a.seq < b.seq
	})
	return q
}

// Run starts the backoff flush (every second) and the unschedulable
// leftover flush (every 30s) in the background; they stop when ctx is done
// or the queue is closed. Call it once.
func (q *PriorityQueue) Run(ctx context.Context) {
	if ctx == nil {
		ctx = context.Background()
	}
	go q.every(ctx, q.backoffFlush, q.flushBackoffCompleted)
	go q.every(ctx, q.leftoverFlush, q.flushUnschedulableLeftover)
}

func (q *PriorityQueue) every(ctx context.Context, d time.Duration, f func()) {
	t := q.clock.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.closedCh:
			return
		case <-t.C():
			f()
		}
	}
}

// Close shuts the queue down: waiting and future Pops return ErrClosed and
// the flush loops stop. Other methods keep working so that late event
// handlers do no harm.
func (q *PriorityQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.closedCh)
	}
}

// Pop removes the best pod from activeQ, waiting until there is one, ctx is
// done or the queue is closed. The pod is in flight until Done (or
// AddUnschedulableIfNotPresent): events arriving meanwhile are remembered,
// so a failure caused by a state that has since changed is not parked.
func (q *PriorityQueue) Pop(ctx context.Context) (*QueuedPodInfo, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, ErrClosed
		}
		if p := q.activeQ.pop(); p != nil {
			now := q.clock.Now()
			p.Attempts++
			if p.InitialAttemptTimestamp.IsZero() {
				p.InitialAttemptTimestamp = now
			}
			q.inFlight[p.Pod.UID] = &flight{seq: q.eventSeq, pod: p.Pod}
			q.mu.Unlock()
			return p, nil
		}
		wake := q.wake
		q.wakeUsed = true
		q.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-q.closedCh:
			return nil, ErrClosed
		}
	}
}

// Done ends the flight of the pod with this UID: call it when its
// scheduling and binding cycles are over. Unknown UIDs are ignored, and
// calling it after AddUnschedulableIfNotPresent is harmless.
func (q *PriorityQueue) Done(uid string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.endFlight(uid)
}

// Add queues a new pending pod: to activeQ if its PreEnqueue gates pass,
// else to unschedulablePods as gated. A pod the queue already holds (or has
// in flight) is updated instead, keeping its counters. A pod that carries
// a nominatedNodeName is nominated there.
func (q *PriorityQueue) Add(pod *abi.Pod) error {
	if pod == nil || pod.UID == "" {
		return ErrInvalidPod
	}
	if pod.NodeName != "" {
		return ErrAssigned
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deletedInFlight(pod.UID) {
		return nil
	}
	if cur := q.currentPod(pod.UID); cur != nil {
		q.updateLocked(cur, pod)
		return nil
	}
	q.nominator.update(nil, pod)
	q.toActive(&QueuedPodInfo{Pod: pod, Timestamp: q.clock.Now()})
	return nil
}

// Update replaces the queue's version of a pod. In activeQ or backoffQ the
// pod is updated in place; in unschedulablePods a change other than status
// fields moves it on (re-running its gates); in flight the change is noted
// for AddUnschedulableIfNotPresent; unknown pods are added. A pod that now
// has a node is bound and leaves the queue. oldPod may be nil.
func (q *PriorityQueue) Update(oldPod, newPod *abi.Pod) error {
	if newPod == nil || newPod.UID == "" {
		return ErrInvalidPod
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if newPod.NodeName != "" {
		q.deleteLocked(newPod.UID)
		return nil
	}
	if q.deletedInFlight(newPod.UID) {
		return nil
	}
	if q.currentPod(newPod.UID) == nil {
		q.nominator.update(oldPod, newPod)
		q.toActive(&QueuedPodInfo{Pod: newPod, Timestamp: q.clock.Now()})
		return nil
	}
	if oldPod == nil {
		oldPod = q.currentPod(newPod.UID)
	}
	q.updateLocked(oldPod, newPod)
	return nil
}

func (q *PriorityQueue) updateLocked(oldPod, newPod *abi.Pod) {
	uid := newPod.UID
	q.nominator.update(oldPod, newPod)
	if p := q.activeQ.get(uid); p != nil {
		p.Pod = newPod
		q.activeQ.fix(uid)
		return
	}
	if p := q.backoffQ.get(uid); p != nil {
		p.Pod = newPod
		return
	}
	if p, ok := q.unschedulable[uid]; ok {
		changed := specChanged(p.Pod, newPod)
		p.Pod = newPod
		if changed {
			q.moveUnschedulable(p)
		}
		return
	}
	if f, ok := q.inFlight[uid]; ok {
		if specChanged(f.pod, newPod) {
			f.updated = true
		}
		f.pod = newPod
	}
}

// deletedInFlight reports whether the pod was deleted while in flight: a
// later event about it is stale (a re-created pod has a new UID).
func (q *PriorityQueue) deletedInFlight(uid string) bool {
	f := q.inFlight[uid]
	return f != nil && f.deleted
}

// specChanged reports whether an update may matter to scheduling: the
// status fields of the view (nominatedNodeName, startTime) do not, which
// keeps the scheduler's own status patches from requeueing pods.
func specChanged(a, b *abi.Pod) bool {
	if a == nil || b == nil {
		return true
	}
	x, y := *a, *b
	x.NominatedNodeName, y.NominatedNodeName = "", ""
	x.StartTime, y.StartTime = 0, 0
	x.Annotations, y.Annotations = nil, nil // kept for eviction, never read by scheduling
	return !reflect.DeepEqual(x, y)
}

// Delete removes the pod from every queue and from the nominator; a pod in
// flight is marked so that it is dropped when it comes back.
func (q *PriorityQueue) Delete(pod *abi.Pod) {
	if pod == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleteLocked(pod.UID)
}

func (q *PriorityQueue) deleteLocked(uid string) {
	q.activeQ.remove(uid)
	q.backoffQ.remove(uid)
	delete(q.unschedulable, uid)
	if f, ok := q.inFlight[uid]; ok {
		f.deleted = true
	}
	q.nominator.delete(uid)
}

// AddUnschedulableIfNotPresent gives back a pod whose cycle failed.
// rejectors are the plugins that found it unschedulable; none, or isError,
// means the cycle failed for another reason and the pod is retried after
// the error backoff. Otherwise the pod is parked in unschedulablePods
// unless an event one of its rejectors cares about arrived while it was in
// flight (or it was updated or activated in flight), in which case it is
// requeued at once. The counters and Timestamp are updated in p, and the
// queue keeps a copy of it. It returns ErrAlreadyQueued if the queue already holds
// the pod, and drops a pod deleted in flight.
func (q *PriorityQueue) AddUnschedulableIfNotPresent(p *QueuedPodInfo, rejectors PluginSet, isError bool) error {
	if p == nil || p.Pod == nil || p.Pod.UID == "" {
		return ErrInvalidPod
	}
	uid := p.Pod.UID
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.activeQ.has(uid) || q.backoffQ.has(uid) || q.unschedulable[uid] != nil {
		return fmt.Errorf("%w: %s/%s", ErrAlreadyQueued, p.Pod.Namespace, p.Pod.Name)
	}
	f := q.inFlight[uid]
	defer q.endFlight(uid)
	if f != nil {
		if f.deleted {
			return nil
		}
		p.Pod = f.pod
	}

	if isError || len(rejectors) == 0 {
		p.ConsecutiveErrorsCount++
	} else {
		p.UnschedulableCount++
		p.ConsecutiveErrorsCount = 0
	}
	p.UnschedulablePlugins = rejectors.clone()
	p.GatingPlugin, p.GatingReason = "", ""
	p.Timestamp = q.clock.Now()
	// Queue a copy: the caller keeps its struct (callers commonly read
	// p.Pod.UID for Done afterwards) and the queue never writes to it again.
	c := *p
	p = &c

	switch {
	case f != nil && f.activate:
		q.toActive(p)
	case isError || len(rejectors) == 0 || f == nil || f.updated || f.requeue || q.eventInFlight(p, f):
		q.requeueAfterBackoff(p)
	default:
		q.unschedulable[uid] = p
	}
	return nil
}

// eventInFlight reports whether an event that may help p arrived during
// flight f.
func (q *PriorityQueue) eventInFlight(p *QueuedPodInfo, f *flight) bool {
	for i := len(q.events) - 1; i >= 0 && q.events[i].seq > f.seq; i-- {
		e := &q.events[i]
		if q.interested(p, e.event) && runPreCheck(e.preCheck, p.Pod) {
			return true
		}
	}
	return false
}

// MoveAllToActiveOrBackoffQueue reports a cluster event. Every parked pod
// that passes preCheck (nil passes all) and was rejected by a plugin
// interested in the event moves to backoffQ, or to activeQ if its backoff
// is over; a gated pod re-runs its gates if its gating plugin is
// interested. The event is also remembered for pods in flight. preCheck is
// called with the lock held and must not call the queue.
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueue(event ClusterEvent, preCheck func(*abi.Pod) bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveAll(event, preCheck, nil)
	if len(q.inFlight) > 0 {
		q.eventSeq++
		q.events = append(q.events, flightEvent{seq: q.eventSeq, event: event, preCheck: preCheck})
	}
}

// moveAll moves the parked pods event may help; filter, if set, further
// restricts the candidates (without the panic guard of preCheck).
func (q *PriorityQueue) moveAll(event ClusterEvent, preCheck func(*abi.Pod) bool, filter func(*QueuedPodInfo) bool) {
	var move []*QueuedPodInfo
	for _, p := range q.unschedulable {
		if filter != nil && !filter(p) {
			continue
		}
		if q.interested(p, event) && runPreCheck(preCheck, p.Pod) {
			move = append(move, p)
		}
	}
	for _, p := range move {
		q.moveUnschedulable(p)
	}
}

// interested reports whether event may make p schedulable, judged by the
// plugins that hold it back.
func (q *PriorityQueue) interested(p *QueuedPodInfo, event ClusterEvent) bool {
	if event.IsWildCard() {
		return true
	}
	if p.Gated() {
		return q.pluginInterested(p.GatingPlugin, event)
	}
	if len(p.UnschedulablePlugins) == 0 {
		return true
	}
	for name := range p.UnschedulablePlugins {
		if q.pluginInterested(name, event) {
			return true
		}
	}
	return false
}

func (q *PriorityQueue) pluginInterested(name string, event ClusterEvent) bool {
	regs, ok := q.pluginEvents[name]
	if !ok {
		return true
	}
	for _, r := range regs {
		if r.Match(event) {
			return true
		}
	}
	return false
}

// runPreCheck calls a caller's filter; a panicking filter counts as a
// pass, since a needless retry is cheaper than a pod stuck for minutes.
func runPreCheck(f func(*abi.Pod) bool, pod *abi.Pod) (ok bool) {
	if f == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			ok = true
		}
	}()
	return f(pod)
}

// Activate moves the given pods to activeQ now, skipping backoff and
// waiting for events, after re-running their gates (a pod still gated
// stays parked). A pod in activeQ or unknown is left alone; a pod in
// flight is flagged so that AddUnschedulableIfNotPresent sends it straight
// to activeQ, so an activation racing with the cycle is not lost (the
// async preemption goroutine relies on this).
func (q *PriorityQueue) Activate(pods []*abi.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		uid := pod.UID
		switch {
		case q.activeQ.has(uid):
		case q.inFlight[uid] != nil:
			q.inFlight[uid].activate = true
		case q.backoffQ.has(uid):
			q.toActive(q.backoffQ.remove(uid))
		case q.unschedulable[uid] != nil:
			p := q.unschedulable[uid]
			delete(q.unschedulable, uid)
			q.toActive(p)
		}
	}
}

// Requeue takes the given pods out of unschedulablePods towards activeQ,
// through backoffQ while their backoff runs (re-running their gates), as
// an event that concerns only them would. A pod in flight is flagged so
// that AddUnschedulableIfNotPresent does the same instead of parking it.
// Pods in activeQ or backoffQ, and unknown pods, are left alone. A failed
// asynchronous preemption uses it: the preemptor must not wait minutes
// for an event, nor retry at once against a failing API.
func (q *PriorityQueue) Requeue(pods []*abi.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		uid := pod.UID
		switch {
		case q.inFlight[uid] != nil:
			q.inFlight[uid].requeue = true
		case q.unschedulable[uid] != nil:
			q.moveUnschedulable(q.unschedulable[uid])
		}
	}
}

// PendingPods returns the sizes of the three queues, for the pending_pods
// metric. Gated pods count as unschedulable; pods in flight are not
// pending.
func (q *PriorityQueue) PendingPods() (active, backoff, unschedulable int) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.activeQ.Len(), q.backoffQ.Len(), len(q.unschedulable)
}

// PendingCounts are the queue's sizes by sub-queue, kube-scheduler's
// pending_pods breakdown.
type PendingCounts struct {
	// Active pods wait in activeQ, Backoff pods in backoffQ.
	Active, Backoff int
	// Unschedulable pods were tried and wait for an event that may help;
	// Gated pods are held back by a PreEnqueue plugin. Both live in the
	// unschedulable map; each pod counts in one of the two.
	Unschedulable, Gated int
}

// PendingByQueue returns the queue's sizes by sub-queue, for the
// pending_pods metric at scrape time. It walks the unschedulable map to
// tell gated pods apart (a scrape every few seconds; no bookkeeping on
// the scheduling path). Pods in flight are not pending.
func (q *PriorityQueue) PendingByQueue() PendingCounts {
	q.mu.RLock()
	defer q.mu.RUnlock()
	c := PendingCounts{Active: q.activeQ.Len(), Backoff: q.backoffQ.Len()}
	for _, p := range q.unschedulable {
		if p.Gated() {
			c.Gated++
		} else {
			c.Unschedulable++
		}
	}
	return c
}

// AddNominatedPod records that preemption made room for pod on nodeName,
// replacing an earlier nomination; an empty nodeName clears it. Bound pods
// and pods deleted while in flight are not nominated.
func (q *PriorityQueue) AddNominatedPod(pod *abi.Pod, nodeName string) {
	if pod == nil || pod.UID == "" {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deletedInFlight(pod.UID) {
		q.nominator.delete(pod.UID)
		return
	}
	q.nominator.add(pod, nodeName)
}

// DeleteNominatedPodIfExists drops the pod's nomination, e.g. once it is
// bound or when preemption decides its nomination is no longer valid.
func (q *PriorityQueue) DeleteNominatedPodIfExists(pod *abi.Pod) {
	if pod == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.nominator.delete(pod.UID)
}

// NominatedNode returns the node the pod is nominated to, or "".
func (q *PriorityQueue) NominatedNode(uid string) string {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return q.nominator.byUID[uid]
}

// HasNominatedPods reports whether any pod is nominated anywhere, so a
// cycle can skip per-node nominator lookups in the common case of none.
func (q *PriorityQueue) HasNominatedPods() bool {
	q.mu.RLock()
	defer q.mu.RUnlock()
	return len(q.nominator.byUID) > 0
}

// NominatedPodsForNode returns the pods nominated to nodeName, in
// nomination order, so filters can keep room for them. Each is a shallow
// copy of the queue's newest version of the pod, with NominatedNodeName set
// to nodeName; callers must not modify its slices.
func (q *PriorityQueue) NominatedPodsForNode(nodeName string) []*abi.Pod {
	q.mu.RLock()
	defer q.mu.RUnlock()
	nominated := q.nominator.byNode[nodeName]
	if len(nominated) == 0 {
		return nil
	}
	out := make([]*abi.Pod, 0, len(nominated))
	for _, pod := range nominated {
		if cur := q.currentPod(pod.UID); cur != nil {
			pod = cur
		}
		c := *pod
		c.NominatedNodeName = nodeName
		out = append(out, &c)
	}
	return out
}

// currentPod returns the queue's newest version of the pod, or nil if the
// pod is in no queue and not in flight.
func (q *PriorityQueue) currentPod(uid string) *abi.Pod {
	if p := q.activeQ.get(uid); p != nil {
		return p.Pod
	}
	if p := q.backoffQ.get(uid); p != nil {
		return p.Pod
	}
	if p := q.unschedulable[uid]; p != nil {
		return p.Pod
	}
	if f := q.inFlight[uid]; f != nil && !f.deleted {
		return f.pod
	}
	return nil
}

// flushBackoffCompleted moves pods whose backoff is over to activeQ.
func (q *PriorityQueue) flushBackoffCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	for {
		p := q.backoffQ.peek()
		if p == nil || p.expiry.After(now) {
			return
		}
		q.toActive(q.backoffQ.pop())
	}
}

// flushUnschedulableLeftover retries pods parked longer than
// MaxInUnschedulable, in case the event that would help them was missed or
// never registered.
func (q *PriorityQueue) flushUnschedulableLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	q.moveAll(UnschedulableTimeout, nil, func(p *QueuedPodInfo) bool {
		return now.Sub(p.Timestamp) > q.maxInUnschedulable
	})
}

// moveUnschedulable takes a parked pod out of unschedulablePods towards
// activeQ. A gated pod first re-runs its gates and stays if still gated.
func (q *PriorityQueue) moveUnschedulable(p *QueuedPodInfo) {
	wasGated := p.Gated()
	if wasGated && !q.runPreEnqueue(p) {
		return
	}
	delete(q.unschedulable, p.Pod.UID)
	switch {
	case q.isBackingOff(p):
		q.pushBackoff(p)
	case wasGated:
		q.pushActive(p) // its gates just passed
	default:
		q.toActive(p)
	}
}

// requeueAfterBackoff sends p to backoffQ if its backoff is still running,
// else towards activeQ.
func (q *PriorityQueue) requeueAfterBackoff(p *QueuedPodInfo) {
	if q.isBackingOff(p) {
		q.pushBackoff(p)
		return
	}
	q.toActive(p)
}

// toActive runs p's gates and puts it in activeQ, or parks it as gated.
func (q *PriorityQueue) toActive(p *QueuedPodInfo) {
	if q.runPreEnqueue(p) {
		q.pushActive(p)
		return
	}
	q.unschedulable[p.Pod.UID] = p
}

func (q *PriorityQueue) pushActive(p *QueuedPodInfo) {
	q.insertSeq++
	p.seq = q.insertSeq
	q.activeQ.add(p)
	if q.wakeUsed {
		close(q.wake)
		q.wake = make(chan struct{})
		q.wakeUsed = false
	}
}

func (q *PriorityQueue) pushBackoff(p *QueuedPodInfo) {
	q.insertSeq++
	p.seq = q.insertSeq
	p.expiry = p.Timestamp.Add(q.backoffDuration(p))
	q.backoffQ.add(p)
}

// runPreEnqueue runs the gates of p's profile, the one that gated it last
// time first (it is the likeliest to still say no), and records the first
// refusal. A panicking gate counts as a refusal: the pod waits rather than
// taking the host down.
func (q *PriorityQueue) runPreEnqueue(p *QueuedPodInfo) bool {
	var plugins []PreEnqueuePlugin
	if q.preEnqueue != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					plugins = []PreEnqueuePlugin{panicked{fmt.Sprint(r)}}
				}
			}()
			plugins = q.preEnqueue(p.Pod)
		}()
	}
	prev := p.GatingPlugin
	try := func(pl PreEnqueuePlugin) bool {
		if pl == nil {
			return true
		}
		ok, reason, name := callPreEnqueue(pl, p.Pod)
		if !ok {
			p.GatingPlugin, p.GatingReason = name, reason
		}
		return ok
	}
	if prev != "" {
		for _, pl := range plugins {
			if pl != nil && pluginName(pl) == prev {
				if !try(pl) {
					return false
				}
				break
			}
		}
	}
	for _, pl := range plugins {
		if prev != "" && pl != nil && pluginName(pl) == prev {
			continue
		}
		if !try(pl) {
			return false
		}
	}
	p.GatingPlugin, p.GatingReason = "", ""
	return true
}

// panicked stands in for a profile lookup that panicked.
type panicked struct{ msg string }

func (panicked) Name() string                         { return "PreEnqueuePanic" }
func (p panicked) PreEnqueue(*abi.Pod) (bool, string) { return false, "panic: " + p.msg }

func pluginName(pl PreEnqueuePlugin) (name string) {
	defer func() {
		if recover() != nil {
			name = "PreEnqueuePanic"
		}
	}()
	return pl.Name()
}

func callPreEnqueue(pl PreEnqueuePlugin, pod *abi.Pod) (ok bool, reason, name string) {
	name = pluginName(pl)
	defer func() {
		if r := recover(); r != nil {
			ok, reason = false, fmt.Sprint("panic: ", r)
		}
	}()
	ok, reason = pl.PreEnqueue(pod)
	return ok, reason, name
}

// isBackingOff reports whether p's backoff, counted from its Timestamp, is
// still running.
func (q *PriorityQueue) isBackingOff(p *QueuedPodInfo) bool {
	d := q.backoffDuration(p)
	return d > 0 && p.Timestamp.Add(d).After(q.clock.Now())
}

// backoffDuration is initial·2^(n−1) capped at max, n being the count of
// the last kind of failure (errors while they persist, else rejections).
func (q *PriorityQueue) backoffDuration(p *QueuedPodInfo) time.Duration {
	n := p.UnschedulableCount
	if p.ConsecutiveErrorsCount > 0 {
		n = p.ConsecutiveErrorsCount
	}
	if n <= 0 {
		return 0
	}
	d := q.initialBackoff
	for i := 1; i < n; i++ {
		if d > q.maxBackoff/2 {
			return q.maxBackoff
		}
		d *= 2
	}
	return min(d, q.maxBackoff)
}

// endFlight forgets an in-flight pod and the events no remaining flight
// can need.
func (q *PriorityQueue) endFlight(uid string) {
	if _, ok := q.inFlight[uid]; !ok {
		return
	}
	delete(q.inFlight, uid)
	if len(q.inFlight) == 0 {
		clear(q.events)
		q.events = q.events[:0]
		return
	}
	oldest := q.eventSeq
	for _, f := range q.inFlight {
		oldest = min(oldest, f.seq)
	}
	i := 0
	for i < len(q.events) && q.events[i].seq <= oldest {
		i++
	}
	if i > 0 {
		n := copy(q.events, q.events[i:])
		clear(q.events[n:])
		q.events = q.events[:n]
	}
}

// FlushBackoffCompleted moves the pods whose backoff has expired to
// activeQ now, as the backoff loop would on its next tick. The simulation
// calls it after stepping its clock, so runs do not wait on tickers.
func (q *PriorityQueue) FlushBackoffCompleted() { q.flushBackoffCompleted() }

// NextBackoffExpiry returns when the first pod in backoffQ may retry, and
// false if backoffQ is empty.
func (q *PriorityQueue) NextBackoffExpiry() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.backoffQ.peek()
	if p == nil {
		return time.Time{}, false
	}
	return p.expiry, true
}
