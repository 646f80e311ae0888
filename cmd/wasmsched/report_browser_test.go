package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// chromiumPath is the browser the report's test drives: $WASMSCHED_CHROMIUM
// (make report-test sets it from scripts/chromium.sh), else chromium on
// PATH. Without one the test skips, saying how to get it; under CI=true
// with $WASMSCHED_CHROMIUM set, a missing binary fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WASMSCHED_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("WASMSCHED_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("SKIPPED: no chromium on PATH; make report-test installs Debian's (scripts/chromium.sh)")
	}
	return p
}

// reportCases are every example of examples/, and the shadow comparison.
var reportCases = []struct {
	name string
	args []string
}{
	{"cluster", []string{"../../examples/cluster.yaml", "--config", "../../examples/profiles.yaml"}},
	{"kube-scheduler-config", []string{"../../examples/cluster.yaml", "--config", "../../examples/kube-scheduler-config.yaml"}},
	{"preemption", []string{"../../examples/preemption.yaml"}},
	{"topology", []string{"../../examples/topology.yaml"}},
	{"eviction", []string{"../../examples/eviction-cluster.yaml", "--config", "../../examples/eviction.yaml"}},
	{"vpods", []string{"../../examples/vpods-cluster.yaml", "--config", "../../examples/vpods.yaml"}},
	{"shadow", []string{"testdata/shadow-cluster.yaml", "--shadow", "testdata/shadow-pack.yaml"}},
}

// pageFacts is what the page shows, read from its DOM.
type pageFacts struct {
	Scheduled     string      `json:"scheduled"`
	Unschedulable string      `json:"unschedulable"`
	Evicted       string      `json:"evicted"`
	Nodes         []nodeFacts `json:"nodes"`
	Explanations  int         `json:"explanations"`
	VPodTotals    []string    `json:"vpodTotals"`
	RoundRecords  int         `json:"roundRecords"`
	VPodRecords   int         `json:"vpodRecords"`
	Preemptions   []string    `json:"preemptions"` // per preempting attempt, the chosen candidate shown
	Moved         []string    `json:"moved"`
}

type nodeFacts struct {
	Name        string  `json:"name"`
	Zone        string  `json:"zone"`
	Pods        string  `json:"pods"`
	Chips       int     `json:"chips"`
	CPU         string  `json:"cpu"`
	CPUAlloc    string  `json:"cpuAlloc"`
	CPUPercent  string  `json:"cpuPercent"`
	Memory      string  `json:"memory"`
	FillPercent float64 `json:"fillPercent"` // the CPU bar's drawn width, of its track
}

const readPage = `(() => {
  const text = (el, sel) => { const x = el.querySelector(sel); return x ? x.textContent.trim() : ""; };
  return {
    scheduled: text(document, "#count-scheduled"),
    unschedulable: text(document, "#count-unschedulable"),
    evicted: text(document, "#count-evicted"),
    nodes: Array.from(document.querySelectorAll(".node")).map(n => {
      const track = n.querySelector(".bar.cpu .track").getBoundingClientRect().width;
      const fill = n.querySelector(".bar.cpu .fill").getBoundingClientRect().width;
      return { name: n.dataset.node, zone: n.closest(".zone").dataset.zone, pods: text(n, ".pod-count"),
        chips: n.querySelectorAll("button.pod").length,
        cpu: text(n, ".cpu-requested"), cpuAlloc: text(n, ".cpu-allocatable"), cpuPercent: text(n, ".cpu-percent"),
        memory: text(n, ".memory-requested"), fillPercent: track > 0 ? 100 * fill / track : -1 };
    }),
    explanations: document.querySelectorAll(".explanation").length,
    vpodTotals: Array.from(document.querySelectorAll("table.grid td.total")).map(x => x.textContent.trim()),
    moved: Array.from(document.querySelectorAll("#shadow tr.moved")).map(x => x.dataset.podKey),
    roundRecords: document.querySelectorAll("#eviction details.round-record").length,
    vpodRecords: document.querySelectorAll("#vpods details.vpod-record").length,
    preemptions: Array.from(document.querySelectorAll("#drawer .preemption")).map(x => text(x, ".preempt-chosen")),
  };
})()`

