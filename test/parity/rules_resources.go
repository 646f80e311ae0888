package parity

// The resource families: what pods ask for and what nodes hold.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

func (g *gen) resources() {
	if g.chance(0.6) { // an extended resource on some nodes
		for _, n := range g.c.Nodes {
			if g.chance(0.6) {
				v := *resource.NewQuantity(int64(g.between(1, 4)), resource.DecimalSI)
				n.Status.Capacity[resourceGPU], n.Status.Allocatable[resourceGPU] = v, v
			}
		}
		for _, p := range g.pods() {
			if p.Spec.NodeName != "" && !g.chance(0.4) {
				continue
			}
			v := *resource.NewQuantity(int64(g.between(1, 2)), resource.DecimalSI)
			c := &p.Spec.Containers[0]
			setRequest(c, resourceGPU, v)
			c.Resources.Limits = corev1.ResourceList{resourceGPU: v}
		}
	}
	if g.chance(0.4) { // ephemeral storage
		for _, n := range g.c.Nodes {
			v := q(fmt.Sprintf("%dGi", 10*g.between(1, 5)))
			n.Status.Capacity[corev1.ResourceEphemeralStorage], n.Status.Allocatable[corev1.ResourceEphemeralStorage] = v, v
		}
		for _, p := range g.pods() {
			if g.chance(0.6) {
				setRequest(&p.Spec.Containers[0], corev1.ResourceEphemeralStorage, q(fmt.Sprintf("%dGi", g.between(1, 30))))
			}
		}
	}
	if g.chance(0.4) { // some nodes full by pod count
		count := map[string]int{}
		for _, p := range g.c.Bound {
			count[p.Spec.NodeName]++
		}
		for _, n := range g.c.Nodes {
			if g.chance(0.5) {
				v := *resource.NewQuantity(int64(count[n.Name]+g.between(0, 1)), resource.DecimalSI)
				n.Status.Capacity[corev1.ResourcePods], n.Status.Allocatable[corev1.ResourcePods] = v, v
			}
		}
	}
	if g.chance(0.5) { // a big pending pod, several containers
		for i := g.between(1, 3); i > 0; i-- {
			g.c.Pending.Spec.Containers = append(g.c.Pending.Spec.Containers, g.container(fmt.Sprintf("extra-%d", i)))
		}
	}
	if g.chance(0.3) { // allocatable below capacity
		for _, n := range g.c.Nodes {
			n.Status.Allocatable[corev1.ResourceCPU] = milli(int(n.Status.Capacity.Cpu().MilliValue()) - 500)
		}
	}
	if g.chance(0.2) { // no allocatable: the API defaults it to the capacity
		pick(g, g.c.Nodes).Status.Allocatable = nil
	}
}

func (g *gen) limitsOnly() {
	for _, p := range g.pods() {
		if p.Spec.NodeName != "" && g.chance(0.5) {
			continue
		}
		c := &p.Spec.Containers[0]
		lim := corev1.ResourceList{}
		for name, v := range c.Resources.Requests {
			lim[name] = v
		}
		c.Resources.Limits = lim
		for _, name := range sortedNames(c.Resources.Requests) {
			if g.chance(0.6) {
				delete(c.Resources.Requests, name) // defaulted from the limit
			}
		}
	}
}

// zeroRequests makes each of cpu and memory explicit, missing or zero.
func (g *gen) zeroRequests() {
	for _, p := range g.pods() {
		for i := range p.Spec.Containers {
			c := &p.Spec.Containers[i]
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				switch g.r.IntN(3) {
				case 0:
					delete(c.Resources.Requests, name)
				case 1:
					setRequest(c, name, q("0"))
				}
			}
		}
		if g.chance(0.3) {
			c := g.container(fmt.Sprintf("side-%d", len(p.Spec.Containers)))
			c.Resources.Requests = nil
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
	}
}

func (g *gen) initContainers() {
	always := corev1.ContainerRestartPolicyAlways
	for _, p := range g.pods() {
		for i := g.between(0, 3); i > 0; i-- {
			c := g.container(fmt.Sprintf("init-%d", len(p.Spec.InitContainers)))
			if g.chance(0.5) {
				c.RestartPolicy = &always // a sidecar
			} else if g.chance(0.5) {
				c.Resources.Requests[corev1.ResourceCPU] = milli(500 * g.between(1, 6)) // a big one-off
			}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		}
	}
}

func (g *gen) overhead() {
	for _, p := range g.pods() {
		if g.chance(0.7) {
			rc := "kata"
			p.Spec.RuntimeClassName = &rc
			p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: milli(50 * g.between(1, 10)), corev1.ResourceMemory: mebi(32 * g.between(1, 8))}
		}
	}
}

// podLevel sets spec.resources: requests at least the containers' sum
// (validation wants that), sometimes with containers requesting nothing.
func (g *gen) podLevel() {
	for _, p := range g.pods() {
		if p.Spec.NodeName != "" && g.chance(0.4) {
			continue
		}
		for i := range p.Spec.Containers {
			if g.chance(0.4) {
				p.Spec.Containers[i].Resources.Requests = nil
			}
		}
		defaulted := p.DeepCopy() // requests defaulted from limits count
		legacyscheme.Scheme.Default(defaulted)
		sum := resourcehelper.AggregateContainerRequests(defaulted, resourcehelper.PodResourcesOptions{})
		sumCPU, sumMem := sum.Cpu().MilliValue(), sum.Memory().Value()
		reqs := corev1.ResourceList{}
		if g.chance(0.8) {
			reqs[corev1.ResourceCPU] = milli(int(sumCPU) + 100*g.between(1, 20))
		}
		if g.chance(0.8) {
			reqs[corev1.ResourceMemory] = *resource.NewQuantity(sumMem+int64(g.between(1, 16))<<26, resource.BinarySI)
		}
		if len(reqs) == 0 {
			reqs[corev1.ResourceCPU] = milli(int(sumCPU) + 500)
		}
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: reqs}
		if g.chance(0.3) {
			// Pod limits cover the requests and every container's limit.
			lim := corev1.ResourceList{}
			for k, v := range reqs {
				for _, c := range defaulted.Spec.Containers {
					if l, ok := c.Resources.Limits[k]; ok && l.Cmp(v) > 0 {
						v = l
					}
				}
				lim[k] = v
			}
			p.Spec.Resources.Limits = lim
		}
	}
}

// resize gives bound pods an in-place resize in progress: the actuated
// and allocated resources differ from the spec, sometimes Infeasible.
func (g *gen) resize() {
	for _, p := range g.c.Bound {
		if g.chance(0.3) {
			continue
		}
		c := &p.Spec.Containers[0]
		actual := corev1.ResourceList{corev1.ResourceCPU: g.cpuReq(), corev1.ResourceMemory: g.memReq()}
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: true,
			Resources: &corev1.ResourceRequirements{Requests: actual}}
		if g.chance(0.6) {
			cs.AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: g.cpuReq(), corev1.ResourceMemory: g.memReq()}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		switch g.r.IntN(3) {
		case 0:
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonInfeasible})
		case 1:
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: corev1.PodReasonDeferred})
		}
	}
}

func (g *gen) finished() {
	for _, p := range g.c.Bound {
		if g.chance(0.5) {
			p.Status.Phase = pick(g, []corev1.PodPhase{corev1.PodSucceeded, corev1.PodFailed})
			raiseRequest(&p.Spec.Containers[0], corev1.ResourceCPU, milli(500*g.between(1, 4)))
		}
	}
}
