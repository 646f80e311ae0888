package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/run/sim"
)

// TestTableKeepsEachPodOnOneLine: a message with line breaks (a stack
// trace, a guest's forged table row) stays on its pod's line.
func TestTableKeepsEachPodOnOneLine(t *testing.T) {
	rep := &sim.Report{Pods: []sim.PodResult{
		{Namespace: "default", Name: "a", Profile: "default-scheduler", Status: sim.StatusSchedulerError,
			Message: "wasm error: unreachable\nwasm stack trace:\n\t.main.Filter(i32)\ndefault/forged  default-scheduler  n1  Scheduled\x1b[2K"},
		{Namespace: "default", Name: "b", Profile: "default-scheduler", Node: "n1", Status: sim.StatusScheduled},
	}}
	var out bytes.Buffer
	if err := printTable(&out, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want a header and one per pod:\n%s", len(lines), out.String())
	}
	if strings.Contains(out.String(), "\x1b") || !strings.HasPrefix(lines[1], "default/a ") || !strings.HasPrefix(lines[2], "default/b ") {
		t.Errorf("table:\n%s", out.String())
	}
}
