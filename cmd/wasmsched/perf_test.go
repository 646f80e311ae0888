package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/tools/perfdriver"
)

func TestPerfReportTableAndJSON(t *testing.T) {
	rep := &perfdriver.Report{Run: "perf-abcde", Scheduler: "default-scheduler", Nodes: 1000, InitPods: 1000, Pods: 5000,
		Bound: 5000, InitSeconds: 3.2, CreateSeconds: 6.04, WallSeconds: 10,
		Throughput: perfdriver.Summarize([]float64{400, 500, 600}), Samples: []float64{400, 500, 600}, Complete: true}
	var b bytes.Buffer
	if err := printPerf(&b, "table", rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"run            perf-abcde (scheduler default-scheduler)",
		"init pods      1000 scheduled in 3.2s",
		"measured pods  5000 created in 6.0s, 5000 bound in 10.0s (500.0 pods/s overall)",
		"SchedulingThroughput (pods/s, 3 samples of 1s)",
		"AVERAGE  PERC50  PERC90  PERC95  PERC99\n500.0    500.0   600.0   600.0   600.0\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}

	b.Reset()
	if err := printPerf(&b, "json", rep); err != nil {
		t.Fatal(err)
	}
	var back perfdriver.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Throughput != rep.Throughput || len(back.Samples) != 3 || back.Bound != 5000 {
		t.Fatalf("json round trip = %+v, %v\n%s", back, err, b.String())
	}

	b.Reset()
	rep.Throughput, rep.Samples = perfdriver.Throughput{}, nil
	if err := printPerf(&b, "table", rep); err != nil || !strings.Contains(b.String(), "no samples") {
		t.Fatalf("no-sample table: %v\n%s", err, b.String())
	}
}

func TestPerfRejectsUnknownOutput(t *testing.T) {
	root := newRootCommand()
	root.SetArgs([]string{"perf", "-o", "xml"})
	root.SetOut(&bytes.Buffer{})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "want table or json") {
		t.Fatalf("err = %v", err)
	}
}

// A run that did not complete prints what it measured under a banner
// saying so and why, and fails (exit 1), whether the driver returned an
// error or only an incomplete report.
func TestPerfIncompleteRunFails(t *testing.T) {
	why := "create pod perf-abcde/pod-1336: write: connection reset by peer"
	rep := &perfdriver.Report{Run: "perf-abcde", Scheduler: "default-scheduler", Nodes: 1000, Pods: 4000, Bound: 1336,
		WallSeconds: 10, Incomplete: why}
	var b bytes.Buffer
	err := perfOutcome(&b, "table", rep, errors.New("run perf-abcde incomplete (1336 of 4000 measured pods bound): "+why))
	if err == nil || !strings.Contains(err.Error(), "connection reset by peer") {
		t.Errorf("err = %v", err)
	}
	if !strings.HasPrefix(b.String(), "INCOMPLETE RUN: "+why+"\n") || !strings.Contains(b.String(), "1336 bound") {
		t.Errorf("table:\n%s", b.String())
	}
	b.Reset()
	if err := perfOutcome(&b, "json", rep, nil); err == nil || !strings.Contains(err.Error(), "1336 of 4000 measured pods bound") {
		t.Errorf("an incomplete report without an error: err = %v", err)
	}
	var back perfdriver.Report
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Complete || back.Incomplete != why {
		t.Errorf("json: %+v, %v", back, err)
	}
}

// The flags about the measured scheduler are checked together, before
// anything reaches an API server, each error naming the flag.
func TestPerfSchedulerFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--backlog"}, "--backlog: perf starts the scheduler once every measured pod exists; give the command that starts it with --scheduler-cmd"},
		{[]string{"--backlog", "--scheduler-cmd", "true", "--init-pods-bound=false"}, "--backlog with --init-pods-bound=false: the 500 init pods would wait"},
		{[]string{"--scheduler-cmd", "true", "--scheduler-pid", "1"}, "--scheduler-cmd and --scheduler-pid: give one"},
		{[]string{"--scheduler-cmd", "  "}, "--scheduler-cmd: empty command"},
		{[]string{"--scheduler-log", "x.log"}, "--scheduler-log: only the output of a scheduler perf starts (--scheduler-cmd)"},
		{[]string{"--events-wait", "-1s"}, "--events-wait -1s: want 0"},
		{[]string{"--scheduler-cmd", "true", "--scheduler-log", "/nonexistent/dir/x.log"}, "--scheduler-log: open /nonexistent/dir/x.log"},
	} {
		root := newRootCommand()
		root.SetArgs(append([]string{"perf", "--kubeconfig", "/nonexistent/kubeconfig"}, c.args...))
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.args, err, c.want)
		}
	}
}

