package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/sim"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testwait"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
)

// spreadConfig is the default profile written out: LeastAllocated.
const spreadConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
`

// brokenConfig misspells a field; the loader names it and its line.
const brokenConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerNam: default-scheduler
`

// watching is the line the loop prints after each run, good or not.
const watching = "--- watching "

// startLoop runs watchLoop in a goroutine and returns a function that
// cancels it and returns its error.
func startLoop(t *testing.T, out io.Writer, o watchOptions) (stop func() error) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if o.Debounce == 0 {
		o.Debounce = 50 * time.Millisecond
	}
	if o.Output == "" {
		o.Output = "table"
	}
	o.Seed = 1
	o.Log = hclog.NewNullLogger()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watchLoop(ctx, out, o) }()
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("watchLoop did not return after its context was cancelled")
			return nil
		}
	}
	t.Cleanup(func() { stop() })
	return stop
}

// waitRuns waits until the loop has finished n runs (good or failed) and
// returns the notes written so far.
func waitRuns(t *testing.T, notes *testlog.Buffer, n int) string {
	t.Helper()
	var s string
	if !testwait.Within(90*time.Second, func() bool {
		s = notes.String()
		return strings.Count(s, watching) >= n
	}) {
		t.Fatalf("waited for run %d; output so far:\n%s", n, s)
	}
	return s
}

// runOutput returns the part of the output that run n (1-based) printed: from
// after the (n-1)th watching line to the nth.
func runOutput(s string, n int) string {
	parts := strings.Split(s, watching)
	if n-1 >= len(parts) {
		return ""
	}
	return parts[n-1]
}

