// Package decision holds the records of why an engine decided what it
// did — where a pod went, which victims preemption chose, what an
// eviction round evicted, where a vreplica was placed — and the bounded
// ring that keeps the latest of them for simulate --explain and serve's
// /debug/explain.
//
// A record is written by the cycle that made the decision, from the
// replies of its own plugin calls, never by evaluating again: what it
// says is what was decided. It is made only for the cycles a Sink asks
// for (Sink.Want), so an engine without a sink, or a pod no one asks
// about, costs a nil check. Every record is bounded (Limits): lists of
// nodes and reasons are cut to a cap, and what was cut is counted.
package decision

import (
	"time"
)

// Kinds of Record, one per engine.
const (
	KindScheduling = "scheduling"
	KindPreemption = "preemption"
	KindEviction   = "eviction"
	KindVPod       = "vpod"
)

// Record is one decision of one engine. Exactly one of the engine fields
// is set, the one Kind names.
type Record struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Key is what the record is looked up by: namespace/name of the pod
	// (scheduling, preemption), of the vpod (vpod), or "round-N"
	// (eviction).
	Key        string      `json:"key"`
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	Preemption *Preemption `json:"preemption,omitempty"`
	Eviction   *Eviction   `json:"eviction,omitempty"`
	VPod       *VPod       `json:"vpod,omitempty"`
}

// Sink receives the records an engine makes. Want is asked before a
// decision is made, so that a decision nobody wants is not recorded at
// all; Add takes a finished record and must not block on I/O (it runs on
// the engine's loop).
type Sink interface {
	Want(kind, key string) bool
	Add(r *Record)
}

// Limits bound one record's size.
type Limits struct {
	// MaxNodes is how many rejected nodes keep their own verdict (the
	// rest are counted in their reason group only).
	MaxNodes int `json:"maxNodes"`
	// MaxScored is how many scored nodes keep their per-plugin scores
	// (the highest totals, plus the chosen node and any pinned one), and
	// how many nodes tied with the chosen one are named.
	MaxScored int `json:"maxScored"`
	// MaxReasons is how many distinct (plugin, reason) groups are kept.
	MaxReasons int `json:"maxReasons"`
	// MaxReasonBytes cuts each reason text.
	MaxReasonBytes int `json:"maxReasonBytes"`
}

// DefaultLimits keep a record of a 5000-node cycle to a few tens of KiB.
var DefaultLimits = Limits{MaxNodes: 100, MaxScored: 20, MaxReasons: 32, MaxReasonBytes: 256}

// or returns l with its zero fields taken from DefaultLimits.
func (l Limits) or() Limits {
	if l.MaxNodes <= 0 {
		l.MaxNodes = DefaultLimits.MaxNodes
	}
	if l.MaxScored <= 0 {
		l.MaxScored = DefaultLimits.MaxScored
	}
	if l.MaxReasons <= 0 {
		l.MaxReasons = DefaultLimits.MaxReasons
	}
	if l.MaxReasonBytes <= 0 {
		l.MaxReasonBytes = DefaultLimits.MaxReasonBytes
	}
	return l
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	end := n - len(mark)
	for end > 0 && s[end]&0xC0 == 0x80 {
		end--
	}
	return s[:max(end, 0)] + mark
}

// The records of the other engines. Their engines fill them; the fields
// say what each decision is made of, so that the ring, simulate and the
// report treat all four alike.

// Preemption is why PostFilter chose its victims: every candidate node
// it tried, with its victims and the PodDisruptionBudgets they violate,
// and which candidate won and why.
type Preemption struct {
	Pod        string      `json:"pod"`
	Profile    string      `json:"profile,omitempty"`
	Candidates []Candidate `json:"candidates,omitempty"`
	// CandidatesDropped counts candidates past Limits.MaxNodes.
	CandidatesDropped int    `json:"candidatesDropped,omitempty"`
	Chosen            string `json:"chosen,omitempty"`
	// Why the chosen candidate won (the first criterion that told it
	// apart: fewest PDB violations, lowest highest-victim priority, ...).
	Why     string `json:"why,omitempty"`
	Message string `json:"message,omitempty"`
}

// Candidate is one node preemption could free for the pod.
type Candidate struct {
	Node          string   `json:"node"`
	Victims       []string `json:"victims"`
	PDBViolations int      `json:"pdbViolations"`
}

// Eviction is one eviction round: each policy's answer per node, and what
// the coordinator did with the answers.
type Eviction struct {
	Round   int              `json:"round"`
	Answers []EvictionAnswer `json:"answers,omitempty"`
	// AnswersDropped counts answers past Limits.MaxNodes.
	AnswersDropped int      `json:"answersDropped,omitempty"`
	Filtered       []string `json:"filtered,omitempty"`
	Throttled      []string `json:"throttled,omitempty"`
	Evicted        []string `json:"evicted,omitempty"`
}

// EvictionAnswer is one policy's answer for one node.
type EvictionAnswer struct {
	Policy  string   `json:"policy"`
	Node    string   `json:"node"`
	Victims []string `json:"victims,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// VPod is one vreplica placement step: every candidate adapter pod with
// its predicate verdicts and priority scores.
type VPod struct {
	VPod       string          `json:"vpod"`
	Step       int             `json:"step"`
	Candidates []VPodCandidate `json:"candidates,omitempty"`
	// CandidatesDropped counts candidates past Limits.MaxNodes.
	CandidatesDropped int    `json:"candidatesDropped,omitempty"`
	Chosen            string `json:"chosen,omitempty"`
}

// VPodCandidate is one adapter pod a vreplica could go to.
type VPodCandidate struct {
	Pod string `json:"pod"`
	// Rejected is the predicate that refused the pod, with its reason
	// ("" when every predicate passed).
	Rejected string           `json:"rejected,omitempty"`
	Reason   string           `json:"reason,omitempty"`
	Scores   map[string]int64 `json:"scores,omitempty"`
	Total    int64            `json:"total"`
}
