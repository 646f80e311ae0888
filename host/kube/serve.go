package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/modules"
	"github.com/wasmsched/wasmsched/host/scheduler"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	Client   kubernetes.Interface
	Config   *config.Configuration
	CacheDir string // compiled modules; empty: the default
	Log      hclog.Logger
	// Ready, if set, is closed once the informers have synced and
	// scheduling starts.
	Ready chan<- struct{}
}

// Serve schedules the cluster's pods until ctx ends: it loads the modules,
// assembles the profiles, syncs the informers, then runs the queue's
// flush loops, the cache's expiry, the status patcher and the scheduling
// loop.
func Serve(ctx context.Context, o ServeOptions) error {
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	reg, err := modules.Load(ctx, o.Config, modules.Options{CacheDir: o.CacheDir, Log: log})
	if err != nil {
		return err
	}
	defer reg.Close(context.Background())
	rec := NewRecorder(o.Client, o.Config.Profiles[0].SchedulerName, log)
	parts, err := scheduler.Assemble(ctx, scheduler.AssembleOptions{
		Config: o.Config, Registry: reg, Binder: Binder{Client: o.Client}, Recorder: rec,
		PreemptionAPI: PreemptionAPI{Client: o.Client, Recorder: rec},
		Clock:         clock.RealClock{}, Log: log,
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
	log.Info("scheduling", "profiles", len(parts.Profiles))
	if o.Ready != nil {
		close(o.Ready)
	}
	parts.Scheduler.Run(ctx)
	return nil
}
