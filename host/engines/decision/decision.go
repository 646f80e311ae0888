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
	"slices"
	"strings"
	"time"
)

// Kinds of Record, one per engine (a preemption is part of the
// scheduling attempt it ran in: Scheduling.Preemption).
const (
	KindScheduling = "scheduling"
	KindEviction   = "eviction"
	KindVPod       = "vpod"
)

// Record is one decision of one engine. Exactly one of the engine fields
// is set, the one Kind names.
type Record struct {
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Key is what the record is looked up by: namespace/name of the pod
	// (scheduling, with its preemption), "vpod:" and the vpod's
	// namespace/name (vpod), or "round-N" (eviction).
	Key        string      `json:"key"`
	Scheduling *Scheduling `json:"scheduling,omitempty"`
	Eviction   *Eviction   `json:"eviction,omitempty"`
	VPod       *VPod       `json:"vpod,omitempty"`
	// Autoscale is a vpod autoscaler pass (Kind KindVPod, Key
	// "autoscaler/" and the scheduler's name).
	Autoscale *VPodAutoscale `json:"autoscale,omitempty"`
}

// Mentions reports whether the record concerns key: its own key, a
// victim the attempt's preemption chose or acted on (a pod
// namespace/name), a pod an
// eviction round names, or a vpod an autoscaler pass counted pending.
// It is how /debug/explain and simulate --explain answer "why was my pod
// evicted".
func (r *Record) Mentions(key string) bool {
	if r.Key == key {
		return true
	}
	switch {
	case r.Scheduling != nil && r.Scheduling.Preemption != nil:
		return r.Scheduling.Preemption.mentions(key)
	case r.Eviction != nil:
		return len(r.Eviction.Names(key)) > 0
	case r.Autoscale != nil:
		return strings.HasPrefix(key, vpodPrefix) && slices.Contains(r.Autoscale.PendingVPods, key[len(vpodPrefix):])
	}
	return false
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
