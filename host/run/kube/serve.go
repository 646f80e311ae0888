package kube

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/reload"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	Client kubernetes.Interface
	// EventClient posts the Events (nil: Client). serve gives it a
	// clientset of its own, as kube-scheduler does, so Events have their
	// own rate limit and a backlog of them never slows a binding.
	EventClient kubernetes.Interface
	Config      *config.Configuration
	CacheDir    string // compiled modules; empty: the default
	// Runtime runs the modules whose entry names no runtime, and the
	// builtin bundles (modules.Options.Runtime); empty: the fastest the
	// binary has.
	Runtime string
	// ModuleCacheDir holds modules pulled from registries, by digest;
	// empty: oci.DefaultCacheDir.
	ModuleCacheDir string
	// ModulePollInterval, when positive, re-resolves the tags of modules
	// with pullPolicy Always this often and reloads when one moved.
	ModulePollInterval time.Duration
	Log                hclog.Logger
	// RESTConfig is the configuration Client was made with (RESTConfig
	// makes one): the eviction coordinator reads metrics.k8s.io usage
	// through it. Nil: eviction policies get no usage data.
	RESTConfig *rest.Config
	// Ready, if set, is closed once the informers have synced: the
	// replica can schedule (or, standing by, take over at once).
	Ready chan<- struct{}
	// LeaderElection, if set, makes this one of several replicas: it
	// schedules only while it holds the Lease. Nil schedules at once.
	LeaderElection *LeaderElection
	// Binder, if set, replaces binding through the pods/binding
	// subresource (Binder{Client}); tests wrap the real one to race it.
	Binder framework.Binder
	// Metrics records module loads, guest failures and scheduling
	// metrics; nil records nothing.
	Metrics *metrics.Metrics
	// ConfigPath is the file Config came from ("" for the default): with
	// Watch, a change to it or to a module file it names reloads the
	// configuration (package reload); SIGHUP always does.
	ConfigPath string
	// Watch reloads on file changes (serve --watch, on by default).
	Watch bool
	// RequireSHA256 refuses module files without a sha256 pin, at start
	// and at every reload.
	RequireSHA256 bool
	// OnReloader, if set, is given the reloader once serving starts
	// (tests trigger reloads through it).
	OnReloader func(*reload.Reloader)
	// OnSwap, if set, is called with each configuration a reload puts
	// live (the one serving starts with is Config), so what reports the
	// running configuration (/configz) follows reloads and never shows a
	// refused one.
	OnSwap func(*config.Configuration)
	// MaxBindingsInFlight bounds the bindings in flight: 0 means
	// scheduler.DefaultMaxBindingsInFlight, negative no bound.
	MaxBindingsInFlight int
	// Decisions, if set, keeps the decision records of every engine:
	// each scheduling attempt (with its preemption), eviction round,
	// vpod Schedule call and autoscaler pass (/debug/explain answers from
	// it).
	Decisions decision.Sink
	// RecordDecisions writes each attempt's decision summary to its pod's
	// decision.AnnotationKey annotation: with the binding for a placed
	// pod, in a metadata patch of its own (Recorder.AnnotateDecision)
	// for one left unplaced.
	RecordDecisions bool
	// CheckAPIServer, when set, has Serve ask the API server's discovery
	// for its version and the APIs serve calls before anything else, and
	// refuse to start on a release older than OldestKubernetes or one
	// missing an API (CheckAPIServer). The serve command sets it; unit
	// tests on client-go's fakes, whose discovery serves nothing, do not.
	CheckAPIServer bool
}

