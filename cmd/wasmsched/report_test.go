package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

func TestReportIsSelfContainedAndEscapes(t *testing.T) {
	const evil = `<script>alert("x")</script>`
	rep := &sim.Report{
		Pods: []sim.PodResult{
			{Namespace: "web", Name: "a", Status: sim.StatusScheduled, Node: "n1"},
			{Namespace: "web", Name: "b", Status: sim.StatusUnschedulable, Message: "0/2 nodes are available: 2 " + evil + "."},
			{Namespace: "web", Name: "c", Status: sim.StatusUnschedulable, Message: "0/2 nodes are available: 2 " + evil + "."},
		},
		Nodes: []sim.NodeResult{
			{Name: "n2", MilliCPU: sim.ResourceUse{Allocatable: 4000}, Pods: []string{}},
			{Name: "n1", Zone: "zone-b", MilliCPU: sim.ResourceUse{Requested: 6000, Allocatable: 4000}, MemoryBytes: sim.ResourceUse{Requested: 6871947674, Allocatable: 16 << 30}, Pods: []string{"web/a"}},
		},
		VPods: &sim.VPodReport{Schedulers: []sim.VPodSchedulerReport{{Name: "s", VPods: []sim.VPodResult{
			{VPod: "ns/v1", VReplicas: 5, Placements: []vpod.Placement{{PodName: "disp-10", VReplicas: 2}, {PodName: "disp-2", VReplicas: 3}}},
		}}}},
	}
	var buf bytes.Buffer
	if err := renderReport(&buf, &watchRun{live: rep}, []string{"dir/cluster.yaml"}, 0); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, evil) || strings.Contains(page, "<script>alert") {
		t.Errorf("a message's markup reached the page unescaped")
	}
	// No network: nothing is loaded from anywhere.
	if m := regexp.MustCompile(`(?i)(https?:|//[a-z]|src=|<link|@import|url\()`).FindString(page); m != "" {
		t.Errorf("the page refers outside itself: %q", m)
	}
	for _, want := range []string{
		`<span class="n" id="count-unschedulable">2</span>`,
		`<span class="count">2</span><span class="reason">0/2 nodes are available: 2 &lt;script&gt;`, // grouped and counted
		`<span class="cpu-requested">6</span> / <span class="cpu-allocatable">4</span> (<span class="cpu-percent">100</span>%)`,
		`<span class="memory-requested">6.4Gi</span>`,
		`style="--pct: 100"`,
		`<th class="num">disp-2</th><th class="num">disp-10</th>`, // adapter pods by ordinal
		`<td class="num total">5</td>`,
		`<title>wasmsched simulate: cluster.yaml</title>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	// Named zones first, then the nodes without one.
	if b, none := strings.Index(page, `data-zone="zone-b"`), strings.Index(page, `data-zone=""`); b < 0 || none < b {
		t.Errorf("zone order: zone-b at %d, no zone at %d", b, none)
	}
}

func TestSimulateReportWritesThePage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "r.html")
	out, errOut, err := simulateWithStderr(t, "../../examples/preemption.yaml", "--report", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`id="preemptions"`, `data-key="jobs/report"`, `class="chosen-node"`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("page lacks %s", want)
		}
	}
	if !strings.Contains(errOut, "; report in "+file) {
		t.Errorf("summary line does not name the report: %q", errOut)
	}
	if _, err := simulate(t, "--watch", "--report", file, "../../examples/preemption.yaml"); err == nil || !strings.Contains(err.Error(), "--report") {
		t.Errorf("--report with --watch: %v", err)
	}
	if _, err := simulate(t, "--report", filepath.Join(t.TempDir(), "no", "such", "dir", "r.html"), "../../examples/preemption.yaml"); err == nil || !strings.Contains(err.Error(), "--report") {
		t.Errorf("an unwritable --report: %v", err)
	}
}
