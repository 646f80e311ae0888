package decision

import (
	"time"
)

// Eviction is one eviction round, as the coordinator ran it: each
// policy's answer per node, which pods the coordinator did not offer or
// would not take, and what it merged, held back and evicted. The round
// fills it from the policies' own batched replies.
//
// Every list is bounded (Limits.MaxNodes entries; its More counts the
// rest; an answer keeps Limits.MaxScored pods), so a round over
// thousands of nodes stays at most a few hundred KiB, and at the default
// burst of a few pods per answer a few tens.
type Eviction struct {
	Round int       `json:"round"`
	Time  time.Time `json:"time"`
	// Nodes is how many nodes the round looked at.
	Nodes int `json:"nodes"`
	// Burst is the most pods evicted per node and round; Rate and
	// RateBurst the cluster-wide token bucket.
	Burst     int     `json:"burst"`
	Rate      float64 `json:"rate"`
	RateBurst int     `json:"rateBurst"`
	// Answers are the policies' answers, in the order they came: per
	// policy, evict_pods and threshold_met over every node (only nodes
	// with something to say: a named pod or a threshold met), then
	// top_eviction_pods for the thresholds met past their grace period.
	Answers        []EvictionAnswer `json:"answers,omitempty"`
	AnswersDropped int              `json:"answersDropped,omitempty"`
	// Failures are the policy calls whose answers the round dropped.
	Failures []string `json:"failures,omitempty"`
	// NotOffered are pods the coordinator kept from every policy
	// (protected: static, mirror, critical priority, terminating, a skip
	// annotation or label key; held by the killer; refused by a budget
	// until later), with why.
	NotOffered EvictionPods `json:"notOffered"`
	// Ignored are pods a policy named that were not offered: refused.
	Ignored EvictionPods `json:"ignored"`
	// DryRun are the pods dry-run policies would have had evicted.
	DryRun EvictionPods `json:"dryRun"`
	// Merged are force victims two hard thresholds named (one entry,
	// both reasons).
	Merged EvictionPods `json:"merged"`
	// NotChosen are candidates the selection left (a force answer covers
	// the pod; one soft victim per node and round; past the burst).
	NotChosen EvictionPods `json:"notChosen"`
	// Throttled are victims the cluster-wide rate limit held back.
	Throttled EvictionPods `json:"throttled"`
	// Evicted are the pods handed to the killer.
	Evicted EvictionPods `json:"evicted"`

	limits Limits
}

// EvictionAnswer is one policy's answer for one node to one call.
type EvictionAnswer struct {
	Policy string `json:"policy"`
	Node   string `json:"node"`
	// Call is evict_pods, threshold_met or top_eviction_pods.
	Call string `json:"call"`
	// DryRun: the policy is configured dryRun.
	DryRun bool `json:"dryRun,omitempty"`
	// Met (threshold_met) is NOT_MET, SOFT_MET or HARD_MET, with the
	// threshold's scope, observed and target values; Acted: met past its
	// grace period, so top_eviction_pods was asked.
	Met      string  `json:"met,omitempty"`
	Scope    string  `json:"scope,omitempty"`
	Observed float64 `json:"observed,omitempty"`
	Target   float64 `json:"target,omitempty"`
	Acted    bool    `json:"acted,omitempty"`
	// Pods are the pods the answer named (evict_pods,
	// top_eviction_pods), with the reason it gave, at most
	// Limits.MaxScored (PodsDropped counts the rest).
	Pods        []EvictionPod `json:"pods,omitempty"`
	PodsDropped int           `json:"podsDropped,omitempty"`
}

// EvictionPod is a pod a round's record names, with who and why.
type EvictionPod struct {
	Pod    string `json:"pod"` // namespace/name
	Node   string `json:"node,omitempty"`
	Policy string `json:"policy,omitempty"`
	Scope  string `json:"scope,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// EvictionPods is a bounded list of pods: More counts those past the
// bound.
type EvictionPods struct {
	Pods []EvictionPod `json:"pods,omitempty"`
	More int           `json:"more,omitempty"`
}

// NewEviction returns an empty record of round for the coordinator to
// fill, bounded by l.
func NewEviction(round int, at time.Time, l Limits) *Eviction {
	return &Eviction{Round: round, Time: at, limits: l.or()}
}

// Add appends p to one of the record's lists, within the bound.
func (e *Eviction) Add(list *EvictionPods, p EvictionPod) {
	if len(list.Pods) >= e.limits.MaxNodes {
		list.More++
		return
	}
	p.Reason = cut(p.Reason, e.limits.MaxReasonBytes)
	list.Pods = append(list.Pods, p)
}

// Answer records one answer (pods cut to the bound), or counts it past
// the bound.
func (e *Eviction) Answer(a EvictionAnswer) {
	if len(e.Answers) >= e.limits.MaxNodes {
		e.AnswersDropped++
		return
	}
	if len(a.Pods) > e.limits.MaxScored {
		a.PodsDropped = len(a.Pods) - e.limits.MaxScored
		a.Pods = a.Pods[:e.limits.MaxScored]
	}
	for i := range a.Pods {
		a.Pods[i].Reason = cut(a.Pods[i].Reason, e.limits.MaxReasonBytes)
	}
	e.Answers = append(e.Answers, a)
}

// Fail records a dropped policy call.
func (e *Eviction) Fail(policy, call string, err error) {
	if len(e.Failures) < e.limits.MaxReasons {
		e.Failures = append(e.Failures, cut(policy+" "+call+": "+err.Error(), e.limits.MaxReasonBytes))
	}
}

// Names returns every pod the round's record names and what happened to
// it there ("evicted", "throttled", ...), the most consequential first.
func (e *Eviction) Names(key string) []string {
	var out []string
	for _, l := range []struct {
		what string
		pods *EvictionPods
	}{{"evicted", &e.Evicted}, {"throttled", &e.Throttled}, {"not chosen", &e.NotChosen}, {"merged", &e.Merged},
		{"dry run", &e.DryRun}, {"ignored", &e.Ignored}, {"not offered", &e.NotOffered}} {
		for _, p := range l.pods.Pods {
			if p.Pod == key {
				out = append(out, l.what)
				break
			}
		}
	}
	for _, a := range e.Answers {
		for _, p := range a.Pods {
			if p.Pod == key {
				out = append(out, "named by "+a.Policy+" "+a.Call)
				break
			}
		}
	}
	return out
}

// EvictedPods are the namespace/names of the pods the round evicted.
func (e *Eviction) EvictedPods() []string {
	out := make([]string, len(e.Evicted.Pods))
	for i, p := range e.Evicted.Pods {
		out[i] = p.Pod
	}
	return out
}

// Named returns every pod the record names, in any of its lists or
// answers (a pod may appear more than once).
func (e *Eviction) Named() []string {
	var out []string
	for _, l := range []*EvictionPods{&e.Evicted, &e.Throttled, &e.NotChosen, &e.Merged, &e.DryRun, &e.Ignored, &e.NotOffered} {
		for _, p := range l.Pods {
			out = append(out, p.Pod)
		}
	}
	for _, a := range e.Answers {
		for _, p := range a.Pods {
			out = append(out, p.Pod)
		}
	}
	return out
}
