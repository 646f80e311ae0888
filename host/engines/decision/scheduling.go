package decision

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Outcomes of a scheduling cycle.
const (
	// OutcomeChosen: the cycle chose a node; binding follows.
	OutcomeChosen = "Chosen"
	// OutcomeUnschedulable: no node fits (PostFilter nominated none).
	OutcomeUnschedulable = "Unschedulable"
	// OutcomeNominated: no node fits, and PostFilter (preemption)
	// nominated the pod to a node it is making room on.
	OutcomeNominated = "Nominated"
	// OutcomeError: the cycle failed (a plugin under failurePolicy Fail,
	// the context, a module down).
	OutcomeError = "Error"
)

// Scheduling is why one scheduling cycle put a pod where it did, or
// nowhere: what every point of the cycle answered, as the cycle got it.
type Scheduling struct {
	Pod     string    `json:"pod"` // namespace/name
	UID     string    `json:"uid,omitempty"`
	Profile string    `json:"profile"`
	Time    time.Time `json:"time"`
	// DurationNanos is the cycle's wall-clock time (PreFilter to the
	// choice; binding not included).
	DurationNanos int64  `json:"durationNanos"`
	Outcome       string `json:"outcome"`
	// Node is the chosen node (OutcomeChosen) or the one PostFilter
	// nominated (OutcomeNominated).
	Node string `json:"node,omitempty"`
	// Score is the chosen node's weighted total (0 when it was not
	// scored: the only feasible node, or the nominated node that passed).
	Score int64 `json:"score"`
	// Tied are the other scored nodes whose total equals the chosen
	// one's (at most MaxScored, the first in the walk, sorted); the
	// choice among them was random. TiedCount counts them all.
	Tied      []string `json:"tied,omitempty"`
	TiedCount int      `json:"tiedCount,omitempty"`
	// Message is the failure message the pod got (Unschedulable, Error).
	Message string `json:"message,omitempty"`

	// NumNodes is the cluster's node count.
	NumNodes int `json:"numNodes"`
	// NominatedNodePassed: the pod was nominated to Node, which passed
	// the filters, so it went there without the walk or scoring.
	NominatedNodePassed bool `json:"nominatedNodePassed,omitempty"`
	// PreFilter is every PreFilter plugin's answer, in order.
	PreFilter []PreFilterVerdict `json:"preFilter,omitempty"`
	// NarrowedTo, when PreFilter plugins named the only nodes to filter,
	// is how many nodes that left (-1: no narrowing).
	NarrowedTo int `json:"narrowedTo"`
	// Evaluated nodes were filtered; Feasible passed every filter;
	// NotEvaluated were left out of the walk because enough feasible
	// nodes were found first (percentageOfNodesToScore) or a PreFilter
	// narrowing excluded them.
	Evaluated    int `json:"evaluated"`
	Feasible     int `json:"feasible"`
	NotEvaluated int `json:"notEvaluated"`
	// Reasons groups the rejections by plugin and reason, most nodes
	// first. ReasonsDropped counts the nodes of groups past MaxReasons.
	Reasons        []ReasonCount `json:"reasons,omitempty"`
	ReasonsDropped int           `json:"reasonsDropped,omitempty"`
	// Rejected is each rejected node's verdict, sorted by node name, at
	// most MaxNodes; RejectedDropped counts the rest.
	Rejected        []NodeVerdict `json:"rejected,omitempty"`
	RejectedDropped int           `json:"rejectedDropped,omitempty"`
	// ScorePlugins are the Score plugins that ran (in order), with their
	// weights; NodeScore's slices follow this order.
	ScorePlugins []ScorePlugin `json:"scorePlugins,omitempty"`
	// ScoreSkipped are the plugins whose PreScore said Skip (or failed
	// under failurePolicy Ignore): their Score did not run.
	ScoreSkipped []string `json:"scoreSkipped,omitempty"`
	// Scores are the scored nodes, highest total first (ties by name),
	// at most MaxScored plus the chosen and pinned nodes; ScoredDropped
	// counts the rest.
	Scores        []NodeScore `json:"scores,omitempty"`
	ScoredDropped int         `json:"scoredDropped,omitempty"`
	Limits        Limits      `json:"limits"`
	// Preemption is what PostFilter did when no node fit (nil when it
	// did not run, or the pod was ineligible before any dry run).
	Preemption *Preemption `json:"preemption,omitempty"`

	// Pin, when set before the cycle, is a node whose scores are kept
	// even outside the top MaxScored (the shadow pins the live node).
	Pin string `json:"-"`
	// rejects gathers the verdicts while the cycle runs; Finish groups
	// and cuts them.
	rejects []NodeVerdict
}

