package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
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
		schedulerCmd       string
		schedulerLog       string
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
just before perf counts the time the driver takes to create the nodes).

--scheduler-cmd has perf start the measured scheduler itself (one program
and its arguments, run with /bin/sh -c 'exec ...'; its output goes to
--scheduler-log), before creating the nodes, and stop it at the end: the
report then adds the scheduler's CPU time (utime + stime over its life,
and per pod it placed) to its peak RSS and cold start. --backlog measures
a backlog drain: the nodes, the init pods (created bound) and all
measured pods are created with no scheduler running, then --scheduler-cmd
is started and the run measures from its start to the last pod bound
(the drain rate, pods/s) and its first bind.

With --events-wait (default 2m), once every measured pod is bound perf
waits until each has a Scheduled Event (events.k8s.io/v1, a series
counting its repeats), then reports how many pods have one and how many
FailedScheduling Events say "binding rejected" (failed bindings).

perf compare reads the JSON reports of several runs (-o json) and prints
them side by side with the ratios to a baseline scheduler
(scripts/sidebyside.sh uses it).`,
		Example: `  wasmsched serve --kubeconfig run/kubeconfig --kube-api-qps 5000 --kube-api-burst 5000 &
  wasmsched perf --kubeconfig run/kubeconfig --nodes 5000 --init-pods 1000 --pods 10000
  # kube-scheduler's largest scale test: 15 000 nodes, one pinned pod each
  wasmsched perf --kubeconfig run/kubeconfig --nodes 15000 --init-pods 1000 --shape SchedulingDaemonset --scheduler-pid $SCHED_PID
  # a backlog of 10 000 pods, drained by a scheduler perf starts once they exist
  wasmsched perf --kubeconfig run/kubeconfig --nodes 5000 --init-pods 1000 --pods 10000 --backlog \
    --scheduler-cmd 'wasmsched serve --kubeconfig run/kubeconfig --kube-api-qps 5000 --kube-api-burst 5000 --leader-elect=false' \
    --scheduler-log run/scheduler.log --label wasmsched -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: want table or json, not %q", output)
			}
			if o.Shape == perfdriver.ShapeSchedulingDaemonset && !cmd.Flags().Changed("pods") {
				o.Pods = o.Nodes
			}
			if o.Backlog && !cmd.Flags().Changed("init-pods-bound") {
				o.InitPodsBound = true // nothing would place them
			}
			logOut, closeLog, err := perfSchedulerFlags(&o, cmd.Flags().Changed, schedulerCmd, schedulerLog, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeLog()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			client, err := kube.Client(kubeconfig, qps, burst)
			if err != nil {
				return err
			}
			if schedulerCmd != "" {
				o.StartScheduler = func(context.Context) (perfdriver.Scheduler, error) {
					return perfdriver.StartCommand(schedulerCmd, logOut)
				}
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
	f.BoolVar(&o.Backlog, "backlog", false, "measure a backlog drain: create everything with no scheduler running, then start --scheduler-cmd (init pods are created bound)")
	f.StringVar(&schedulerCmd, "scheduler-cmd", "", "start the measured scheduler with this command (one program and its arguments, run by /bin/sh -c 'exec ...') and stop it at the end; the report adds its CPU time")
	f.StringVar(&schedulerLog, "scheduler-log", "", "file for --scheduler-cmd's output (created or truncated); empty: perf's standard error")
	f.DurationVar(&o.EventsWait, "events-wait", 2*time.Minute, "after the last bind, wait up to this long for a Scheduled Event on every measured pod and count Events and failed bindings; 0: do not count")
	f.StringVar(&o.Label, "label", "", "name of the measured scheduler in the report (perf compare groups runs by it); empty: --scheduler-name")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up after this long (cleanup not included); 0: never")
	f.BoolVar(&o.Cleanup, "cleanup", true, "delete the run's pods, namespaces and nodes at the end")
	f.StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.AddCommand(newPerfCompareCommand())
	return cmd
}

// perfSchedulerFlags checks the flags about the measured scheduler
// together (each alone is fine) and opens --scheduler-log: the writer for
// the scheduler's output and how to close it.
func perfSchedulerFlags(o *perfdriver.Options, changed func(string) bool, schedulerCmd, schedulerLog string, stderr io.Writer) (io.Writer, func(), error) {
	nop := func() {}
	switch {
	case o.Backlog && schedulerCmd == "":
		return nil, nop, fmt.Errorf("--backlog: perf starts the scheduler once every measured pod exists; give the command that starts it with --scheduler-cmd")
	case o.Backlog && o.InitPods > 0 && !o.InitPodsBound:
		return nil, nop, fmt.Errorf("--backlog with --init-pods-bound=false: the %d init pods would wait for a scheduler that starts only after them", o.InitPods)
	case schedulerCmd != "" && o.SchedulerPID != 0:
		return nil, nop, fmt.Errorf("--scheduler-cmd and --scheduler-pid: give one (perf measures the scheduler it starts)")
	case schedulerCmd != "" && strings.TrimSpace(schedulerCmd) == "":
		return nil, nop, fmt.Errorf("--scheduler-cmd: empty command")
	case changed("scheduler-log") && schedulerCmd == "":
		return nil, nop, fmt.Errorf("--scheduler-log: only the output of a scheduler perf starts (--scheduler-cmd) is written there")
	case o.EventsWait < 0:
		return nil, nop, fmt.Errorf("--events-wait %s: want 0 (do not count Events) or more", o.EventsWait)
	}
	if o.Label == "" {
		o.Label = o.SchedulerName
	}
	if schedulerLog == "" {
		return stderr, nop, nil
	}
	f, err := os.Create(schedulerLog)
	if err != nil {
		return nil, nop, fmt.Errorf("--scheduler-log: %w", err)
	}
	return f, func() { _ = f.Close() }, nil
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
	if rep.Label != "" && rep.Label != rep.Scheduler {
		fmt.Fprintf(tw, "run\t%s (%s, scheduler %s)\n", rep.Run, rep.Label, rep.Scheduler)
	} else {
		fmt.Fprintf(tw, "run\t%s (scheduler %s)\n", rep.Run, rep.Scheduler)
	}
	fmt.Fprintf(tw, "nodes\t%d\n", rep.Nodes)
	fmt.Fprintf(tw, "init pods\t%s\n", initDesc)
	if rep.Backlog {
		fmt.Fprintf(tw, "measured pods\t%d created in %.1fs with no scheduler running\n", rep.Pods, rep.CreateSeconds)
		fmt.Fprintf(tw, "backlog drain\t%d bound in %.1fs from the scheduler's start (%.1f pods/s)\n", rep.Bound, rep.WallSeconds, overall)
	} else {
		fmt.Fprintf(tw, "measured pods\t%d created in %.1fs, %d bound in %.1fs (%.1f pods/s overall)\n", rep.Pods, rep.CreateSeconds, rep.Bound, rep.WallSeconds, overall)
	}
	if rep.Shape != "" && rep.Shape != perfdriver.ShapeSchedulingBasic {
		fmt.Fprintf(tw, "shape\t%s\n", rep.Shape)
	}
	if rep.FirstBindSeconds > 0 {
		if rep.Backlog {
			fmt.Fprintf(tw, "first bind\t%.2fs after the scheduler's start\n", rep.FirstBindSeconds)
		} else {
			fmt.Fprintf(tw, "first bind\t%.2fs after the first measured create\n", rep.FirstBindSeconds)
		}
	}
	if rep.SchedulerPeakRSSBytes > 0 {
		fmt.Fprintf(tw, "scheduler peak RSS\t%.0f MiB\n", float64(rep.SchedulerPeakRSSBytes)/(1<<20))
	}
	if rep.ColdStartSeconds > 0 {
		fmt.Fprintf(tw, "scheduler cold start\t%.2fs from its process start to the first bind\n", rep.ColdStartSeconds)
	}
	if rep.SchedulerCPUSeconds > 0 {
		fmt.Fprintf(tw, "scheduler CPU\t%.1fs (%.2f ms per pod placed)\n", rep.SchedulerCPUSeconds, rep.SchedulerCPUSecondsPerPod*1000)
	}
	if e := rep.Events; e != nil {
		fmt.Fprintf(tw, "Events\t%d of %d measured pods have a Scheduled Event (%.1fs after the last bind); %d failed bindings\n",
			e.PodsScheduled, rep.Pods, rep.EventsWaitSeconds, e.FailedBindings)
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
