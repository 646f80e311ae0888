package abi

import "unsafe"

// AddPod puts a pod on the node: it joins Pods, and its effective
// requests, its non-zero requests (CPU and memory), its host ports and one
// pod count are added to the aggregates. Host and guest both use this, so
// their aggregates cannot disagree.
func (ni *NodeInfo) AddPod(p *Pod) {
	// Appended as a one-element slice: one memory copy, where TinyGo
	// writes out a Pod assignment field by field (a kilobyte of code).
	ni.Pods = append(ni.Pods, unsafe.Slice(p, 1)...)
	req := PodRequests(p)
	nz := PodNonZeroRequests(p)
	ni.Requested.AddAll(&req)
	ni.NonZeroRequested.MilliCPU += nz.MilliCPU
	ni.NonZeroRequested.Memory += nz.Memory
	ni.PodCount++
	// PodHostPorts' ports, appended without building its list.
	for i := range p.InitContainers {
		if p.InitContainers[i].RestartAlways {
			ni.UsedPorts = append(ni.UsedPorts, p.InitContainers[i].Ports...)
		}
	}
	for i := range p.Containers {
		ni.UsedPorts = append(ni.UsedPorts, p.Containers[i].Ports...)
	}
	ni.addToGroup(p.Namespace, p.NamespaceID, p.Labels, 1, false)
}

// addToGroup adds delta pods to the group of (namespace, labels), keeping
// the groups sorted and dropping empty ones (in place when owned: the
// caller alone holds the slice).
func (ni *NodeInfo) addToGroup(ns string, nsID StrID, labels Labels, delta int32, owned bool) {
	i := 0
	for ; i < len(ni.PodGroups); i++ {
		c := compareGroup(&ni.PodGroups[i], ns, labels)
		if c == 0 {
			ni.PodGroups[i].Count += delta
			if ni.PodGroups[i].Count <= 0 {
				ni.PodGroups = deleteAt(ni.PodGroups, i, owned)
			}
			return
		}
		if c > 0 {
			break
		}
	}
	if delta <= 0 {
		return
	}
	ni.PodGroups = append(ni.PodGroups, PodGroup{})
	copy(ni.PodGroups[i+1:], ni.PodGroups[i:])
	ni.PodGroups[i] = PodGroup{Namespace: ns, Labels: labels, Count: delta, NamespaceID: nsID}
}

// compareGroup orders groups by namespace, then label set.
func compareGroup(g *PodGroup, ns string, labels Labels) int {
	if g.Namespace != ns {
		if g.Namespace < ns {
			return -1
		}
		return 1
	}
	for i := 0; i < len(g.Labels) && i < len(labels); i++ {
		a, b := g.Labels[i], labels[i]
		if a.Key != b.Key {
			if a.Key < b.Key {
				return -1
			}
			return 1
		}
		if a.Value != b.Value {
			if a.Value < b.Value {
				return -1
			}
			return 1
		}
	}
	return len(g.Labels) - len(labels)
}

// RemovePod takes a pod off the node: the reverse of AddPod. It works
// from the pod itself, so it also works on a NodeInfo that carries
// aggregates but not the pod list; a pod listed in Pods (by UID) is
// dropped from it. It does not check that the pod was there. The
// NodeInfo's slices are never written: those that shrink are copied.
func (ni *NodeInfo) RemovePod(p *Pod) { ni.removePod(p, false) }

// RemovePodOwned is RemovePod for a NodeInfo whose slices belong to the
// caller alone (a what-if copy of a node): they shrink in place, so a
// removal allocates nothing.
func (ni *NodeInfo) RemovePodOwned(p *Pod) { ni.removePod(p, true) }

// deleteAt drops s[i]: in place when owned, else into a new array so that
// others sharing s keep seeing it whole.
func deleteAt[T any](s []T, i int, owned bool) []T {
	if !owned {
		return append(s[:i:i], s[i+1:]...)
	}
	copy(s[i:], s[i+1:])
	clear(s[len(s)-1:]) // drop what the stale copy points to
	return s[:len(s)-1]
}

func (ni *NodeInfo) removePod(p *Pod, owned bool) {
	for i := range ni.Pods {
		if ni.Pods[i].UID == p.UID {
			ni.Pods = deleteAt(ni.Pods, i, owned)
			break
		}
	}
	req := PodRequests(p)
	ni.Requested.MilliCPU -= req.MilliCPU
	ni.Requested.Memory -= req.Memory
	ni.Requested.EphemeralStorage -= req.EphemeralStorage
	for _, s := range req.Scalars {
		ni.Requested.Add(s.Name, -s.Value)
	}
	nz := PodNonZeroRequests(p)
	ni.NonZeroRequested.MilliCPU -= nz.MilliCPU
	ni.NonZeroRequested.Memory -= nz.Memory
	ni.PodCount--
	ni.addToGroup(p.Namespace, p.NamespaceID, p.Labels, -1, owned)
	// PodHostPorts' ports, released without building its list.
	for i := range p.InitContainers {
		if p.InitContainers[i].RestartAlways {
			ni.releasePorts(p.InitContainers[i].Ports, owned)
		}
	}
	for i := range p.Containers {
		ni.releasePorts(p.Containers[i].Ports, owned)
	}
}

// releasePorts drops one use of each port from UsedPorts.
func (ni *NodeInfo) releasePorts(ports []HostPort, owned bool) {
	for _, hp := range ports {
		for i := range ni.UsedPorts {
			if ni.UsedPorts[i] == hp {
				ni.UsedPorts = deleteAt(ni.UsedPorts, i, owned)
				break
			}
		}
	}
}

// Clone copies a NodeInfo so that AddPod and RemovePod on the copy leave
// the original alone (pods themselves are shared, never mutated).
func (ni *NodeInfo) Clone() NodeInfo {
	c := *ni
	c.Requested.Scalars = append([]Scalar(nil), ni.Requested.Scalars...)
	c.NonZeroRequested.Scalars = append([]Scalar(nil), ni.NonZeroRequested.Scalars...)
	c.UsedPorts = append([]HostPort(nil), ni.UsedPorts...)
	c.Pods = append([]Pod(nil), ni.Pods...)
	c.PodGroups = append([]PodGroup(nil), ni.PodGroups...)
	return c
}
