package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wasmsched/wasmsched/host/tools/perfdriver"
	"github.com/wasmsched/wasmsched/host/tools/stats"
)

// The targets a scheduler measured against the baseline is held to, as
// ratios to the baseline's medians: at least its pods/s while pods are
// created, twice its drain rate on a backlog, at most 0.3× its CPU
// seconds per pod and 0.6× its peak RSS.
const (
	targetPodsPerSecond        = 1.0
	targetBacklogPodsPerSecond = 2.0
	targetCPUPerPod            = 0.3
	targetPeakRSS              = 0.6
)

// compareGroup is the runs of one scheduler (label) at one size and shape,
// summarised by medians.
type compareGroup struct {
	Label string `json:"label"`
	Nodes int    `json:"nodes"`
	// Shape is the measured pods' shape, with " backlog" for a backlog
	// drain.
	Shape string `json:"shape"`
	// Runs counts the runs read; Complete those whose every measured pod
	// was bound (only they enter the medians).
	Runs     int `json:"runs"`
	Complete int `json:"complete"`
	// PodsPerSecond is scheduler_perf's SchedulingThroughput average
	// while pods are created, the drain rate on a backlog.
	PodsPerSecond    float64 `json:"podsPerSecond"`
	CPUSecondsPerPod float64 `json:"cpuSecondsPerPod"`
	PeakRSSBytes     float64 `json:"peakRSSBytes"`
	ColdStartSeconds float64 `json:"coldStartSeconds"`
	// PodsWithScheduledEvent and Pods are those of the run with the
	// fewest pods with a Scheduled Event (-1: Events not counted).
	PodsWithScheduledEvent int `json:"podsWithScheduledEvent"`
	Pods                   int `json:"pods"`
	// FailedBindings is the most any run saw (-1: not counted).
	FailedBindings int `json:"failedBindings"`
	// Files are the reports read.
	Files []string `json:"files"`
}

// compareRatio sets one scheduler's medians beside the baseline's.
type compareRatio struct {
	Label    string `json:"label"`
	Baseline string `json:"baseline"`
	Nodes    int    `json:"nodes"`
	Shape    string `json:"shape"`
	// Each ratio is label ÷ baseline (0: a side lacks the number), with
	// its target and whether it is met.
	PodsPerSecond    ratioTarget `json:"podsPerSecond"`
	CPUSecondsPerPod ratioTarget `json:"cpuSecondsPerPod"`
	PeakRSS          ratioTarget `json:"peakRSS"`
}

type ratioTarget struct {
	Ratio float64 `json:"ratio"`
	// Target is the bound; AtLeast says whether the ratio must reach it
	// (pods/s) or stay under it (CPU, memory).
	Target  float64 `json:"target"`
	AtLeast bool    `json:"atLeast"`
	Met     bool    `json:"met"`
}

func newRatio(v, base, target float64, atLeast bool) ratioTarget {
	r := ratioTarget{Target: target, AtLeast: atLeast}
	if v > 0 && base > 0 {
		r.Ratio = v / base
		r.Met = (atLeast && r.Ratio >= target) || (!atLeast && r.Ratio <= target)
	}
	return r
}

func (r ratioTarget) String() string {
	if r.Ratio == 0 {
		return "-"
	}
	op, verdict := "≤", "missed"
	if r.AtLeast {
		op = "≥"
	}
	if r.Met {
		verdict = "met"
	}
	return fmt.Sprintf("%.2f× (%s%g× %s)", r.Ratio, op, r.Target, verdict)
}

// perfComparison is what perf compare prints, and writes as JSON.
type perfComparison struct {
	Groups []compareGroup `json:"groups"`
	Ratios []compareRatio `json:"ratios"`
}

