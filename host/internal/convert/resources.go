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

// applyResize sets the requests of a pod whose status reports its
// containers' resources (a running pod, after an in-place resize or
// not) to what kube-scheduler v1.37 counts (component-helpers'
// PodRequests with status resources): three views of the pod, spec,
// actuated and allocated, each aggregated over the whole pod (sidecar
// formula included), and for each resource the largest of the three; or
// of actuated and allocated alone while the kubelet marks the resize
// Infeasible (spec asks for what the node will never give). In the
// actuated view a container counts its status resources, else its
// allocated resources, else its spec; in the allocated view its
// allocated resources, else its spec; while Infeasible a container with
// neither counts nothing. The ABI carries containers, not a pod total:
// each container gets, for each resource, its value in the view that
// wins that resource, so that the guests' one aggregation
// (abi.PodRequests) gives that view's total.
func applyResize(p *corev1.Pod, out *abi.Pod) {
	infeasible := resizeInfeasible(p)
	if len(p.Status.ContainerStatuses) == 0 && len(p.Status.InitContainerStatuses) == 0 && !infeasible {
		return
	}
	statuses := map[string]*corev1.ContainerStatus{}
	for i := range p.Status.ContainerStatuses {
		statuses[p.Status.ContainerStatuses[i].Name] = &p.Status.ContainerStatuses[i]
	}
	for i := range p.Status.InitContainerStatuses {
		if _, ok := statuses[p.Status.InitContainerStatuses[i].Name]; !ok {
			statuses[p.Status.InitContainerStatuses[i].Name] = &p.Status.InitContainerStatuses[i]
		}
	}
	// One entry per container, app containers first, then init
	// containers, in the ABI's order.
	var specV, actV, allocV []corev1.ResourceList
	var sidecar []bool // for init containers
	add := func(c *corev1.Container) {
		spec := requestsOf(c)
		cs := statuses[c.Name]
		var alloc, act corev1.ResourceList
		switch {
		case cs != nil && cs.AllocatedResources != nil:
			alloc = nonNegative(cs.AllocatedResources)
		case !infeasible:
			alloc = spec
		}
		switch {
		case cs != nil && cs.Resources != nil && cs.Resources.Requests != nil:
			act = nonNegative(cs.Resources.Requests)
		case cs != nil && cs.AllocatedResources != nil:
			act = alloc
		case !infeasible:
			act = spec
		}
		specV, actV, allocV = append(specV, spec), append(actV, act), append(allocV, alloc)
	}
	for i := range p.Spec.Containers {
		add(&p.Spec.Containers[i])
	}
	apps := len(p.Spec.Containers)
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		add(c)
		sidecar = append(sidecar, c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways)
	}
	views := [][]corev1.ResourceList{specV, actV, allocV}
	if infeasible {
		views = views[1:]
	}
	totals := make([]corev1.ResourceList, len(views))
	names := map[corev1.ResourceName]bool{}
	for v, lists := range views {
		totals[v] = aggregateRequests(lists[:apps], lists[apps:], sidecar)
		for name := range totals[v] {
			names[name] = true
		}
	}
	chosen := make([]corev1.ResourceList, len(specV))
	for i := range chosen {
		chosen[i] = corev1.ResourceList{}
	}
	for name := range names {
		best := 0
		for v := 1; v < len(views); v++ {
			if q, ok := totals[v][name]; ok {
				if b, ok := totals[best][name]; !ok || q.Cmp(b) > 0 {
					best = v
				}
			}
		}
		for i, l := range views[best] {
			if q, ok := l[name]; ok {
				chosen[i][name] = q
			}
		}
	}
	for i, l := range chosen {
		into := &out.Containers
		k := i
		if i >= apps {
			into, k = &out.InitContainers, i-apps
		}
		(*into)[k].Requests, (*into)[k].Given = resources(l), given(l)
	}
}

// aggregateRequests is a pod's total for the given per-container lists,
// as component-helpers aggregates it: app containers and sidecars
// summed, then raised to what each plain init container needs while it
// runs with the sidecars started before it.
func aggregateRequests(apps, inits []corev1.ResourceList, sidecar []bool) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, l := range apps {
		addTo(total, l)
	}
	started, peak := corev1.ResourceList{}, corev1.ResourceList{}
	for i, l := range inits {
		running := corev1.ResourceList{}
		if sidecar[i] {
			addTo(total, l)
			addTo(started, l)
			addTo(running, started)
		} else {
			addTo(running, l)
			addTo(running, started)
		}
		raise(peak, running)
	}
	raise(total, peak)
	return total
}

// addTo adds from's quantities into into.
func addTo(into, from corev1.ResourceList) {
	for name, q := range from {
		cur := into[name]
		cur.Add(q)
		into[name] = cur
	}
}

// nonNegative drops negative quantities (status is not validated like
// spec), so a bad status cannot make a pod give resources back.
func nonNegative(rl corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range rl {
		if q.Sign() >= 0 {
			out[name] = q
		}
	}
	return out
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
