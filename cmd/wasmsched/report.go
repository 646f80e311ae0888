package main

// simulate --report FILE.html: the run as one self-contained page a
// person would rather look at than read — nodes by zone with their bars
// and pods, the unschedulable pods by reason, each pod's decision on a
// click, the shadow's moved pods, the eviction timeline and the vpod
// placement grid. Everything is inline (no network, no CDN, no fonts to
// fetch), and the report simulate prints with -o json is embedded in it.

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

//go:embed report.html
var reportHTML string

var reportTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"cpu":     func(v int64) string { return sim.FormatQuantity("cpu", v) },
	"memory":  func(v int64) string { return sim.FormatQuantity("memory", v) },
	"percent": percent,
	"text":    guest.Text,
	"add":     func(a, b int) int { return a + b },
	"quantity": func(resource string, v float64) string {
		return sim.FormatQuantity(resource, int64(math.Round(v)))
	},
	"stage": func(name string, pods decision.EvictionPods) evictionStage { return evictionStage{name, pods} },
	"plugin": func(r *decision.Scheduling, i int) string {
		if i < len(r.ScorePlugins) {
			return r.ScorePlugins[i].Name
		}
		return "?"
	},
}).Parse(reportHTML))

// reportPage is what the template draws: the live report, arranged.
type reportPage struct {
	Title   string
	Inputs  string
	Elapsed string
	Counts  runCounts
	Zones   []zoneGroup
	// Pods are every pod of the input, in input order, with the records
	// of its scheduling attempts.
	Pods          []podView
	Unschedulable []reasonGroup
	Preemptions   []sim.Preemption
	Eviction      *sim.EvictionReport
	EvictionByRnd []evictionRound
	VPods         []vpodGrid
	VPodIgnored   []sim.VPodResult
	// Shadow is the comparison with --shadow (nil without).
	Shadow      *sim.Comparison
	ShadowDiffs []sim.PodComparison
	// Data is the report as -o json prints it (the comparison with
	// --shadow), embedded for whoever wants the numbers.
	Data any
}

// runCounts are a run's pods by outcome.
type runCounts struct {
	Pods, Scheduled, Bound, Unschedulable, Errors, Preempted, Evicted, NotOurs, Pending int
	Nodes                                                                               int
}

func countRun(rep *sim.Report) runCounts {
	c := runCounts{Pods: len(rep.Pods), Nodes: len(rep.Nodes)}
	for _, p := range rep.Pods {
		switch p.Status {
		case sim.StatusScheduled:
			c.Scheduled++
		case sim.StatusBound:
			c.Bound++
		case sim.StatusUnschedulable:
			c.Unschedulable++
		case sim.StatusSchedulerError:
			c.Errors++
		case sim.StatusPreempted:
			c.Preempted++
		case sim.StatusEvicted:
			c.Evicted++
		case sim.StatusNotOurs:
			c.NotOurs++
		default:
			c.Pending++
		}
	}
	return c
}

type zoneGroup struct {
	Zone  string // "" for nodes without the label
	Nodes []nodeView
}

type nodeView struct {
	sim.NodeResult
	CPUPercent, MemoryPercent int
}

type podView struct {
	sim.PodResult
	Key     string
	ID      string // the HTML id of its explanation
	Records []*decision.Scheduling
}

type reasonGroup struct {
	Reason string
	Pods   []string
}

type evictionRound struct {
	Round     int
	Evictions []sim.Eviction
	DryRun    []sim.Eviction
	Taints    []sim.NodeTaints
	// Record is the round's decision record: every policy's answer and
	// what the coordinator made of them (nil when none was kept).
	Record *decision.Eviction
}

// evictionStage is one list of a round's record, with its heading.
type evictionStage struct {
	Name string
	Pods decision.EvictionPods
}

// vpodGrid is one vpod scheduler's placements: a row per vpod, a column
// per adapter pod, vreplicas in the cells.
type vpodGrid struct {
	sim.VPodSchedulerReport
	Columns []string
	Rows    []vpodRow
	// Records are the scheduler's Schedule calls, as the vpod engine
	// recorded them: each step's predicate verdicts and scores.
	Records []*decision.VPod
}

type vpodRow struct {
	VPod    string
	Cells   []int32
	Total   int32
	Pending int32
	Error   string
}

// percent is used of total in whole percent, 0 when total is not
// positive, capped at 100 for the bar (the text says the real numbers).
func percent(used, total int64) int {
	if total <= 0 {
		return 0
	}
	p := int(used * 100 / total)
	return min(max(p, 0), 100)
}

// writeReport writes r as the report page to path.
func writeReport(path string, r *watchRun, inputs []string, elapsed time.Duration) error {
	var buf bytes.Buffer
	if err := renderReport(&buf, r, inputs, elapsed); err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}

// renderReport draws the page for a run.
func renderReport(w io.Writer, r *watchRun, inputs []string, elapsed time.Duration) error {
	page := buildPage(r, inputs, elapsed)
	return reportTemplate.Execute(w, page)
}

