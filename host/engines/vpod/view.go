package vpod

import (
	"context"
	"fmt"
	"sort"

	"github.com/wasmsched/wasmsched/abi"
)

// topology is the schedulable part of the cluster for one reading: the
// adapter pods that may take vreplicas, the schedulable nodes and their
// zones.
type topology struct {
	replicas int32
	// ordinals of the schedulable pods, ascending.
	ordinals []int32
	// podIndex maps an ordinal below replicas to its index in ordinals,
	// or -1.
	podIndex []int32
	// podNode is the node index of each schedulable pod.
	podNode []int
	// nodes are the schedulable nodes by name, with their zone index.
	nodes     []string
	nodeZone  []int
	nodeIndex map[string]int
	zones     []string
}

// schedulable reports whether the pod of that ordinal may take vreplicas.
func (t *topology) schedulable(o int32) bool {
	return o >= 0 && int(o) < len(t.podIndex) && t.podIndex[o] >= 0
}

// index is the topology index of the pod named name when it is one of the
// StatefulSet's schedulable pods (by its exact name), else -1.
func (t *topology) index(statefulSet, name string) int {
	o := ordinalOf(name)
	if !t.schedulable(o) || name != podName(statefulSet, o) {
		return -1
	}
	return int(t.podIndex[o])
}

// view is one reading of the cluster: the StatefulSet's scale, the
// topology and the vpods with their committed placements.
type view struct {
	topo  *topology
	vpods []VPod
}

// readView reads the cluster. checkNodes selects Knative v1.16.0's rule
// (a pod on a cordoned or unreachable node is unschedulable, and a pod
// bound to a missing node is an error); HEAD only looks at the pod.
func readView(ctx context.Context, c Cluster, statefulSet string, checkNodes bool) (*view, error) {
	vpods, err := c.VPods()
	if err != nil {
		return nil, fmt.Errorf("list vpods: %w", err)
	}
	replicas, err := c.Replicas(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the scale of statefulset %s: %w", statefulSet, err)
	}
	t := &topology{replicas: replicas, nodeIndex: map[string]int{}}
	if checkNodes {
		zoneOf := map[string]string{}
		for _, n := range c.Nodes() {
			if n == nil || nodeUnschedulable(n) {
				continue
			}
			t.nodes = append(t.nodes, n.Name)
			zoneOf[n.Name] = nodeZone(n)
		}
		sort.Strings(t.nodes)
		zi := map[string]int{}
		for _, z := range zoneOf {
			zi[z] = 0
		}
		for z := range zi {
			t.zones = append(t.zones, z)
		}
		sort.Strings(t.zones)
		for i, z := range t.zones {
			zi[z] = i
		}
		t.nodeZone = make([]int, len(t.nodes))
		for i, name := range t.nodes {
			t.nodeIndex[name] = i
			t.nodeZone[i] = zi[zoneOf[name]]
		}
	}
	if replicas > 0 {
		n := replicas
		if n > maxOrdinal+1 {
			n = maxOrdinal + 1
		}
		t.podIndex = make([]int32, n)
	}
	for o := range t.podIndex {
		t.podIndex[o] = -1
		p := c.Pod(podName(statefulSet, int32(o)))
		if p == nil || podUnschedulable(p) {
			continue
		}
		node := -1
		if checkNodes {
			nd := c.Node(p.Spec.NodeName)
			if nd == nil {
				return nil, fmt.Errorf("pod %s: node %q not found", p.Name, p.Spec.NodeName)
			}
			if nodeUnschedulable(nd) {
				continue
			}
			i, ok := t.nodeIndex[nd.Name]
			if !ok {
				return nil, fmt.Errorf("pod %s: node %q is not among the listed nodes", p.Name, nd.Name)
			}
			node = i
		}
		t.podIndex[o] = int32(len(t.ordinals))
		t.ordinals = append(t.ordinals, int32(o))
		t.podNode = append(t.podNode, node)
	}
	return &view{topo: t, vpods: vpods}, nil
}

// abiTopology is the topology as modules see it.
func (t *topology) abiTopology(statefulSet string, capacity int32) *abi.VPodTopology {
	at := &abi.VPodTopology{StatefulSet: statefulSet, Capacity: capacity, Replicas: t.replicas, Zones: t.zones}
	at.Pods = make([]abi.VPodPod, len(t.ordinals))
	for i, o := range t.ordinals {
		at.Pods[i] = abi.VPodPod{Ordinal: o, Node: uint32(t.podNode[i])}
	}
	at.Nodes = make([]abi.VPodNode, len(t.nodes))
	for i, n := range t.nodes {
		at.Nodes[i] = abi.VPodNode{Name: n, Zone: uint32(t.nodeZone[i])}
	}
	return at
}

// sameTopology reports whether two module topologies carry the same
// content (generations aside).
func sameTopology(a, b *abi.VPodTopology) bool {
	if a == nil || b == nil || a.StatefulSet != b.StatefulSet || a.Capacity != b.Capacity || a.Replicas != b.Replicas ||
		len(a.Pods) != len(b.Pods) || len(a.Nodes) != len(b.Nodes) || len(a.Zones) != len(b.Zones) {
		return false
	}
	for i := range a.Pods {
		if a.Pods[i] != b.Pods[i] {
			return false
		}
	}
	for i := range a.Nodes {
		if a.Nodes[i] != b.Nodes[i] {
			return false
		}
	}
	for i := range a.Zones {
		if a.Zones[i] != b.Zones[i] {
			return false
		}
	}
	return true
}

// moduleTopology is the topology to send to modules: the last one sent
// when nothing changed (same generation), else a new generation.
func (s *Scheduler) moduleTopology(t *topology) *abi.VPodTopology {
	at := t.abiTopology(s.set.StatefulSet, s.set.Capacity)
	if sameTopology(at, s.topo) {
		return s.topo
	}
	at.Generation = topologyGen.Add(1)
	s.topo = at
	return at
}
