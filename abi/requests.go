package abi

// Defaults that kube-scheduler substitutes for a container that requests no
// CPU or memory, when spreading load by score (not when checking fit).
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// PodRequests returns a pod's effective requests, the one definition host
// aggregates and guest plugins share, as kube-scheduler counts them for
// fit: the sum over app containers and sidecars (init containers with
// restartPolicy Always), raised to at least what any plain init container
// needs while it runs (with the sidecars started before it); then each
// resource the pod-level requests name replaces that sum; plus the pod
// overhead.
func PodRequests(p *Pod) Resources {
	return podRequests(p, 0, true)
}

// PodNonZeroRequests is what a pod adds to its node's NonZeroRequested:
// PodRequests with kube-scheduler's defaults (DefaultMilliCPURequest,
// DefaultMemoryRequest) counted for each container whose CPU or memory
// request is missing (not merely zero). With pod-level requests, the
// defaults apply only to a resource that neither the pod, nor any
// container, nor the overhead names. Only CPU and memory are meaningful
// in the result.
func PodNonZeroRequests(p *Pod) Resources {
	if p.PodLevel == nil {
		return podRequests(p, GivesCPU|GivesMemory, true)
	}
	var defaults RequestFlags
	if !podNames(p, GivesCPU) {
		defaults |= GivesCPU
	}
	if !podNames(p, GivesMemory) {
		defaults |= GivesMemory
	}
	return podRequests(p, defaults, true)
}

// PodScoreRequests is the request kube-scheduler v1.35's NodeResourcesFit
// scoring (LeastAllocated, MostAllocated, RequestedToCapacityRatio)
// counts for the pod being scheduled: the defaults for every container
// whose CPU or memory request is missing, plus the overhead, and *not*
// the pod-level requests. Upstream builds that scorer without its
// pod-level-resources switch (fit.go's NewFit sets it on the filter
// only), so a pod-level request does not change where the pod scores
// best; BalancedAllocation, built with it, uses PodRequests. Kept as
// upstream does it, so placements match.
func PodScoreRequests(p *Pod) Resources {
	return podRequests(p, GivesCPU|GivesMemory, false)
}

// podRequests aggregates the containers, substituting the defaults for
// the missing requests of the resources in defaults, then applies the
// pod-level requests (when podLevel) and the overhead.
func podRequests(p *Pod, defaults RequestFlags, podLevel bool) Resources {
	var apps Resources
	for i := range p.Containers {
		c := containerRequests(&p.Containers[i], defaults)
		apps.AddAll(&c)
	}
	// Sidecars run for the pod's life; plain init containers run one at a
	// time before the app containers, next to the sidecars started so far.
	var sidecars, initPeak Resources
	for i := range p.InitContainers {
		ic := &p.InitContainers[i]
		c := containerRequests(ic, defaults)
		if ic.RestartAlways {
			sidecars.AddAll(&c)
			initPeak.SetMax(&sidecars)
			continue
		}
		running := cloneResources(&sidecars)
		running.AddAll(&c)
		initPeak.SetMax(&running)
	}
	apps.AddAll(&sidecars)
	apps.SetMax(&initPeak)
	if pl := p.PodLevel; pl != nil && podLevel {
		if pl.Given.names(GivesCPU, pl.Requests.MilliCPU) {
			apps.MilliCPU = pl.Requests.MilliCPU
		}
		if pl.Given.names(GivesMemory, pl.Requests.Memory) {
			apps.Memory = pl.Requests.Memory
		}
		for _, s := range pl.Requests.Scalars {
			if IsHugePages(s.Name) {
				apps.Add(s.Name, s.Value-apps.Get(s.Name))
			}
		}
	}
	apps.AddAll(&p.Overhead)
	return apps
}

// IsHugePages reports whether a resource is a hugepages size, the one
// kind of extended resource pod-level requests may set.
func IsHugePages(name string) bool {
	const prefix = "hugepages-"
	return len(name) > len(prefix) && name[:len(prefix)] == prefix
}

// names reports whether a request list with these flags names the
// resource flag, whose quantity there is v: flagged, or nonzero.
func (f RequestFlags) names(flag RequestFlags, v int64) bool {
	return f&flag != 0 || v != 0
}

// podNames reports whether anything of the pod names the resource (CPU or
// memory): a container, the pod-level requests or the overhead.
func podNames(p *Pod, flag RequestFlags) bool {
	get := func(r *Resources) int64 {
		if flag == GivesCPU {
			return r.MilliCPU
		}
		return r.Memory
	}
	for _, cs := range [2][]Container{p.Containers, p.InitContainers} {
		for i := range cs {
			if cs[i].Given.names(flag, get(&cs[i].Requests)) {
				return true
			}
		}
	}
	if pl := p.PodLevel; pl != nil && pl.Given.names(flag, get(&pl.Requests)) {
		return true
	}
	return get(&p.Overhead) != 0
}

// containerRequests is a container's requests with the defaults
// substituted for the missing ones among defaults.
func containerRequests(c *Container, defaults RequestFlags) Resources {
	r := cloneResources(&c.Requests)
	if defaults&GivesCPU != 0 && !c.Given.names(GivesCPU, r.MilliCPU) {
		r.MilliCPU = DefaultMilliCPURequest
	}
	if defaults&GivesMemory != 0 && !c.Given.names(GivesMemory, r.Memory) {
		r.Memory = DefaultMemoryRequest
	}
	return r
}

func cloneResources(r *Resources) Resources {
	c := *r
	if len(r.Scalars) > 0 {
		c.Scalars = append([]Scalar(nil), r.Scalars...)
	}
	return c
}

// PodHostPorts lists the host ports a pod holds while it runs: those of its
// app containers and sidecars. Plain init containers have exited by then,
// so kube-scheduler does not count theirs.
func PodHostPorts(p *Pod) []HostPort {
	var ports []HostPort
	for i := range p.InitContainers {
		if p.InitContainers[i].RestartAlways {
			ports = append(ports, p.InitContainers[i].Ports...)
		}
	}
	for i := range p.Containers {
		ports = append(ports, p.Containers[i].Ports...)
	}
	return ports
}