// PreFilterVerdict is one PreFilter plugin's answer.
type PreFilterVerdict struct {
	Plugin  string   `json:"plugin"`
	Code    string   `json:"code"` // Success, Skip, Unschedulable, ..., or "Failed (ignored)"
	Reasons []string `json:"reasons,omitempty"`
	// Nodes is how many nodes the plugin narrowed the walk to (-1: it did
	// not narrow).
	Nodes int `json:"nodes"`
}

// NodeVerdict is the filter verdict that rejected one node: the first
// plugin that said no, as the cycle stops filtering a node there.
type NodeVerdict struct {
	Node    string   `json:"node"`
	Plugin  string   `json:"plugin"`
	Code    string   `json:"code"`
	Reasons []string `json:"reasons"`
}

// ReasonCount is how many nodes one plugin rejected with one reason.
type ReasonCount struct {
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
	Nodes  int    `json:"nodes"`
}

// ScorePlugin is a Score plugin that ran, with its weight.
type ScorePlugin struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
	// NormalizeScore: the plugin normalises its scores (in the guest,
	// within the Score call).
	NormalizeScore bool `json:"normalizeScore"`
	// RawKnown: NodeScore.Raw holds the plugin's scores before
	// NormalizeScore. A module older than ABI v1.8 sends only normalised
	// scores; for its normalising plugins RawKnown is false and Raw
	// repeats Normalized. A plugin without NormalizeScore has raw equal
	// to normalised, so RawKnown is true.
	RawKnown bool `json:"rawKnown"`
}

// NodeScore is what the Score point gave one node. Raw[i] is
// ScorePlugins[i]'s Score before its NormalizeScore (see
// ScorePlugin.RawKnown); Normalized[i] is the score after it, in
// [0, 100], as the guest replied; Weighted[i] is that times the plugin's
// weight; Total is their sum, what the choice compared.
type NodeScore struct {
	Node       string  `json:"node"`
	Total      int64   `json:"total"`
	Raw        []int64 `json:"raw"`
	Normalized []int64 `json:"normalized"`
	Weighted   []int64 `json:"weighted"`
}

// NewScheduling returns an empty record for a cycle to fill, bounded by
// l (zero fields: DefaultLimits').
func NewScheduling(l Limits) *Scheduling {
	return &Scheduling{Limits: l.or(), NarrowedTo: -1}
}

// Reject records that plugin rejected node. The cycle calls it for every
// node a filter rejected; reasons are shared, not copied.
func (s *Scheduling) Reject(node, plugin, code string, reasons []string) {
	s.rejects = append(s.rejects, NodeVerdict{Node: node, Plugin: plugin, Code: code, Reasons: reasons})
}

// ScoreSource gives what the Score point replied: Normalized(p, i) is
// plugin p's score of node i after its NormalizeScore, Raw(p, i) before
// it (see ScorePlugin.RawKnown). SetScores asks it only about the nodes
// it keeps, so a cycle can leave its replies as they came.
type ScoreSource interface {
	Raw(p, i int) int64
	Normalized(p, i int) int64
}

// ScoreTable is a ScoreSource of decoded rows, one per plugin:
// RawRows[p][i] and NormalizedRows[p][i].
type ScoreTable struct {
	RawRows, NormalizedRows [][]int64
}

// Raw implements ScoreSource.
func (t ScoreTable) Raw(p, i int) int64 { return t.RawRows[p][i] }

// Normalized implements ScoreSource.
func (t ScoreTable) Normalized(p, i int) int64 { return t.NormalizedRows[p][i] }

