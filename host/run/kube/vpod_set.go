package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// vpodParts are the vpod schedulers of one Serve, each a vpodUnit that
// starts and stops on its own. Their informers run on every replica (so
// a standby takes over warm), their reconcilers and autoscalers only on
// the leader (run); a scheduler a reload adds while this replica leads
// runs at once. A reload stages the next vpod section (Stage): kept
// schedulers get their policies rebound, new or changed ones are built
// next to the running ones and swapped in, removed ones stop, all at
// the reload's Commit or none. The node informer is shared by the units
// and lives as long as Serve.
type vpodParts struct {
	o   vpodPartsOptions
	log hclog.Logger
	// ctx is Serve's: the node informer runs until it ends.
	ctx   context.Context
	nodes coreinformers.NodeInformer
	// nodeFactory starts the node informer with the first unit.
	nodeFactory informers.SharedInformerFactory

	mu    sync.Mutex // guards what follows, and each unit's running state
	units []*vpodUnit
	// reg serves the policies of the units built from it and those
	// rebound onto it; nil with no vpod scheduler.
	reg *modules.Registry
	// leading, set while run runs, is the context units run under.
	leading context.Context
	running sync.WaitGroup
	closed  bool
}

// vpodUnit is one vpod scheduler in serve: its controller (queue,
// sources, cluster view, engine), the informers feeding them (stopped
// with the unit) and its policies.
type vpodUnit struct {
	// name is the scheduler's; spec is as configured (replaced by the
	// commit of a reload that rebinds its policies, read by the reloads,
	// which are serialised).
	name string
	spec vpodSpec
	ctrl *vpodController
	// sched is ctrl.engine when it is the real engine (nil with a test
	// engine): a reload rebinds and canaries its policies.
	sched *vpod.Scheduler
	pols  *vpod.Policies // guarded by vpodParts.mu after the unit is in a set
	log   hclog.Logger
	// route decides which VPod objects are this scheduler's; a reload
	// that changes the set replaces it.
	route *atomic.Pointer[vpodRouter]
	// crd is the VPod informer and crdSource its source index, when a
	// source is the VPod CRD (-1 otherwise).
	crd       cache.SharedIndexInformer
	crdSource int

	stopInformers chan struct{}
	stopOnce      sync.Once
	// cancel and done: the leader's loops, while they run.
	cancel context.CancelFunc
	done   chan struct{}
}

// newVPodPartsWith checks the specs as a set and that every source
// resource is served, then builds each scheduler's unit (policies bound
// on o.Registry, cluster view, engine, controller, informers synced).
// Serve's ctx bounds the informers' waits at start.
func newVPodPartsWith(ctx context.Context, o vpodPartsOptions) (p *vpodParts, err error) {
	p = &vpodParts{o: o, log: o.Log, ctx: ctx, reg: o.Registry}
	if p.log == nil {
		p.log = hclog.NewNullLogger()
		p.o.Log = p.log
	}
	defer func() {
		if err != nil {
			p.close(context.Background())
		}
	}()
	if o.Client != nil {
		p.nodeFactory = informers.NewSharedInformerFactory(o.Client, 0)
		p.nodes = p.nodeFactory.Core().V1().Nodes()
		if _, err := p.nodes.Informer().AddEventHandler(notifying(changeHandler(nodeChanged, p.enqueueAll), o.adapterEvent)); err != nil {
			return nil, fmt.Errorf("vpod: node informer: %w", err)
		}
	}
	if len(o.Specs) == 0 {
		return p, nil
	}
	if err := checkVPodSpecs(o.Specs); err != nil {
		return nil, err
	}
	if o.Dynamic == nil {
		return nil, errNoDynamic
	}
	if err := checkServed(o.Client, o.Specs); err != nil {
		return nil, err
	}
	route := newVPodRouter(o.Specs, p.log)
	for _, spec := range o.Specs {
		u, err := p.buildUnit(ctx, spec, o.Registry, route)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.units = append(p.units, u)
		p.mu.Unlock()
		u.log.Info("vpod scheduler ready; it schedules while this replica leads", "statefulset", spec.Settings.Namespace+"/"+spec.Settings.StatefulSet,
			"capacity", spec.Settings.Capacity, "strategy", spec.Settings.Strategy, "sources", vpodSourceNames(spec.Sources))
	}
	return p, nil
}

