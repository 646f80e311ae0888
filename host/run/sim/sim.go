// Package sim is the embedded default: it runs the real host — queue,
// cache, profiles, scheduling and binding cycles, the Wasm modules —
// against an in-memory cluster built from ordinary Kubernetes manifests,
// and reports where every pod went and why the others did not.
//
// Time is simulated: when only backing-off pods are left, the clock jumps
// to the next backoff expiry, so a run takes as long as its cycles, and
// the same input and seed give the same placements.
package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/internal/convert"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/memapi"
)

// Options of a simulation run.
type Options struct {
	// Config holds the profiles; nil means config.Default().
	Config *config.Configuration
	// Seed makes score tie-breaks reproducible.
	Seed uint64
	// NativeBuiltin runs the builtin bundle as a native twin (benchmarks).
	NativeBuiltin bool
	// CacheDir for compiled modules; empty uses the default.
	CacheDir string
	// Runtime runs the modules whose entry names no runtime, and the
	// builtin bundles (modules.Options.Runtime); empty: the fastest the
	// binary has.
	Runtime string
	// MaxCycles stops a run that does not settle (default 100 per pod).
	MaxCycles int
	// APILatency is added to every write to the in-memory API (bind,
	// victim condition, delete, evict), to see asynchronous preemption at
	// work; APIFailures, if set, fails calls (see memapi.Cluster.Inject).
	APILatency  time.Duration
	APIFailures func(op memapi.Op, pod *abi.Pod) error
	// PreemptionMetrics receives preemption's metrics (nil: none).
	PreemptionMetrics preemption.Metrics
	Log               hclog.Logger
	// Metrics records what the run did, as on a real cluster (attempt
	// durations are wall-clock time, not the simulated clock); nil
	// records nothing.
	Metrics *metrics.Metrics
	// Backends serve configured modules in-process, by module name (see
	// modules.Options.Backends): tests of guests that misbehave.
	Backends map[string]guest.Backend
	// EvictionRounds overrides the configuration's
	// eviction.simulateRounds: how many eviction rounds Run runs after
	// scheduling settles (when the configuration has eviction policies).
	EvictionRounds *int
	// Registry, if set, is the compiled modules of Config, used instead
	// of loading them (CacheDir, NativeBuiltin and Backends are then
	// unused). The run does not close it: a caller that runs again on
	// the same modules (simulate --watch, loading each run's registry
	// with modules.Options.Previous) keeps unchanged modules compiled.
	Registry *modules.Registry
	// Explain picks the pods (by namespace/name) whose decisions the
	// report carries: their scheduling attempts with the preemptions they
	// ran (Report.Explanations) and the eviction rounds that name them
	// (Report.EvictionExplanations); and the vpods (by "vpod:" and
	// namespace/name, decision.VPodKey) whose Schedule calls and
	// autoscaler passes it carries (Report.VPodExplanations,
	// Report.AutoscaleExplanations). nil explains none, at no cost.
	Explain func(key string) bool
	// Decisions, if set and Explain is nil, receives every decision
	// record, as serve's ring does (benchmarks measure its cost).
	Decisions decision.Sink
	// Progress, if set, is told after every scheduling cycle how far the
	// run is, so that a long simulation can show it on a terminal. It
	// runs on the scheduling loop: it must return quickly.
	Progress func(Progress)
}

// Progress is how far a run is: cycles run, pods bound by them, and the
// pods it schedules in all.
type Progress struct {
	Cycles, Scheduled, Pods int
}

// MaxExplanations bounds the decision records a run keeps: the latest
// that many scheduling attempts of the pods Options.Explain picks.
const MaxExplanations = 20000

