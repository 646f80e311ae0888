package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// vpodParts are the vpod schedulers of one Serve: their informers run
// on every replica (so a standby takes over warm), their reconcilers and
// autoscalers only on the leader (run). Made at start, so a bad vpod
// section or a source resource the API server does not serve stops serve
// there. A reload changes their policies through group (vpod.Group);
// the schedulers themselves, their informers and controllers, are made
// at start.
type vpodParts struct {
	ctrls []*vpodController
	// group holds the schedulers with their policies and the registry
	// those run on; never nil.
	group *vpod.Group
	log   hclog.Logger
}

// vpodSpec is one scheduler as vpodParts builds it.
type vpodSpec struct {
	Settings vpod.Settings
	Sources  []VPodSource
	// Config is the scheduler as configured (defaults applied), which a
	// reload compares the next configuration's with.
	Config config.VPodSettings
}

// newVPodParts builds the configuration's vpod schedulers for Serve: a
// dynamic client from o.RESTConfig, policies on a module registry of
// their own sharing reg's compiled modules (as the eviction policies'),
// then newVPodPartsWith. Without a vpod section it returns empty parts.
func newVPodParts(ctx context.Context, o ServeOptions, modOpts modules.Options, reg *modules.Registry, rec *Recorder, log hclog.Logger) (*vpodParts, error) {
	log = log.Named("vpod")
	if !o.Config.HasVPod() {
		return &vpodParts{log: log, group: vpod.NewGroup(nil, log)}, nil
	}
	specs, err := vpodSpecsFrom(o.Config)
	if err != nil {
		return nil, err
	}
	if o.RESTConfig == nil {
		return nil, errors.New("vpod: serve needs a REST configuration (ServeOptions.RESTConfig) for the dynamic client that reads vpods")
	}
	dyn, err := dynamic.NewForConfig(o.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("vpod: dynamic client: %w", err)
	}
	modOpts.Previous = reg
	own, err := modules.Load(ctx, o.Config, modOpts)
	if err != nil {
		return nil, fmt.Errorf("vpod: %w", err)
	}
	var events record.EventRecorder
	if rec != nil {
		events = rec.recorderFor(VPodComponent)
	}
	return newVPodPartsWith(ctx, vpodPartsOptions{Client: o.Client, Dynamic: dyn, Specs: specs, Registry: own, Log: log,
		Events: events, Metrics: o.Metrics.VPod()})
}

// vpodSpecsFrom converts the configuration's vpod section (defaults
// applied) to engine settings and parsed sources. Errors name the field.
func vpodSpecsFrom(cfg *config.Configuration) ([]vpodSpec, error) {
	settings, err := cfg.VPod.Defaulted()
	if err != nil {
		return nil, fmt.Errorf("vpod: %w", err)
	}
	out := make([]vpodSpec, 0, len(settings))
	for i, s := range settings {
		spec := vpodSpec{Settings: vpod.SettingsFrom(s), Config: s}
		for j, src := range s.Sources {
			if src.Kind == config.VPodSourceKind {
				spec.Sources = append(spec.Sources, CRDVPodSource())
				continue
			}
			gvr := schema.GroupVersionResource{Group: src.Group, Version: src.Version, Resource: src.Resource}
			vs, err := NewDuckVPodSource(gvr, src.VReplicasPath, src.PlacementsPath)
			if err != nil {
				return nil, cfg.ErrorAt(fmt.Sprintf("%s.sources[%d]", config.VPodSchedulerField(i), j), "%v", err)
			}
			spec.Sources = append(spec.Sources, vs)
		}
		out = append(out, spec)
	}
	return out, nil
}

// vpodPartsOptions are newVPodPartsWith's inputs.
type vpodPartsOptions struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	Specs   []vpodSpec
	// Registry serves the policies; the parts own it (closed with them,
	// or at once when newVPodPartsWith fails).
	Registry *modules.Registry
	Log      hclog.Logger
	// Events records Events on vpods (nil: none); Metrics counts the
	// engines' policy module failures (nil: none).
	Events  record.EventRecorder
	Metrics *metrics.VPod
	// newEngine replaces vpod.New and vpod.NewPolicies (tests).
	newEngine func(s vpod.Settings, c vpod.Cluster, ev vpod.Evictor) (vpodEngine, error)
	// wrapQueue, when set, wraps each controller's queue before any
	// informer feeds it (tests: to see when an item was handled).
	wrapQueue func(workqueue.TypedRateLimitingInterface[vpodItem]) workqueue.TypedRateLimitingInterface[vpodItem]
	// adapterEvent, when set, is called after the adapter pod,
	// StatefulSet and node handlers have handled an event, whether or
	// not it queued anything (tests: to know that an event which must
	// not requeue a vpod has been seen).
	adapterEvent func()
}