// newVPodRouter routes VPod objects among the schedulers of specs that
// take the VPod CRD.
func newVPodRouter(specs []vpodSpec, log hclog.Logger) *vpodRouter {
	r := &vpodRouter{log: log}
	for _, spec := range specs {
		for _, src := range spec.Sources {
			if src.CRD {
				r.add(spec.Settings.Name, spec.Settings.Namespace, spec.Settings.StatefulSet)
			}
		}
	}
	return r
}

// buildUnit makes one scheduler: its policies on reg, cluster view,
// engine and controller, its informers (namespace's pods and
// StatefulSets, its sources) started and synced, and the shared node
// informer started. It is not running; until ctx ends or the informers
// have synced, it waits. On error nothing of it is left.
func (p *vpodParts) buildUnit(ctx context.Context, spec vpodSpec, reg *modules.Registry, route *vpodRouter) (_ *vpodUnit, err error) {
	s := spec.Settings
	log := p.log.With("scheduler", s.Name)
	u := &vpodUnit{name: s.Name, spec: spec, log: log, route: &atomic.Pointer[vpodRouter]{}, crdSource: -1, stopInformers: make(chan struct{})}
	u.route.Store(route)
	c := &vpodController{name: s.Name, queue: newVPodQueue(s.Name), log: log, events: p.o.Events}
	if p.o.wrapQueue != nil {
		c.queue = p.o.wrapQueue(c.queue)
	}
	u.ctrl = c
	defer func() {
		if err != nil {
			u.close(context.Background())
		}
	}()
	f := informers.NewSharedInformerFactoryWithOptions(p.o.Client, 0, informers.WithNamespace(s.Namespace))
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(p.o.Dynamic, 0)
	c.cluster = NewVPodCluster(VPodClusterOptions{Namespace: s.Namespace, StatefulSet: s.StatefulSet,
		Pods: f.Core().V1().Pods().Lister().Pods(s.Namespace), Nodes: p.nodes.Lister(),
		StatefulSets: f.Apps().V1().StatefulSets().Lister().StatefulSets(s.Namespace),
		Scales:       p.o.Client.AppsV1().StatefulSets(s.Namespace), VPods: c.VPods})
	for i, src := range spec.Sources {
		st := &vpodSourceState{VPodSource: src, client: p.o.Dynamic.Resource(src.Resource), vpods: map[vpod.Key]sourcedVPod{}}
		if src.CRD {
			st.owns = u.owns
			u.crdSource = i
		}
		c.sources = append(c.sources, st)
	}
	if p.o.newEngine != nil {
		if c.engine, err = p.o.newEngine(s, c.cluster, c.evict); err != nil {
			return nil, err
		}
	} else {
		if u.pols, err = vpod.NewPolicies(ctx, reg, s.SchedPolicy, s.DeschedPolicy, log); err != nil {
			return nil, fmt.Errorf("vpod scheduler %s: policies: %w", s.Name, err)
		}
		if u.sched, err = vpod.New(s, c.cluster, u.pols, vpod.Options{Log: log, Evictor: c.evict, Metrics: p.o.Metrics, Decisions: p.o.Decisions}); err != nil {
			return nil, fmt.Errorf("vpod scheduler %s: %w", s.Name, err)
		}
		c.engine = u.sched
	}
	var synced []cache.InformerSynced
	for i, src := range spec.Sources {
		inf := dynFactory.ForResource(src.Resource).Informer()
		h, err := inf.AddEventHandler(c.sourceHandler(i))
		if err != nil {
			return nil, fmt.Errorf("vpod scheduler %s: %s informer: %w", s.Name, resourceName(src.Resource), err)
		}
		synced = append(synced, h.HasSynced)
		if src.CRD {
			u.crd = inf
			if _, err := inf.AddEventHandler(u.logIgnored()); err != nil {
				return nil, fmt.Errorf("vpod scheduler %s: VPod informer: %w", s.Name, err)
			}
		}
	}
	if err := watchAdapters(f, s, c, p.o.adapterEvent); err != nil {
		return nil, fmt.Errorf("vpod scheduler %s: %w", s.Name, err)
	}
	p.nodeFactory.Start(p.ctx.Done())
	f.Start(u.stopInformers)
	dynFactory.Start(u.stopInformers)
	if err := waitSynced(ctx, p.nodeFactory); err != nil {
		return nil, fmt.Errorf("vpod scheduler %s: %w", s.Name, err)
	}
	if err := waitSynced(ctx, f); err != nil {
		return nil, fmt.Errorf("vpod scheduler %s: %w", s.Name, err)
	}
	for gvr, ok := range dynFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("vpod scheduler %s: informer cache for %s did not sync", s.Name, resourceName(gvr))
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, fmt.Errorf("vpod scheduler %s: its sources' handlers did not sync", s.Name)
	}
	return u, nil
}