// Pod outcomes in a Report.
const (
	StatusScheduled      = "Scheduled"
	StatusBound          = "Bound"   // bound before the run (spec.nodeName set)
	StatusNotOurs        = "NotOurs" // no profile has its schedulerName: left alone
	StatusUnschedulable  = scheduler.ReasonUnschedulable
	StatusSchedulerError = scheduler.ReasonSchedulerError
	StatusPreempted      = "Preempted" // removed as a preemption victim
	// StatusSchedulingGated: a pending pod with spec.schedulingGates,
	// never tried (kube-scheduler's SchedulingGates keeps it out of its
	// active queue; serve does not queue it until its last gate goes).
	StatusSchedulingGated = "SchedulingGated"
)

// gatedMessage is the text of kube-scheduler's PodScheduled condition
// for a gated pod.
const gatedMessage = "Scheduling is blocked due to non-empty scheduling gates"

// PodResult is what happened to one pod.
type PodResult struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Profile   string `json:"profile,omitempty"`
	Node      string `json:"node,omitempty"`
	Status    string `json:"status"`
	Message   string `json:"message,omitempty"`
	Attempts  int    `json:"attempts"`
	// NominatedNode is where preemption last nominated the pod.
	NominatedNode string `json:"nominatedNode,omitempty"`
}

// Preemption is one victim removed for a preemptor.
type Preemption struct {
	Preemptor string `json:"preemptor"` // namespace/name
	Victim    string `json:"victim"`
	Node      string `json:"node"`
	// How: "delete", or "evict" through the Eviction API (KEP-3280).
	How string `json:"how"`
}

// Report is the outcome of a run, pods in input order.
type Report struct {
	Pods   []PodResult `json:"pods"`
	Cycles int         `json:"cycles"`
	// Preemptions lists every victim removed, in order.
	Preemptions []Preemption `json:"preemptions,omitempty"`
	// Eviction is what the eviction rounds did (nil without eviction
	// policies).
	Eviction *EvictionReport `json:"eviction,omitempty"`
	// VPods is what the vpod schedulers did (nil without a vpod section).
	VPods *VPodReport `json:"vpods,omitempty"`
	// Nodes are the cluster's nodes as the run left them, by name: zone,
	// requests against allocatable, pods (Run sets them; Settle does not).
	Nodes []NodeResult `json:"nodes,omitempty"`
	// Explanations are the decision records of the pods Options.Explain
	// picked, one per scheduling attempt, oldest first (at most
	// MaxExplanations; ExplanationsDropped counts older ones let go).
	Explanations        []*decision.Scheduling `json:"explanations,omitempty"`
	ExplanationsDropped int                    `json:"explanationsDropped,omitempty"`
	// EvictionExplanations are the records of the eviction rounds that
	// name a pod Options.Explain picks, oldest first.
	EvictionExplanations []*decision.Eviction `json:"evictionExplanations,omitempty"`
	// VPodExplanations are the records of the vpod Schedule calls of the
	// vpods Options.Explain picks; AutoscaleExplanations those of the
	// autoscaler passes that counted one of them pending.
	VPodExplanations      []*decision.VPod          `json:"vpodExplanations,omitempty"`
	AutoscaleExplanations []*decision.VPodAutoscale `json:"autoscaleExplanations,omitempty"`
	// Timeline is every call the scheduler made to the in-memory API
	// except bindings: nominations, victim conditions, deletions,
	// evictions, events.
	Timeline []memapi.Entry `json:"timeline,omitempty"`
}

// Pod returns the result for namespace/name, or nil.
func (r *Report) Pod(namespace, name string) *PodResult {
	for i := range r.Pods {
		if r.Pods[i].Namespace == namespace && r.Pods[i].Name == name {
			return &r.Pods[i]
		}
	}
	return nil
}

