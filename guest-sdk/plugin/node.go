package plugin

import "github.com/wasmsched/wasmsched/abi"

// NodeInfo is a node as plugins see it: the node, the aggregates of the
// pods on it, and its slot in the mirror. Treat it as read-only.
type NodeInfo struct {
	abi.NodeInfo
	// Slot is the node's index in the host's node table; stable for the
	// node's lifetime, reused after it is deleted.
	Slot uint32
	// PodsWithAffinity and PodsWithRequiredAntiAffinity point into Pods:
	// the pods that have any pod (anti-)affinity, and those with required
	// anti-affinity terms, as kube-scheduler's NodeInfo keeps them, so the
	// symmetric checks of inter-pod affinity need not scan every pod.
	// Filled only in modules whose plugins want pods.
	PodsWithAffinity             []*abi.Pod
	PodsWithRequiredAntiAffinity []*abi.Pod
}

// IndexPods (re)computes PodsWithAffinity and PodsWithRequiredAntiAffinity
// from Pods. The SDK calls it when a node is synced or changed in a
// what-if; plugin code does not need to.
func (n *NodeInfo) IndexPods() {
	n.PodsWithAffinity, n.PodsWithRequiredAntiAffinity = n.PodsWithAffinity[:0], n.PodsWithRequiredAntiAffinity[:0]
	for i := range n.Pods {
		p := &n.Pods[i]
		if p.PodAffinity != nil || p.PodAntiAffinity != nil {
			n.PodsWithAffinity = append(n.PodsWithAffinity, p)
		}
		if p.PodAntiAffinity != nil && len(p.PodAntiAffinity.Required) > 0 {
			n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, p)
		}
	}
}

// Name is the node's name.
func (n *NodeInfo) Name() string { return n.Node.Name }

// Label returns the value of a node label.
func (n *NodeInfo) Label(key string) (string, bool) { return n.Node.Labels.Get(key) }