// owns reports whether a VPod object is this scheduler's (its router
// sends it here).
func (u *vpodUnit) owns(obj *unstructured.Unstructured) bool {
	s, err := u.route.Load().route(obj)
	return err == nil && s == u.name
}

// logIgnored logs the VPod versions no scheduler takes, once: only the
// router's first scheduler logs.
func (u *vpodUnit) logIgnored() cache.ResourceEventHandler {
	check := func(obj any) {
		r := u.route.Load()
		if x, ok := obj.(*unstructured.Unstructured); ok && r.first() == u.name {
			r.logIgnored(x)
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, obj any) { check(obj) }}
}

// reroute applies a new router to the VPods the unit's informer holds:
// VPods no longer its own are forgotten, VPods newly its own are added;
// the others stay as the informer's events left them.
func (u *vpodUnit) reroute() {
	if u.crd == nil {
		return
	}
	i, c := u.crdSource, u.ctrl
	h := c.sourceHandler(i)
	for _, obj := range u.crd.GetStore().List() {
		x, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		key := vpod.Key{Namespace: x.GetNamespace(), Name: x.GetName()}
		c.mu.Lock()
		_, have := c.sources[i].vpods[key]
		c.mu.Unlock()
		switch mine := u.owns(x); {
		case !mine && have:
			c.forget(i, key)
		case mine && !have:
			h.OnAdd(x, false)
		}
	}
}

// startLocked runs the unit's reconciler and autoscaler under the
// leader's context, when this replica leads and they are not running.
// p.mu is held.
func (p *vpodParts) startLocked(u *vpodUnit) {
	if p.leading == nil || u.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(p.leading)
	u.cancel, u.done = cancel, make(chan struct{})
	p.running.Add(1)
	go func() {
		defer p.running.Done()
		defer close(u.done)
		u.ctrl.run(ctx)
	}()
}

// close ends the unit's loops (waiting for them), its queue and its
// informers, and closes its policies. p.mu is held (or the unit is in
// no set).
func (u *vpodUnit) close(ctx context.Context) {
	if u.cancel != nil {
		u.cancel()
		<-u.done
		u.cancel = nil
	}
	u.ctrl.queue.ShutDown()
	u.stopOnce.Do(func() { close(u.stopInformers) })
	u.pols.Close(ctx)
	u.pols = nil
}

// enqueueAll queues every vpod of every scheduler (a node changed).
func (p *vpodParts) enqueueAll() {
	p.mu.Lock()
	units := slices.Clone(p.units)
	p.mu.Unlock()
	for _, u := range units {
		u.ctrl.enqueueAll()
	}
}

// run runs every scheduler's reconciler and autoscaler until ctx ends
// (the leader's part); a scheduler a reload adds meanwhile runs at once.
func (p *vpodParts) run(ctx context.Context) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.leading = ctx
	for _, u := range p.units {
		p.startLocked(u)
	}
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.leading = nil
	p.mu.Unlock()
	p.running.Wait()
	p.mu.Lock()
	for _, u := range p.units {
		u.cancel = nil
	}
	p.mu.Unlock()
}

// close stops every scheduler and releases the policies and their
// registry; a reload staged after it is refused, one committed after it
// discarded.
func (p *vpodParts) close(ctx context.Context) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.units {
		u.close(ctx)
	}
	p.units, p.closed = nil, true
	if p.reg != nil {
		p.reg.Close(ctx)
		p.reg = nil
	}
}

