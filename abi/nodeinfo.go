package abi

// AddPod puts a pod on the node: it joins Pods, and its effective
// requests, its non-zero requests (CPU and memory), its host ports and one
// pod count are added to the aggregates. Host and guest both use this, so
// their aggregates cannot disagree.
func (ni *NodeInfo) AddPod(p *Pod) {
	ni.Pods = append(ni.Pods, *p)
	req := PodRequests(p)
	nz := PodNonZeroRequests(p)
	ni.Requested.AddAll(&req)
	ni.NonZeroRequested.MilliCPU += nz.MilliCPU
	ni.NonZeroRequested.Memory += nz.Memory
	ni.PodCount++
	ni.UsedPorts = append(ni.UsedPorts, PodHostPorts(p)...)
	ni.addToGroup(p.Namespace, p.NamespaceID, p.Labels, 1)
}

// addToGroup adds delta pods to the group of (namespace, labels), keeping
// the groups sorted and dropping empty ones.
func (ni *NodeInfo) addToGroup(ns string, nsID StrID, labels Labels, delta int32) {
	i := 0
	for ; i < len(ni.PodGroups); i++ {
		c := compareGroup(&ni.PodGroups[i], ns, labels)
		if c == 0 {
			ni.PodGroups[i].Count += delta
			if ni.PodGroups[i].Count <= 0 {
				ni.PodGroups = append(ni.PodGroups[:i:i], ni.PodGroups[i+1:]...)
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
// dropped from it. It does not check that the pod was there.
func (ni *NodeInfo) RemovePod(p *Pod) {
	for i := range ni.Pods {
		if ni.Pods[i].UID == p.UID {
			ni.Pods = append(ni.Pods[:i:i], ni.Pods[i+1:]...)
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
	ni.addToGroup(p.Namespace, p.NamespaceID, p.Labels, -1)
	for _, hp := range PodHostPorts(p) {
		for i := range ni.UsedPorts {
			if ni.UsedPorts[i] == hp {
				ni.UsedPorts = append(ni.UsedPorts[:i:i], ni.UsedPorts[i+1:]...)
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
