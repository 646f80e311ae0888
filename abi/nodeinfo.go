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
	return c
}