// ctrls are the running schedulers' controllers (tests).
func (p *vpodParts) ctrls() []*vpodController {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*vpodController, len(p.units))
	for i, u := range p.units {
		out[i] = u.ctrl
	}
	return out
}

// sameVPodScheduler reports whether two settings of a scheduler differ
// in their policies at most (a rebind, not a rebuild).
func sameVPodScheduler(a, b config.VPodSettings) bool {
	a.SchedPolicy, a.DeschedPolicy, a.SchedPolicyFile, a.DeschedPolicyFile = nil, nil, "", ""
	b.SchedPolicy, b.DeschedPolicy, b.SchedPolicyFile, b.DeschedPolicyFile = nil, nil, "", ""
	return reflect.DeepEqual(a, b)
}

// vpodStaged is a reload's next set of vpod schedulers: per scheduler
// of the next configuration either a running unit kept with its
// policies rebound, or a unit built for it (new, or replacing the
// running one of its name); and the running units it removes.
type vpodStaged struct {
	p     *vpodParts
	reg   *modules.Registry
	route *vpodRouter
	next  []stagedUnit
	// removed are running units no scheduler of the next set is named
	// as.
	removed []*vpodUnit
}

type stagedUnit struct {
	unit *vpodUnit
	// built: unit is new (replacing replaces, if set); else unit is
	// running and kept, with pols its next policies.
	built    bool
	replaces *vpodUnit
	pols     *vpod.Policies
	spec     vpodSpec
}

var _ vpod.Staging = (*vpodStaged)(nil)

// Stage builds cfg's vpod section off the hot path, diffed by scheduler
// name against the running set: a scheduler whose settings other than
// its policies are unchanged keeps running with its policies rebound
// onto a registry of their own (opts as modules.Load takes them; pools
// of unchanged modules shared); a new or changed one is built in full
// (sources checked as served, policies bound, informers synced within
// SyncTimeout) next to the running ones; a running one the next set
// does not name is removed at Commit. A rename is a removal and an
// addition. Nothing running changes; an error names the field.
func (p *vpodParts) Stage(ctx context.Context, cfg *config.Configuration, opts modules.Options) (vpod.Staging, error) {
	specs, err := vpodSpecsFrom(cfg)
	if err != nil {
		return nil, err
	}
	if err := checkVPodSpecs(specs); err != nil {
		return nil, err
	}
	p.mu.Lock()
	closed, running := p.closed, slices.Clone(p.units)
	p.mu.Unlock()
	if closed {
		return nil, errors.New("vpod: the schedulers are shut down")
	}
	if len(specs) > 0 && (p.o.Dynamic == nil || p.o.Client == nil) {
		return nil, errNoDynamic
	}
	st := &vpodStaged{p: p, route: newVPodRouter(specs, p.log), next: make([]stagedUnit, len(specs))}
	if len(specs) > 0 {
		if st.reg, err = modules.Load(ctx, cfg, opts); err != nil {
			return nil, fmt.Errorf("vpod: %w", err)
		}
	}
	byName := map[string]*vpodUnit{}
	for _, u := range running {
		byName[u.name] = u
	}
	timeout := p.o.SyncTimeout
	if timeout <= 0 {
		timeout = DefaultVPodSyncTimeout
	}
	for i, spec := range specs {
		s := spec.Settings
		f := config.VPodSchedulerField(i)
		old := byName[s.Name]
		delete(byName, s.Name)
		if old != nil && sameVPodScheduler(old.spec.Config, spec.Config) {
			su := stagedUnit{unit: old, spec: spec}
			if old.sched != nil && s.Strategy == vpod.StrategyPolicy {
				// Under the lock: close must not close the running
				// policies while their pools are being shared.
				p.mu.Lock()
				if p.closed {
					err = errors.New("vpod: the schedulers are shut down")
				} else {
					su.pols, err = vpod.RebindPolicies(ctx, st.reg, s.SchedPolicy, s.DeschedPolicy, old.log, old.pols)
				}
				p.mu.Unlock()
				if err != nil {
					st.Discard(ctx)
					return nil, fmt.Errorf("%s (vpod scheduler %s): policies: %w", f, s.Name, err)
				}
			}
			st.next[i] = su
			continue
		}
		if err := checkSpecServed(p.o.Client, i, spec); err != nil {
			st.Discard(ctx)
			return nil, err
		}
		bctx, cancel := context.WithTimeout(ctx, timeout)
		u, err := p.buildUnit(bctx, spec, st.reg, st.route)
		cancel()
		if err != nil {
			st.Discard(ctx)
			if bctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("%w (its informers did not sync within %v)", err, timeout)
			}
			return nil, fmt.Errorf("%s (vpod scheduler %s): %w", f, s.Name, err)
		}
		st.next[i] = stagedUnit{unit: u, built: true, replaces: old, spec: spec}
	}
	for _, u := range running {
		if _, gone := byName[u.name]; gone {
			st.removed = append(st.removed, u)
		}
	}
	return st, nil
}

