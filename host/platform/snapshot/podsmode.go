package snapshot

import "github.com/wasmsched/wasmsched/abi"

// Carries reports whether a node record in this mode lists p among the
// node's pods (Record's rule), so a guest holding the record can find p by
// its UID instead of being sent the whole pod.
func (m PodsMode) Carries(p *abi.Pod) bool {
	switch m &^ (PodsBeforeV14 | Interned | BeforeV17) {
	case AllPods:
		return true
	case AffinityPods:
		return p.PodAffinity != nil || p.PodAntiAffinity != nil
	}
	return false
}