// SetScores records the Score point over n nodes: node i (named
// name(i)) got scores.Raw(p, i) from plugins[p]'s Score,
// scores.Normalized(p, i) after its NormalizeScore, totals[i] in all, and
// chosen is the index of the node the cycle chose. It keeps the top
// MaxScored nodes by total (equal totals: the earlier in the walk), the
// chosen one and Pin, and lists the nodes tied with the chosen one. It
// selects rather than sorts, and names and reads the scores of only the
// nodes it keeps: it runs on the scheduling loop.
func (s *Scheduling) SetScores(n int, name func(int) string, plugins []ScorePlugin, scores ScoreSource, totals []int64, chosen int) {
	s.ScorePlugins = plugins
	k := s.Limits.MaxScored
	top := make([]int, 0, k+2)
	for i := 0; i < n; i++ {
		if len(top) == k && totals[i] <= totals[top[k-1]] {
			continue
		}
		// Insert i after every kept node with a total at least its own.
		at := len(top)
		for at > 0 && totals[top[at-1]] < totals[i] {
			at--
		}
		if len(top) < k {
			top = append(top, 0)
		} else if at == k {
			continue
		}
		copy(top[at+1:], top[at:len(top)-1])
		top[at] = i
	}
	extra := func(i int) {
		if i >= 0 && i < n && !slices.Contains(top, i) {
			top = append(top, i)
		}
	}
	if chosen >= 0 && chosen < n {
		extra(chosen)
		s.Score = totals[chosen]
		for i, t := range totals {
			if i != chosen && t == totals[chosen] {
				s.TiedCount++
			}
		}
		// Counted first, so the names kept take one allocation.
		if s.TiedCount > 0 {
			s.Tied = make([]string, 0, min(s.TiedCount, s.Limits.MaxScored))
			for i, t := range totals {
				if len(s.Tied) == cap(s.Tied) {
					break
				}
				if i != chosen && t == totals[chosen] {
					s.Tied = append(s.Tied, name(i))
				}
			}
		}
		slices.Sort(s.Tied)
	}
	if s.Pin != "" {
		for i := 0; i < n; i++ {
			if name(i) == s.Pin {
				extra(i)
				break
			}
		}
	}
	s.ScoredDropped = n - len(top)
	// One backing array for every kept node's three score rows.
	np := len(plugins)
	rows := make([]int64, 3*len(top)*np)
	s.Scores = make([]NodeScore, len(top))
	for j, i := range top {
		row := rows[3*j*np : 3*(j+1)*np]
		ns := NodeScore{Node: name(i), Total: totals[i], Raw: row[:np:np], Normalized: row[np : 2*np : 2*np], Weighted: row[2*np:]}
		for p := range plugins {
			ns.Raw[p] = scores.Raw(p, i)
			ns.Normalized[p] = scores.Normalized(p, i)
			ns.Weighted[p] = ns.Normalized[p] * plugins[p].Weight
		}
		s.Scores[j] = ns
	}
	sortScores(s.Scores)
}

// sortScores orders scores by total, highest first, then by node name.
// The selection leaves them nearly in that order (by total; ties in walk
// order, the chosen and pinned nodes last), so a short list is sorted by
// insertion, which then does little more than one pass.
func sortScores(scores []NodeScore) {
	before := func(a, b *NodeScore) bool {
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return strings.Compare(a.Node, b.Node) < 0
	}
	if len(scores) > 64 {
		slices.SortFunc(scores, func(a, b NodeScore) int {
			if before(&a, &b) {
				return -1
			}
			if before(&b, &a) {
				return 1
			}
			return 0
		})
		return
	}
	for i := 1; i < len(scores); i++ {
		for j := i; j > 0 && before(&scores[j], &scores[j-1]); j-- {
			scores[j], scores[j-1] = scores[j-1], scores[j]
		}
	}
}

