package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/run/sim"
)

// simulate runs `wasmsched simulate args...` with compiled modules cached
// in a directory of the test's, and returns what it printed.
func simulate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{"simulate", "--log-level", "off"}, args...))
	err := root.Execute()
	return out.String(), err
}

// The live run is the default configuration: LeastAllocated, and the
// TaintToleration filter. testdata/shadow-pack.yaml packs (MostAllocated)
// and drops that filter; testdata/shadow-cluster.yaml has one pod of each
// kind of change.
var wantShadowChanges = map[string]struct {
	live, shadow string
	change       sim.Change
}{
	"prod/running":        {"big", "big", sim.ChangeSame},
	"prod/web":            {"big", "small", sim.ChangeMoved},
	"prod/wants-small":    {"small", "Unschedulable: 0/3 nodes are available: 1 Insufficient cpu", sim.ChangeNewlyUnschedulable},
	"infra/wants-tainted": {"Unschedulable: 0/3 nodes are available: 1 node(s) had untolerated taint(s)", "tainted", sim.ChangeNewlyPlaced},
	"batch/too-big":       {"Unschedulable: ", "Unschedulable: 0/3 nodes are available: 3 Insufficient cpu", sim.ChangeSame},
	"batch/wants-big":     {"big", "big", sim.ChangeSame},
}

const wantShadowSummary = "6 pods: 3 same, 1 moved, 1 newly unschedulable, 1 newly placed"

