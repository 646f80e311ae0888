package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
