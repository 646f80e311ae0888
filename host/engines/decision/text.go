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
		fmt.Fprintf(w, "\nSCORES (top %d of %d scored; weighted, total = sum)\n", shown, len(s.Scores)+s.ScoredDropped)
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
			for _, v := range ns.Weighted {
				cells = append(cells, fmt.Sprint(v))
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
		if len(s.ScoreSkipped) > 0 {
			fmt.Fprintf(w, "not scored by %s (PreScore said Skip: nothing to score for this pod)\n", strings.Join(s.ScoreSkipped, ", "))
		}
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
