package sim

import (
	"cmp"
	"slices"
	"strings"

	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// What-if before rollout: the same objects scheduled under two
// configurations, pod by pod. Compare only reads the two reports, so the
// comparison is the same whichever way the runs were made (files, a live
// cluster's objects) and can be tested without running anything.

// Change is how a pod's outcome under the shadow configuration differs
// from its outcome under the live one.
type Change string

// The changes Compare tells apart. A pod is placed when it ends on a node
// (Scheduled, or Bound before the run); every other outcome —
// unschedulable, a scheduler error, preempted, no profile for its
// schedulerName, absent from a report — counts as not placed, and two
// not-placed outcomes are the Same, whatever their reasons: what a
// rollout changes is where pods run.
const (
	// ChangeSame: on the same node in both, or placed in neither.
	ChangeSame Change = "same"
	// ChangeMoved: placed in both, on different nodes.
	ChangeMoved Change = "moved"
	// ChangeNewlyUnschedulable: placed live, not placed in the shadow.
	ChangeNewlyUnschedulable Change = "newly-unschedulable"
	// ChangeNewlyPlaced: not placed live, placed in the shadow.
	ChangeNewlyPlaced Change = "newly-placed"
)

// PodComparison is one pod's outcome in both runs.
type PodComparison struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Profile is the live run's profile for the pod, else the shadow's
	// (a configuration without the pod's schedulerName gives none).
	Profile string `json:"profile,omitempty"`
	// Live and Shadow are the pod's results; nil when that report does
	// not have the pod.
	Live   *PodResult `json:"live"`
	Shadow *PodResult `json:"shadow"`
	Change Change     `json:"change"`
	// Why, for a moved pod whose decisions were recorded
	// (Options.Explain), is how the shadow's cycle judged both nodes.
	Why *MovedWhy `json:"why,omitempty"`
}

// MovedWhy is how the shadow configuration's cycle judged the node the
// live run chose and the node it chose itself: per Score plugin their
// weighted scores, or the filter verdict that ruled the live node out.
type MovedWhy struct {
	LiveNode   string `json:"liveNode"`
	ShadowNode string `json:"shadowNode"`
	// LiveNodeTotal and ShadowNodeTotal are the shadow cycle's totals;
	// LiveNodeScored is false when the shadow did not score the live
	// node (rejected, not filtered, or not among the scores kept).
	LiveNodeTotal   int64 `json:"liveNodeTotal"`
	ShadowNodeTotal int64 `json:"shadowNodeTotal"`
	LiveNodeScored  bool  `json:"liveNodeScored"`
	// LiveNodeRejected is the shadow's filter verdict on the live node
	// ("plugin: reason"), when a filter rejected it.
	LiveNodeRejected string `json:"liveNodeRejected,omitempty"`
	// Plugins are the shadow's Score plugins, largest difference first.
	Plugins []PluginDelta `json:"plugins,omitempty"`
}

// PluginDelta is one Score plugin's weighted score of the two nodes in
// the shadow's cycle; Delta is ShadowNode minus LiveNode.
type PluginDelta struct {
	Plugin     string `json:"plugin"`
	LiveNode   int64  `json:"liveNode"`
	ShadowNode int64  `json:"shadowNode"`
	Delta      int64  `json:"delta"`
}

// movedWhy explains a moved pod from the shadow run's last record of a
// chosen node for it (nil when there is none).
func movedWhy(rec *decision.Scheduling, liveNode string) *MovedWhy {
	if rec == nil {
		return nil
	}
	why := &MovedWhy{LiveNode: liveNode, ShadowNode: rec.Node, ShadowNodeTotal: rec.Score}
	if v := rec.VerdictOf(liveNode); v != nil {
		why.LiveNodeRejected = v.Plugin + ": " + strings.Join(v.Reasons, ", ")
	}
	sn, ln := rec.ScoreOf(rec.Node), rec.ScoreOf(liveNode)
	if ln != nil {
		why.LiveNodeScored, why.LiveNodeTotal = true, ln.Total
	}
	if sn == nil || ln == nil {
		return why
	}
	for i, p := range rec.ScorePlugins {
		why.Plugins = append(why.Plugins, PluginDelta{Plugin: p.Name, LiveNode: ln.Weighted[i], ShadowNode: sn.Weighted[i],
			Delta: sn.Weighted[i] - ln.Weighted[i]})
	}
	abs := func(v int64) int64 { return max(v, -v) }
	slices.SortStableFunc(why.Plugins, func(a, b PluginDelta) int { return cmp.Compare(abs(b.Delta), abs(a.Delta)) })
	return why
}