// writeFile replaces path as an editor does: a new file renamed over the
// old one.
func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func copyTestdata(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The loop runs, re-runs on each edit of the configuration with what
// changed, survives a broken configuration keeping the last good run as
// the base, and ends with nil when cancelled.
func TestWatchLoopConfigEdits(t *testing.T) {
	dir := t.TempDir()
	cluster := copyTestdata(t, dir, "shadow-cluster.yaml")
	cfg := filepath.Join(dir, "wasmsched.yaml")
	if err := os.WriteFile(cfg, []byte(spreadConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	pack, err := os.ReadFile("testdata/shadow-pack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out testlog.Buffer
	stop := startLoop(t, &out, watchOptions{Manifests: []string{cluster}, ConfigPath: cfg})

	// Run 1: the plain table, no comparison yet.
	s := waitRuns(t, &out, 1)
	first := runOutput(s, 1)
	if !strings.HasPrefix(first, "POD") || strings.Contains(first, "CHANGES") || !strings.Contains(s, watching+"2 files;") {
		t.Errorf("first run:\n%s", s)
	}
	if !hasRow(first, "prod/web", "big") {
		t.Errorf("first run: prod/web not on big:\n%s", first)
	}

	// Run 2: bin packing moves web to small.
	writeFile(t, cfg, pack)
	s = waitRuns(t, &out, 2)
	second := runOutput(s, 2)
	for _, want := range []string{
		"--- re-running: " + cfg + " ---\n",
		"CHANGES SINCE THE LAST RUN\n",
		"prod/web: big -> small\n",
		"prod/wants-small: small -> Unschedulable\n",
		"infra/wants-tainted: Unschedulable -> tainted\n",
		wantShadowSummary + "\n",
	} {
		if !strings.Contains(second, want) {
			t.Errorf("second run lacks %q:\n%s", want, second)
		}
	}
	// Pods that stayed put get no line of their own.
	if strings.Contains(second, "prod/running:") || strings.Contains(second, "batch/wants-big:") {
		t.Errorf("second run lists unchanged pods:\n%s", second)
	}
	if !hasRow(second, "prod/web", "small") {
		t.Errorf("second run's table: prod/web not on small:\n%s", second)
	}

	// Run 3 fails: the error names the file, line and field, no table.
	writeFile(t, cfg, []byte(brokenConfig))
	s = waitRuns(t, &out, 3)
	third := runOutput(s, 3)
	if !strings.Contains(third, "error: "+cfg+":4") || !strings.Contains(third, "schedulerNam") || strings.Contains(third, "POD") {
		t.Errorf("broken configuration:\n%s", third)
	}

	// Run 4: fixed. The base is run 2 (the last good one), so web moves
	// back.
	writeFile(t, cfg, []byte(spreadConfig))
	s = waitRuns(t, &out, 4)
	fourth := runOutput(s, 4)
	if !strings.Contains(fourth, "prod/web: small -> big\n") || !strings.Contains(fourth, wantShadowSummary+"\n") {
		t.Errorf("fixed configuration, compared with run 2:\n%s", fourth)
	}
	if !hasRow(fourth, "prod/web", "big") {
		t.Errorf("fourth run's table:\n%s", fourth)
	}

	if err := stop(); err != nil {
		t.Errorf("watchLoop = %v, want nil after cancel", err)
	}
	if n := strings.Count(out.String(), watching); n != 4 {
		t.Errorf("%d runs, want 4:\n%s", n, out.String())
	}
}

// hasRow reports whether a result table has pod's row with node in its
// NODE (or, for a comparison, SHADOW) column.
func hasRow(s, pod, node string) bool {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == pod && f[2] == node {
			return true
		}
	}
	return false
}

// A module file is watched; an unchanged module is reused, not compiled
// again; a broken one is reported and the loop goes on. In -o json mode
// the results are a stream of JSON reports and the rest goes to Notes.
func TestWatchLoopModulesJSON(t *testing.T) {
	dir := t.TempDir()
	cluster := copyTestdata(t, dir, "shadow-cluster.yaml")
	wasmPath := filepath.Join(dir, "plugins.wasm")
	if err := os.WriteFile(wasmPath, dist.DefaultWasm, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "wasmsched.yaml")
	// The module replaces the builtin bundle: same plugins, from a file.
	if err := os.WriteFile(cfg, []byte(spreadConfig+"modules:\n- name: default\n  path: plugins.wasm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	promReg := prometheus.NewRegistry()
	m, err := metrics.New(promReg)
	if err != nil {
		t.Fatal(err)
	}
	var out, notes testlog.Buffer
	stop := startLoop(t, &out, watchOptions{Manifests: []string{cluster}, ConfigPath: cfg, Output: "json", Notes: &notes, Metrics: m})

	waitRuns(t, &notes, 1)
	if got := moduleLoads(t, promReg, "default", "success"); got != 1 {
		t.Errorf("first run: %v loads of module default, want 1", got)
	}

	// Run 2: a new pod in the manifest; the module is reused.
	extra := "---\napiVersion: v1\nkind: Pod\nmetadata: {name: late, namespace: prod}\nspec:\n  nodeSelector: {size: big}\n  containers: [{name: c, image: app}]\n"
	f, err := os.OpenFile(cluster, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := waitRuns(t, &notes, 2)
	second := runOutput(s, 2)
	if !strings.Contains(second, "--- re-running: "+cluster+" ---") || !strings.Contains(second, "prod/late: (absent) -> big\n") ||
		!strings.Contains(second, "7 pods: 6 same, 0 moved, 0 newly unschedulable, 1 newly placed\n") {
		t.Errorf("second run's notes:\n%s", second)
	}
	if got := moduleLoads(t, promReg, "default", "success"); got != 1 {
		t.Errorf("after a manifest change: %v loads of module default, want 1 (reused)", got)
	}

	// Run 3: the module is not Wasm.
	writeFile(t, wasmPath, []byte("not wasm"))
	s = waitRuns(t, &notes, 3)
	third := runOutput(s, 3)
	if !strings.Contains(third, "--- re-running: "+wasmPath+" ---") || !strings.Contains(third, "error: modules[0] ("+wasmPath+")") {
		t.Errorf("broken module:\n%s", third)
	}

	// Run 4: a rebuilt module (a custom section added) is compiled.
	// (wazero wants a payload: an empty one at the end reads as EOF.)
	rebuilt := append(append([]byte{}, dist.DefaultWasm...), 0x00, 0x05, 0x03, 'w', 'h', 'y', 1)
	writeFile(t, wasmPath, rebuilt)
	s = waitRuns(t, &notes, 4)
	fourth := runOutput(s, 4)
	if strings.Contains(fourth, "error") || !strings.Contains(fourth, "7 pods: 7 same, 0 moved") {
		t.Errorf("rebuilt module:\n%s", fourth)
	}
	if got := moduleLoads(t, promReg, "default", "success"); got != 2 {
		t.Errorf("after a rebuild: %v loads of module default, want 2", got)
	}
	if err := stop(); err != nil {
		t.Errorf("watchLoop = %v", err)
	}

	// Three good runs: three JSON reports, nothing else, on out.
	dec := json.NewDecoder(strings.NewReader(out.String()))
	var reports []sim.Report
	for dec.More() {
		var r sim.Report
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("out is not a stream of reports: %v\n%s", err, out.String())
		}
		reports = append(reports, r)
	}
	if len(reports) != 3 || len(reports[0].Pods) != 6 || len(reports[2].Pods) != 7 {
		t.Fatalf("%d reports:\n%s", len(reports), out.String())
	}
	if p := reports[2].Pod("prod", "late"); p == nil || p.Node != "big" {
		t.Errorf("last report: late = %+v", p)
	}
}

// moduleLoads reads wasmsched_module_loads_total{module,result}.
func moduleLoads(t *testing.T, reg *prometheus.Registry, module, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wasmsched_module_loads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["module"] == module && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// With --shadow both runs are compared with their previous selves.
func TestWatchLoopShadow(t *testing.T) {
	dir := t.TempDir()
	cluster := copyTestdata(t, dir, "shadow-cluster.yaml")
	shadow := copyTestdata(t, dir, "shadow-pack.yaml")
	var out testlog.Buffer
	startLoop(t, &out, watchOptions{Manifests: []string{cluster}, ShadowPath: shadow})
	first := runOutput(waitRuns(t, &out, 1), 1)
	if !strings.Contains(first, "POD") || !strings.Contains(first, wantShadowSummary) {
		t.Fatalf("first run:\n%s", first)
	}
	// The shadow becomes the default configuration: nothing changes live,
	// and the shadow's moved pods come back.
	writeFile(t, shadow, []byte(spreadConfig))
	second := runOutput(waitRuns(t, &out, 2), 2)
	for _, want := range []string{
		"--- re-running: " + shadow + " ---",
		"CHANGES SINCE THE LAST RUN, LIVE (--config)\n6 pods: 6 same, 0 moved, 0 newly unschedulable, 0 newly placed\n",
		"CHANGES SINCE THE LAST RUN, SHADOW (--shadow)\n",
		"prod/web: small -> big\n",
		wantShadowSummary + "\n",
	} {
		if !strings.Contains(second, want) {
			t.Errorf("second run lacks %q:\n%s", want, second)
		}
	}
	// The comparison itself: live and shadow now agree.
	if !strings.HasSuffix(second, "\n\n6 pods: 6 same, 0 moved, 0 newly unschedulable, 0 newly placed\n") {
		t.Errorf("second run's comparison:\n%s", second)
	}
}

// Standard input cannot be watched, and the command says so.
func TestSimulateWatchRefusesStdin(t *testing.T) {
	_, err := simulate(t, "--watch", "-")
	if err == nil || !strings.Contains(err.Error(), "standard input") {
		t.Errorf("simulate --watch -: err = %v", err)
	}
}

// Every pod the change list names is counted as changed, never "same":
// one that stays unplaced with another status (Unschedulable ->
// SchedulerError), and one new to the files that stays pending.
func TestWatchChangesCountWhatTheyList(t *testing.T) {
	before := &sim.Report{Pods: []sim.PodResult{
		{Namespace: "ns", Name: "stays", Node: "n1", Status: sim.StatusScheduled},
		{Namespace: "ns", Name: "broke", Status: sim.StatusUnschedulable},
	}}
	now := &sim.Report{Pods: []sim.PodResult{
		{Namespace: "ns", Name: "stays", Node: "n1", Status: sim.StatusScheduled},
		{Namespace: "ns", Name: "broke", Status: sim.StatusSchedulerError},
		{Namespace: "ns", Name: "new", Status: sim.StatusUnschedulable},
	}}
	var out strings.Builder
	printRunChanges(&out, before, now)
	want := "ns/broke: Unschedulable -> SchedulerError\n" +
		"ns/new: (absent) -> Unschedulable\n" +
		"3 pods: 1 same, 0 moved, 0 newly unschedulable, 0 newly placed, 2 changed status (placed in neither run)\n"
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
