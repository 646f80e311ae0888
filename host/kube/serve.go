package kube

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/framework"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/modules"
	"github.com/wasmsched/wasmsched/host/scheduler"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	Client   kubernetes.Interface
	Config   *config.Configuration
	CacheDir string // compiled modules; empty: the default
	Log      hclog.Logger
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
}

// Serve schedules the cluster's pods until ctx ends: it loads the modules,
// assembles the profiles, syncs the informers, then runs the queue's
// flush loops, the cache's expiry, the status patcher and — once this
// replica leads, when leader election is on — the scheduling loop. It
// returns ErrLeadershipLost if the Lease is lost while ctx is still live.
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
	reg, err := modules.Load(ctx, o.Config, modules.Options{CacheDir: o.CacheDir, Log: log, Metrics: o.Metrics})
	if err != nil {
		return err
	}
	defer reg.Close(context.Background())
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	if o.LeaderElection != nil && o.LeaderElection.Identity != "" {
		host = o.LeaderElection.Identity
	}
	rec := NewRecorder(o.Client, host, log)
	var binder framework.Binder = Binder{Client: o.Client}
	if o.Binder != nil {
		binder = o.Binder
	}
	parts, err := scheduler.Assemble(ctx, scheduler.AssembleOptions{
		Config: o.Config, Registry: reg, Binder: binder, Recorder: rec,
		PreemptionAPI: PreemptionAPI{Client: o.Client, Recorder: rec}, PreemptionMetrics: o.Metrics.Preemption(),
		Clock: clock.RealClock{}, Log: log, Metrics: o.Metrics,
	})
	if err != nil {
		return err
	}
	defer parts.Close(context.Background())
	if err := Watch(ctx, o.Client, parts.Scheduler, log); err != nil {
		return fmt.Errorf("watch the cluster: %w", err)
	}
	go parts.Queue.Run(ctx)
	go rec.Run(ctx)
	go parts.Cache.Run(ctx, time.Second, func(expired []*abi.Pod) {
		for _, p := range expired {
			log.Warn("binding never confirmed; assumed pod expired", "pod", p.Namespace+"/"+p.Name)
		}
	})
	if o.Ready != nil {
		close(o.Ready)
	}
	schedule := func(ctx context.Context) {
		log.Info("scheduling", "profiles", len(parts.Profiles))
		parts.Scheduler.Run(ctx)
		parts.Scheduler.WaitBindings()
	}
	if o.LeaderElection == nil {
		schedule(ctx)
		return nil
	}
	return runAsLeader(ctx, o.Client, *o.LeaderElection, log, schedule)
}