// Finish groups and cuts the rejections gathered during the cycle.
func (s *Scheduling) Finish() {
	type key struct{ plugin, reason string }
	counts := map[key]int{}
	for _, v := range s.rejects {
		if len(v.Reasons) == 0 {
			counts[key{v.Plugin, ""}]++
		}
		for _, r := range v.Reasons {
			counts[key{v.Plugin, r}]++
		}
	}
	groups := make([]ReasonCount, 0, len(counts))
	for k, n := range counts {
		groups = append(groups, ReasonCount{Plugin: k.plugin, Reason: k.reason, Nodes: n})
	}
	slices.SortFunc(groups, func(a, b ReasonCount) int {
		if c := cmp.Compare(b.Nodes, a.Nodes); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Plugin, b.Plugin); c != 0 {
			return c
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	for _, g := range groups[min(len(groups), s.Limits.MaxReasons):] {
		s.ReasonsDropped += g.Nodes
	}
	groups = groups[:min(len(groups), s.Limits.MaxReasons)]
	for i := range groups {
		groups[i].Reason = cut(groups[i].Reason, s.Limits.MaxReasonBytes)
	}
	s.Reasons = groups

	slices.SortFunc(s.rejects, func(a, b NodeVerdict) int { return cmp.Compare(a.Node, b.Node) })
	keep := min(len(s.rejects), s.Limits.MaxNodes)
	s.RejectedDropped = len(s.rejects) - keep
	s.Rejected = make([]NodeVerdict, keep)
	for i, v := range s.rejects[:keep] {
		rs := make([]string, len(v.Reasons))
		for j, r := range v.Reasons {
			rs[j] = cut(r, s.Limits.MaxReasonBytes)
		}
		v.Reasons = rs
		s.Rejected[i] = v
	}
	s.rejects = nil
	for i := range s.PreFilter {
		for j, r := range s.PreFilter[i].Reasons {
			s.PreFilter[i].Reasons[j] = cut(r, s.Limits.MaxReasonBytes)
		}
	}
	s.Message = cut(s.Message, 4*s.Limits.MaxReasonBytes)
}

// ScoreOf returns the kept scores of node, or nil.
func (s *Scheduling) ScoreOf(node string) *NodeScore {
	for i := range s.Scores {
		if s.Scores[i].Node == node {
			return &s.Scores[i]
		}
	}
	return nil
}

// VerdictOf returns the kept filter verdict of node, or nil.
func (s *Scheduling) VerdictOf(node string) *NodeVerdict {
	i, ok := slices.BinarySearchFunc(s.Rejected, node, func(v NodeVerdict, n string) int { return cmp.Compare(v.Node, n) })
	if !ok {
		return nil
	}
	return &s.Rejected[i]
}

// AnnotationKey is the pod annotation serve --record-decisions writes a
// Summary under: in the binding that places the pod, and in a patch of
// its own after an attempt that did not.
const AnnotationKey = "wasmsched.io/decision"

// MaxSummaryBytes caps the annotation: a pod's annotations share 256 KiB
// in all, and a summary should take a small part of it.
const MaxSummaryBytes = 2048

// maxSummaryMessage caps a Summary's Message: the reasons are grouped
// in Rejected, and the full message is in the pod's condition.
const maxSummaryMessage = 256

// Summary is the compact form of a record a pod annotation carries.
type Summary struct {
	Profile string `json:"profile"`
	// Outcome and Message say why an attempt did not place the pod
	// (OutcomeUnschedulable, OutcomeNominated, OutcomeError); both are
	// left out of a chosen node's summary.
	Outcome   string `json:"outcome,omitempty"`
	Message   string `json:"message,omitempty"`
	Node      string `json:"node"`
	Score     int64  `json:"score"`
	Evaluated int    `json:"evaluated"`
	Feasible  int    `json:"feasible"`
	Tied      int    `json:"tied,omitempty"`
	// Top are the best scored nodes with each plugin's weighted score.
	Top []SummaryScore `json:"top,omitempty"`
	// Rejected groups the filter rejections: "plugin: reason" -> nodes.
	Rejected []ReasonCount `json:"rejected,omitempty"`
	// Cut: entries were dropped to fit MaxSummaryBytes.
	Cut bool `json:"cut,omitempty"`
}

// SummaryScore is one node's total and weighted score per plugin.
type SummaryScore struct {
	Node    string           `json:"node"`
	Total   int64            `json:"total"`
	Plugins map[string]int64 `json:"plugins"`
}

// Summarize returns the record's Summary as JSON of at most maxBytes
// (the top three nodes and the five largest reason groups, fewer when
// they do not fit).
func (s *Scheduling) Summarize(maxBytes int) string {
	sum := Summary{Profile: s.Profile, Node: s.Node, Score: s.Score, Evaluated: s.Evaluated, Feasible: s.Feasible, Tied: s.TiedCount}
	if s.Outcome != OutcomeChosen {
		sum.Outcome, sum.Message = s.Outcome, cut(s.Message, maxSummaryMessage)
	}
	for _, ns := range s.Scores[:min(len(s.Scores), 3)] {
		ss := SummaryScore{Node: ns.Node, Total: ns.Total, Plugins: make(map[string]int64, len(ns.Weighted))}
		for i, w := range ns.Weighted {
			ss.Plugins[s.ScorePlugins[i].Name] = w
		}
		sum.Top = append(sum.Top, ss)
	}
	for _, r := range s.Reasons[:min(len(s.Reasons), 5)] {
		r.Reason = cut(r.Reason, 120)
		sum.Rejected = append(sum.Rejected, r)
	}
	for {
		b, err := json.Marshal(sum)
		if err == nil && len(b) <= maxBytes {
			return string(b)
		}
		sum.Cut = true
		switch {
		case len(sum.Rejected) > 0:
			sum.Rejected = sum.Rejected[:len(sum.Rejected)-1]
		case len(sum.Top) > 0:
			sum.Top = sum.Top[:len(sum.Top)-1]
		default:
			sum.Node, sum.Profile = cut(sum.Node, 64), cut(sum.Profile, 64)
			b, _ = json.Marshal(sum)
			return string(b)
		}
	}
}