// Run simulates scheduling objs until nothing more can happen.
func Run(ctx context.Context, objs *Objects, opts Options) (*Report, error) {
	env, err := Start(ctx, objs, opts)
	if err != nil {
		return nil, err
	}
	defer env.Close(ctx)
	rep, err := env.Settle(ctx)
	if err != nil {
		return rep, err
	}
	var vp *VPodReport
	if env.cfg.HasVPod() {
		if vp, err = env.ScheduleVPods(ctx); err != nil {
			return nil, err
		}
		rep = env.report(rep.Cycles)
		rep.VPods = vp
	}
	if env.eviction == nil {
		rep.Nodes = env.nodes()
		return rep, nil
	}
	rounds := env.cfg.Eviction.Defaulted().SimulateRounds
	if opts.EvictionRounds != nil {
		rounds = *opts.EvictionRounds
	}
	ev, err := env.Evict(ctx, rounds)
	if err != nil {
		return nil, err
	}
	rep = env.report(rep.Cycles)
	rep.Eviction = ev
	rep.VPods = vp
	rep.Nodes = env.nodes()
	return rep, nil
}

// Env is a running simulation: the scheduler and the in-memory cluster it
// binds into. Benchmarks drive it directly.
type Env struct {
	Scheduler *scheduler.Scheduler
	Queue     *queue.PriorityQueue
	Cache     *cache.Cache
	// Preemption is DefaultPreemption (Wait waits for its goroutines).
	Preemption *preemption.Plugin
	clock      *testingclock.FakeClock
	registry   *modules.Registry
	ownsReg    bool // registry was loaded by Start, so Close closes it
	parts      *scheduler.Parts
	cluster    *memapi.Cluster
	rec        *recorder
	// decisions keeps the records Options.Explain asks for (nil: none).
	decisions   *decision.Ring
	decisionsTo decision.Sink // Options.Decisions
	explain     func(string) bool
	order       []string // pod UIDs in input order
	objs        *Objects
	maxCycles   int
	cfg         *config.Configuration
	log         hclog.Logger
	metrics     *metrics.Metrics
	// eviction is the eviction coordinator, when the configuration has
	// eviction policies.
	eviction *evictionEnv
	progress func(Progress) // Options.Progress
	// seed is Options.Seed, for the vpod engines' tie-breaking.
	seed uint64
	// vpodPolicies are the vpod schedulers' policies by scheduler name,
	// bound at Start (so that a policy the modules refuse fails the
	// simulation before anything runs) until ScheduleVPods takes them.
	vpodPolicies map[string]*vpod.Policies
}