// A backlog's table says the pods were created with no scheduler and
// gives the drain, the CPU and the Events.
func TestPerfBacklogTable(t *testing.T) {
	rep := &perfdriver.Report{Run: "perf-abcde", Label: "wasmsched", Scheduler: "default-scheduler", Nodes: 1000, InitPods: 1000, InitPodsBound: true,
		Pods: 10000, Bound: 10000, CreateSeconds: 50, WallSeconds: 12.5, PodsPerSecond: 800, Backlog: true, FirstBindSeconds: 1.25,
		SchedulerCPUSeconds: 9, SchedulerCPUSecondsPerPod: 0.0009, Events: &perfdriver.EventCount{PodsScheduled: 10000, FailedBindings: 0},
		EventsWaitSeconds: 0.5, Complete: true}
	var b bytes.Buffer
	if err := printPerf(&b, "table", rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"run perf-abcde (wasmsched, scheduler default-scheduler)",
		"10000 created in 50.0s with no scheduler running",
		"backlog drain          10000 bound in 12.5s from the scheduler's start (800.0 pods/s)",
		"first bind             1.25s after the scheduler's start",
		"scheduler CPU          9.0s (0.90 ms per pod placed)",
		"Events                 10000 of 10000 measured pods have a Scheduled Event (0.5s after the last bind); 0 failed bindings",
	} {
		if !strings.Contains(squeeze(b.String()), squeeze(want)) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestPerfCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r perfdriver.Report) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	basic := func(label string, pps, cpu float64, rss int64, scheduled int) perfdriver.Report {
		return perfdriver.Report{Run: "perf-x", Label: label, Nodes: 1000, Pods: 100, InitPods: 10, Bound: 100, Complete: true,
			Shape: perfdriver.ShapeSchedulingBasic, Throughput: perfdriver.Throughput{Average: pps}, PodsPerSecond: pps / 2,
			SchedulerCPUSecondsPerPod: cpu, SchedulerPeakRSSBytes: rss, ColdStartSeconds: 2,
			Events: &perfdriver.EventCount{PodsScheduled: scheduled}}
	}
	write("a1.json", basic("wasmsched", 200, 0.001, 100<<20, 100))
	write("a2.json", basic("wasmsched", 300, 0.003, 120<<20, 99))
	write("a3.json", basic("wasmsched", 250, 0.002, 110<<20, 100))
	write("b1.json", basic("kube-scheduler", 100, 0.005, 200<<20, 100))
	bl := basic("wasmsched", 0, 0.001, 100<<20, 100)
	bl.Backlog, bl.PodsPerSecond = true, 700
	bl.Events.FailedBindings = 1
	write("c1.json", bl)
	bl = basic("kube-scheduler", 0, 0.004, 300<<20, 100)
	bl.Backlog, bl.PodsPerSecond = true, 300
	write("d1.json", bl)
	inc := basic("kube-scheduler", 5, 1, 1, 1)
	inc.Complete = false
	write("e1.json", inc)
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"groups": []}`), 0o644); err != nil {
		t.Fatal(err)
	}

	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"perf", "compare", dir})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"wasmsched       1000   SchedulingBasic          3                 250     0.0020     110 MiB   2.0s        99/100            0",
		"kube-scheduler  1000   SchedulingBasic          2 (1 incomplete)  100     0.0050     200 MiB   2.0s        100/100           0",
		"wasmsched       1000   SchedulingBasic backlog  1                 700     0.0010     100 MiB   2.0s        100/100           1",
		"medians ÷ kube-scheduler's",
		"wasmsched  1000   SchedulingBasic          2.50× (≥1× met)   0.40× (≤0.3× missed)  0.55× (≤0.6× met)",
		"wasmsched  1000   SchedulingBasic backlog  2.33× (≥2× met)   0.25× (≤0.3× met)     0.33× (≤0.6× met)",
	} {
		if !strings.Contains(squeeze(out.String()), squeeze(want)) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}

	root = newRootCommand()
	root.SetOut(&out)
	root.SetArgs([]string{"perf", "compare", "--baseline", "kube", dir})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `--baseline "kube": no report has that label (they have kube-scheduler, wasmsched)`) {
		t.Errorf("unknown baseline: %v", err)
	}
	root = newRootCommand()
	root.SetArgs([]string{"perf", "compare", filepath.Join(dir, "summary.json")})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "is not a perf -o json report") {
		t.Errorf("a file that is no report: %v", err)
	}
	root = newRootCommand()
	root.SetArgs([]string{"perf", "compare", t.TempDir()})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "no perf reports in") {
		t.Errorf("an empty directory: %v", err)
	}
}

// squeeze makes every run of spaces one, so tables are compared without
// their column widths.
func squeeze(s string) string {
	return regexp.MustCompile(` +`).ReplaceAllString(s, " ")
}