// Serve schedules the cluster's pods until ctx ends: it loads the modules,
// assembles the profiles and the eviction policies, syncs the informers,
// then runs the queue's flush loops, the cache's expiry, the status
// patcher and — once this replica leads, when leader election is on —
// the scheduling loop, the eviction coordinator and its killer, and the
// vpod schedulers' reconcilers and autoscalers. A reload swaps profiles,
// eviction policies and settings, and vpod schedulers (added, replaced,
// removed) and policies together, or none of them. It returns
// ErrLeadershipLost if the Lease is lost while ctx is still live.
func Serve(ctx context.Context, o ServeOptions) error {
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if o.LeaderElection != nil {
		if err := o.LeaderElection.Validate(); err != nil {
			return err
		}
		le := *o.LeaderElection
		if le.Identity == "" {
			le.Identity = uniqueIdentity()
		}
		o.LeaderElection = &le
	}
	if o.CheckAPIServer {
		srv, err := CheckAPIServer(ctx, o.Client.Discovery(), o.LeaderElection != nil)
		if err != nil {
			return fmt.Errorf("check the API server: %w", err)
		}
		log.Info("kube-apiserver", "version", srv.Version)
		for _, w := range srv.Warnings {
			log.Warn("kube-apiserver", "detail", w)
		}
	}
	if o.RequireSHA256 {
		if err := reload.CheckPinned(o.Config); err != nil {
			return err
		}
	}
	modOpts := modules.Options{CacheDir: o.CacheDir, OCICacheDir: o.ModuleCacheDir, Log: log, Metrics: o.Metrics, Runtime: o.Runtime}
	reg, err := modules.Load(ctx, o.Config, modOpts)
	if err != nil {
		return err
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	if o.LeaderElection != nil && o.LeaderElection.Identity != "" {
		host = o.LeaderElection.Identity
	}
	rec := NewRecorder(ctx, RecorderOptions{Client: o.Client, EventClient: o.EventClient, Instance: host, Log: log})
	var binder framework.Binder = Binder{Client: o.Client}
	if o.Binder != nil {
		binder = o.Binder
	}
	parts, err := scheduler.Assemble(ctx, scheduler.AssembleOptions{
		Config: o.Config, Registry: reg, Binder: binder, Recorder: rec,
		PreemptionAPI: PreemptionAPI{Client: o.Client, Recorder: rec}, PreemptionMetrics: o.Metrics.Preemption(),
		Clock: clock.RealClock{}, Log: log, Metrics: o.Metrics, OwnRegistry: true, MaxBindingsInFlight: maxBindings(o.MaxBindingsInFlight),
		Decisions: o.Decisions, AnnotateDecisions: o.RecordDecisions,
	})
	if err != nil {
		reg.Close(context.Background())
		return err
	}
	defer parts.Close(context.Background())
	evict, err := newEvictionParts(ctx, o, modOpts, reg, EvictionAPI{Client: o.Client, Recorder: rec},
		EvictionCluster{Client: o.Client, Cache: parts.Cache, Nodes: parts.Scheduler}, log)
	if err != nil {
		return err
	}
	defer evict.close(context.Background())
	vpods, err := newVPodParts(ctx, o, modOpts, reg, rec, log)
	if err != nil {
		return err
	}
	defer vpods.close(context.Background())
	reloader, err := reload.New(reload.Options{ConfigPath: o.ConfigPath, Parts: parts, Config: o.Config, Registry: reg,
		Modules: modOpts, RequireSHA256: o.RequireSHA256, Metrics: o.Metrics, Log: log, Eviction: evict.coord, Killer: evict.killer, VPod: vpods, PollInterval: o.ModulePollInterval,
		OnUnavailable: rec.ModuleUnavailable, OnSwap: o.OnSwap})
	if err != nil {
		return err
	}
	if err := watchCluster(ctx, o.Client, parts.Scheduler, log, rec); err != nil {
		return fmt.Errorf("watch the cluster: %w", err)
	}
	go parts.Queue.Run(ctx)
	go rec.Run(ctx)
	go parts.Cache.Run(ctx, time.Second, func(expired []*abi.Pod) {
		for _, p := range expired {
			log.Warn("binding never confirmed; assumed pod expired", "pod", p.Namespace+"/"+p.Name)
		}
	})
	go func() {
		if err := reloader.Run(ctx, o.Watch, true); err != nil {
			log.Error("configuration reloads are off", "error", err)
		}
	}()
	if o.OnReloader != nil {
		o.OnReloader(reloader)
	}
	if o.Ready != nil {
		close(o.Ready)
	}
	schedule := func(ctx context.Context) {
		evicted := make(chan struct{})
		go func() {
			defer close(evicted)
			evict.run(ctx)
		}()
		vpodsDone := make(chan struct{})
		go func() {
			defer close(vpodsDone)
			vpods.run(ctx)
		}()
		log.Info("scheduling", "profiles", len(parts.Profiles))
		parts.Scheduler.Run(ctx)
		parts.Scheduler.WaitBindings()
		<-evicted
		<-vpodsDone
	}
	if o.LeaderElection == nil {
		schedule(ctx)
		return nil
	}
	return runAsLeader(ctx, o.Client, *o.LeaderElection, log, schedule)
}

// maxBindings maps ServeOptions.MaxBindingsInFlight to the scheduler's
// (where 0 is no bound).
func maxBindings(n int) int {
	if n == 0 {
		return scheduler.DefaultMaxBindingsInFlight
	}
	return max(n, 0)
}