// Start builds the host for objs and feeds it the cluster, without
// scheduling anything yet.
func Start(ctx context.Context, objs *Objects, opts Options) (*Env, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Default()
	}
	if len(cfg.Profiles) == 0 {
		// An eviction- or vpod-only configuration schedules nothing
		// itself: in a cluster, the cluster's kube-scheduler places the
		// replacements of evicted pods and the adapter pods a vpod
		// autoscaler adds. The simulation stands in for it with the
		// default profile, which places pods as kube-scheduler's
		// defaults do (test/parity).
		standIn := *cfg
		standIn.Profiles = config.Default().Profiles
		cfg = &standIn
	}
	log := opts.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	nodes, pods, err := admit(objs)
	if err != nil {
		return nil, err
	}
	pdbs, err := admitPDBs(objs)
	if err != nil {
		return nil, err
	}
	reg, owns := opts.Registry, false
	if reg == nil {
		reg, err = modules.Load(ctx, cfg, modules.Options{CacheDir: opts.CacheDir, NativeBuiltin: opts.NativeBuiltin, Log: log, Backends: opts.Backends,
			Metrics: opts.Metrics, Runtime: opts.Runtime})
		if err != nil {
			return nil, err
		}
		owns = true
	}
	env := &Env{
		cfg:      cfg,
		log:      log,
		metrics:  opts.Metrics,
		clock:    testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		registry: reg,
		ownsReg:  owns,
		seed:     opts.Seed,
		cluster:  memapi.New(nil),
		rec:      &recorder{results: map[string]*PodResult{}},
	}
	env.decisionsTo = opts.Decisions
	env.progress = opts.Progress
	if opts.Explain != nil {
		env.decisions = decision.NewRing(MaxExplanations)
		env.explain = opts.Explain
		env.decisions.Match = func(kind, key string) bool {
			switch kind {
			case decision.KindScheduling:
				return opts.Explain(key)
			case decision.KindVPod:
				// An autoscaler pass is kept when it counted an
				// explained vpod pending (report).
				return strings.HasPrefix(key, "autoscaler/") || opts.Explain(key)
			}
			// Which pods a round names is known once it ran: report
			// keeps the rounds that name an explained pod.
			return kind == decision.KindEviction
		}
	}
	env.cluster.SetLatency(opts.APILatency)
	if opts.APIFailures != nil {
		env.cluster.Inject(opts.APIFailures)
	}
	parts, err := scheduler.Assemble(ctx, scheduler.AssembleOptions{
		Config: cfg, Registry: reg, Binder: env.cluster, Recorder: env.rec, Clock: env.clock,
		PreemptionAPI: env.cluster, PreemptionMetrics: opts.PreemptionMetrics,
		Rand: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)), Log: log, Metrics: opts.Metrics,
		Decisions: env.sink(),
	})
	if err != nil {
		if owns {
			reg.Close(ctx)
		}
		return nil, err
	}
	env.parts = parts
	env.objs = objs
	env.Scheduler, env.Queue, env.Cache = parts.Scheduler, parts.Queue, parts.Cache
	env.Preemption = parts.Preemption
	env.cluster.SetWatcher(env.Scheduler)

	for _, ns := range namespaces(objs, pods) {
		env.Scheduler.OnNamespace(ns.Name, ns.Labels)
	}
	for _, pc := range objs.PriorityClasses {
		g, _ := convert.DisruptionGuard(pc) // admit checked it
		env.Scheduler.OnPriorityClass(pc.Name, g)
	}
	for _, p := range pdbs {
		env.cluster.SetPDB(p)
		env.Scheduler.OnPDB(p)
	}
	for _, n := range nodes {
		env.Scheduler.OnNodeAdd(n)
	}
	env.addPods(pods, gatedPods(objs.Pods))
	env.maxCycles = opts.MaxCycles
	if env.maxCycles <= 0 {
		env.maxCycles = 100 * (len(pods) + 1)
	}
	if err := env.startEviction(ctx); err != nil {
		env.Close(ctx)
		return nil, err
	}
	if err := env.bindVPodPolicies(ctx); err != nil {
		env.Close(ctx)
		return nil, err
	}
	return env, nil
}

// AddPods admits more pods into a running simulation (with the
// PriorityClasses and Nodes it started with) and hands them to the
// scheduler, as pods created later would be. Tests and benchmarks use it
// to make pods arrive in a given order.
func (e *Env) AddPods(pods ...*corev1.Pod) error {
	_, aps, err := admit(&Objects{Nodes: e.objs.Nodes, PriorityClasses: e.objs.PriorityClasses, Pods: pods})
	if err != nil {
		return err
	}
	e.addPods(aps, gatedPods(pods))
	return nil
}

// gatedPods are the UIDs (as admit gives them) of the pending pods that
// still have scheduling gates.
func gatedPods(pods []*corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if p.Spec.NodeName != "" || len(p.Spec.SchedulingGates) == 0 {
			continue
		}
		uid := string(p.UID)
		if uid == "" {
			ns := p.Namespace
			if ns == "" {
				ns = corev1.NamespaceDefault
			}
			uid = "uid-" + ns + "/" + p.Name
		}
		out[uid] = true
	}
	return out
}

// addPods adds pods to the cluster and hands them to the scheduler,
// except the gated ones (by UID): they wait outside the queue, as serve
// keeps them, and no event here removes a gate.
func (e *Env) addPods(pods []*abi.Pod, gated map[string]bool) {
	env := e
	for _, p := range pods {
		env.cluster.AddPod(p)
		env.order = append(env.order, p.UID)
		r := &PodResult{Namespace: p.Namespace, Name: p.Name}
		switch {
		case p.NodeName != "":
			r.Status, r.Node = StatusBound, p.NodeName
		case gated[p.UID] && env.Scheduler.Responsible(p):
			r.Profile, r.Status, r.Message = p.SchedulerName, StatusSchedulingGated, gatedMessage
		case env.Scheduler.Responsible(p):
			r.Profile, r.Status = p.SchedulerName, "Pending"
		default:
			r.Status = StatusNotOurs
			r.Message = fmt.Sprintf("no profile has schedulerName %q; left alone", p.SchedulerName)
		}
		env.rec.mu.Lock()
		env.rec.results[p.UID] = r
		env.rec.mu.Unlock()
		if r.Status != StatusSchedulingGated {
			env.Scheduler.OnPodAdd(p)
		}
	}
}

