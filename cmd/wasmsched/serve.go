package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

func newServeCommand(logger func() hclog.Logger) *cobra.Command {
	var (
		kubeconfig, configPath, cacheDir string
		moduleCacheDir                   string
		pollInterval                     time.Duration
		qps                              float32
		burst, maxBindings               int
		leaderElect, watch, requireSHA   bool
		recordDecisions                  bool
		memLimit                         memoryLimit
		election                         = kube.DefaultLeaderElection()
		serving                          = newEndpointFlags()
		wasmRuntime                      = newRuntimeFlag()
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Schedule the pods of a real cluster",
		Long: `serve watches a cluster (the kubeconfig's, or the in-cluster one) and schedules
the pending pods whose spec.schedulerName names one of its profiles, binding
them through the API and reporting Scheduled/FailedScheduling Events
(events.k8s.io/v1) and the PodScheduled condition as kube-scheduler does,
speaking protobuf to the API server unless clientConnection.contentType says
application/json. It runs until interrupted.

Policy changes need no restart: when the --config file or a module file it
names changes (a mounted ConfigMap's update included), or on SIGHUP, the new
configuration is built and checked off the scheduling path — modules read,
pinned digests checked, compiled, initialised and each new plugin run once
on a real pod (the canary) — and swapped in between two scheduling cycles.
A candidate that fails any check is refused and logged; the running one
keeps serving.

Its endpoints are served as kube-scheduler serves them, on --secure-port
(10259) over TLS: /healthz, /livez and /readyz answer anyone; /metrics,
/debug/shadow, /debug/explain?pod= or ?vpod=NAMESPACE/NAME, /configz and (with
--profiling) /debug/pprof/ need a bearer
token or client certificate whose identity may get that nonResourceURL
(TokenReview and SubjectAccessReview through the API server, cached).
--metrics-bind-address adds a plain-HTTP copy with no authentication.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := logger()
			klogTo(log.Named("k8s"))
			cfg := config.Default()
			if configPath != "" {
				var err error
				if cfg, err = config.Load(configPath); err != nil {
					return err
				}
			}
			for _, w := range cfg.Warnings() {
				log.Warn("configuration: left out", "config", configPath, "detail", w)
			}
			set := serveSettings{kubeconfig: kubeconfig, qps: qps, burst: burst, leaderElect: leaderElect, election: election}.
				withConfig(cfg, cmd.Flags().Changed)
			if err := set.check(); err != nil {
				return err
			}
			if set.leaderElect {
				if err := set.election.Validate(); err != nil {
					return err
				}
			}
			if err := serving.validate(); err != nil {
				return err
			}
			if err := wasmRuntime.validate(); err != nil {
				return err
			}
			if n, from, err := memLimit.apply(os.Getenv, "/sys/fs/cgroup"); err != nil {
				return err
			} else if n > 0 {
				log.Info("Go memory limit set", "bytes", n, "from", from)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			restConfig, err := set.restConfig()
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(set.clientsetConfig(restConfig))
			if err != nil {
				return fmt.Errorf("kubernetes client: %w", err)
			}
			// Events get a clientset, and so a rate limiter, of their own
			// (as kube-scheduler's do): a backlog of Events waits for it
			// without delaying bindings and status updates.
			eventClient, err := kubernetes.NewForConfig(set.clientsetConfig(restConfig))
			if err != nil {
				return fmt.Errorf("kubernetes client for Events: %w", err)
			}
			srv, err := serving.start(ctx, log, set.kubeconfig, cfg)
			if err != nil {
				return err
			}
			opts := kube.ServeOptions{Client: client, EventClient: eventClient, RESTConfig: restConfig, Config: cfg, CacheDir: cacheDir, Runtime: wasmRuntime.name, ModuleCacheDir: moduleCacheDir, ModulePollInterval: pollInterval, Log: log, Metrics: srv.metrics, Ready: srv.ready,
				ConfigPath: configPath, Watch: watch, RequireSHA256: requireSHA, MaxBindingsInFlight: maxBindings, OnSwap: srv.configz.Set,
				Decisions: srv.decisions, RecordDecisions: recordDecisions, CheckAPIServer: true}
			if set.leaderElect {
				opts.LeaderElection = &set.election
			}
			return kube.Serve(ctx, opts)
		},
	}
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty: in-cluster configuration")
	cmd.Flags().StringVar(&configPath, "config", "", "profiles file: wasmsched's WasmSchedulerConfiguration or kube-scheduler's KubeSchedulerConfiguration "+
		"(its clientConnection and leaderElection stand in for the flags not given); default: one default-scheduler profile")
	cmd.Flags().StringVar(&cacheDir, "wasm-cache-dir", "", "directory for compiled modules (default: the user cache directory)")
	cmd.Flags().StringVar(&moduleCacheDir, "module-cache-dir", "", "directory for modules pulled from OCI registries, by digest (default: the user cache directory); mount a volume here so a restart needs no registry")
	cmd.Flags().DurationVar(&pollInterval, "module-poll-interval", 5*time.Minute, "how often to ask the registry where the tags of modules with pullPolicy: Always point, reloading when one moved (0: never)")
	cmd.Flags().Float32Var(&qps, "kube-api-qps", 50, "client QPS to the API server")
	cmd.Flags().IntVar(&burst, "kube-api-burst", 100, "client burst to the API server")
	cmd.Flags().BoolVar(&recordDecisions, "record-decisions", false,
		"write a compact summary of each scheduling attempt's decision (chosen node, its score, the top nodes' per-plugin scores, the filter reasons; at most 2 KiB) to the pod's "+
			decision.AnnotationKey+" annotation: a placed pod's set by the binding itself (no extra API write), an unplaced pod's (with its outcome and message) by a patch of its metadata in the background (needs patch on pods)")
	cmd.Flags().IntVar(&maxBindings, "max-bindings-in-flight", scheduler.DefaultMaxBindingsInFlight,
		"bindings sent to the API server at once; with that many in flight the scheduler waits for one to end before the next cycle (0: the default; negative: no bound)")
	f := cmd.Flags()
	wasmRuntime.register(f)
	f.Var(&memLimit, "memory-limit", "soft limit on the Go runtime's memory (the garbage collector runs more often near it; "+
		"more CPU, less memory): a byte count such as 192Mi, none, or auto: GOMEMLIMIT if set, else 90% of the container's memory limit, else none")
	f.BoolVar(&watch, "watch", true, "reload the configuration when --config or a module file it names changes (SIGHUP reloads either way)")
	f.BoolVar(&requireSHA, "require-sha256", false, "refuse module files without a sha256 pin, at start and at every reload")
	f.BoolVar(&leaderElect, "leader-elect", true, "run as one of several replicas: schedule only while holding the Lease")
	f.StringVar(&election.LeaseName, "leader-elect-resource-name", election.LeaseName, "name of the Lease used for leader election")
	f.StringVar(&election.LeaseNamespace, "leader-elect-resource-namespace", election.LeaseNamespace, "namespace of the Lease used for leader election")
	f.StringVar(&election.Identity, "leader-elect-identity", "", "this replica's identity in the Lease (default: host name and a random suffix)")
	f.DurationVar(&election.LeaseDuration, "leader-elect-lease-duration", election.LeaseDuration, "how long standbys wait after the leader's last renewal before taking over")
	f.DurationVar(&election.RenewDeadline, "leader-elect-renew-deadline", election.RenewDeadline, "how long the leader retries renewing before it stops scheduling")
	f.DurationVar(&election.RetryPeriod, "leader-elect-retry-period", election.RetryPeriod, "pause between attempts to acquire or renew the Lease")
	serving.register(f)
	return cmd
}
