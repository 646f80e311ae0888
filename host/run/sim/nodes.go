package sim

import (
	"slices"
	"strings"

	"github.com/wasmsched/wasmsched/host/internal/convert"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// ZoneLabel is the well-known label a node's zone is read from.
const ZoneLabel = "topology.kubernetes.io/zone"

// NodeResult is one node as the run left it: its zone, what its pods
// request against what it can hold, and the pods on it. The report and
// `simulate --report` draw a node's bars from it.
type NodeResult struct {
	Name string `json:"name"`
	// Zone is the node's topology.kubernetes.io/zone label ("" for none).
	Zone          string   `json:"zone,omitempty"`
	Unschedulable bool     `json:"unschedulable,omitempty"`
	Taints        []string `json:"taints,omitempty"` // key=value:Effect
	// MilliCPU and MemoryBytes are the sums of the pods' effective
	// requests (as the scheduler counts them) against allocatable.
	MilliCPU    ResourceUse `json:"milliCPU"`
	MemoryBytes ResourceUse `json:"memoryBytes"`
	// AllowedPods is allocatable "pods".
	AllowedPods int64 `json:"allowedPods"`
	// Pods are the pods on the node (namespace/name, sorted), bound
	// before the run or placed by it.
	Pods []string `json:"pods"`
}

// ResourceUse is a resource requested on a node against its allocatable.
type ResourceUse struct {
	Requested   int64 `json:"requested"`
	Allocatable int64 `json:"allocatable"`
}

// FormatQuantity writes v of the named resource (cpu in millicores,
// memory in bytes) as a Kubernetes quantity a person reads at a glance:
// 250m, 4, 6.4Gi. simulate's tables and report use it.
func FormatQuantity(resource string, v int64) string {
	return convert.Quantity(resource, float64(v))
}

// nodes is every node of the scheduler's cache, by name, as the run left
// them.
func (e *Env) nodes() []NodeResult {
	s := snapshot.New()
	e.Cache.UpdateSnapshot(s)
	out := make([]NodeResult, 0, s.NumNodes())
	for _, ni := range s.Nodes() {
		info := &ni.Info
		n := NodeResult{
			Name:          info.Node.Name,
			Unschedulable: info.Node.Unschedulable,
			MilliCPU:      ResourceUse{Requested: info.Requested.MilliCPU, Allocatable: info.Node.Allocatable.MilliCPU},
			MemoryBytes:   ResourceUse{Requested: info.Requested.Memory, Allocatable: info.Node.Allocatable.Memory},
			AllowedPods:   info.Node.AllowedPods,
			Pods:          make([]string, 0, len(info.Pods)),
		}
		n.Zone, _ = info.Node.Labels.Get(ZoneLabel)
		for _, t := range info.Node.Taints {
			s := t.Key
			if t.Value != "" {
				s += "=" + t.Value
			}
			n.Taints = append(n.Taints, s+":"+t.Effect.String())
		}
		for i := range info.Pods {
			n.Pods = append(n.Pods, info.Pods[i].Namespace+"/"+info.Pods[i].Name)
		}
		slices.Sort(n.Pods)
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b NodeResult) int { return strings.Compare(a.Name, b.Name) })
	return out
}