// Settle schedules until no pod can move any more: the active queue is
// empty, no binding is in flight and no pod is backing off (the clock
// jumps ahead to each backoff's end). Only bindings change this cluster,
// so once two rounds of backoff retries bind nothing, retrying more could
// not help and the run ends.
func (e *Env) Settle(ctx context.Context) (*Report, error) {
	cycles, idleRounds := 0, 0
	bindsAtRound := e.rec.binds() + e.deletions()
	for cycles < e.maxCycles {
		active, backoff, _ := e.Queue.PendingPods()
		switch {
		case active > 0:
			if err := e.Scheduler.ScheduleOne(ctx); err != nil {
				return nil, err
			}
			e.Scheduler.WaitBindings()
			e.waitPreemptions()
			cycles++
			if e.progress != nil {
				e.progress(Progress{Cycles: cycles, Scheduled: e.rec.binds(), Pods: len(e.order)})
			}
			continue
		case backoff > 0:
			if b := e.rec.binds() + e.deletions(); b == bindsAtRound {
				if idleRounds++; idleRounds > 2 {
					return e.report(cycles), nil
				}
			} else {
				idleRounds, bindsAtRound = 0, b
			}
			if at, ok := e.Queue.NextBackoffExpiry(); ok && at.After(e.clock.Now()) {
				e.clock.SetTime(at)
			}
			e.Queue.FlushBackoffCompleted()
			continue
		}
		return e.report(cycles), nil
	}
	return e.report(cycles), fmt.Errorf("%w within %d cycles", ErrNotSettled, e.maxCycles)
}

// sink is where the scheduler sends decision records: nil without
// Options.Explain.
func (e *Env) sink() decision.Sink {
	if e.decisions == nil {
		return e.decisionsTo
	}
	return e.decisions
}

// waitPreemptions lets asynchronous preemptions finish, so runs are
// deterministic: the next cycle sees their outcome.
func (e *Env) waitPreemptions() {
	if e.Preemption != nil {
		e.Preemption.Wait()
	}
}

// deletions counts the pods preemption removed.
func (e *Env) deletions() int {
	n := 0
	for _, t := range e.cluster.Timeline() {
		if (t.Op == memapi.OpDelete || t.Op == memapi.OpEvict) && t.Err == "" {
			n++
		}
	}
	return n
}

// Cluster is the in-memory API the run writes to.
func (e *Env) Cluster() *memapi.Cluster { return e.cluster }

