package podtopologyspread

import "github.com/wasmsched/wasmsched/abi"

// taintsTolerated reports whether every NoSchedule/NoExecute taint of the
// node is tolerated by the pod (kube's FindMatchingUntoleratedTaint with
// DoNotScheduleTaintsFilterFunc).
func taintsTolerated(pod *abi.Pod, node *abi.Node) bool {
	for i := range node.Taints {
		t := &node.Taints[i]
		if t.Effect != abi.EffectNoSchedule && t.Effect != abi.EffectNoExecute {
			continue
		}
		ok := false
		for j := range pod.Tolerations {
			if pod.Tolerations[j].ToleratesTaint(t) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
