package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/host/tools/perfdriver"
)

func newPerfCommand(logger func() hclog.Logger) *cobra.Command {
	var (
		kubeconfig, output string
		o                  = perfdriver.Options{Cleanup: true}
		qps                float32
		burst              int
	)
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure a scheduler's throughput on a real API server, as scheduler_perf does",
		Long: `perf is a scheduler_perf-shaped load driver. Against the kubeconfig's API server
it creates --nodes fake nodes (scheduler_perf's node-default: 4 CPU, 32Gi,
110 pods), --init-pods pods that the scheduler places first (or that are
created bound, --init-pods-bound), then --pods measured pods (pod-default:
100m CPU, 500Mi) for --scheduler-name in a fresh namespace, and reports
SchedulingThroughput as scheduler_perf computes it: one sample per second of
newly bound pods, the first dropped, idle seconds folded into the next;
average and nearest-rank percentiles, pods/s.

Any scheduler can be measured: wasmsched serve, or kube-scheduler, running
against the same API server. No kubelet is needed (nodes are fake). With
--cleanup (the default) the run's pods, namespaces and nodes are deleted at
the end, also after a failure or an interrupt.

--shape SchedulingDaemonset makes the measured pods scheduler_perf's
SchedulingDaemonset: one per node (--pods defaults to --nodes), each pinned
to its node by a required node affinity on metadata.name, as the DaemonSet
controller does. --scheduler-pid names the measured scheduler's process on
this machine: the report adds its peak RSS and its cold start (from the
process's start to the run's first pod seen bound, so a scheduler started
just before perf counts the time the driver takes to create the nodes).`,
		Example: `  wasmsched serve --kubeconfig run/kubeconfig --kube-api-qps 5000 --kube-api-burst 5000 &
  wasmsched perf --kubeconfig run/kubeconfig --nodes 5000 --init-pods 1000 --pods 10000
  # kube-scheduler's largest scale test: 15 000 nodes, one pinned pod each
  wasmsched perf --kubeconfig run/kubeconfig --nodes 15000 --init-pods 1000 --shape SchedulingDaemonset --scheduler-pid $SCHED_PID`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: want table or json, not %q", output)
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			client, err := kube.Client(kubeconfig, qps, burst)
			if err != nil {
				return err
			}
			if o.Shape == perfdriver.ShapeSchedulingDaemonset && !cmd.Flags().Changed("pods") {
				o.Pods = o.Nodes
			}
			o.Log = logger()
			rep, err := perfdriver.Run(ctx, client, o)
			return perfOutcome(cmd.OutOrStdout(), output, rep, err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file; empty: in-cluster configuration")
	f.IntVar(&o.Nodes, "nodes", 500, "nodes to create (node-default)")
	f.IntVar(&o.Zones, "zones", 0, "label nodes round-robin with this many zones (topology.kubernetes.io/zone); 0: no zone label")
	f.IntVar(&o.InitPods, "init-pods", 500, "pods created, and scheduled, before the measured ones; not measured")
	f.BoolVar(&o.InitPodsBound, "init-pods-bound", false, "create the init pods already bound, round-robin over the nodes, instead of letting the scheduler place them")
	f.IntVar(&o.Pods, "pods", 1000, "measured pods (pod-default)")
	f.StringVar(&o.Shape, "shape", perfdriver.ShapeSchedulingBasic, "the measured pods: SchedulingBasic (pod-default) or SchedulingDaemonset (one per node, pinned by node affinity; --pods defaults to --nodes)")
	f.IntVar(&o.SchedulerPID, "scheduler-pid", 0, "the measured scheduler's process id on this machine: report its peak RSS and cold start; 0: none")
	f.StringVar(&o.SchedulerName, "scheduler-name", "default-scheduler", "spec.schedulerName of the pods")
	f.IntVar(&o.Parallelism, "parallelism", perfdriver.DefaultParallelism, "parallel creating workers")
	f.Float64Var(&o.CreateQPS, "create-qps", 0, "pace pod creation to this many pods/s; 0: as fast as the workers and --kube-api-qps allow (as scheduler_perf)")
	f.Float32Var(&qps, "kube-api-qps", 5000, "the driver's client QPS to the API server (scheduler_perf: 5000)")
	f.IntVar(&burst, "kube-api-burst", 5000, "the driver's client burst (scheduler_perf: 5000)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up after this long (cleanup not included); 0: never")
	f.BoolVar(&o.Cleanup, "cleanup", true, "delete the run's pods, namespaces and nodes at the end")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// perfOutcome prints what a run measured, even when it failed, and
// returns its error: a run that did not complete (a failed create, a
// timeout, an interrupt) exits non-zero whatever its report shows.
func perfOutcome(w io.Writer, output string, rep *perfdriver.Report, err error) error {
	if rep == nil {
		return err
	}
	if perr := printPerf(w, output, rep); perr != nil && err == nil {
		err = perr
	}
	if err == nil && !rep.Complete {
		err = fmt.Errorf("run %s incomplete: %d of %d measured pods bound", rep.Run, rep.Bound, rep.Pods)
	}
	return err
}

// printPerf writes a run's report as a table or as JSON; the table of a
// run that did not complete starts by saying so, and why.
func printPerf(w io.Writer, output string, rep *perfdriver.Report) error {
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	initDesc := "none"
	if rep.InitPods > 0 {
		how := "scheduled"
		if rep.InitPodsBound {
			how = "created bound"
		}
		initDesc = fmt.Sprintf("%d %s in %.1fs", rep.InitPods, how, rep.InitSeconds)
	}
	overall := 0.0
	if rep.WallSeconds > 0 {
		overall = float64(rep.Bound) / rep.WallSeconds
	}
	if !rep.Complete {
		why := rep.Incomplete
		if why == "" {
			why = "the run did not finish"
		}
		fmt.Fprintf(w, "INCOMPLETE RUN: %s\nThe numbers below cover only what was measured before it ended; they are not a throughput result.\n\n", why)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "run\t%s (scheduler %s)\n", rep.Run, rep.Scheduler)
	fmt.Fprintf(tw, "nodes\t%d\n", rep.Nodes)
	fmt.Fprintf(tw, "init pods\t%s\n", initDesc)
	fmt.Fprintf(tw, "measured pods\t%d created in %.1fs, %d bound in %.1fs (%.1f pods/s overall)\n", rep.Pods, rep.CreateSeconds, rep.Bound, rep.WallSeconds, overall)
	if rep.Shape != "" && rep.Shape != perfdriver.ShapeSchedulingBasic {
		fmt.Fprintf(tw, "shape\t%s\n", rep.Shape)
	}
	if rep.FirstBindSeconds > 0 {
		fmt.Fprintf(tw, "first bind\t%.2fs after the first measured create\n", rep.FirstBindSeconds)
	}
	if rep.SchedulerPeakRSSBytes > 0 {
		fmt.Fprintf(tw, "scheduler peak RSS\t%.0f MiB\n", float64(rep.SchedulerPeakRSSBytes)/(1<<20))
	}
	if rep.ColdStartSeconds > 0 {
		fmt.Fprintf(tw, "scheduler cold start\t%.2fs from its process start to the first bind\n", rep.ColdStartSeconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t := rep.Throughput
	if t.Samples == 0 {
		_, err := fmt.Fprintln(w, "\nSchedulingThroughput: no samples (binding took under two sample intervals); use more pods")
		return err
	}
	fmt.Fprintf(w, "\nSchedulingThroughput (pods/s, %d samples of %s)\n", t.Samples, perfdriver.SampleInterval)
	fmt.Fprintln(tw, "AVERAGE\tPERC50\tPERC90\tPERC95\tPERC99")
	fmt.Fprintf(tw, "%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n", t.Average, t.Perc50, t.Perc90, t.Perc95, t.Perc99)
	return tw.Flush()
}
