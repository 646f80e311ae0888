package abi

// Defaults that kube-scheduler substitutes for a container that requests no
// CPU or memory, when spreading load by score (not when checking fit).
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// PodRequests returns a pod's effective requests, the one definition host
// aggregates and guest plugins share: the sum over app containers and
// sidecars (init containers with restartPolicy Always), raised to at least
// what any plain init container needs while it runs (with the sidecars
// started before it), plus the pod overhead.
func PodRequests(p *Pod) Resources {
	return podRequests(p, false)
}

// PodNonZeroRequests is PodRequests with kube-scheduler's non-zero
// defaults applied per container to CPU and memory. Only CPU and memory
// are meaningful in the result.
func PodNonZeroRequests(p *Pod) Resources {
	return podRequests(p, true)
}

func podRequests(p *Pod, nonZero bool) Resources {
	var apps Resources
	for i := range p.Containers {
		c := containerRequests(&p.Containers[i], nonZero)
		apps.AddAll(&c)
	}
	// Sidecars run for the pod's life; plain init containers run one at a
	// time before the app containers, next to the sidecars started so far.
	var sidecars, initPeak Resources
	for i := range p.InitContainers {
		ic := &p.InitContainers[i]
		c := containerRequests(ic, nonZero)
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
	apps.AddAll(&p.Overhead)
	return apps
}

func containerRequests(c *Container, nonZero bool) Resources {
	r := cloneResources(&c.Requests)
	if nonZero {
		if r.MilliCPU == 0 {
			r.MilliCPU = DefaultMilliCPURequest
		}
		if r.Memory == 0 {
			r.Memory = DefaultMemoryRequest
		}
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
