package sim

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/abi"
)

// namespaces lists every namespace the simulation knows, with the label
// the API server puts on each (kubernetes.io/metadata.name), including
// the implicit ones pods live in without a Namespace object.
func namespaces(objs *Objects, pods []*abi.Pod) []abi.Namespace {
	byName := map[string]abi.Labels{}
	for _, ns := range objs.Namespaces {
		l := map[string]string{}
		for k, v := range ns.Labels {
			l[k] = v
		}
		l[corev1.LabelMetadataName] = ns.Name
		byName[ns.Name] = sortedLabels(l)
	}
	for _, p := range pods {
		if _, ok := byName[p.Namespace]; !ok {
			byName[p.Namespace] = abi.Labels{{Key: corev1.LabelMetadataName, Value: p.Namespace}}
		}
	}
	out := make([]abi.Namespace, 0, len(byName))
	for n, l := range byName {
		out = append(out, abi.Namespace{Name: n, Labels: l})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sortedLabels(m map[string]string) abi.Labels {
	out := make(abi.Labels, 0, len(m))
	for k, v := range m {
		out = append(out, abi.Label{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}
