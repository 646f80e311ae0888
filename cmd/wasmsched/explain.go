package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// explainFlags are simulate's --explain and --explain-top.
type explainFlags struct {
	pods []string // NS/NAME, NAME (default namespace), or "all"
	top  int
}

func (f *explainFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.pods, "explain", nil,
		"explain why a pod went where it went (or nowhere), with the preemption its attempts ran and the eviction rounds that named it: NAMESPACE/NAME or NAME (default namespace); "+
			"or a vpod's placement steps and autoscaler passes: vpod:NAMESPACE/NAME; repeatable or comma-separated, or \"all\"; "+
			"-o json carries the whole records under \"explanations\", \"evictionExplanations\", \"vpodExplanations\" and \"autoscaleExplanations\"")
	fs.IntVar(&f.top, "explain-top", 5, "with --explain: how many of the best-scored nodes the table lists")
}

// validate checks the flags before anything runs.
func (f *explainFlags) validate() error {
	if f.top < 1 {
		return fmt.Errorf("--explain-top %d: want at least 1", f.top)
	}
	for _, p := range f.pods {
		name := strings.TrimPrefix(p, vpodPrefix)
		if name == "" || strings.Count(name, "/") > 1 || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") {
			return fmt.Errorf("--explain %q: want NAMESPACE/NAME, NAME (default namespace), vpod:NAMESPACE/NAME or all", p)
		}
	}
	return nil
}

// match is the sim.Options.Explain of the flags: nil when no pod is
// explained. (The shadow run of simulate --shadow records every pod's
// decisions whatever the flags: it explains its moved pods from them.)
func (f *explainFlags) match() func(string) bool {
	if len(f.pods) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, p := range f.pods {
		if p == "all" {
			return func(string) bool { return true }
		}
		want[explainKey(p)] = true
	}
	return func(key string) bool { return want[key] }
}

// vpodPrefix marks a vpod in --explain.
const vpodPrefix = "vpod:"

// explainKey is the record key an --explain value names: a pod's
// namespace/name, or a vpod's decision.VPodKey.
func explainKey(p string) string {
	if strings.HasPrefix(p, vpodPrefix) {
		return decision.VPodKey(p)
	}
	return decision.PodKey(p)
}

// vpodAsked reports whether the flags name the vpod namespace/name.
func (f *explainFlags) vpodAsked(vpod string) bool {
	for _, p := range f.pods {
		if p == "all" || (strings.HasPrefix(p, vpodPrefix) && explainKey(p) == decision.VPodKey(vpod)) {
			return true
		}
	}
	return false
}

// asked reports whether the flags name key's pod.
func (f *explainFlags) asked(key string) bool {
	for _, p := range f.pods {
		if p == "all" || decision.PodKey(p) == key {
			return true
		}
	}
	return false
}

// printExplanations writes, for each pod the flags name in the report's
// order, every recorded attempt as decision.WriteText does; a named pod
// the run has no record of says so.
func printExplanations(w io.Writer, f *explainFlags, rep *sim.Report) error {
	if len(f.pods) == 0 {
		return nil
	}
	byPod := map[string][]*decision.Scheduling{}
	for _, r := range rep.Explanations {
		byPod[r.Pod] = append(byPod[r.Pod], r)
	}
	seen := map[string]bool{}
	for _, p := range rep.Pods {
		key := p.Namespace + "/" + p.Name
		if !f.asked(key) {
			continue
		}
		seen[key] = true
		recs := byPod[key]
		if len(recs) == 0 {
			fmt.Fprintf(w, "\nEXPLAIN %s: no scheduling cycle ran for it (%s)\n", key, p.Status)
		}
		for i, r := range recs {
			fmt.Fprintln(w)
			if err := decision.WriteText(w, r, f.top, i+1, len(recs)); err != nil {
				return err
			}
		}
		for _, r := range rep.Explanations {
			if r.Pod != key && r.Preemption != nil && (&decision.Record{Key: r.Pod, Scheduling: r}).Mentions(key) {
				fmt.Fprintf(w, "\nPREEMPTED %s: a victim of %s's preemption on %s (%s); that pod's explanation has the candidates\n",
					key, r.Pod, r.Preemption.Chosen, r.Preemption.Why)
			}
		}
		for _, e := range rep.EvictionExplanations {
			if len(e.Names(key)) > 0 {
				fmt.Fprintln(w)
				if err := decision.WriteEvictionText(w, e, key); err != nil {
					return err
				}
			}
		}
	}
	if err := printVPodExplanations(w, f, rep, seen); err != nil {
		return err
	}
	for _, p := range f.pods {
		if key := explainKey(p); p != "all" && !seen[key] {
			what := "pod"
			if strings.HasPrefix(p, vpodPrefix) {
				what = "vpod, or no Schedule call of it was recorded"
			}
			fmt.Fprintf(w, "\nEXPLAIN %s: no such %s in the input\n", strings.TrimPrefix(key, vpodPrefix), what)
		}
	}
	if rep.ExplanationsDropped > 0 {
		fmt.Fprintf(w, "\n(%d older decision records were let go; the run keeps the latest %d)\n", rep.ExplanationsDropped, sim.MaxExplanations)
	}
	return nil
}

// printVPodExplanations writes the Schedule calls of each vpod the flags
// name and the autoscaler passes that counted it pending, marking the
// vpods seen.
func printVPodExplanations(w io.Writer, f *explainFlags, rep *sim.Report, seen map[string]bool) error {
	for _, v := range rep.VPodExplanations {
		if !f.vpodAsked(v.VPod) {
			continue
		}
		seen[decision.VPodKey(v.VPod)] = true
		fmt.Fprintln(w)
		if err := decision.WriteVPodText(w, v, f.top); err != nil {
			return err
		}
	}
	for _, a := range rep.AutoscaleExplanations {
		if slices.ContainsFunc(a.PendingVPods, f.vpodAsked) {
			fmt.Fprintln(w)
			if err := decision.WriteAutoscaleText(w, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// printMoved writes, for each pod the shadow moved, how the shadow's
// cycle scored the live node against its own choice.
func printMoved(w io.Writer, c *sim.Comparison) {
	width := tableWidth(w)
	header := false
	for _, p := range c.Pods {
		if p.Why == nil {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nWHY MOVED (the shadow's scores of both nodes, weighted)")
			header = true
		}
		y := p.Why
		line := fmt.Sprintf("%s/%s: %s -> %s", p.Namespace, p.Name, y.LiveNode, y.ShadowNode)
		switch {
		case y.LiveNodeRejected != "":
			line += fmt.Sprintf(": the shadow's filters rejected %s (%s)", y.LiveNode, y.LiveNodeRejected)
		case !y.LiveNodeScored:
			line += fmt.Sprintf(": the shadow did not score %s (not filtered, or not among the scores kept)", y.LiveNode)
		default:
			line += fmt.Sprintf(": total %d vs %d", y.LiveNodeTotal, y.ShadowNodeTotal)
			var parts []string
			for _, d := range y.Plugins {
				if d.Delta != 0 && len(parts) < 3 {
					parts = append(parts, fmt.Sprintf("%s %+d", d.Plugin, d.Delta))
				}
			}
			if len(parts) > 0 {
				line += "; " + strings.Join(parts, ", ")
			} else {
				line += "; a tie broken at random"
			}
		}
		if width > 0 {
			line = cut(line, width)
		}
		fmt.Fprintln(w, line)
	}
}
