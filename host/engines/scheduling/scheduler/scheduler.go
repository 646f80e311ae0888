// Package scheduler is the host's scheduling loop: it pops a pod from the
// shared queue, runs its profile's cycle against a fresh snapshot of the
// shared cache, assumes the pod on the chosen node, and binds it in a
// goroutine of its own, so the next cycle starts while the binding's API
// calls are in flight. Options.MaxBindingsInFlight bounds those goroutines
// (bindings.go). Cluster changes (from informers or the simulation)
// come in through the On* methods, which update the cache and retry the
// parked pods the change may help.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// Recorder is told what happened to pods, to turn into Events and pod
// conditions (or the simulation's report).
type Recorder interface {
	// Scheduled: the pod was bound to node.
	Scheduled(pod *abi.Pod, profile, node string)
	// FailedScheduling: the cycle failed; reason is "Unschedulable" or
	// "SchedulerError", message is kube-scheduler's text.
	FailedScheduling(pod *abi.Pod, profile, reason, message string)
	// Nominated: PostFilter nominated the pod to node.
	Nominated(pod *abi.Pod, profile, node string)
}

// DecisionAnnotator is a Recorder that can write a decision summary to
// a pod outside a binding: AnnotateDecisions hands it the summary of
// every attempt that did not bind (unschedulable, nominated, failed).
// It must not block the scheduling cycle.
type DecisionAnnotator interface {
	AnnotateDecision(pod *abi.Pod, summary string)
}

// Failure reasons, as kube-scheduler's Event and condition reasons.
const (
	ReasonUnschedulable  = "Unschedulable"
	ReasonSchedulerError = "SchedulerError"
)

// ErrPodGone is wrapped by a Binder when the pod no longer exists (or was
// bound by someone else): the scheduler then drops it instead of retrying.
var ErrPodGone = errors.New("pod no longer exists or is already bound")

// Options configure a Scheduler.
type Options struct {
	Profiles []*framework.Profile
	Cache    *cache.Cache
	Queue    *queue.PriorityQueue
	Recorder Recorder
	// Rand breaks score ties; seed it for reproducible runs.
	Rand *rand.Rand
	Log  hclog.Logger
	// Metrics records scheduling attempts per profile, the queue's
	// pending pods, and (in a sample of cycles) the Wasm plugins'
	// durations: New instruments the profiles and the queue with it. Nil
	// records nothing.
	Metrics *metrics.Metrics
	// Shadows are shadow profiles, by the name of the live profile they
	// shadow (config: profiles[].shadow).
	Shadows map[string]*framework.Profile
	// Release, if set, closes what the initial profiles own; it runs
	// once they are replaced (SwapProfiles) or at Close, after the
	// cycles and bindings in flight on them end.
	Release func()
	// MaxBindingsInFlight bounds the binding cycles running at once:
	// with that many in flight, the loop waits for one to end before it
	// pops the next pod (bindings.go says why). 0 or less: no bound.
	MaxBindingsInFlight int
	// Decisions, if set, receives a decision.Scheduling for every cycle
	// it wants (decision.Sink.Want); nil records none and costs nothing.
	Decisions decision.Sink
	// AnnotateDecisions writes each recorded decision's summary to its
	// pod's decision.AnnotationKey annotation: with the binding when the
	// cycle chose a node (and the Binder can: framework.AnnotatingBinder),
	// through the Recorder when it did not (when the Recorder is a
	// DecisionAnnotator). It records the decisions of every pod, with or
	// without Decisions.
	AnnotateDecisions bool
}

// profile is a profile with its attempt metrics resolved, and its
// shadow's runner when it has one.
type profile struct {
	*framework.Profile
	attempts *metrics.ProfileMetrics
	shadow   *shadowRunner
}

