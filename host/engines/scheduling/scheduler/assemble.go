package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/utils/clock"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// Parts are what Assemble builds: the scheduler and the cache, queue and
// profiles it runs on. Close releases the profiles' instance pools.
type Parts struct {
	Scheduler *Scheduler
	Queue     *queue.PriorityQueue
	Cache     *cache.Cache
	// Profiles are the profiles assembled first; after a reload the
	// scheduler's Profiles are the ones serving.
	Profiles []*framework.Profile
	// Preemption is DefaultPreemption (nil without a PreemptionAPI); its
	// Wait waits for asynchronous preemptions.
	Preemption *preemption.Plugin

	// host are the host plugins (binder, queue sort, preemption) the
	// profiles were built with; a reload builds its profiles with the
	// same ones, so queue gates and preemptions in flight stay one.
	host framework.HostPlugins
}

// Close closes the queue and releases the serving profiles (with the
// registry they were built on, when the scheduler owns it).
func (p *Parts) Close(ctx context.Context) {
	if p.Queue != nil {
		p.Queue.Close()
	}
	if p.Scheduler != nil {
		p.Scheduler.Close()
		return
	}
	for _, pr := range p.Profiles {
		pr.Close(ctx)
	}
}

// BuildProfiles builds every profile of cfg against reg with the host
// plugins of the running scheduler, sharing the pools of the serving
// profiles (by name) where module, args and size are unchanged. It does
// not swap them in (Scheduler.SwapProfiles does). On error nothing is
// left open.
func (p *Parts) BuildProfiles(ctx context.Context, cfg *config.Configuration, reg *modules.Registry) (*Built, error) {
	return buildProfiles(ctx, cfg, reg, p.host, p.Scheduler)
}

// Built are the profiles of a configuration and their shadows.
type Built struct {
	Profiles []*framework.Profile
	// Shadows by the name of the profile they shadow.
	Shadows map[string]*framework.Profile
}

// All lists the profiles and the shadows.
func (b *Built) All() []*framework.Profile {
	all := append([]*framework.Profile(nil), b.Profiles...)
	for _, sh := range b.Shadows {
		all = append(all, sh)
	}
	return all
}

// Close closes every profile and shadow.
func (b *Built) Close(ctx context.Context) {
	for _, p := range b.All() {
		p.Close(ctx)
	}
}

// buildProfiles builds cfg's profiles and shadows, sharing running's
// pools (nil: a first build).
func buildProfiles(ctx context.Context, cfg *config.Configuration, reg *modules.Registry, host framework.HostPlugins, running *Scheduler) (*Built, error) {
	b := &Built{Shadows: map[string]*framework.Profile{}}
	for i := range cfg.Profiles {
		name := cfg.Profiles[i].SchedulerName
		var prev, prevShadow *framework.Profile
		if running != nil {
			prev, prevShadow = running.Profile(name), running.Shadow(name)
		}
		prof, err := framework.RebuildProfile(ctx, cfg, i, reg, host, prev)
		if err != nil {
			b.Close(ctx)
			return nil, fmt.Errorf("config: %w", err)
		}
		b.Profiles = append(b.Profiles, prof)
		sh, err := framework.BuildShadow(ctx, cfg, i, reg, host, prevShadow)
		if err != nil {
			b.Close(ctx)
			return nil, fmt.Errorf("config: %w", err)
		}
		if sh != nil {
			b.Shadows[name] = sh
		}
	}
	return b, nil
}

