package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/kube"
	"github.com/wasmsched/wasmsched/host/modules"
	"github.com/wasmsched/wasmsched/host/scheduler"
)

func newServeCommand(logger func() hclog.Logger) *cobra.Command {
	var (
		kubeconfig, configPath, cacheDir string
		qps                              float32
		burst                            int
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Schedule the pods of a real cluster",
		Long: `serve watches a cluster (the kubeconfig's, or the in-cluster one) and schedules
the pending pods whose spec.schedulerName names one of its profiles, binding
them through the API and reporting Scheduled/FailedScheduling Events and the
PodScheduled condition as kube-scheduler does. It runs until interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger()
			cfg := config.Default()
			if configPath != "" {
				var err error
				if cfg, err = config.Load(configPath); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			client, err := kube.Client(kubeconfig, qps, burst)
			if err != nil {
				return err
			}
			reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: cacheDir, Log: log})
			if err != nil {
				return err
			}
			defer reg.Close(context.Background())
			rec := kube.NewRecorder(client, cfg.Profiles[0].SchedulerName, log)
			parts, err := scheduler.Assemble(ctx, scheduler.AssembleOptions{
				Config: cfg, Registry: reg, Binder: kube.Binder{Client: client}, Recorder: rec,
				Clock: clock.RealClock{}, Log: log,
			})
			if err != nil {
				return err
			}
			defer parts.Close(context.Background())
			if err := kube.Watch(ctx, client, parts.Scheduler, log); err != nil {
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
			parts.Scheduler.Run(ctx)
			return nil
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty: in-cluster configuration")
	cmd.Flags().StringVar(&configPath, "config", "", "profiles file (WasmSchedulerConfiguration); default: one default-scheduler profile")
	cmd.Flags().StringVar(&cacheDir, "wasm-cache-dir", "", "directory for compiled modules (default: the user cache directory)")
	cmd.Flags().Float32Var(&qps, "kube-api-qps", 50, "client QPS to the API server")
	cmd.Flags().IntVar(&burst, "kube-api-burst", 100, "client burst to the API server")
	return cmd
}