// Scheduler runs scheduling cycles for every profile over one cache and
// one queue.
type Scheduler struct {
	cache    *cache.Cache
	queue    *queue.PriorityQueue
	recorder Recorder
	metrics  *metrics.Metrics
	rng      *rand.Rand
	log      hclog.Logger

	classes   classStore
	snap      *snapshot.Snapshot
	nextStart int
	bindings  sync.WaitGroup
	// slots bounds the bindings in flight (bindings.go).
	slots *bindingSlots

	// set is the profiles serving now (profileset.go); setMu guards the
	// use counts of every set, so a set is never released while a cycle
	// or binding that acquired it runs.
	set       atomic.Pointer[profileSet]
	setMu     sync.Mutex
	closeOnce sync.Once
	// lastPod is the pod of the last cycle: a reload's canary runs a
	// real pod when there is one.
	lastPod atomic.Pointer[abi.Pod]
	// shadowDiffs are the latest differing shadow decisions.
	shadowDiffs diffRing
	// decisions and annotate: Options.Decisions, AnnotateDecisions.
	decisions decision.Sink
	annotate  bool
}

// New returns a scheduler; the profiles must have distinct names.
func New(opts Options) (*Scheduler, error) {
	s := &Scheduler{
		cache:     opts.Cache,
		queue:     opts.Queue,
		recorder:  opts.Recorder,
		metrics:   opts.Metrics,
		rng:       opts.Rand,
		log:       opts.Log,
		snap:      snapshot.New(),
		slots:     newBindingSlots(opts.MaxBindingsInFlight),
		decisions: opts.Decisions,
		annotate:  opts.AnnotateDecisions,
	}
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	ps, err := s.newProfileSet(opts.Profiles, opts.Shadows, opts.Release)
	if err != nil {
		return nil, err
	}
	s.set.Store(ps)
	opts.Metrics.SetShadowSource(func() any { return s.ShadowDiffs() })
	if q := opts.Queue; q != nil {
		opts.Metrics.SetPendingPodsSource(func() metrics.PendingPods {
			c := q.PendingByQueue()
			return metrics.PendingPods{Active: c.Active, Backoff: c.Backoff, Unschedulable: c.Unschedulable, Gated: c.Gated}
		})
	}
	return s, nil
}

// Profile returns the profile for a scheduler name, or nil.
func (s *Scheduler) Profile(name string) *framework.Profile {
	if p := s.set.Load().byName[name]; p != nil {
		return p.Profile
	}
	return nil
}

// Run schedules pods until ctx ends or the queue closes.
func (s *Scheduler) Run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := s.ScheduleOne(ctx); err != nil {
			if errors.Is(err, queue.ErrClosed) || ctx.Err() != nil {
				return
			}
			s.log.Error("scheduling cycle", "error", err)
		}
	}
}

// WaitBindings waits for the bindings in flight.
func (s *Scheduler) WaitBindings() { s.bindings.Wait() }

// ScheduleOne pops one pod and runs its scheduling cycle; the binding
// cycle continues in a goroutine. With MaxBindingsInFlight bindings
// running it first waits for one to end (no pod is popped, so none is
// assumed, while it waits). It returns an error only when no pod could be
// popped: ctx ended, or the queue or the scheduler was closed
// (queue.ErrClosed).
func (s *Scheduler) ScheduleOne(ctx context.Context) error {
	if err := s.slots.take(ctx); err != nil {
		return err
	}
	qp, err := s.queue.Pop(ctx)
	if err != nil {
		s.slots.give()
		return err
	}
	pod := qp.Pod
	ps := s.acquire()
	prof := ps.byName[pod.SchedulerName]
	if prof == nil {
		// Only pods of known profiles are queued; one that gets here had
		// its schedulerName changed under us. Leave it alone.
		s.done(ps)
		s.slots.give()
		s.queue.Done(pod.UID)
		return nil
	}
	s.lastPod.Store(pod)
	if !s.scheduleOn(ctx, ps, prof, qp) {
		s.done(ps)
		s.slots.give()
	}
	return nil
}

