package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/wasmsched/wasmsched/host/run/sim"
)

// lineWidths fails for every line of out wider than width runes.
func checkWidth(t *testing.T, out string, width int) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > width {
			t.Errorf("line of %d characters, over %d:\n%s", n, width, line)
		}
	}
}

func TestTableWithoutALimitIsTabwriters(t *testing.T) {
	rows := [][]string{{"POD", "NODE", "STATUS"}, {"web/a", "node-1", "Scheduled"}, {"web/bb", "-", strings.Repeat("long reason ", 20)}}
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		tw.Write([]byte(strings.Join(r, "\t") + "\n"))
	}
	tw.Flush()
	tb := newTable(strings.Join(rows[0], "\t"), 2)
	for _, r := range rows[1:] {
		tb.add(r...)
	}
	var got bytes.Buffer
	if err := tb.write(&got, 0); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("got\n%s\nwant\n%s", got.String(), want.String())
	}
}

func TestTableCutsItsFlexibleColumnsToTheWidth(t *testing.T) {
	tb := newTable("POD\tNODE\tSTATUS\tREASON", 3, 2)
	tb.add("web/a", "node-1", "Unschedulable", "0/6 nodes are available: "+strings.Repeat("3 Insufficient cpu, ", 10))
	tb.add("web/b", "node-2", "Scheduled", "-")
	var out bytes.Buffer
	if err := tb.write(&out, 60); err != nil {
		t.Fatal(err)
	}
	checkWidth(t, out.String(), 60)
	if !strings.Contains(out.String(), "Unschedulable  0/6 nodes are available: 3 In…") || !strings.Contains(out.String(), "Unschedulable") {
		t.Errorf("the reason (first to give way) is not cut, or the status is:\n%s", out.String())
	}
	// Uncuttable columns stay whole even when the line cannot fit.
	tb = newTable("POD\tSTATUS", 1)
	tb.add(strings.Repeat("p", 50), strings.Repeat("s", 50))
	out.Reset()
	tb.write(&out, 40)
	if !strings.Contains(out.String(), strings.Repeat("p", 50)+"  sssssssssss…") {
		t.Errorf("got\n%s", out.String())
	}
	if cut("héllo", 3) != "hé…" || cut("abc", 3) != "abc" || cut("abc", 0) != "" {
		t.Errorf("cut counts characters, not bytes")
	}
}

// simulateWithStderr is simulate that also returns what went to stderr.
func simulateWithStderr(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := newRootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(append([]string{"simulate", "--log-level", "off"}, args...))
	err := root.Execute()
	return out.String(), errOut.String(), err
}

func TestSimulateTablesFitColumnsAndJSONKeepsTheWholeMessage(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	out, _, err := simulateWithStderr(t, "../../examples/cluster.yaml", "--config", "../../examples/profiles.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkWidth(t, out, 80)
	if !strings.Contains(out, "web/ingress-3      default-scheduler  -         Unschedulable: 0/6 nodes are av…") {
		t.Errorf("the message is not cut at 80 columns:\n%s", out)
	}
	js, _, err := simulateWithStderr(t, "-o", "json", "../../examples/cluster.yaml", "--config", "../../examples/profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if p := rep.Pod("web", "ingress-3"); p == nil || !strings.HasSuffix(p.Message, "4 Preemption is not helpful for scheduling.") || strings.Contains(js, "…") {
		t.Errorf("-o json cut a message: %+v", p)
	}
}

func TestSimulateShadowIsReadableAt80Columns(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	out, _, err := simulateWithStderr(t, "testdata/shadow-cluster.yaml", "--shadow", "testdata/shadow-pack.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	checkWidth(t, out, 80)
	table, rest, _ := strings.Cut(out, "\n\n")
	lines := strings.Split(table, "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "POD PROFILE LIVE SHADOW CHANGE" || len(lines) != 1+len(wantShadowChanges) {
		t.Fatalf("table:\n%s", table)
	}
	// Every cell but the profile whole: the pod, each side's node or
	// status, the change.
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		want, ok := wantShadowChanges[f[0]]
		if !ok || len(f) != 5 {
			t.Errorf("line %q", line)
			continue
		}
		short := func(s string) string { status, _, _ := strings.Cut(s, ":"); return status }
		if f[2] != short(want.live) || f[3] != short(want.shadow) || f[4] != string(want.change) {
			t.Errorf("%s: %q, want %s %s %s", f[0], line, short(want.live), short(want.shadow), want.change)
		}
	}
	if !strings.Contains(rest, "REASONS") || !strings.Contains(rest, "prod/wants-small shadow: 0/3 nodes are available: 1 Insufficient cpu") ||
		!strings.Contains(out, wantShadowSummary) {
		t.Errorf("no reasons or summary after the table:\n%s", out)
	}
}

func TestProgressShowsOnlyOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, start: time.Now()}
	p.update(sim.Progress{Cycles: 10, Scheduled: 5, Pods: 100})
	p.clear()
	if buf.Len() != 0 {
		t.Errorf("not a terminal, yet progress wrote %q", buf.String())
	}
	p.tty = true
	p.update(sim.Progress{Cycles: 10, Scheduled: 5, Pods: 100})
	p.update(sim.Progress{Cycles: 11, Scheduled: 6, Pods: 100}) // within 100ms: not drawn
	if got := buf.String(); !strings.HasPrefix(got, "\r\033[Kscheduling: 5 of 100 pods placed, 10 cycles") || strings.Contains(got, "6 of 100") {
		t.Errorf("progress wrote %q", got)
	}
	buf.Reset()
	p.clear()
	if buf.String() != "\r\033[K" {
		t.Errorf("clear wrote %q", buf.String())
	}
	// A run shorter than the delay shows no progress at all.
	buf.Reset()
	q := &progress{w: &buf, tty: true, start: time.Now(), delay: time.Hour}
	q.update(sim.Progress{Cycles: 1})
	if buf.Len() != 0 {
		t.Errorf("a short run drew %q", buf.String())
	}
}

func TestSimulateEndsWithOneSummaryLine(t *testing.T) {
	out, errOut, err := simulateWithStderr(t, "../../examples/eviction-cluster.yaml", "--config", "../../examples/eviction.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "9 pods on 3 nodes: 2 scheduled, 0 unschedulable, 3 evicted (4 bound before) in ") {
		t.Errorf("summary line %q", last)
	}
	// -o json to a pipe: stdout is the JSON, stderr stays quiet.
	out, errOut, err = simulateWithStderr(t, "-o", "json", "../../examples/eviction-cluster.yaml", "--config", "../../examples/eviction.yaml")
	if err != nil || errOut != "" || !json.Valid([]byte(out)) {
		t.Errorf("-o json: err %v, stderr %q", err, errOut)
	}
}

func TestQuantitiesReadAsKubernetesQuantities(t *testing.T) {
	out, _, err := simulateWithStderr(t, "../../examples/eviction-cluster.yaml", "--config", "../../examples/eviction.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "e+0") {
		t.Errorf("a float in exponent form:\n%s", out)
	}
	for _, want := range []string{"in scope memory, target 6.4Gi, observed 7Gi", "in scope cpu, target 4, observed 4500m"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
