package decision

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes a scheduling record as a person reads it: the
// outcome, how many nodes were looked at, what PreFilter said, the
// rejections grouped by plugin and reason, and the top nodes by total
// with a column per Score plugin (its weighted score). attempt and
// attempts number the record among the pod's.
func WriteText(w io.Writer, s *Scheduling, top, attempt, attempts int) error {
	fmt.Fprintf(w, "EXPLAIN %s (profile %s", s.Pod, s.Profile)
	if attempts > 1 {
		fmt.Fprintf(w, ", attempt %d of %d", attempt, attempts)
	}
	fmt.Fprintln(w, ")")
	switch s.Outcome {
	case OutcomeChosen:
		line := fmt.Sprintf("chosen: %s", s.Node)
		switch {
		case s.NominatedNodePassed:
			line += " (the node it was nominated to; it passed the filters, so nothing was scored)"
		case len(s.Scores) == 0:
			line += " (the only feasible node; nothing was scored)"
		default:
			line += fmt.Sprintf(" with score %d", s.Score)
			if s.TiedCount > 0 {
				line += fmt.Sprintf(", tied with %d other(s) (%s) and picked at random", s.TiedCount, strings.Join(s.Tied, ", "))
			}
		}
		fmt.Fprintln(w, line)
	case OutcomeNominated:
		fmt.Fprintf(w, "no node fits; preemption nominated %s: %s\n", s.Node, s.Message)
	default:
		fmt.Fprintf(w, "%s: %s\n", strings.ToLower(s.Outcome), s.Message)
	}
	nodes := fmt.Sprintf("nodes: %d in the cluster, %d filtered, %d feasible", s.NumNodes, s.Evaluated, s.Feasible)
	if s.preFilterRejected() {
		nodes = fmt.Sprintf("nodes: %d in the cluster, every one rejected at PreFilter (none filtered)", s.NumNodes)
	}
	if s.NotEvaluated > 0 {
		why := "enough feasible nodes were found first (percentageOfNodesToScore)"
		if s.NarrowedTo >= 0 {
			why = fmt.Sprintf("PreFilter narrowed the walk to %d", s.NarrowedTo)
		} else if s.Evaluated == 0 {
			why = "PreFilter rejected the pod"
		}
		nodes += fmt.Sprintf(", %d not filtered: %s", s.NotEvaluated, why)
	}
	fmt.Fprintln(w, nodes)
	if len(s.PreFilter) > 0 {
		parts := make([]string, len(s.PreFilter))
		for i, v := range s.PreFilter {
			parts[i] = v.Plugin + " " + v.Code
			if v.Nodes >= 0 {
				parts[i] += fmt.Sprintf(" (narrowed to %d nodes)", v.Nodes)
			}
			if len(v.Reasons) > 0 {
				parts[i] += ": " + strings.Join(v.Reasons, ", ")
			}
		}
		fmt.Fprintf(w, "prefilter: %s\n", strings.Join(parts, "; "))
	}
	if len(s.Reasons) > 0 {
		rejected := len(s.Rejected) + s.RejectedDropped
		fmt.Fprintf(w, "\nREJECTED (%d nodes)\n", rejected)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODES\tPLUGIN\tREASON")
		for _, r := range s.Reasons {
			reason := r.Reason
			if reason == "" {
				reason = "(no reason given)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", r.Nodes, r.Plugin, reason)
		}
		if s.ReasonsDropped > 0 {
			fmt.Fprintf(tw, "%d\t(other reasons)\t\n", s.ReasonsDropped)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(s.Scores) > 0 {
		shown := min(top, len(s.Scores))
		fmt.Fprintf(w, "\nSCORES (top %d of %d scored; weighted, (raw→normalized) where they differ; total = sum)\n", shown, len(s.Scores)+s.ScoredDropped)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
		head := []string{"NODE", "TOTAL"}
		for _, p := range s.ScorePlugins {
			head = append(head, fmt.Sprintf("%s×%d", p.Name, p.Weight))
		}
		fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
		row := func(ns NodeScore) {
			cells := []string{ns.Node, fmt.Sprint(ns.Total)}
			if ns.Node == s.Node {
				cells[0] = "*" + ns.Node
			}
			for i, v := range ns.Weighted {
				cell := fmt.Sprint(v)
				if i < len(ns.Raw) && s.ScorePlugins[i].RawKnown && ns.Raw[i] != ns.Normalized[i] {
					cell += fmt.Sprintf(" (raw %d→%d)", ns.Raw[i], ns.Normalized[i])
				}
				cells = append(cells, cell)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		chosenShown := false
		for _, ns := range s.Scores[:shown] {
			row(ns)
			chosenShown = chosenShown || ns.Node == s.Node
		}
		if c := s.ScoreOf(s.Node); c != nil && !chosenShown {
			row(*c)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "(* chosen)")
		var unknown []string
		for _, p := range s.ScorePlugins {
			if !p.RawKnown {
				unknown = append(unknown, p.Name)
			}
		}
		if len(unknown) > 0 {
			fmt.Fprintf(w, "raw scores of %s not known (a module older than ABI v1.8 sends only normalized ones)\n", strings.Join(unknown, ", "))
		}
		if len(s.ScoreSkipped) > 0 {
			fmt.Fprintf(w, "not scored by %s (PreScore said Skip: nothing to score for this pod)\n", strings.Join(s.ScoreSkipped, ", "))
		}
	}
	if s.Preemption != nil {
		return writePreemptionText(w, s.Preemption)
	}
	return nil
}

// preFilterRejected reports whether a PreFilter plugin rejected the pod
// (every node then carries its verdict without having been filtered).
func (s *Scheduling) preFilterRejected() bool {
	for _, v := range s.PreFilter {
		if v.Code == "Unschedulable" || v.Code == "UnschedulableAndUnresolvable" {
			return true
		}
	}
	return false
}

// writePreemptionText writes the preemption part of an attempt: the
// candidates in the policy's order with their victims, why the first
// won, the nomination and what became of each victim.
func writePreemptionText(w io.Writer, p *Preemption) error {
	fmt.Fprintf(w, "\nPREEMPTION (policy %s", p.Policy)
	if p.Async {
		fmt.Fprint(w, ", victims removed after the cycle")
	}
	fmt.Fprintln(w, ")")
	if p.Ineligible != "" {
		fmt.Fprintf(w, "not eligible: %s\n", p.Ineligible)
		return nil
	}
	fmt.Fprintf(w, "%d node(s) a removal could help; %d candidate(s)", p.PotentialNodes, len(p.Candidates)+p.CandidatesDropped)
	if p.Chosen != "" {
		fmt.Fprintf(w, "; chosen %s: %s", p.Chosen, p.Why)
	}
	fmt.Fprintln(w)
	if len(p.Candidates) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RANK\tNODE\tPDB VIOLATIONS\tTOP PRIORITY\tVICTIMS")
		for i, c := range p.Candidates {
			victims := strings.Join(c.Victims, ", ")
			if c.VictimsDropped > 0 {
				victims += fmt.Sprintf(" (+%d)", c.VictimsDropped)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\n", i+1, c.Node, c.PDBViolations, c.HighestPriority, victims)
		}
		if p.CandidatesDropped > 0 {
			fmt.Fprintf(tw, "\t(+%d more)\t\t\t\n", p.CandidatesDropped)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, r := range p.NoCandidate {
		fmt.Fprintf(w, "no candidate on %d node(s): %s\n", r.Nodes, r.Reason)
	}
	if p.Nominated != "" {
		fmt.Fprintf(w, "nominated to %s\n", p.Nominated)
	} else if p.Message != "" {
		fmt.Fprintf(w, "nothing nominated: %s\n", p.Message)
	}
	ex := p.Execution()
	for _, v := range ex.Victims {
		line := fmt.Sprintf("victim %s on %s: %s", v.Victim, v.Node, v.Outcome)
		if v.Error != "" {
			line += " (" + v.Error + ")"
		}
		fmt.Fprintln(w, line)
	}
	if len(ex.Refused) > 0 {
		fmt.Fprintf(w, "candidates abandoned after a refused eviction (429): %s\n", strings.Join(ex.Refused, ", "))
	}
	switch {
	case ex.Done && ex.Error != "":
		fmt.Fprintf(w, "preemption failed: %s\n", ex.Error)
	case ex.Done:
		fmt.Fprintf(w, "preemption done on %s\n", ex.Used)
	case p.Nominated != "":
		fmt.Fprintln(w, "preemption still running when the record was read")
	}
	return nil
}

// WriteEvictionText writes what an eviction round did with pod (every
// list and answer naming it), or, with pod "", the whole round in short.
func WriteEvictionText(w io.Writer, e *Eviction, pod string) error {
	if pod != "" {
		fmt.Fprintf(w, "EVICTION %s, round %d: %s\n", pod, e.Round, strings.Join(e.Names(pod), ", "))
		for _, l := range []struct {
			what string
			pods *EvictionPods
		}{{"evicted", &e.Evicted}, {"throttled (rate limit)", &e.Throttled}, {"not chosen", &e.NotChosen}, {"merged", &e.Merged},
			{"dry run would evict", &e.DryRun}, {"named but refused", &e.Ignored}, {"not offered", &e.NotOffered}} {
			for _, p := range l.pods.Pods {
				if p.Pod == pod {
					fmt.Fprintf(w, "  %s on %s", l.what, p.Node)
					if p.Policy != "" {
						fmt.Fprintf(w, " by %s", p.Policy)
					}
					if p.Scope != "" {
						fmt.Fprintf(w, " (%s)", p.Scope)
					}
					if p.Reason != "" {
						fmt.Fprintf(w, ": %s", p.Reason)
					}
					fmt.Fprintln(w)
				}
			}
		}
		for _, a := range e.Answers {
			for _, p := range a.Pods {
				if p.Pod == pod {
					fmt.Fprintf(w, "  %s %s on %s named it (%s): %s\n", a.Policy, a.Call, a.Node, p.Scope, p.Reason)
				}
			}
		}
		return nil
	}
	fmt.Fprintf(w, "EVICTION round %d: %d nodes, %d answers, %d evicted, %d throttled, %d not chosen, %d dry run, %d not offered\n",
		e.Round, e.Nodes, len(e.Answers)+e.AnswersDropped, len(e.Evicted.Pods)+e.Evicted.More, len(e.Throttled.Pods)+e.Throttled.More,
		len(e.NotChosen.Pods)+e.NotChosen.More, len(e.DryRun.Pods)+e.DryRun.More, len(e.NotOffered.Pods)+e.NotOffered.More)
	for _, a := range e.Answers {
		line := fmt.Sprintf("  %s %s on %s", a.Policy, a.Call, a.Node)
		if a.Met != "" {
			line += fmt.Sprintf(": %s %s (observed %g, target %g)", a.Met, a.Scope, a.Observed, a.Target)
		}
		for _, p := range a.Pods {
			line += fmt.Sprintf("; %s", p.Pod)
		}
		fmt.Fprintln(w, line)
	}
	for _, p := range e.Evicted.Pods {
		fmt.Fprintf(w, "  evicted %s on %s by %s: %s\n", p.Pod, p.Node, p.Policy, p.Reason)
	}
	for _, f := range e.Failures {
		fmt.Fprintf(w, "  failed: %s\n", f)
	}
	return nil
}

// WriteVPodText writes a vpod Schedule call: its steps, each with the
// top candidates (predicate that refused them, or raw scores per
// priority and the total), and the placements returned.
func WriteVPodText(w io.Writer, v *VPod, top int) error {
	fmt.Fprintf(w, "EXPLAIN vpod %s (scheduler %s, %s): %d vreplicas\n", v.VPod, v.Scheduler, v.StatefulSet, v.VReplicas)
	if len(v.Reserved) > 0 {
		parts := make([]string, len(v.Reserved))
		for i, r := range v.Reserved {
			parts[i] = fmt.Sprintf("%s=%d", r.Pod, r.VReplicas)
		}
		fmt.Fprintf(w, "reserved by other vpods (placed, not yet committed): %s\n", strings.Join(parts, " "))
	}
	for _, st := range v.Steps {
		fmt.Fprintf(w, "\nSTEP %d (%s): %d feasible of %d", st.Step, st.Op, st.Feasible, len(st.Candidates)+st.CandidatesDropped)
		switch {
		case st.Chosen != "" && st.Tied > 0:
			fmt.Fprintf(w, "; chose %s, tied with %d other(s) and picked at random", st.Chosen, st.Tied)
		case st.Chosen != "":
			fmt.Fprintf(w, "; chose %s", st.Chosen)
		default:
			fmt.Fprintf(w, "; %s", st.Why)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		head := []string{"POD", "TOTAL"}
		for _, p := range v.Priorities {
			head = append(head, fmt.Sprintf("%s×%d", p.Name, p.Weight))
		}
		fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
		for _, c := range st.Candidates[:min(top, len(st.Candidates))] {
			name := c.Pod
			if c.Pod == st.Chosen {
				name = "*" + name
			}
			if c.Rejected != "" {
				fmt.Fprintf(tw, "%s\trefused by %s: %s\t\n", name, c.Rejected, c.Reason)
				continue
			}
			cells := []string{name, fmt.Sprint(c.Total)}
			for _, s := range c.Scores {
				cells = append(cells, fmt.Sprint(s))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if v.StepsDropped > 0 {
		fmt.Fprintf(w, "\n(%d later steps not kept)\n", v.StepsDropped)
	}
	if len(v.Steps) == 0 && v.Error == "" {
		fmt.Fprint(w, "no placement step ran: the placements already held the vreplicas wanted, or the strategy has no policy steps\n")
	}
	parts := make([]string, len(v.Placements))
	for i, p := range v.Placements {
		parts[i] = fmt.Sprintf("%s=%d", p.Pod, p.VReplicas)
	}
	fmt.Fprintf(w, "\nplacements: %s", strings.Join(parts, " "))
	if v.Left > 0 {
		fmt.Fprintf(w, "; %d vreplica(s) left unplaced (the autoscaler was asked)", v.Left)
	}
	fmt.Fprintln(w)
	if v.Error != "" {
		fmt.Fprintf(w, "failed: %s\n", v.Error)
	}
	return nil
}

// WriteAutoscaleText writes one autoscaler pass in a line.
func WriteAutoscaleText(w io.Writer, a *VPodAutoscale) error {
	_, err := fmt.Fprintf(w, "AUTOSCALER %s (%s): %d -> %d replicas: %s\n", a.Scheduler, a.StatefulSet, a.Replicas, a.Target, a.Why)
	return err
}