// scheduleOn runs pod's scheduling cycle on prof, a profile of ps. It
// reports whether a binding goroutine took over ps and the binding slot
// (and will give both back).
func (s *Scheduler) scheduleOn(ctx context.Context, ps *profileSet, prof *profile, qp *queue.QueuedPodInfo) (binding bool) {
	pod := qp.Pod
	var start time.Time
	if s.metrics != nil {
		start = time.Now()
	}
	log := &podLog{base: s.log, pod: pod, profile: prof.Name}
	s.cache.UpdateSnapshot(s.snap)
	state := framework.NewCycleState()
	state.SetRecordPluginMetrics(s.metrics.SamplePluginMetrics())
	walkStart := s.nextStart
	rec := s.explainer(pod)
	if rec != nil {
		state.Explain(rec)
	}
	res, err := prof.Schedule(ctx, state, pod, s.snap, walkStart, s.queue, s.rng)
	if rec != nil {
		s.recordDecision(state, pod, rec, err)
	}
	if prof.shadow != nil {
		var fit *framework.FitError
		switch {
		case err == nil:
			prof.shadow.offer(shadowJob{pod: pod, start: walkStart, liveNode: res.Node, liveScore: res.Score})
		case errors.As(err, &fit):
			prof.shadow.offer(shadowJob{pod: pod, start: walkStart})
		}
	}
	if err != nil {
		s.handleFailure(prof, qp, err, start, log)
		return false
	}
	if n := s.snap.NumNodes(); n > 0 {
		s.nextStart = (s.nextStart + res.Processed) % n
	}
	assumed := *pod
	assumed.NodeName = res.Node
	assumed.NominatedNodeName = ""
	if err := s.cache.AssumePod(&assumed); err != nil {
		s.handleFailure(prof, qp, err, start, log)
		return false
	}
	s.queue.DeleteNominatedPodIfExists(pod)
	if st := prof.RunReserve(ctx, state, &assumed, res.Node); !st.IsSuccess() {
		prof.RunUnreserve(ctx, state, &assumed, res.Node)
		s.forget(&assumed, log)
		s.handleFailure(prof, qp, fmt.Errorf("running Reserve plugin %q: %w", st.Plugin, st.AsError()), start, log)
		return false
	}
	if st := prof.RunPermit(ctx, state, &assumed, res.Node); !st.IsSuccess() {
		prof.RunUnreserve(ctx, state, &assumed, res.Node)
		s.forget(&assumed, log)
		s.handleFailure(prof, qp, permitError(st), start, log)
		return false
	}
	if log.base.IsDebug() {
		log.get().Debug("assumed", "node", res.Node, "evaluated", res.EvaluatedNodes, "feasible", res.FeasibleNodes)
	}
	s.bindings.Add(1)
	go func() {
		// WaitBindings returns once the slot and the set are given back.
		defer s.bindings.Done()
		defer s.done(ps)
		defer s.slots.give()
		s.bind(ctx, prof, state, qp, &assumed, res.Node, start, log)
	}()
	return true
}

// podLog is the logger of one pod's cycle and binding: the scheduler's,
// with the pod and its profile as fields. It is made on first use: at the
// default level most cycles log nothing, and the fields cost a string and
// a logger per cycle.
type podLog struct {
	base    hclog.Logger
	pod     *abi.Pod
	profile string
	l       hclog.Logger
}

// get returns the logger, making it the first time.
func (p *podLog) get() hclog.Logger {
	if p.l == nil {
		p.l = p.base.With("pod", p.pod.Namespace+"/"+p.pod.Name, "profile", p.profile)
	}
	return p.l
}

func permitError(st *framework.Status) error {
	if st.IsRejected() {
		return &framework.FitError{Diagnosis: framework.Diagnosis{PreFilterMsg: st.Message(),
			UnschedulablePlugins: map[string]struct{}{st.Plugin: {}}}}
	}
	return fmt.Errorf("running Permit plugin %q: %w", st.Plugin, st.AsError())
}

// bind is the binding cycle: PreBind, Bind, then PostBind; any failure
// releases the assumed pod and sends it back to the queue. The attempt,
// begun at start, ends here: scheduled, or an error (as kube-scheduler
// counts a failed binding, a pod deleted meanwhile included).
func (s *Scheduler) bind(ctx context.Context, prof *profile, state *framework.CycleState, qp *queue.QueuedPodInfo, assumed *abi.Pod, node string, start time.Time, log *podLog) {
	st := prof.RunPreBind(ctx, state, assumed, node)
	if st.IsSuccess() {
		st = prof.RunBind(ctx, state, assumed, node)
	}
	if !st.IsSuccess() {
		prof.RunUnreserve(ctx, state, assumed, node)
		s.forget(assumed, log)
		// The assumed pod's resources are free again.
		s.queue.MoveAllToActiveOrBackoffQueue(queue.AssignedPodDelete, nil)
		if errors.Is(st.Err, ErrPodGone) {
			log.get().Info("pod gone before binding; dropping it", "error", st.Message())
			s.queue.Done(qp.Pod.UID)
			s.attempted(prof, metrics.Error, start)
			return
		}
		s.handleFailure(prof, qp, fmt.Errorf("binding rejected: %w", st.AsError()), start, log)
		return
	}
	s.attempted(prof, metrics.Scheduled, start)
	s.cache.FinishBinding(assumed)
	s.queue.Done(qp.Pod.UID)
	prof.RunPostBind(ctx, state, assumed, node)
	if log.base.IsDebug() {
		log.get().Debug("bound", "node", node)
	}
	if s.recorder != nil {
		s.recorder.Scheduled(assumed, prof.Name, node)
	}
}