func newPerfCompareCommand() *cobra.Command {
	var baseline, output string
	cmd := &cobra.Command{
		Use:   "compare FILE|DIR...",
		Short: "Set the JSON reports of perf runs side by side, with ratios to a baseline scheduler",
		Long: `compare reads the reports perf -o json wrote (files, or every *.json report in
a directory) and prints one row per scheduler (--label), size and shape:
the medians over complete runs of pods/s (SchedulingThroughput's average
while pods are created; the drain rate of a backlog), the scheduler's CPU
seconds per pod placed, its peak RSS and cold start, the Scheduled Events
of the worst run and its failed bindings. Then, for each other scheduler,
its ratios to --baseline's medians against the targets: pods/s ≥ 1× (a
backlog: ≥ 2×), CPU s/pod ≤ 0.3×, peak RSS ≤ 0.6×.`,
		Example: `  wasmsched perf compare --baseline kube-scheduler results/`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o: want table or json, not %q", output)
			}
			reps, files, err := readPerfReports(args)
			if err != nil {
				return err
			}
			c, err := compareReports(reps, files, baseline)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(c)
			}
			return printPerfComparison(cmd.OutOrStdout(), c, baseline)
		},
	}
	cmd.Flags().StringVar(&baseline, "baseline", "kube-scheduler", "the label (perf --label) the others are divided by")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}

// readPerfReports reads the reports named by args: files, or the *.json
// files of directories that hold a perf report (others are skipped, so a
// results directory may hold the comparison too).
func readPerfReports(args []string) ([]*perfdriver.Report, []string, error) {
	var reps []*perfdriver.Report
	var files []string
	read := func(path string, mustBeReport bool) error {
		b, err := readReport(path)
		if err != nil {
			return err
		}
		var rep perfdriver.Report
		if err := json.Unmarshal(b, &rep); err != nil || rep.Run == "" || rep.Nodes == 0 {
			if !mustBeReport {
				return nil
			}
			if err == nil {
				err = errors.New("no run and nodes in it")
			}
			return fmt.Errorf("%s is not a perf -o json report: %w", path, err)
		}
		reps, files = append(reps, &rep), append(files, path)
		return nil
	}
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, nil, fmt.Errorf("perf report: %w", err)
		}
		if !st.IsDir() {
			if err := read(a, true); err != nil {
				return nil, nil, err
			}
			continue
		}
		names, err := filepath.Glob(filepath.Join(a, "*.json"))
		if err != nil {
			return nil, nil, fmt.Errorf("perf reports in %s: %w", a, err)
		}
		sort.Strings(names)
		for _, n := range names {
			if err := read(n, false); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(reps) == 0 {
		return nil, nil, fmt.Errorf("no perf reports in %s", strings.Join(args, ", "))
	}
	return reps, files, nil
}