// Canary runs a placement step of every scheduler of the next set on
// the current state, nothing committed: a kept one with its next
// policies, a built one (whose informers have synced) with its own.
// The error names the scheduler.
func (st *vpodStaged) Canary(ctx context.Context) error {
	for i, su := range st.next {
		sched, pols := su.unit.sched, su.pols
		if su.built {
			pols = su.unit.pols
		}
		if sched == nil || pols == nil {
			continue
		}
		if err := sched.Canary(ctx, pols); err != nil {
			return fmt.Errorf("%s (vpod scheduler %s): canary: %w", config.VPodSchedulerField(i), su.spec.Settings.Name, err)
		}
	}
	return nil
}

// Commit swaps the next set in: removed and replaced schedulers stop
// (their loops end, queues shut down, informers stop, policies close),
// kept ones take their next policies (between two of their Schedule
// calls), built ones start (running at once while this replica leads),
// and the replaced registry closes. It cannot fail; after close it only
// closes what Stage built.
func (st *vpodStaged) Commit(ctx context.Context) {
	if st.p == nil {
		return
	}
	p := st.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		st.discardLocked(ctx)
		return
	}
	for _, u := range st.removed {
		u.close(ctx)
		u.log.Info("vpod scheduler stopped: the configuration no longer names it")
	}
	units := make([]*vpodUnit, len(st.next))
	for i, su := range st.next {
		u := su.unit
		units[i] = u
		if su.built {
			if su.replaces != nil {
				su.replaces.close(ctx)
			}
			continue
		}
		if su.pols != nil || u.pols != nil {
			u.sched.SetPolicies(su.pols)
			// SetPolicies waited for a Schedule in progress: nothing
			// runs on the old policies now.
			u.pols.Close(ctx)
			u.pols = su.pols
		}
		u.spec = su.spec
		u.route.Store(st.route)
	}
	p.units = units
	if p.reg != nil {
		p.reg.Close(ctx)
	}
	p.reg = st.reg
	for _, su := range st.next {
		u, s := su.unit, su.spec.Settings
		if !su.built {
			u.reroute()
			continue
		}
		p.startLocked(u)
		what := "vpod scheduler started"
		if su.replaces != nil {
			what = "vpod scheduler replaced: its successor starts from the placements in the vpods"
		}
		u.log.Info(what, "statefulset", s.Namespace+"/"+s.StatefulSet, "capacity", s.Capacity, "strategy", s.Strategy,
			"sources", vpodSourceNames(su.spec.Sources), "running", u.cancel != nil)
	}
	st.p, st.next, st.removed, st.reg = nil, nil, nil, nil
}

// Discard closes what Stage built; nothing running changes.
func (st *vpodStaged) Discard(ctx context.Context) {
	if st.p == nil {
		return
	}
	st.discardLocked(ctx)
}

func (st *vpodStaged) discardLocked(ctx context.Context) {
	for _, su := range st.next {
		switch {
		case su.unit == nil:
		case su.built:
			su.unit.close(ctx)
		default:
			su.pols.Close(ctx)
		}
	}
	if st.reg != nil {
		st.reg.Close(ctx)
	}
	st.p, st.next, st.removed, st.reg = nil, nil, nil, nil
}