func (s *Scheduler) forget(pod *abi.Pod, log *podLog) {
	if err := s.cache.ForgetPod(pod); err != nil {
		log.get().Warn("forget assumed pod", "error", err)
	}
}

// attempted records a scheduling attempt begun at start (zero without
// metrics).
func (s *Scheduler) attempted(prof *profile, r metrics.Result, start time.Time) {
	if prof.attempts != nil {
		prof.attempts.Attempt(r, time.Since(start))
	}
}

// handleFailure requeues a pod after a failed cycle and reports why. An
// unschedulable pod waits for an event that may help (the plugins that
// rejected it say which); an error backs off and retries. It ends the
// attempt begun at start.
func (s *Scheduler) handleFailure(prof *profile, qp *queue.QueuedPodInfo, err error, start time.Time, log *podLog) {
	pod := qp.Pod
	reason, isError := ReasonSchedulerError, true
	var rejectors queue.PluginSet
	var fit *framework.FitError
	if errors.As(err, &fit) {
		reason, isError = ReasonUnschedulable, false
		names := make([]string, 0, len(fit.Diagnosis.UnschedulablePlugins))
		for n := range fit.Diagnosis.UnschedulablePlugins {
			names = append(names, n)
		}
		rejectors = queue.NewPluginSet(names...)
	}
	var nominated *framework.NominatedError
	if errors.As(err, &nominated) && !nominated.Recorded {
		s.queue.AddNominatedPod(pod, nominated.Node)
		if s.recorder != nil {
			s.recorder.Nominated(pod, prof.Name, nominated.Node)
		}
	}
	if isError {
		s.attempted(prof, metrics.Error, start)
	} else {
		s.attempted(prof, metrics.Unschedulable, start)
	}
	msg := framework.FailureMessage(err)
	if isError {
		log.get().Warn("scheduling failed", "error", msg)
	} else if log.base.IsDebug() {
		log.get().Debug("unschedulable", "message", msg)
	}
	if qerr := s.queue.AddUnschedulableIfNotPresent(qp, rejectors, isError); qerr != nil {
		log.get().Warn("requeue", "error", qerr)
	}
	if s.recorder != nil {
		s.recorder.FailedScheduling(pod, prof.Name, reason, msg)
	}
}

// explainer returns a record for pod's cycle to fill when its decision
// is wanted (by the sink, or for the pod's annotation), else nil.
func (s *Scheduler) explainer(pod *abi.Pod) *decision.Scheduling {
	if !s.annotate && (s.decisions == nil || !s.decisions.Want(decision.KindScheduling, pod.Namespace+"/"+pod.Name)) {
		return nil
	}
	return decision.NewScheduling(decision.Limits{})
}

// recordDecision hands a finished record of pod's cycle to the sink and
// its summary to the pod: for a chosen node among the annotations the
// binding sets, otherwise to the Recorder (DecisionAnnotator).
func (s *Scheduler) recordDecision(state *framework.CycleState, pod *abi.Pod, rec *decision.Scheduling, err error) {
	if s.decisions != nil && s.decisions.Want(decision.KindScheduling, rec.Pod) {
		s.decisions.Add(&decision.Record{Kind: decision.KindScheduling, Time: rec.Time, Key: rec.Pod, Scheduling: rec})
	}
	if !s.annotate {
		return
	}
	if err == nil {
		state.SetBindAnnotations(map[string]string{decision.AnnotationKey: rec.Summarize(decision.MaxSummaryBytes)})
		return
	}
	if a, ok := s.recorder.(DecisionAnnotator); ok {
		a.AnnotateDecision(pod, rec.Summarize(decision.MaxSummaryBytes))
	}
}
