package convert

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

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
// server (simulation manifests): with pod-level limits, CPU and memory
// default to the containers' total request (out's spec containers, summed
// by abi.PodRequests, the one rule) when some container requests them,
// and any other limited resource to its limit.
func podLevelRequests(p *corev1.Pod, out *abi.Pod) *abi.PodLevelRequests {
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
		sums := abi.PodRequests(&abi.Pod{Containers: out.Containers, InitContainers: out.InitContainers})
		if _, set := reqs[corev1.ResourceCPU]; !set && containersName(out, abi.GivesCPU) {
			reqs[corev1.ResourceCPU] = *resource.NewMilliQuantity(sums.MilliCPU, resource.DecimalSI)
		}
		if _, set := reqs[corev1.ResourceMemory]; !set && containersName(out, abi.GivesMemory) {
			reqs[corev1.ResourceMemory] = *resource.NewQuantity(sums.Memory, resource.BinarySI)
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

// containersName reports whether some container's requests name the
// resource (CPU or memory) flag.
func containersName(p *abi.Pod, flag abi.RequestFlags) bool {
	for _, cs := range [2][]abi.Container{p.Containers, p.InitContainers} {
		for i := range cs {
			if cs[i].Given&flag != 0 {
				return true
			}
		}
	}
	return false
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