// lastChosen maps each pod to the latest record of a cycle that chose a
// node for it.
func lastChosen(r *Report) map[string]*decision.Scheduling {
	out := map[string]*decision.Scheduling{}
	if r == nil {
		return out
	}
	for _, rec := range r.Explanations {
		if rec.Outcome == decision.OutcomeChosen {
			out[rec.Pod] = rec
		}
	}
	return out
}

// Summary counts the pods of a Comparison by Change.
type Summary struct {
	Pods               int `json:"pods"`
	Same               int `json:"same"`
	Moved              int `json:"moved"`
	NewlyUnschedulable int `json:"newlyUnschedulable"`
	NewlyPlaced        int `json:"newlyPlaced"`
}

// Comparison is the pod-by-pod difference between two runs on the same
// objects: the live configuration's and a shadow (candidate) one's.
type Comparison struct {
	// Pods are in the live report's order, followed by any pods only the
	// shadow report has, in its order.
	Pods    []PodComparison `json:"pods"`
	Summary Summary         `json:"summary"`
}

// Placed reports whether the result leaves the pod running on a node: its
// node, or "" when it has none. A preempted pod keeps the node it was
// bound to in its result but no longer runs there.
func (r *PodResult) Placed() (string, bool) {
	if r == nil || r.Node == "" || (r.Status != StatusScheduled && r.Status != StatusBound) {
		return "", false
	}
	return r.Node, true
}

// Compare matches the pods of live and shadow by namespace/name and
// classifies each; a nil report has no pods. The results are copied, so
// the reports can be reused.
func Compare(live, shadow *Report) *Comparison {
	c := &Comparison{Pods: []PodComparison{}}
	shadowAt := map[string]int{}
	if shadow != nil {
		for i, p := range shadow.Pods {
			shadowAt[p.Namespace+"/"+p.Name] = i
		}
	}
	seen := map[string]bool{}
	shadowChose := lastChosen(shadow)
	if live != nil {
		for i := range live.Pods {
			l := live.Pods[i]
			key := l.Namespace + "/" + l.Name
			seen[key] = true
			pc := PodComparison{Namespace: l.Namespace, Name: l.Name, Live: &l}
			if j, ok := shadowAt[key]; ok {
				s := shadow.Pods[j]
				pc.Shadow = &s
			}
			if classify(pc.Live, pc.Shadow) == ChangeMoved {
				pc.Why = movedWhy(shadowChose[key], pc.Live.Node)
			}
			c.add(pc)
		}
	}
	if shadow != nil {
		for i := range shadow.Pods {
			s := shadow.Pods[i]
			if seen[s.Namespace+"/"+s.Name] {
				continue
			}
			c.add(PodComparison{Namespace: s.Namespace, Name: s.Name, Shadow: &s})
		}
	}
	return c
}

// add classifies pc, counts it and appends it.
func (c *Comparison) add(pc PodComparison) {
	if pc.Live != nil && pc.Live.Profile != "" {
		pc.Profile = pc.Live.Profile
	} else if pc.Shadow != nil {
		pc.Profile = pc.Shadow.Profile
	}
	pc.Change = classify(pc.Live, pc.Shadow)
	c.Summary.Pods++
	switch pc.Change {
	case ChangeSame:
		c.Summary.Same++
	case ChangeMoved:
		c.Summary.Moved++
	case ChangeNewlyUnschedulable:
		c.Summary.NewlyUnschedulable++
	case ChangeNewlyPlaced:
		c.Summary.NewlyPlaced++
	}
	c.Pods = append(c.Pods, pc)
}

func classify(live, shadow *PodResult) Change {
	ln, lok := live.Placed()
	sn, sok := shadow.Placed()
	switch {
	case lok && sok && ln != sn:
		return ChangeMoved
	case lok && !sok:
		return ChangeNewlyUnschedulable
	case !lok && sok:
		return ChangeNewlyPlaced
	}
	return ChangeSame
}
