package noderesources

import (
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/plugins-wasm/internal/kubename"
)

// Resource name classes from k8s.io/kubernetes' v1 helpers. They decide
// which requests count as scalar resources, which may be ignored by args,
// and which a scorer skips when the pod does not request them.

// isPrefixedNativeResource: a resource in the kubernetes.io namespace.
func isPrefixedNativeResource(name string) bool {
	return strings.Contains(name, "kubernetes.io/")
}

// isNativeResource: an unprefixed name or a kubernetes.io one.
func isNativeResource(name string) bool {
	return !strings.Contains(name, "/") || isPrefixedNativeResource(name)
}

// isExtendedResourceName: a vendor resource such as "nvidia.com/gpu",
// the only kind ignoredResources and ignoredResourceGroups apply to.
func isExtendedResourceName(name string) bool {
	if isNativeResource(name) || strings.HasPrefix(name, "requests.") {
		return false
	}
	// Quota tracks it as "requests.<name>", which must be a qualified name.
	return kubename.IsQualifiedName("requests." + name)
}

// isScalarResourceName: what kube keeps in Resource.ScalarResources:
// extended resources, hugepages, kubernetes.io-prefixed resources and
// attachable volume limits.
func isScalarResourceName(name string) bool {
	return isExtendedResourceName(name) || strings.HasPrefix(name, "hugepages-") ||
		isPrefixedNativeResource(name) || strings.HasPrefix(name, "attachable-volumes-")
}

// scalar returns the quantity of a named scalar resource and whether r
// lists it; a plain loop, cheaper per node than Resources.Get's switch.
func scalar(r *abi.Resources, name string) (int64, bool) {
	for i := range r.Scalars {
		if r.Scalars[i].Name == name {
			return r.Scalars[i].Value, true
		}
	}
	return 0, false
}

// resourceKind picks the Resources field a configured resource reads.
type resourceKind uint8

const (
	kindScalar resourceKind = iota
	kindCPU
	kindMemory
	kindEphemeralStorage
)

// resourceSpec is a configured scoring resource, classified once at init
// so that Score does not compare names per node.
type resourceSpec struct {
	name   string
	weight int64
	kind   resourceKind
	// isScalar: skipped when the pod does not request it.
	isScalar bool
}

func newResourceSpec(name string, weight int64) resourceSpec {
	s := resourceSpec{name: name, weight: weight}
	switch name {
	case abi.ResourceCPU:
		s.kind = kindCPU
	case abi.ResourceMemory:
		s.kind = kindMemory
	case abi.ResourceEphemeralStorage:
		s.kind = kindEphemeralStorage
	default:
		s.isScalar = isScalarResourceName(name)
	}
	return s
}

// podRequest picks the pod's request for r: nonZero holds the requests
// with kube's defaults for CPU and memory, plain the requests without.
func (r *resourceSpec) podRequest(plain, nonZero *abi.Resources) int64 {
	switch r.kind {
	case kindCPU:
		return nonZero.MilliCPU
	case kindMemory:
		return nonZero.Memory
	case kindEphemeralStorage:
		return plain.EphemeralStorage
	}
	v, _ := scalar(plain, r.name)
	return v
}

// allocatableRequested returns the node's allocatable quantity of r and
// what would be requested with the pod placed, as kube's
// calculateResourceAllocatableRequest: CPU and memory count the node's
// NonZeroRequested (Requested when useRequested), other resources its
// Requested; a scalar resource the pod does not request, or one the node
// lacks, yields (0, 0) so the scorer skips it. Scorers call it per node and
// resource: inlined (a hint TinyGo honours at -opt=s).
//
//go:inline
func (r *resourceSpec) allocatableRequested(n *abi.NodeInfo, podRequest int64, useRequested bool) (alloc, req int64) {
	requested := &n.NonZeroRequested
	if useRequested {
		requested = &n.Requested
	}
	if podRequest == 0 && r.isScalar {
		return 0, 0
	}
	switch r.kind {
	case kindCPU:
		return n.Node.Allocatable.MilliCPU, requested.MilliCPU + podRequest
	case kindMemory:
		return n.Node.Allocatable.Memory, requested.Memory + podRequest
	case kindEphemeralStorage:
		return n.Node.Allocatable.EphemeralStorage, n.Requested.EphemeralStorage + podRequest
	}
	if a, ok := scalar(&n.Node.Allocatable, r.name); ok {
		used, _ := scalar(&n.Requested, r.name)
		return a, used + podRequest
	}
	return 0, 0
}

// podRequestList computes the pod's request for each resource, once per
// cycle. useRequested drops kube's non-zero CPU/memory defaults (which
// count only for missing requests, see abi.PodScoreRequests).
func podRequestList(pod *abi.Pod, resources []resourceSpec, useRequested bool) []int64 {
	plain := abi.PodRequests(pod)
	nonZero := plain
	if !useRequested {
		nonZero = abi.PodScoreRequests(pod)
	}
	out := make([]int64, len(resources))
	for i := range resources {
		out[i] = resources[i].podRequest(&plain, &nonZero)
	}
	return out
}