func (e *Env) report(cycles int) *Report {
	rep := &Report{Cycles: cycles}
	if e.decisions != nil {
		for _, r := range e.decisions.All() {
			switch {
			case r.Scheduling != nil:
				rep.Explanations = append(rep.Explanations, r.Scheduling)
			case r.Eviction != nil:
				if slices.ContainsFunc(r.Eviction.Named(), e.explain) {
					rep.EvictionExplanations = append(rep.EvictionExplanations, r.Eviction)
				}
			case r.VPod != nil:
				rep.VPodExplanations = append(rep.VPodExplanations, r.VPod)
			case r.Autoscale != nil:
				if slices.ContainsFunc(r.Autoscale.PendingVPods, func(v string) bool { return e.explain(decision.VPodKey(v)) }) {
					rep.AutoscaleExplanations = append(rep.AutoscaleExplanations, r.Autoscale)
				}
			}
		}
		_, _, _, rep.ExplanationsDropped = e.decisions.Stats()
	}
	for _, uid := range e.order {
		rep.Pods = append(rep.Pods, *e.rec.get(uid))
	}
	// Each removal is followed by a Preempted event naming the preemptor.
	preemptor := map[string]string{} // victim -> preemptor
	const mark = "Normal " + preemption.ReasonPreempted + ": Preempted by pod "
	for _, t := range e.cluster.Timeline() {
		if t.Op == memapi.OpEvent && strings.HasPrefix(t.Detail, mark) {
			rest := strings.TrimPrefix(t.Detail, mark)
			if i := strings.Index(rest, " on node "); i > 0 {
				preemptor[t.Pod] = rest[:i]
			}
		}
	}
	result := func(key string) *PodResult {
		for i := range rep.Pods {
			if rep.Pods[i].Namespace+"/"+rep.Pods[i].Name == key {
				return &rep.Pods[i]
			}
		}
		return nil
	}
	for _, t := range e.cluster.Timeline() {
		if t.Op == memapi.OpBind {
			continue
		}
		rep.Timeline = append(rep.Timeline, t)
		switch {
		case t.Op == memapi.OpNominate && t.Err == "":
			if r := result(t.Pod); r != nil {
				r.NominatedNode = t.Node
			}
		case (t.Op == memapi.OpDelete || t.Op == memapi.OpEvict) && t.Err == "":
			rep.Preemptions = append(rep.Preemptions, Preemption{Preemptor: preemptor[t.Pod], Victim: t.Pod, Node: t.Node, How: string(t.Op)})
			if r := result(t.Pod); r != nil {
				r.Status, r.Message = StatusPreempted, "preempted by "+preemptor[t.Pod]+" on "+t.Node
			}
		}
	}
	return rep
}

// Close releases the profiles, and the modules unless the caller gave
// them (Options.Registry).
func (e *Env) Close(ctx context.Context) {
	if e.eviction != nil {
		e.eviction.close(ctx)
	}
	for name, p := range e.vpodPolicies {
		p.Close(ctx)
		delete(e.vpodPolicies, name)
	}
	if e.parts != nil {
		e.parts.Close(ctx)
	}
	if e.ownsReg {
		e.registry.Close(ctx)
	}
}

// admit converts the objects as the API server would admit them: pods
// get a namespace, a UID and their priority from their PriorityClass.
func admit(objs *Objects) ([]*abi.Node, []*abi.Pod, error) {
	classes := map[string]int32{}
	for name, v := range systemClasses {
		classes[name] = v
	}
	policies := map[string]*corev1.PreemptionPolicy{}
	guards := map[string]*int32{}
	var globalDefault string
	for _, pc := range objs.PriorityClasses {
		g, err := convert.DisruptionGuard(pc)
		if err != nil {
			return nil, nil, fmt.Errorf("PriorityClass %s: %w", pc.Name, err)
		}
		guards[pc.Name] = g
		classes[pc.Name] = pc.Value
		policies[pc.Name] = pc.PreemptionPolicy
		if pc.GlobalDefault {
			if globalDefault != "" {
				return nil, nil, fmt.Errorf("PriorityClass %s: globalDefault is already set by %s", pc.Name, globalDefault)
			}
			globalDefault = pc.Name
		}
	}
	var nodes []*abi.Node
	seenNodes := map[string]bool{}
	for _, n := range objs.Nodes {
		if seenNodes[n.Name] {
			return nil, nil, fmt.Errorf("Node %s: defined twice", n.Name)
		}
		seenNodes[n.Name] = true
		an, err := convert.Node(n)
		if err != nil {
			return nil, nil, fmt.Errorf("Node %s: %w", n.Name, err)
		}
		nodes = append(nodes, an)
	}
	var pods []*abi.Pod
	seenPods := map[string]bool{}
	for _, p := range objs.Pods {
		p = p.DeepCopy()
		if p.Namespace == "" {
			p.Namespace = corev1.NamespaceDefault
		}
		key := p.Namespace + "/" + p.Name
		if seenPods[key] {
			return nil, nil, fmt.Errorf("Pod %s: defined twice", key)
		}
		seenPods[key] = true
		if convert.Finished(p) {
			continue // kube-scheduler never sees it: it holds nothing on its node
		}
		if p.UID == "" {
			p.UID = ktypes.UID("uid-" + key)
		}
		if p.Spec.Priority == nil {
			class := p.Spec.PriorityClassName
			if class == "" {
				class = globalDefault
			}
			var prio int32
			if class != "" {
				v, ok := classes[class]
				if !ok {
					return nil, nil, fmt.Errorf("Pod %s: spec.priorityClassName: no PriorityClass %q", key, class)
				}
				prio = v
				if p.Spec.PreemptionPolicy == nil {
					p.Spec.PreemptionPolicy = policies[class]
				}
			}
			p.Spec.Priority = &prio
			if p.Spec.PriorityClassName == "" {
				p.Spec.PriorityClassName = class
			}
		}
		if p.Spec.NodeName != "" && !seenNodes[p.Spec.NodeName] {
			return nil, nil, fmt.Errorf("Pod %s: spec.nodeName: no Node %q", key, p.Spec.NodeName)
		}
		ap, err := convert.Pod(p)
		if err != nil {
			return nil, nil, fmt.Errorf("Pod %s: %w", key, err)
		}
		ap.ControllerSelector = convert.ControllerSelector(p, convert.Controllers{Services: objs.Services, ReplicaSets: objs.ReplicaSets, StatefulSets: objs.StatefulSets})
		ap.DisruptionGuard = guards[p.Spec.PriorityClassName]
		pods = append(pods, ap)
	}
	return nodes, pods, nil
}