// newVPodPartsWith checks that every source resource is served, binds
// each scheduler's policies, makes its cluster view, engine and
// controller, registers the informer handlers, starts the informers
// (until ctx ends) and waits for them to sync.
func newVPodPartsWith(ctx context.Context, o vpodPartsOptions) (p *vpodParts, err error) {
	p = &vpodParts{log: o.Log, group: vpod.NewGroup(o.Registry, o.Log)}
	defer func() {
		if err != nil {
			p.close(context.Background())
		}
	}()
	if err := checkVPodSpecs(o.Specs); err != nil {
		return nil, err
	}
	if err := checkServed(o.Client, o.Specs); err != nil {
		return nil, err
	}
	nodeFactory := informers.NewSharedInformerFactory(o.Client, 0)
	nodes := nodeFactory.Core().V1().Nodes()
	nsFactories := map[string]informers.SharedInformerFactory{}
	dynFactory := dynamicinformer.NewDynamicSharedInformerFactory(o.Dynamic, 0)
	route := &vpodRouter{log: o.Log}

	for _, spec := range o.Specs {
		s := spec.Settings
		log := o.Log.With("scheduler", s.Name)
		f := nsFactories[s.Namespace]
		if f == nil {
			f = informers.NewSharedInformerFactoryWithOptions(o.Client, 0, informers.WithNamespace(s.Namespace))
			nsFactories[s.Namespace] = f
		}
		c := &vpodController{name: s.Name, queue: newVPodQueue(s.Name), log: log, events: o.Events}
		if o.wrapQueue != nil {
			c.queue = o.wrapQueue(c.queue)
		}
		c.cluster = NewVPodCluster(VPodClusterOptions{Namespace: s.Namespace, StatefulSet: s.StatefulSet,
			Pods: f.Core().V1().Pods().Lister().Pods(s.Namespace), Nodes: nodes.Lister(),
			StatefulSets: f.Apps().V1().StatefulSets().Lister().StatefulSets(s.Namespace),
			Scales:       o.Client.AppsV1().StatefulSets(s.Namespace), VPods: c.VPods})
		for _, src := range spec.Sources {
			st := &vpodSourceState{VPodSource: src, client: o.Dynamic.Resource(src.Resource), vpods: map[vpod.Key]sourcedVPod{}}
			if src.CRD {
				st.owns = route.add(s.Name, s.Namespace, s.StatefulSet)
			}
			c.sources = append(c.sources, st)
		}
		if o.newEngine != nil {
			c.engine, err = o.newEngine(s, c.cluster, c.evict)
		} else {
			c.engine, err = p.newEngine(ctx, o.Registry, spec, c.cluster, c.evict, o.Metrics, log)
		}
		if err != nil {
			return nil, err
		}
		p.ctrls = append(p.ctrls, c)
		for i, src := range spec.Sources {
			if _, err := dynFactory.ForResource(src.Resource).Informer().AddEventHandler(c.sourceHandler(i)); err != nil {
				return nil, fmt.Errorf("vpod scheduler %s: %s informer: %w", s.Name, resourceName(src.Resource), err)
			}
		}
		if err := watchAdapters(f, s, c, o.adapterEvent); err != nil {
			return nil, fmt.Errorf("vpod scheduler %s: %w", s.Name, err)
		}
		log.Info("vpod scheduler ready; it schedules while this replica leads", "statefulset", s.Namespace+"/"+s.StatefulSet,
			"capacity", s.Capacity, "strategy", s.Strategy, "sources", vpodSourceNames(spec.Sources))
	}
	if route.used() {
		if _, err := dynFactory.ForResource(VPodCRD).Informer().AddEventHandler(route.logIgnored()); err != nil {
			return nil, fmt.Errorf("vpod: VPod informer: %w", err)
		}
	}
	if _, err := nodes.Informer().AddEventHandler(notifying(changeHandler(nodeChanged, func() {
		for _, c := range p.ctrls {
			c.enqueueAll()
		}
	}), o.adapterEvent)); err != nil {
		return nil, fmt.Errorf("vpod: node informer: %w", err)
	}
	nodeFactory.Start(ctx.Done())
	dynFactory.Start(ctx.Done())
	for _, f := range nsFactories {
		f.Start(ctx.Done())
	}
	if err := waitSynced(ctx, nodeFactory); err != nil {
		return nil, fmt.Errorf("vpod: %w", err)
	}
	for _, f := range nsFactories {
		if err := waitSynced(ctx, f); err != nil {
			return nil, fmt.Errorf("vpod: %w", err)
		}
	}
	for gvr, ok := range dynFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("vpod: informer cache for %s did not sync", resourceName(gvr))
		}
	}
	return p, nil
}