// AssembleOptions are the environment a scheduler is assembled in.
type AssembleOptions struct {
	Config   *config.Configuration
	Registry *modules.Registry
	// Binder makes bindings real (the API or the simulation).
	Binder   framework.Binder
	Recorder Recorder
	// PreemptionAPI makes preemption's API calls; nil leaves the
	// DefaultPreemption plugin out (profiles then cannot preempt).
	PreemptionAPI preemption.API
	// PreemptionMetrics records preemption (nil: nothing).
	PreemptionMetrics preemption.Metrics
	Clock             clock.WithTicker
	Rand              *rand.Rand
	Log               hclog.Logger
	// Metrics records the scheduler's metrics (see Options.Metrics). Load
	// the Registry with the same value (modules.Options.Metrics) so the
	// guests' traps and deadlines land in it too. Nil records nothing.
	Metrics *metrics.Metrics
	// OwnRegistry hands Registry to the scheduler: it is closed with the
	// profiles built on it, when a reload has replaced them and they are
	// drained, or at Close.
	OwnRegistry bool
	// MaxBindingsInFlight bounds the bindings in flight (see
	// Options.MaxBindingsInFlight; serve uses DefaultMaxBindingsInFlight).
	// 0: no bound.
	MaxBindingsInFlight int
	// Decisions and AnnotateDecisions: see Options.
	Decisions         decision.Sink
	AnnotateDecisions bool
}

// Assemble builds every profile of the configuration against the modules,
// one queue (with each profile's gates and the plugins' event interest)
// and one cache, and the scheduler over them: the same for the
// simulation and for a real cluster.
func Assemble(ctx context.Context, o AssembleOptions) (*Parts, error) {
	parts := &Parts{}
	qopts := queue.Options{
		Clock:        o.Clock,
		PluginEvents: framework.PluginEvents,
		PreEnqueue: func(pod *abi.Pod) []queue.PreEnqueuePlugin {
			if parts.Scheduler == nil {
				return nil
			}
			if p := parts.Scheduler.Profile(pod.SchedulerName); p != nil {
				return p.PreEnqueuePlugins()
			}
			return nil
		},
	}
	if s := o.Config.PodInitialBackoffSeconds; s != nil {
		qopts.InitialBackoff = time.Duration(*s) * time.Second
	}
	if s := o.Config.PodMaxBackoffSeconds; s != nil {
		qopts.MaxBackoff = time.Duration(*s) * time.Second
	}
	parts.Queue = queue.New(qopts)
	now := time.Now
	if o.Clock != nil {
		now = o.Clock.Now
	}
	parts.Cache = cache.New(0, now)

	host := framework.HostPlugins{
		"PrioritySort":                 framework.PrioritySort{},
		framework.DefaultBinderName:    framework.DefaultBinder{Binder: o.Binder},
		framework.DynamicResourcesName: framework.DynamicResources{},
	}
	if o.PreemptionAPI != nil {
		var rng *rand.Rand
		if o.Rand != nil {
			rng = rand.New(rand.NewPCG(o.Rand.Uint64(), o.Rand.Uint64()))
		}
		parts.Preemption = preemption.New(preemption.Options{
			API: o.PreemptionAPI, Queue: parts.Queue, Pods: parts.Cache, Metrics: o.PreemptionMetrics, Rand: rng, Log: o.Log,
			Guard: func(class string) *int32 {
				if parts.Scheduler == nil {
					return nil
				}
				return parts.Scheduler.DisruptionGuard(class)
			},
		})
		host[preemption.Name] = parts.Preemption
	}
	built, err := buildProfiles(ctx, o.Config, o.Registry, host, nil)
	if err != nil {
		parts.Close(ctx)
		return nil, err
	}
	parts.Profiles = built.Profiles
	parts.host = host
	release := func() {
		for _, p := range built.Profiles {
			p.Close(context.Background())
		}
		if o.OwnRegistry {
			o.Registry.Close(context.Background())
		}
	}
	parts.Scheduler, err = New(Options{Profiles: built.Profiles, Shadows: built.Shadows, Cache: parts.Cache, Queue: parts.Queue,
		Recorder: o.Recorder, Rand: o.Rand, Log: o.Log, Metrics: o.Metrics, Release: release, MaxBindingsInFlight: o.MaxBindingsInFlight,
		Decisions: o.Decisions, AnnotateDecisions: o.AnnotateDecisions})
	if err != nil {
		built.Close(ctx)
		parts.Close(ctx)
		return nil, err
	}
	return parts, nil
}