// TestReportInBrowser writes the report of every example and loads it in
// headless Chromium: no console error, no request leaves the page, a
// screenshot that is not blank, and the numbers on the page — the counts,
// each node's pods and CPU, a clicked pod's chosen node and score — equal
// the report simulate prints with -o json in the same run.
func TestReportInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
		chromedp.NoSandbox, // root in CI and containers
		chromedp.Flag("disable-gpu", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}

	for _, tc := range reportCases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "report.html")
			out, err := simulate(t, append(tc.args, "-o", "json", "--report", file)...)
			if err != nil {
				t.Fatalf("simulate: %v\n%s", err, out)
			}
			rep := reportOf(t, out, tc.name == "shadow")

			ctx, cancel := chromedp.NewContext(browser)
			defer cancel()
			ctx, cancelTimeout := context.WithTimeout(ctx, time.Minute)
			defer cancelTimeout()
			var mu sync.Mutex
			var problems []string
			err = chromedp.Listen(ctx, func(ev any) {
				mu.Lock()
				defer mu.Unlock()
				switch e := ev.(type) {
				case *runtime.EventConsoleAPICalled:
					if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
						var args []string
						for _, a := range e.Args {
							args = append(args, string(a.Value)+a.Description)
						}
						problems = append(problems, "console "+string(e.Type)+": "+strings.Join(args, " "))
					}
				case *runtime.EventExceptionThrown:
					d := e.ExceptionDetails
					msg := d.Text
					if d.Exception != nil {
						msg += " " + d.Exception.Description
					}
					problems = append(problems, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber, msg))
				case *cdplog.EventEntryAdded:
					if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
						problems = append(problems, "log "+string(e.Entry.Level)+": "+e.Entry.Text+" "+e.Entry.URL)
					}
				case *network.EventRequestWillBeSent:
					if u := e.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") && !strings.HasPrefix(u, "about:") {
						problems = append(problems, "request leaving the page: "+u)
					}
				}
			})
			if err != nil {
				t.Fatalf("listening to the page: %v", err)
			}
			if err := chromedp.Do(ctx,
				chromedp.Navigate("file://"+file),
				chromedp.WaitVisible(chromedp.CSS("#summary")),
			); err != nil {
				t.Fatalf("loading the report: %v", err)
			}
			shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			facts, err := chromedp.Run(ctx, chromedp.Evaluate[pageFacts](readPage))
			if err != nil {
				t.Fatalf("reading the page: %v", err)
			}
			checkScreenshot(t, shot)
			checkFacts(t, facts, rep)
			checkClick(ctx, t, rep)
			mu.Lock()
			defer mu.Unlock()
			for _, p := range problems {
				t.Errorf("%s", p)
			}
		})
	}
}

// reportOf parses simulate -o json: the report, or with --shadow the
// comparison (whose live side the page's nodes come from; the JSON has
// no nodes then, so the page's are checked against the live run's pods).
func reportOf(t *testing.T, out string, shadow bool) *sim.Report {
	t.Helper()
	if !shadow {
		var rep sim.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("-o json: %v", err)
		}
		return &rep
	}
	var c sim.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("-o json: %v", err)
	}
	rep := &sim.Report{}
	for _, p := range c.Pods {
		if p.Live != nil {
			rep.Pods = append(rep.Pods, *p.Live)
		}
	}
	return rep
}

// checkScreenshot wants a PNG that decodes and is not all one colour.
func checkScreenshot(t *testing.T, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot (%d bytes) does not decode as PNG: %v", len(shot), err)
	}
	b := img.Bounds()
	if b.Dx() < 100 || b.Dy() < 100 {
		t.Fatalf("screenshot is %v", b)
	}
	colours := map[[4]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}] = true
		}
	}
	if len(colours) < 8 {
		t.Errorf("screenshot has %d colours: blank?", len(colours))
	}
	if dir := os.Getenv("WASMSCHED_REPORT_SHOTS"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".png"), shot, 0o644)
	}
}