// newEngine binds a scheduler's policies to the registry and makes its
// engine; p's group keeps both, to close the policies and to reload
// them.
func (p *vpodParts) newEngine(ctx context.Context, reg *modules.Registry, spec vpodSpec, c vpod.Cluster, ev vpod.Evictor, m *metrics.VPod, log hclog.Logger) (vpodEngine, error) {
	s := spec.Settings
	pol, err := vpod.NewPolicies(ctx, reg, s.SchedPolicy, s.DeschedPolicy, log)
	if err != nil {
		return nil, fmt.Errorf("vpod scheduler %s: policies: %w", s.Name, err)
	}
	e, err := vpod.New(s, c, pol, vpod.Options{Log: log, Evictor: ev, Metrics: m})
	if err != nil {
		pol.Close(ctx)
		return nil, fmt.Errorf("vpod scheduler %s: %w", s.Name, err)
	}
	p.group.Add(spec.Config, e, pol)
	return e, nil
}

// checkVPodSpecs refuses what the configuration checks cannot see: two
// schedulers of one StatefulSet, and a duck-typed resource that two
// schedulers (which would fight over its placements) or one scheduler
// twice take as a source.
func checkVPodSpecs(specs []vpodSpec) error {
	sts := map[string]string{}
	duck := map[schema.GroupVersionResource]string{}
	for _, spec := range specs {
		s := spec.Settings
		k := s.Namespace + "/" + s.StatefulSet
		if other, ok := sts[k]; ok {
			return fmt.Errorf("vpod: schedulers %s and %s both name statefulset %s", other, s.Name, k)
		}
		sts[k] = s.Name
		crd := false
		for _, src := range spec.Sources {
			if src.CRD {
				if crd {
					return fmt.Errorf("vpod scheduler %s: the VPod source is listed twice", s.Name)
				}
				crd = true
				continue
			}
			if other, ok := duck[src.Resource]; ok {
				return fmt.Errorf("vpod: resource %s is a source of schedulers %s and %s; a resource's objects belong to one scheduler", resourceName(src.Resource), other, s.Name)
			}
			duck[src.Resource] = s.Name
		}
	}
	return nil
}

// checkServed asks discovery whether each source resource is served, so
// a missing CRD is a clear error at start rather than an informer that
// never syncs.
func checkServed(client kubernetes.Interface, specs []vpodSpec) error {
	checked := map[schema.GroupVersionResource]bool{}
	for _, spec := range specs {
		for _, src := range spec.Sources {
			gvr := src.Resource
			if checked[gvr] {
				continue
			}
			checked[gvr] = true
			list, err := client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
			served := false
			if err == nil {
				for _, r := range list.APIResources {
					served = served || r.Name == gvr.Resource
				}
			}
			if !served {
				hint := "install its CustomResourceDefinition"
				if src.CRD {
					hint = "install deploy/vpod-crd.yaml"
				}
				why := "not served"
				if err != nil {
					why = err.Error()
				}
				return fmt.Errorf("vpod scheduler %s: source %s: the API server does not serve it (%s); %s", spec.Settings.Name, resourceName(gvr), why, hint)
			}
		}
	}
	return nil
}

func vpodSourceNames(srcs []VPodSource) string {
	names := make([]string, len(srcs))
	for i, s := range srcs {
		names[i] = s.String()
	}
	return strings.Join(names, "; ")
}

// run runs every scheduler's reconciler and autoscaler until ctx ends
// (the leader's part).
func (p *vpodParts) run(ctx context.Context) {
	if p == nil || len(p.ctrls) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, c := range p.ctrls {
		wg.Go(func() { c.run(ctx) })
	}
	wg.Wait()
}

// close stops the queues and releases the policies and their registry.
func (p *vpodParts) close(ctx context.Context) {
	if p == nil {
		return
	}
	for _, c := range p.ctrls {
		c.queue.ShutDown()
	}
	p.group.Close(ctx)
}
