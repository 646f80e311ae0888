package eviction

import (
	"cmp"
	"slices"

	"github.com/wasmsched/wasmsched/abi"
)

// Scopes the coordinator itself gives candidates: GetEvictPods answers
// are "force" or "soft"; threshold answers carry the policy's scope.
const (
	ScopeForce = "force"
	ScopeSoft  = "soft"
)

// scopeRank orders scopes in CandidateSort: force, then memory, then cpu,
// then anything else (soft and other resource names included).
func scopeRank(scope string) int {
	switch scope {
	case ScopeForce:
		return 1
	case "memory":
		return 2
	case "cpu":
		return 3
	}
	return 4
}

// reclaimed is Katalyst's reclaimed_cores QoS level, the first to go.
// Kubernetes has no such level; its nearest is BestEffort (no requests,
// running on what others leave), so that is what counts as reclaimed here.
func reclaimed(p *abi.Pod) bool { return p.QoS == abi.QoSBestEffort }

// compareCandidates is CandidateSort's order, least evictable first:
// non-reclaimed before reclaimed, higher priority first, then scope rank
// (force, memory, cpu, other), then name descending. The victim of a
// sorted list is its last element.
func compareCandidates(a, b *candidate) int {
	if ra, rb := reclaimed(a.pod), reclaimed(b.pod); ra != rb {
		if ra {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(b.pod.Priority, a.pod.Priority); c != 0 {
		return c
	}
	if c := cmp.Compare(scopeRank(a.scope), scopeRank(b.scope)); c != 0 {
		return c
	}
	if c := cmp.Compare(b.pod.Name, a.pod.Name); c != 0 {
		return c
	}
	return cmp.Compare(b.pod.Namespace, a.pod.Namespace) // names repeat across namespaces
}

// sortCandidates sorts in CandidateSort order (least evictable first).
func sortCandidates(cs []*candidate) { slices.SortStableFunc(cs, compareCandidates) }
