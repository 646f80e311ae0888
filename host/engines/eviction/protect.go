package eviction

import (
	"strings"

	"github.com/wasmsched/wasmsched/abi"
)

// protection is the host's own reasons never to evict a pod, computed
// from the host's record of it (abi.Pod as host/internal/convert built it from the
// API object: every label, every annotation key, spec.priority, the
// deletionTimestamp, kubelet's config annotations) when a round's
// candidates are assembled. Nothing a guest is sent goes into it: the
// guests' copies (the mirror, the eviction observation) are bounded and
// filtered, and no decision may rest on what a bound left out. The
// filters of a round read these facts only; zero means unprotected.
type protection uint8

const (
	// protStatic: a static pod (kubernetes.io/config.source not "api").
	protStatic protection = 1 << iota
	// protMirror: a static pod's API mirror (kubernetes.io/config.mirror).
	protMirror
	// protCriticalPriority: spec.priority at least SystemCriticalPriority.
	protCriticalPriority
	// protTerminating: the pod has a deletionTimestamp.
	protTerminating
	// protSkipAnnotation: the pod carries one of the skip annotation keys.
	protSkipAnnotation
	// protSkipLabel: the pod carries one of the skip label keys.
	protSkipLabel
)

// protectionNames name the bits of a protection in logs.
var protectionNames = [...]string{"static", "mirror", "critical-priority", "terminating", "skip-annotation", "skip-label"}

// String lists the reasons, e.g. "mirror,skip-annotation" ("none": zero).
func (p protection) String() string {
	if p == 0 {
		return "none"
	}
	var parts []string
	for i, name := range protectionNames {
		if p&(1<<i) != 0 {
			parts = append(parts, name)
		}
	}
	return strings.Join(parts, ",")
}

// skipKeys are the configured skip annotation and label keys as sets, so
// that a pod's whole record is tested in one pass over it, however many
// keys it carries and in whatever order.
type skipKeys struct {
	annotations, labels map[string]struct{}
}

func newSkipKeys(annotations, labels []string) skipKeys {
	set := func(keys []string) map[string]struct{} {
		if len(keys) == 0 {
			return nil
		}
		m := make(map[string]struct{}, len(keys))
		for _, k := range keys {
			m[k] = struct{}{}
		}
		return m
	}
	return skipKeys{annotations: set(annotations), labels: set(labels)}
}

// protectionOf computes a pod's protection from its host record. Every
// key of the record is tested (it is never truncated: see
// convert.MaxAnnotationValue), not looked up by position or by a sorted
// search, so the answer holds for a record in any order.
func (k skipKeys) protectionOf(p *abi.Pod) protection {
	var out protection
	if p.Static {
		out |= protStatic
	}
	if p.Mirror {
		out |= protMirror
	}
	if p.Priority >= abi.SystemCriticalPriority {
		out |= protCriticalPriority
	}
	if p.Terminating {
		out |= protTerminating
	}
	if hasAnyKey(p.Annotations, k.annotations) {
		out |= protSkipAnnotation
	}
	if hasAnyKey(p.Labels, k.labels) {
		out |= protSkipLabel
	}
	return out
}

// hasAnyKey reports whether any key of ls is in keys.
func hasAnyKey(ls abi.Labels, keys map[string]struct{}) bool {
	if len(keys) == 0 {
		return false
	}
	for i := range ls {
		if _, ok := keys[ls[i].Key]; ok {
			return true
		}
	}
	return false
}