// admitPDBs converts the PodDisruptionBudgets. The simulation has no
// disruption controller, so a budget's status is taken as written: give
// status.disruptionsAllowed in the manifest (it defaults to 0, which
// protects every pod the budget selects).
func admitPDBs(objs *Objects) ([]*abi.PDB, error) {
	var out []*abi.PDB
	for _, p := range objs.PDBs {
		p = p.DeepCopy()
		if p.Namespace == "" {
			p.Namespace = corev1.NamespaceDefault
		}
		ap, err := convert.PDB(p)
		if err != nil {
			return nil, fmt.Errorf("PodDisruptionBudget %s/%s: %w", p.Namespace, p.Name, err)
		}
		out = append(out, ap)
	}
	return out, nil
}

// recorder keeps each pod's latest outcome.
type recorder struct {
	mu      sync.Mutex
	results map[string]*PodResult
	bound   int
	boundIn map[string]int // bindings per namespace
}

// boundInNamespace counts the bindings of pods of a namespace.
func (r *recorder) boundInNamespace(ns string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.boundIn[ns]
}

// binds counts the bindings so far.
func (r *recorder) binds() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bound
}

func (r *recorder) get(uid string) *PodResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.results[uid]
}

func (r *recorder) Scheduled(pod *abi.Pod, profile, node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bound++
	if r.boundIn == nil {
		r.boundIn = map[string]int{}
	}
	r.boundIn[pod.Namespace]++
	if res := r.results[pod.UID]; res != nil {
		res.Status, res.Node, res.Message = StatusScheduled, node, ""
		res.Attempts++
	}
}

func (r *recorder) FailedScheduling(pod *abi.Pod, profile, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res := r.results[pod.UID]; res != nil {
		res.Status, res.Message = reason, message
		res.Attempts++
	}
}

func (r *recorder) Nominated(pod *abi.Pod, profile, node string) {}

// setStatus records an outcome decided outside a scheduling cycle (an
// eviction).
func (r *recorder) setStatus(uid, status, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if res := r.results[uid]; res != nil {
		res.Status, res.Message = status, message
	}
}

// ErrNotSettled is returned when a run hits MaxCycles.
var ErrNotSettled = errors.New("simulation did not settle")

// Report is the outcome so far (cycles not counted), for callers that
// drive the scheduler themselves.
func (e *Env) Report() *Report { return e.report(0) }
