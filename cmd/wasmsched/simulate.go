package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/run/clusterread"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

func newSimulateCommand(logger func() hclog.Logger) *cobra.Command {
	var (
		configPath  string
		shadowPath  string
		output      string
		seed        uint64
		latency     time.Duration
		watchFiles  bool
		fromCluster bool
		kubeconfig  string
		evictRounds int
		reportPath  string
		explain     explainFlags
		wasmRuntime = newRuntimeFlag()
		fromLimits  = fromClusterFlags{
			maxPageBytes: clusterread.DefaultMaxPageBytes, maxBytes: clusterread.DefaultMaxBytes,
			requestTimeout: clusterread.DefaultRequestTimeout, timeout: clusterread.DefaultTimeout,
		}
	)
	cmd := &cobra.Command{
		Use:   "simulate [MANIFEST...]",
		Short: "Schedule the pods of Kubernetes manifests on an in-memory cluster",
		Long: `simulate reads Nodes, Pods, Namespaces, PriorityClasses, PodDisruptionBudgets and
the pods of Deployments, ReplicaSets and StatefulSets from
multi-document YAML files ("-" for standard input), runs the real scheduler —
queue, profiles, Wasm policy modules — against an in-memory cluster until
nothing more can be scheduled, and prints where each pod went or why it could
not go anywhere. When pods preempt others it also lists who preempted whom
on which node and how (delete, or evict through the Eviction API for
PodDisruptionBudget-guarded victims), and the timeline of the scheduler's
calls to the in-memory API (nominations, victim conditions, deletions,
evictions, events).

With --shadow OTHER.yaml it is a what-if before a rollout: the same objects
are scheduled twice with the same seed, under the live configuration
(--config, or the default) and under OTHER.yaml, and it prints per pod both
outcomes and the change — same, moved, newly-unschedulable or newly-placed —
followed by the counts.

With --watch it keeps running, for a plugin author's edit-build-look loop:
after each change to a manifest, the --config or --shadow file or a module
file they name, it runs again and prints, before the new result, which pods
changed node or status since the last good run and the counts. A run that
fails (a bad manifest, configuration or module) prints its error and the
loop goes on; Ctrl-C ends it. Unchanged modules are not compiled again.
Standard input cannot be watched.

With --from-cluster it starts from a live cluster (--kubeconfig, else
$KUBECONFIG, ~/.kube/config or the in-cluster configuration) instead of, or
besides, manifests: it lists — never writes — Nodes, bound and pending Pods,
Namespaces, Services, ReplicaSets, StatefulSets, PodDisruptionBudgets and
PriorityClasses; bound pods stay where they are, pending ones and the pods
of any MANIFEST given are scheduled ("would my 50 new pods fit under this
policy?"). Combine it with --shadow to see what a new policy would change on
today's cluster. The read is bounded: each response (one page of a list) to
--from-cluster-max-page-bytes, all of them to --from-cluster-max-bytes, each
request to --from-cluster-request-timeout and the whole read to
--from-cluster-timeout; a read cut at a limit says which list, which limit
and the flag that raises it.

When the configuration has an eviction section, eviction rounds run after
scheduling settles (--eviction-rounds, default eviction.simulateRounds), a
sync period apart on the simulated clock, with usage from NodeMetrics and
PodMetrics (metrics.k8s.io/v1beta1) documents among the manifests. It prints
which pods were evicted, by which policy and why, which nodes were tainted,
and where the scheduler put the replacements their ReplicaSets and
StatefulSets create.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: want table or json, not %q", output)
			}
			if len(args) == 0 && !fromCluster {
				return errors.New("no input: name manifest files (\"-\" for standard input), or --from-cluster")
			}
			if kubeconfig != "" && !fromCluster {
				return errors.New("--kubeconfig: only with --from-cluster")
			}
			if err := fromLimits.check(fromCluster, cmd.Flags().Changed); err != nil {
				return err
			}
			if err := checkEvictionRounds(evictRounds); err != nil {
				return err
			}
			if err := explain.validate(); err != nil {
				return err
			}
			if err := wasmRuntime.validate(); err != nil {
				return err
			}
			if reportPath != "" && watchFiles {
				return errors.New("--report writes one run's page: it cannot be combined with --watch")
			}
			if watchFiles && fromCluster {
				return errors.New("--watch reads files only: it cannot be combined with --from-cluster")
			}
			if watchFiles {
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				notes := cmd.OutOrStdout()
				if output == "json" {
					notes = cmd.ErrOrStderr()
				}
				return watchLoop(ctx, cmd.OutOrStdout(), watchOptions{Manifests: args, ConfigPath: configPath, ShadowPath: shadowPath,
					Output: output, Seed: seed, APILatency: latency, EvictionRounds: evictionRounds(evictRounds), Notes: notes, Log: logger(), Explain: explain,
					Runtime: wasmRuntime.name})
			}
			live, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			var shadow *config.Configuration
			if shadowPath != "" {
				if shadow, err = config.Load(shadowPath); err != nil {
					return fmt.Errorf("--shadow: %w", err)
				}
			}
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			var from *fromClusterFlags
			if fromCluster {
				from = &fromLimits
			}
			objs, err := loadInputs(ctx, args, from, kubeconfig, logger())
			if err != nil {
				return err
			}
			opts := sim.Options{Seed: seed, APILatency: latency, EvictionRounds: evictionRounds(evictRounds), Log: logger(),
				Explain: explain.match(), Runtime: wasmRuntime.name}
			if reportPath != "" {
				// The page explains every pod on a click.
				opts.Explain = func(string) bool { return true }
			}
			progress := newProgress(cmd.ErrOrStderr())
			opts.Progress = progress.update
			start := time.Now()
			run, err := runSimulations(ctx, objs, live, shadow, shadowPath, opts, nil)
			progress.clear()
			if err != nil {
				return err
			}
			defer run.close(context.Background())
			elapsed := time.Since(start)
			if reportPath != "" {
				if err := writeReport(reportPath, run, args, elapsed); err != nil {
					return err
				}
			}
			if err := printRun(cmd.OutOrStdout(), output, run, &explain); err != nil {
				return err
			}
			progress.summary(run.live, elapsed, output == "table", reportPath)
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "profiles file (WasmSchedulerConfiguration); default: one default-scheduler profile")
	cmd.Flags().StringVar(&shadowPath, "shadow", "", "a second profiles file to compare with --config: schedule the same objects under both and print what changes per pod")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	cmd.Flags().StringVar(&reportPath, "report", "", "also write the run as one self-contained HTML page to this file: nodes by zone with their requests, unschedulable pods by reason, each pod's decision on a click, the shadow's changes, the eviction timeline, the vpod placements")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed for breaking score ties")
	cmd.Flags().DurationVar(&latency, "api-latency", 0, "latency added to every write to the in-memory API (bindings, preemption calls)")
	cmd.Flags().BoolVar(&fromCluster, "from-cluster", false, "start from a live cluster's objects (read-only: list, never write), plus any MANIFEST given")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "with --from-cluster: the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	evictRounds = -1
	cmd.Flags().Var(optionalInt{&evictRounds}, "eviction-rounds", fmt.Sprintf("eviction rounds to run after scheduling settles, when the configuration has eviction policies, at most %d (default: the configuration's eviction.simulateRounds)", config.MaxEvictionSimulateRounds))
	fromLimits.register(cmd.Flags())
	explain.register(cmd.Flags())
	wasmRuntime.register(cmd.Flags())
	cmd.Flags().BoolVar(&watchFiles, "watch", false, "keep running: run again after each change to the manifests, the configuration files or their module files, and print what changed (-o json: results on stdout, the rest on stderr)")
	return cmd
}

// loadConfig reads the profiles file at path, or gives the default
// configuration when path is empty. What the file asks for and this
// binary leaves out (a kube-scheduler file's volume plugins, say) is said
// on stderr, as serve logs it.
func loadConfig(path string) (*config.Configuration, error) {
	if path == "" {
		return config.Default(), nil
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(os.Stderr, "warning: %s: %s\n", path, w)
	}
	if len(cfg.Profiles) == 0 {
		fmt.Fprintf(os.Stderr, "note: %s has no profiles: the simulation places pods with the default profile, standing in for the cluster's kube-scheduler\n", path)
	}
	return cfg, nil
}

// loadInputs reads the objects a simulation starts from: manifest files,
// or, when from is set, a live cluster's objects (read-only, within
// from's limits) plus the manifests' objects. Every run, the shadow one
// included, starts from what it returns.
func loadInputs(ctx context.Context, args []string, from *fromClusterFlags, kubeconfig string, log hclog.Logger) (*sim.Objects, error) {
	if from == nil {
		return sim.LoadFiles(args...)
	}
	client, err := clusterread.Client(kubeconfig, clusterread.Limits{MaxPageBytes: int64(from.maxPageBytes), MaxBytes: int64(from.maxBytes)})
	if err != nil {
		return nil, fromClusterError(err)
	}
	objs, err := clusterread.Read(ctx, client, clusterread.Options{RequestTimeout: from.requestTimeout, Timeout: from.timeout, Log: log})
	if err != nil {
		return nil, fromClusterError(err)
	}
	if err := objs.ReadFiles(args...); err != nil {
		return nil, err
	}
	return objs, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printComparison prints one line per pod — where it went, or why not,
// under each configuration, and the change — then the counts. When the
// lines would not fit the terminal (tableWidth), a pod placed in neither
// run shows only its status in the table, the reasons follow it, one
// line each, and the profile column gives way first.
func printComparison(w io.Writer, c *sim.Comparison) error {
	width := tableWidth(w)
	build := func(short bool) *table {
		t := newTable("POD\tPROFILE\tLIVE\tSHADOW\tCHANGE")
		t.flex = []flexColumn{{1, 8}, {3, minFlex}, {2, minFlex}}
		for _, p := range c.Pods {
			profile := p.Profile
			if profile == "" {
				profile = "-"
			}
			live, shadow := outcome(p.Live), outcome(p.Shadow)
			if short {
				live, shadow = placement(p.Live), placement(p.Shadow)
			}
			t.add(p.Namespace+"/"+p.Name, profile, live, shadow, string(p.Change))
		}
		return t
	}
	t := build(false)
	short := !t.fits(width)
	if short {
		t = build(true)
	}
	if err := t.write(w, width); err != nil {
		return err
	}
	if short {
		var reasons []string
		for _, p := range c.Pods {
			for _, side := range []struct {
				name string
				r    *sim.PodResult
			}{{"live", p.Live}, {"shadow", p.Shadow}} {
				if side.r == nil || side.r.Message == "" {
					continue
				}
				if _, placed := side.r.Placed(); placed {
					continue
				}
				reasons = append(reasons, cut(fmt.Sprintf("%s/%s %s: %s", p.Namespace, p.Name, side.name, guest.Text(side.r.Message)), width))
			}
		}
		if len(reasons) > 0 {
			fmt.Fprintf(w, "\nREASONS (cut to the terminal; -o json has them whole)\n%s\n", strings.Join(reasons, "\n"))
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", summaryLine(c.Summary))
	return err
}

// summaryLine is a comparison's counts, as simulate --shadow prints them.
func summaryLine(s sim.Summary) string {
	return fmt.Sprintf("%d pods: %d same, %d moved, %d newly unschedulable, %d newly placed",
		s.Pods, s.Same, s.Moved, s.NewlyUnschedulable, s.NewlyPlaced)
}

// outcome is one run's result for a comparison cell: the node a placed
// pod runs on, else its status and message, on one line.
func outcome(r *sim.PodResult) string {
	if r == nil {
		return "(absent)"
	}
	if node, ok := r.Placed(); ok {
		return node
	}
	s := r.Status
	if r.Message != "" {
		// One pod, one line: a message may carry a guest's text.
		s += ": " + guest.Text(r.Message)
	}
	return s
}

func printTable(w io.Writer, rep *sim.Report) error {
	width := tableWidth(w)
	t := newTable("POD\tPROFILE\tNODE\tSTATUS", 3)
	for _, p := range rep.Pods {
		node, status := p.Node, p.Status
		if node == "" {
			node = "-"
		}
		if p.Message != "" {
			// One pod, one line: a message may carry a guest's text.
			status += ": " + guest.Text(p.Message)
		}
		profile := p.Profile
		if profile == "" {
			profile = "-"
		}
		t.add(p.Namespace+"/"+p.Name, profile, node, status)
	}
	if err := t.write(w, width); err != nil {
		return err
	}
	if len(rep.Preemptions) > 0 {
		fmt.Fprintln(w, "\nPREEMPTIONS")
		t = newTable("PREEMPTOR\tVICTIM\tNODE\tHOW")
		for _, p := range rep.Preemptions {
			t.add(p.Preemptor, p.Victim, p.Node, p.How)
		}
		if err := t.write(w, width); err != nil {
			return err
		}
	}
	if rep.Eviction != nil {
		if err := printEviction(w, rep.Eviction); err != nil {
			return err
		}
	}
	if rep.VPods != nil {
		if err := printVPods(w, rep.VPods); err != nil {
			return err
		}
	}
	if len(rep.Preemptions) == 0 && (rep.Eviction == nil || len(rep.Eviction.Evictions) == 0) {
		return nil
	}
	fmt.Fprintln(w, "\nTIMELINE")
	t = newTable("#\tCALL\tPOD\tNODE\tDETAIL", 4)
	for _, e := range rep.Timeline {
		node, detail := e.Node, e.Detail
		if node == "" {
			node = "-"
		}
		if e.Err != "" {
			detail = "ERROR " + guest.Text(e.Err)
		}
		t.add(strconv.FormatUint(uint64(e.Seq), 10), string(e.Op), e.Pod, node, detail)
	}
	return t.write(w, width)
}

// printVPods prints each vpod scheduler's outcome: per vpod its
// placements and pending vreplicas, then every autoscaler pass with its
// target and the placements compaction evicted.
func printVPods(w io.Writer, rep *sim.VPodReport) error {
	width := tableWidth(w)
	for _, v := range rep.Ignored {
		fmt.Fprintf(w, "\nVPOD %s ignored: %s\n", v.VPod, guest.Text(v.Error))
	}
	for _, s := range rep.Schedulers {
		fmt.Fprintf(w, "\nVPODS %s (StatefulSet %s, %s)\n", s.Name, s.StatefulSet, s.Strategy)
		if s.Error != "" {
			fmt.Fprintf(w, "not run: %s\n", s.Error)
			continue
		}
		t := newTable("VPOD\tVREPLICAS\tPENDING\tPLACEMENTS\tERROR", 4, 3)
		for _, v := range s.VPods {
			ps := make([]string, len(v.Placements))
			for i, p := range v.Placements {
				ps[i] = fmt.Sprintf("%s=%d", p.PodName, p.VReplicas)
			}
			place := strings.Join(ps, " ")
			if place == "" {
				place = "-"
			}
			errText := "-"
			if v.Error != "" {
				errText = guest.Text(v.Error)
			}
			t.add(v.VPod, strconv.Itoa(int(v.VReplicas)), strconv.Itoa(int(v.Pending)), place, errText)
		}
		if err := t.write(w, width); err != nil {
			return err
		}
		fmt.Fprintf(w, "replicas %d -> %d\n", s.ReplicasBefore, s.ReplicasAfter)
		if len(s.Passes) == 0 {
			continue
		}
		t = newTable("AUTOSCALER\tREPLICAS\tTARGET\tACTION\tEVICTED", 4, 3)
		for _, p := range s.Passes {
			action := "none"
			switch {
			case p.Error != "":
				action = "error: " + guest.Text(p.Error)
			case p.Scaled:
				action = fmt.Sprintf("scaled to %d", p.Target)
			case p.Compacted:
				action = "compacted"
			}
			switch {
			case p.Bounded && p.Capped:
				action += fmt.Sprintf(" (bounded by maxScaleUpStep at %d, the vpods need %d, then capped at maxReplicas; wanted %d)", p.Bound, p.Need, p.Wanted)
			case p.Bounded:
				action += fmt.Sprintf(" (bounded by maxScaleUpStep at %d, the vpods need %d; wanted %d)", p.Bound, p.Need, p.Wanted)
			case p.Capped:
				action += fmt.Sprintf(" (capped at maxReplicas; wanted %d)", p.Wanted)
			}
			ev := make([]string, len(p.Evictions))
			for i, e := range p.Evictions {
				ev[i] = fmt.Sprintf("%s from %s (%d)", e.VPod, e.Pod, e.VReplicas)
			}
			evicted := strings.Join(ev, ", ")
			if evicted == "" {
				evicted = "-"
			}
			t.add(p.Kind, strconv.Itoa(int(p.Replicas)), strconv.Itoa(int(p.Target)), action, evicted)
		}
		if err := t.write(w, width); err != nil {
			return err
		}
	}
	return nil
}

// printEviction prints what the eviction rounds did: each pod chosen, by
// which policy and why, what became of it and of its replacement; the
// nodes whose eviction taints changed; dry-run choices; dropped calls.
func printEviction(w io.Writer, ev *sim.EvictionReport) error {
	width := tableWidth(w)
	fmt.Fprintf(w, "\nEVICTIONS (%d rounds)\n", ev.Rounds)
	if len(ev.Evictions) == 0 {
		fmt.Fprintln(w, "none")
	} else {
		t := newTable("ROUND\tPOD\tNODE\tPOLICY\tSCOPE\tOUTCOME\tREPLACEMENT\tREASON", 7, 5)
		for _, e := range ev.Evictions {
			repl := "-"
			if e.Replacement != "" {
				where := e.ReplacementNode
				if where == "" {
					where = e.ReplacementStatus
				}
				repl = e.Replacement + " -> " + where
			}
			t.add(strconv.Itoa(e.Round), e.Pod, e.Node, e.Policy, e.Scope, guest.Text(e.Outcome), repl, guest.Text(e.Reason))
		}
		if err := t.write(w, width); err != nil {
			return err
		}
	}
	if len(ev.Taints) > 0 {
		fmt.Fprintln(w, "\nNODE TAINTS")
		tb := newTable("ROUND\tNODE\tEVICTION TAINTS NOW", 2)
		for _, t := range ev.Taints {
			now := strings.Join(t.Taints, ",")
			if now == "" {
				now = "(removed)"
			}
			if t.Error != "" {
				now += " ERROR " + guest.Text(t.Error)
			}
			tb.add(strconv.Itoa(t.Round), t.Node, now)
		}
		if err := tb.write(w, width); err != nil {
			return err
		}
	}
	if len(ev.DryRun) > 0 {
		fmt.Fprintln(w, "\nDRY RUN (not evicted)")
		t := newTable("ROUND\tPOD\tNODE\tPOLICY\tSCOPE\tREASON", 5)
		for _, e := range ev.DryRun {
			t.add(strconv.Itoa(e.Round), e.Pod, e.Node, e.Policy, e.Scope, guest.Text(e.Reason))
		}
		if err := t.write(w, width); err != nil {
			return err
		}
	}
	if len(ev.Failures) > 0 {
		fmt.Fprintln(w, "\nPOLICY FAILURES (answers dropped)")
		t := newTable("ROUND\tPOLICY\tCALL\tERROR", 3)
		for _, f := range ev.Failures {
			t.add(strconv.Itoa(f.Round), f.Policy, f.Call, guest.Text(f.Error))
		}
		return t.write(w, width)
	}
	return nil
}
