package convert

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/abi"
)

// given says which of CPU and memory a request list names, even as zero:
// kube-scheduler substitutes its scoring defaults only for missing ones.
func given(rl corev1.ResourceList) abi.RequestFlags {
	var f abi.RequestFlags
	if _, ok := rl[corev1.ResourceCPU]; ok {
		f |= abi.GivesCPU
	}
	if _, ok := rl[corev1.ResourceMemory]; ok {
		f |= abi.GivesMemory
	}
	return f
}

// podLevelResource reports whether pod-level resources may set a
// resource: CPU, memory and hugepages.
func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory ||
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// podLevelRequests converts spec.resources.requests (pod-level resources,
// on by default since Kubernetes 1.34) to the ABI's, keeping only what
// pod-level resources may set; nil when that leaves nothing. It applies
// the API's defaulting first, for pods that did not come through an API
// server (simulation manifests): with pod-level limits, a resource the
// containers request defaults to their total (CPU and memory), and any
// other limited resource to its limit.
func podLevelRequests(p *corev1.Pod) *abi.PodLevelRequests {
	r := p.Spec.Resources
	if r == nil {
		return nil
	}
	reqs := corev1.ResourceList{}
	for name, q := range r.Requests {
		if podLevelResource(name) {
			reqs[name] = q
		}
	}
	if len(r.Limits) > 0 {
		sums := containerSums(p)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, set := reqs[name]; !set {
				if q, ok := sums[name]; ok {
					reqs[name] = q
				}
			}
		}
		for name, q := range r.Limits {
			if _, set := reqs[name]; !set && podLevelResource(name) {
				reqs[name] = q
			}
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	return &abi.PodLevelRequests{Given: given(reqs), Requests: resources(reqs)}
}

// containerSums is the containers' effective CPU and memory requests by
// the API's rule (app containers and sidecars summed, raised to the
// largest plain init container running beside the sidecars before it),
// listing only resources some container requests: what pod-level
// defaulting copies.
func containerSums(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	add := func(into corev1.ResourceList, from corev1.ResourceList) {
		for name, q := range from {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				continue
			}
			sum := into[name]
			sum.Add(q)
			into[name] = sum
		}
	}
	for _, c := range p.Spec.Containers {
		add(out, requestsOf(&c))
	}
	sidecars, peak := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		req := requestsOf(&c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(out, req)
			add(sidecars, req)
			raise(peak, sidecars)
			continue
		}
		running := corev1.ResourceList{}
		add(running, sidecars)
		add(running, req)
		raise(peak, running)
	}
	raise(out, peak)
	return out
}

// requestsOf is a container's requests after the API's defaulting (a
// limit without a request is the request).
func requestsOf(c *corev1.Container) corev1.ResourceList {
	req := corev1.ResourceList{}
	for k, v := range c.Resources.Limits {
		req[k] = v
	}
	for k, v := range c.Resources.Requests {
		req[k] = v
	}
	return req
}

// raise sets every quantity of into to at least from's (adding names).
// A negative quantity (status is not validated like spec) counts as
// nothing, so a bad status cannot make a pod give resources back.
func raise(into, from corev1.ResourceList) {
	for name, q := range from {
		if q.Sign() < 0 {
			continue
		}
		if cur, ok := into[name]; !ok || q.Cmp(cur) > 0 {
			into[name] = q.DeepCopy()
		}
	}
}

// applyResize replaces, for each app container and sidecar whose status
// reports resources (a running pod, after an in-place resize or not), the
// spec requests with what kube-scheduler counts: the larger of spec,
// actuated (status resources) and allocated, or while the kubelet marks
// the resize Infeasible, the larger of actuated and allocated alone
// (spec asks for what the node will never give). Plain init containers
// have finished by then and keep their spec.
func applyResize(p *corev1.Pod, out *abi.Pod) {
	if len(p.Status.ContainerStatuses) == 0 && len(p.Status.InitContainerStatuses) == 0 {
		return
	}
	statuses := map[string]*corev1.ContainerStatus{}
	for i := range p.Status.ContainerStatuses {
		statuses[p.Status.ContainerStatuses[i].Name] = &p.Status.ContainerStatuses[i]
	}
	for i := range p.Status.InitContainerStatuses {
		statuses[p.Status.InitContainerStatuses[i].Name] = &p.Status.InitContainerStatuses[i]
	}
	infeasible := resizeInfeasible(p)
	apply := func(specs []corev1.Container, into []abi.Container, init bool) {
		for i := range specs {
			c := &specs[i]
			if init && (c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways) {
				continue
			}
			cs := statuses[c.Name]
			if cs == nil || cs.Resources == nil {
				continue
			}
			eff := corev1.ResourceList{}
			if !infeasible {
				raise(eff, requestsOf(c))
			}
			raise(eff, cs.Resources.Requests)
			raise(eff, cs.AllocatedResources)
			into[i].Requests, into[i].Given = resources(eff), given(eff)
		}
	}
	apply(p.Spec.Containers, out.Containers, false)
	apply(p.Spec.InitContainers, out.InitContainers, true)
}

// resizeInfeasible reports the kubelet's verdict that a pending resize
// cannot be done on this node (condition PodResizePending, reason
// Infeasible).
func resizeInfeasible(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			return c.Reason == corev1.PodReasonInfeasible
		}
	}
	return false
}
