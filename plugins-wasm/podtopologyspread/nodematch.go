package podtopologyspread

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/kubename"
)

// requiredAffinityMatches reports whether node satisfies the pod's
// nodeSelector and required node affinity (kube's
// nodeaffinity.GetRequiredNodeAffinity(pod).Match), without allocating.
// Invalid terms (In/NotIn without values, Gt/Lt without one integer, bad
// field operators) match nothing, as upstream ignores parse errors; label
// keys are not validated here (the API server does).
func requiredAffinityMatches(pod *abi.Pod, node *abi.Node) bool {
	for i := range pod.NodeSelector {
		v, ok := node.Labels.Get(pod.NodeSelector[i].Key)
		if !ok || v != pod.NodeSelector[i].Value {
			return false
		}
	}
	na := pod.NodeAffinity
	if na == nil || na.Required == nil {
		return true
	}
	for i := range na.Required.Terms {
		if termMatches(&na.Required.Terms[i], node) {
			return true
		}
	}
	return false
}

func termMatches(t *abi.NodeSelectorTerm, node *abi.Node) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false // an empty term selects nothing
	}
	for i := range t.MatchExpressions {
		if !exprMatches(&t.MatchExpressions[i], node.Labels) {
			return false
		}
	}
	for i := range t.MatchFields {
		f := &t.MatchFields[i]
		if (f.Operator != abi.OpIn && f.Operator != abi.OpNotIn) || len(f.Values) != 1 {
			return false
		}
		var v string // fields other than metadata.name read as ""
		if f.Key == "metadata.name" {
			v = node.Name
		}
		if (v == f.Values[0]) != (f.Operator == abi.OpIn) {
			return false
		}
	}
	return true
}

func exprMatches(r *abi.Requirement, ls abi.Labels) bool {
	v, ok := ls.Get(r.Key)
	switch r.Operator {
	case abi.OpIn:
		return len(r.Values) > 0 && ok && contains(r.Values, v)
	case abi.OpNotIn:
		return len(r.Values) > 0 && (!ok || !contains(r.Values, v))
	case abi.OpExists:
		return len(r.Values) == 0 && ok
	case abi.OpDoesNotExist:
		return len(r.Values) == 0 && !ok
	case abi.OpGt, abi.OpLt:
		if len(r.Values) != 1 || !ok {
			return false
		}
		bound, valid := kubename.ParseInt64(r.Values[0])
		if !valid {
			return false
		}
		n, valid := kubename.ParseInt64(v)
		if !valid {
			return false
		}
		if r.Operator == abi.OpGt {
			return n > bound
		}
		return n < bound
	}
	return false
}

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

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}