func checkFacts(t *testing.T, got pageFacts, rep *sim.Report) {
	t.Helper()
	c := countRun(rep)
	if got.Scheduled != strconv.Itoa(c.Scheduled) || got.Unschedulable != strconv.Itoa(c.Unschedulable) {
		t.Errorf("page says %s scheduled, %s unschedulable; the JSON has %d and %d", got.Scheduled, got.Unschedulable, c.Scheduled, c.Unschedulable)
	}
	if c.Evicted > 0 && got.Evicted != strconv.Itoa(c.Evicted) {
		t.Errorf("page says %q evicted; the JSON has %d", got.Evicted, c.Evicted)
	}
	if len(rep.Nodes) > 0 && len(got.Nodes) != len(rep.Nodes) {
		t.Errorf("page shows %d nodes; the JSON has %d", len(got.Nodes), len(rep.Nodes))
	}
	if len(got.Nodes) == 0 {
		t.Errorf("page shows no nodes")
	}
	byName := map[string]sim.NodeResult{}
	for _, n := range rep.Nodes {
		byName[n.Name] = n
	}
	for _, n := range got.Nodes {
		want, ok := byName[n.Name]
		if !ok {
			if len(rep.Nodes) > 0 {
				t.Errorf("page shows node %s, not in the JSON", n.Name)
			}
			continue
		}
		pct := percent(want.MilliCPU.Requested, want.MilliCPU.Allocatable)
		if n.Zone != want.Zone || n.Pods != strconv.Itoa(len(want.Pods)) || n.Chips != len(want.Pods) ||
			n.CPU != sim.FormatQuantity("cpu", want.MilliCPU.Requested) || n.CPUAlloc != sim.FormatQuantity("cpu", want.MilliCPU.Allocatable) ||
			n.CPUPercent != strconv.Itoa(pct) || n.Memory != sim.FormatQuantity("memory", want.MemoryBytes.Requested) {
			t.Errorf("node %s on the page: %+v; the JSON: %+v", n.Name, n, want)
		}
		// The bar is drawn as wide as the number says (to a pixel).
		if d := n.FillPercent - float64(pct); d > 1 || d < -1 {
			t.Errorf("node %s: CPU bar drawn at %.1f%% of its track, the JSON says %d%%", n.Name, n.FillPercent, pct)
		}
	}
	if got.Explanations != len(rep.Pods) {
		t.Errorf("page has %d explanations for %d pods", got.Explanations, len(rep.Pods))
	}
	// Every record the JSON has is on the page: the eviction rounds', the
	// vpod Schedule calls', each attempt's preemption with its winner.
	if got.RoundRecords != len(rep.EvictionExplanations) || got.VPodRecords != len(rep.VPodExplanations) {
		t.Errorf("page shows %d eviction round and %d vpod records; the JSON has %d and %d",
			got.RoundRecords, got.VPodRecords, len(rep.EvictionExplanations), len(rep.VPodExplanations))
	}
	var preemptions []string
	for _, p := range rep.Pods {
		for _, r := range rep.Explanations {
			if r.Pod == p.Namespace+"/"+p.Name && r.Preemption != nil {
				preemptions = append(preemptions, r.Preemption.Chosen)
			}
		}
	}
	if len(rep.Explanations) > 0 && strings.Join(got.Preemptions, ",") != strings.Join(preemptions, ",") {
		t.Errorf("page shows preemptions choosing %q; the JSON %q", got.Preemptions, preemptions)
	}
	if rep.VPods != nil {
		var want []string
		for _, s := range rep.VPods.Schedulers {
			for _, v := range s.VPods {
				n := int32(0)
				for _, p := range v.Placements {
					n += p.VReplicas
				}
				want = append(want, strconv.Itoa(int(n)))
			}
		}
		if strings.Join(got.VPodTotals, ",") != strings.Join(want, ",") {
			t.Errorf("vpod grid totals %v, the JSON's placements %v", got.VPodTotals, want)
		}
	}
}

// checkClick clicks the first pod the cycle placed, in the pods table,
// and reads the chosen node and total score its explanation shows.
func checkClick(ctx context.Context, t *testing.T, rep *sim.Report) {
	t.Helper()
	var last *decision.Scheduling
	for _, r := range rep.Explanations {
		if r.Outcome == decision.OutcomeChosen {
			last = r
			break
		}
	}
	if last == nil {
		return // the shadow JSON carries no records
	}
	// Its last attempt is the one the page shows last.
	for _, r := range rep.Explanations {
		if r.Pod == last.Pod {
			last = r
		}
	}
	row := `#pods tr[data-key="` + last.Pod + `"]`
	const shown = "#drawer .explanation:not([hidden]) "
	if err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(row)),
		chromedp.WaitVisible(chromedp.CSS(shown+".attempt:last-of-type")),
	); err != nil {
		t.Fatalf("clicking %s: %v", last.Pod, err)
	}
	text := func(sel string) string {
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("clicked %s: reading %s: %v", last.Pod, sel, err)
		}
		return strings.TrimSpace(s)
	}
	node := text(shown + ".attempt:last-of-type .chosen-node")
	score := text(shown + ".attempt:last-of-type .total-score")
	podNode := text(shown + ".pod-node")
	if node != last.Node || score != strconv.FormatInt(last.Score, 10) {
		t.Errorf("clicked %s: the page says %s with total %s; the JSON's record: %s with %d", last.Pod, node, score, last.Node, last.Score)
	}
	ns, name, _ := strings.Cut(last.Pod, "/")
	if p := rep.Pod(ns, name); p != nil && p.Status == sim.StatusScheduled && podNode != p.Node {
		t.Errorf("clicked %s: the page says it runs on %s; the JSON: %s", last.Pod, podNode, p.Node)
	}
}