func TestSimulateShadowTable(t *testing.T) {
	out, err := simulate(t, "testdata/shadow-cluster.yaml", "--shadow", "testdata/shadow-pack.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	table, why, ok := strings.Cut(out, "\n\nWHY MOVED")
	if !ok {
		t.Fatalf("no WHY MOVED section:\n%s", out)
	}
	// The shadow's scores of big (live) and small (its choice) for the
	// moved pod: packing prefers small.
	if !strings.Contains(why, "prod/web: big -> small: total ") || !strings.Contains(why, "NodeResourcesFit +") {
		t.Errorf("why moved:\n%s", why)
	}
	lines := strings.Split(table, "\n")
	// A header, one line per pod, a blank line, the summary.
	if len(lines) != 1+len(wantShadowChanges)+2 {
		t.Fatalf("%d lines:\n%s", len(lines), out)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "POD PROFILE LIVE SHADOW CHANGE" {
		t.Errorf("header %q", lines[0])
	}
	if lines[len(lines)-1] != wantShadowSummary || lines[len(lines)-2] != "" {
		t.Errorf("summary %q, want %q", lines[len(lines)-1], wantShadowSummary)
	}
	// Columns are found from the header: cells contain spaces.
	liveAt, shadowAt, changeAt := strings.Index(lines[0], "LIVE"), strings.Index(lines[0], "SHADOW"), strings.Index(lines[0], "CHANGE")
	seen := map[string]bool{}
	for _, line := range lines[1 : len(lines)-2] {
		pod := strings.Fields(line)[0]
		want, ok := wantShadowChanges[pod]
		if !ok || seen[pod] {
			t.Errorf("unexpected line %q", line)
			continue
		}
		seen[pod] = true
		live, shadow, change := line[liveAt:shadowAt], line[shadowAt:changeAt], strings.TrimSpace(line[changeAt:])
		if !strings.HasPrefix(live, want.live) || !strings.HasPrefix(shadow, want.shadow) || change != string(want.change) {
			t.Errorf("%s: live %q shadow %q change %q, want %q… %q… %q", pod, live, shadow, change, want.live, want.shadow, want.change)
		}
	}
}

func TestSimulateShadowJSON(t *testing.T) {
	out, err := simulate(t, "-o", "json", "--shadow", "testdata/shadow-pack.yaml", "testdata/shadow-cluster.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got sim.Comparison
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	want := sim.Summary{Pods: 6, Same: 3, Moved: 1, NewlyUnschedulable: 1, NewlyPlaced: 1}
	if got.Summary != want {
		t.Errorf("summary %+v, want %+v", got.Summary, want)
	}
	if len(got.Pods) != len(wantShadowChanges) {
		t.Fatalf("%d pods:\n%s", len(got.Pods), out)
	}
	for _, p := range got.Pods {
		key := p.Namespace + "/" + p.Name
		w := wantShadowChanges[key]
		if p.Change != w.change || p.Live == nil || p.Shadow == nil {
			t.Errorf("%s: %+v, want change %q and both results", key, p, w.change)
			continue
		}
		if node, ok := p.Shadow.Placed(); ok && node != w.shadow {
			t.Errorf("%s: shadow node %q, want %q", key, node, w.shadow)
		}
	}
	// The field names are the format's: check them on the raw JSON.
	var raw struct {
		Summary map[string]int `json:"summary"`
		Pods    []map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pods", "same", "moved", "newlyUnschedulable", "newlyPlaced"} {
		if _, ok := raw.Summary[k]; !ok {
			t.Errorf("summary lacks %q: %v", k, raw.Summary)
		}
	}
	for _, k := range []string{"namespace", "name", "live", "shadow", "change"} {
		if _, ok := raw.Pods[0][k]; !ok {
			t.Errorf("pod lacks %q: %v", k, raw.Pods[0])
		}
	}
}

// The same configuration as live and shadow changes nothing, and --config
// is what the live run uses.
func TestSimulateShadowOfItself(t *testing.T) {
	out, err := simulate(t, "testdata/shadow-cluster.yaml", "--config", "testdata/shadow-pack.yaml", "--shadow", "testdata/shadow-pack.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.HasSuffix(out, "\n6 pods: 6 same, 0 moved, 0 newly unschedulable, 0 newly placed\n") ||
		!strings.Contains(out, "infra/wants-tainted  default-scheduler  tainted") {
		t.Errorf("output:\n%s", out)
	}
}

// Without --shadow the output is the plain report, as before.
func TestSimulateWithoutShadow(t *testing.T) {
	out, err := simulate(t, "testdata/shadow-cluster.yaml", "-o", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not a report: %v\n%s", err, out)
	}
	if p := rep.Pod("prod", "web"); p == nil || p.Node != "big" || strings.Contains(out, `"change"`) {
		t.Errorf("report:\n%s", out)
	}
	out, err = simulate(t, "testdata/shadow-cluster.yaml")
	if err != nil || !strings.HasPrefix(out, "POD") || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "STATUS") {
		t.Errorf("table: %v\n%s", err, out)
	}
}

func TestSimulateShadowConfigErrors(t *testing.T) {
	_, err := simulate(t, "testdata/shadow-cluster.yaml", "--shadow", "testdata/no-such.yaml")
	if err == nil || !strings.Contains(err.Error(), "--shadow: ") || !strings.Contains(err.Error(), "no-such.yaml") {
		t.Errorf("missing shadow file: err = %v", err)
	}
	// A configuration that fails when its profiles are built fails the
	// shadow run, which the error names.
	_, err = simulate(t, "testdata/shadow-cluster.yaml", "--shadow", "testdata/shadow-bad-args.yaml")
	if err == nil || !strings.Contains(err.Error(), "shadow run with testdata/shadow-bad-args.yaml") || !strings.Contains(err.Error(), "scoringStrategy.type") {
		t.Errorf("bad shadow args: err = %v", err)
	}
}

// Each pod keeps one line, whatever its messages hold.
func TestComparisonTableKeepsEachPodOnOneLine(t *testing.T) {
	live := &sim.Report{Pods: []sim.PodResult{
		{Namespace: "default", Name: "a", Profile: "default-scheduler", Status: sim.StatusSchedulerError,
			Message: "wasm error: unreachable\nwasm stack trace:\n\t.main.Filter(i32)\ndefault/forged  x  n1  n1  same\x1b[2K"},
	}}
	shadow := &sim.Report{Pods: []sim.PodResult{
		{Namespace: "default", Name: "a", Profile: "default-scheduler", Node: "n1", Status: sim.StatusScheduled},
		{Namespace: "default", Name: "b", Status: sim.StatusNotOurs, Message: "no profile\r\nhas it"},
	}}
	var out bytes.Buffer
	if err := printComparison(&out, sim.Compare(live, shadow)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) != 5 || strings.Contains(out.String(), "\x1b") || strings.Contains(out.String(), "\r") {
		t.Fatalf("table:\n%q", out.String())
	}
	if f := strings.Fields(lines[1]); f[0] != "default/a" || f[len(f)-1] != "newly-placed" || f[len(f)-2] != "n1" {
		t.Errorf("line %q", lines[1])
	}
	if f := strings.Fields(lines[2]); f[0] != "default/b" || f[1] != "-" || f[2] != "(absent)" || f[len(f)-1] != "same" {
		t.Errorf("line %q", lines[2])
	}
	if lines[4] != "2 pods: 1 same, 0 moved, 0 newly unschedulable, 1 newly placed" {
		t.Errorf("summary %q", lines[4])
	}
}