// compareReports groups the reports by scheduler, size and shape, and
// divides every other scheduler's medians by baseline's.
func compareReports(reps []*perfdriver.Report, files []string, baseline string) (perfComparison, error) {
	type key struct {
		label string
		nodes int
		shape string
	}
	groups := map[key]*compareGroup{}
	var samples = map[key]*struct{ pps, cpu, rss, cold []float64 }{}
	for i, r := range reps {
		label := r.Label
		if label == "" {
			label = r.Scheduler
		}
		shape := r.Shape
		if shape == "" {
			shape = perfdriver.ShapeSchedulingBasic
		}
		if r.Backlog {
			shape += " backlog"
		}
		k := key{label, r.Nodes, shape}
		g := groups[k]
		if g == nil {
			g = &compareGroup{Label: label, Nodes: r.Nodes, Shape: shape, PodsWithScheduledEvent: -1, FailedBindings: -1}
			groups[k] = g
			samples[k] = &struct{ pps, cpu, rss, cold []float64 }{}
		}
		g.Runs++
		g.Files = append(g.Files, files[i])
		if !r.Complete {
			continue
		}
		g.Complete++
		s := samples[k]
		pps := r.Throughput.Average
		if r.Backlog || pps == 0 {
			pps = r.PodsPerSecond
		}
		s.pps = append(s.pps, pps)
		s.cpu = append(s.cpu, r.SchedulerCPUSecondsPerPod)
		s.rss = append(s.rss, float64(r.SchedulerPeakRSSBytes))
		s.cold = append(s.cold, r.ColdStartSeconds)
		if e := r.Events; e != nil {
			if g.PodsWithScheduledEvent < 0 || e.PodsScheduled < g.PodsWithScheduledEvent {
				g.PodsWithScheduledEvent, g.Pods = e.PodsScheduled, r.Pods
			}
			g.FailedBindings = max(g.FailedBindings, e.FailedBindings)
		}
	}
	var c perfComparison
	for k, g := range groups {
		s := samples[k]
		g.PodsPerSecond, g.CPUSecondsPerPod, g.PeakRSSBytes, g.ColdStartSeconds = median(s.pps), median(s.cpu), median(s.rss), median(s.cold)
		c.Groups = append(c.Groups, *g)
	}
	slices.SortFunc(c.Groups, func(a, b compareGroup) int {
		if a.Nodes != b.Nodes {
			return a.Nodes - b.Nodes
		}
		if a.Shape != b.Shape {
			return strings.Compare(a.Shape, b.Shape)
		}
		// The baseline last in its block, the ratios' denominators.
		if (a.Label == baseline) != (b.Label == baseline) {
			if a.Label == baseline {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Label, b.Label)
	})
	found := false
	for _, g := range c.Groups {
		if g.Label == baseline {
			found = true
			continue
		}
		base := groups[key{baseline, g.Nodes, g.Shape}]
		if base == nil {
			continue
		}
		pps := targetPodsPerSecond
		if strings.HasSuffix(g.Shape, " backlog") {
			pps = targetBacklogPodsPerSecond
		}
		c.Ratios = append(c.Ratios, compareRatio{Label: g.Label, Baseline: baseline, Nodes: g.Nodes, Shape: g.Shape,
			PodsPerSecond:    newRatio(g.PodsPerSecond, base.PodsPerSecond, pps, true),
			CPUSecondsPerPod: newRatio(g.CPUSecondsPerPod, base.CPUSecondsPerPod, targetCPUPerPod, false),
			PeakRSS:          newRatio(g.PeakRSSBytes, base.PeakRSSBytes, targetPeakRSS, false)})
	}
	if !found && len(c.Groups) > 0 {
		labels := map[string]bool{}
		for _, g := range c.Groups {
			labels[g.Label] = true
		}
		return c, fmt.Errorf("--baseline %q: no report has that label (they have %s)", baseline, strings.Join(slices.Sorted(maps.Keys(labels)), ", "))
	}
	return c, nil
}

// readReport reads a report file: a regular file (not a FIFO a read
// would wait on for ever) of at most config.MaxFileBytes.
func readReport(path string) ([]byte, error) {
	b, err := perfdriver.ReadReportFile(path)
	if err != nil {
		return nil, fmt.Errorf("perf report: %w", err)
	}
	return b, nil
}

// median of xs, ignoring zeros (a number a run did not have); 0 when
// none is left.
func median(xs []float64) float64 {
	v := slices.DeleteFunc(slices.Clone(xs), func(x float64) bool { return !(x > 0) })
	if len(v) == 0 {
		return 0
	}
	return stats.Median(v)
}

func printPerfComparison(w io.Writer, c perfComparison, baseline string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "scheduler\tnodes\tshape\truns\tpods/s\tCPU s/pod\tpeak RSS\tcold start\tScheduled Events\tfailed bindings")
	num := func(format string, v float64) string {
		if v == 0 {
			return "-"
		}
		return fmt.Sprintf(format, v)
	}
	for _, g := range c.Groups {
		runs := fmt.Sprint(g.Runs)
		if g.Complete != g.Runs {
			runs = fmt.Sprintf("%d (%d incomplete)", g.Runs, g.Runs-g.Complete)
		}
		events, failed := "-", "-"
		if g.PodsWithScheduledEvent >= 0 {
			events = fmt.Sprintf("%d/%d", g.PodsWithScheduledEvent, g.Pods)
			failed = fmt.Sprint(g.FailedBindings)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Label, g.Nodes, g.Shape, runs,
			num("%.0f", g.PodsPerSecond), num("%.4f", g.CPUSecondsPerPod), num("%.0f MiB", g.PeakRSSBytes/(1<<20)),
			num("%.1fs", g.ColdStartSeconds), events, failed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(c.Ratios) == 0 {
		_, err := fmt.Fprintf(w, "\nno ratios: no scheduler was measured beside %s at the same size and shape\n", baseline)
		return err
	}
	fmt.Fprintf(w, "\nmedians ÷ %s's\n", baseline)
	fmt.Fprintln(tw, "scheduler\tnodes\tshape\tpods/s\tCPU s/pod\tpeak RSS")
	for _, r := range c.Ratios {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Label, r.Nodes, r.Shape, r.PodsPerSecond, r.CPUSecondsPerPod, r.PeakRSS)
	}
	return tw.Flush()
}