func buildPage(r *watchRun, inputs []string, elapsed time.Duration) *reportPage {
	rep := r.live
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = filepath.Base(in)
	}
	page := &reportPage{
		Title:       "wasmsched simulate",
		Inputs:      strings.Join(names, " "),
		Counts:      countRun(rep),
		Preemptions: rep.Preemptions,
		Eviction:    rep.Eviction,
		Data:        rep,
	}
	if elapsed > 0 {
		page.Elapsed = elapsed.Round(time.Millisecond).String()
	}
	if r.shadow != nil {
		c := sim.Compare(r.live, r.shadow)
		page.Shadow, page.Data = c, c
		for _, p := range c.Pods {
			if p.Change != sim.ChangeSame {
				page.ShadowDiffs = append(page.ShadowDiffs, p)
			}
		}
	}

	// Nodes by zone: named zones sorted, then the nodes without one.
	byZone := map[string][]nodeView{}
	for _, n := range rep.Nodes {
		byZone[n.Zone] = append(byZone[n.Zone], nodeView{NodeResult: n,
			CPUPercent:    percent(n.MilliCPU.Requested, n.MilliCPU.Allocatable),
			MemoryPercent: percent(n.MemoryBytes.Requested, n.MemoryBytes.Allocatable)})
	}
	zones := make([]string, 0, len(byZone))
	for z := range byZone {
		if z != "" {
			zones = append(zones, z)
		}
	}
	sort.Strings(zones)
	if _, ok := byZone[""]; ok {
		zones = append(zones, "")
	}
	for _, z := range zones {
		page.Zones = append(page.Zones, zoneGroup{Zone: z, Nodes: byZone[z]})
	}

	// Pods with their records; unschedulable ones by reason.
	records := map[string][]*decision.Scheduling{}
	for _, s := range rep.Explanations {
		records[s.Pod] = append(records[s.Pod], s)
	}
	groups := map[string]*reasonGroup{}
	var order []string
	for i, p := range rep.Pods {
		key := p.Namespace + "/" + p.Name
		page.Pods = append(page.Pods, podView{PodResult: p, Key: key, ID: "pod-" + strconv.Itoa(i), Records: records[key]})
		if p.Status != sim.StatusUnschedulable && p.Status != sim.StatusSchedulerError {
			continue
		}
		reason := reasonOf(p.Message, records[key])
		g := groups[reason]
		if g == nil {
			g = &reasonGroup{Reason: reason}
			groups[reason] = g
			order = append(order, reason)
		}
		g.Pods = append(g.Pods, key)
	}
	for _, reason := range order {
		page.Unschedulable = append(page.Unschedulable, *groups[reason])
	}
	slices.SortStableFunc(page.Unschedulable, func(a, b reasonGroup) int { return len(b.Pods) - len(a.Pods) })

	if ev := rep.Eviction; ev != nil {
		rounds := map[int]*evictionRound{}
		get := func(n int) *evictionRound {
			if rounds[n] == nil {
				rounds[n] = &evictionRound{Round: n}
			}
			return rounds[n]
		}
		for _, e := range ev.Evictions {
			get(e.Round).Evictions = append(get(e.Round).Evictions, e)
		}
		for _, e := range ev.DryRun {
			get(e.Round).DryRun = append(get(e.Round).DryRun, e)
		}
		for _, t := range ev.Taints {
			get(t.Round).Taints = append(get(t.Round).Taints, t)
		}
		for _, r := range rep.EvictionExplanations {
			get(r.Round).Record = r
		}
		for n := 1; n <= ev.Rounds; n++ {
			page.EvictionByRnd = append(page.EvictionByRnd, *get(n))
		}
	}
	if vp := rep.VPods; vp != nil {
		page.VPodIgnored = vp.Ignored
		for _, s := range vp.Schedulers {
			g := gridOf(s)
			for _, r := range rep.VPodExplanations {
				if r.Scheduler == s.Name {
					g.Records = append(g.Records, r)
				}
			}
			page.VPods = append(page.VPods, g)
		}
	}
	return page
}

// reasonOf is the reason an unschedulable pod is grouped under: its last
// attempt's failure without the preemption part (the rest of the
// message says preemption could not help), else the message itself.
func reasonOf(message string, recs []*decision.Scheduling) string {
	if len(recs) > 0 && recs[len(recs)-1].Message != "" {
		message = recs[len(recs)-1].Message
	}
	if i := strings.Index(message, " no new claims to deallocate"); i > 0 {
		message = message[:i]
	}
	if i := strings.Index(message, "; preemption:"); i > 0 {
		message = message[:i]
	}
	return guest.Text(message)
}

// gridOf lays a vpod scheduler's placements out: adapter pods in
// ordinal order as columns.
func gridOf(s sim.VPodSchedulerReport) vpodGrid {
	g := vpodGrid{VPodSchedulerReport: s}
	seen := map[string]bool{}
	for _, v := range s.VPods {
		for _, p := range v.Placements {
			if !seen[p.PodName] {
				seen[p.PodName] = true
				g.Columns = append(g.Columns, p.PodName)
			}
		}
	}
	slices.SortFunc(g.Columns, func(a, b string) int {
		oa, ea := ordinal(a)
		ob, eb := ordinal(b)
		if ea == nil && eb == nil && oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	col := map[string]int{}
	for i, c := range g.Columns {
		col[c] = i
	}
	for _, v := range s.VPods {
		row := vpodRow{VPod: v.VPod, Cells: make([]int32, len(g.Columns)), Pending: v.Pending, Error: guest.Text(v.Error)}
		for _, p := range v.Placements {
			row.Cells[col[p.PodName]] += p.VReplicas
			row.Total += p.VReplicas
		}
		g.Rows = append(g.Rows, row)
	}
	return g
}

// ordinal is a StatefulSet pod's ordinal: the number after its last dash.
func ordinal(pod string) (int, error) {
	i := strings.LastIndexByte(pod, '-')
	return strconv.Atoi(pod[i+1:])
}
