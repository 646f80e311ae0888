// Package usage supplies measured consumption (metrics.k8s.io NodeMetrics
// and PodMetrics) to the eviction coordinator, which asks its Source once
// per eviction round and hands the numbers to policies in observation
// records. Absence is explicit: a node or pod without a measurement has
// no usage (nil), never a usage of zero, so a policy cannot mistake
// "metrics-server is down" for "the node is idle".
package usage

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/wasmsched/wasmsched/abi"
)

// Source gives the usage of one eviction round. Several policies of a
// round may share the Snapshot it returns, so it must not be modified.
type Source interface {
	Usage(ctx context.Context) (*Snapshot, error)
}

// Snapshot is the usage of nodes, by name, and of pods, by namespace and
// name (the metrics API knows no UIDs). The zero value and nil both hold
// no data.
type Snapshot struct {
	nodes map[string]abi.Usage
	pods  map[podKey]abi.Usage
}

type podKey struct{ namespace, name string }

// Node returns a copy of the node's usage, or nil when there is none.
func (s *Snapshot) Node(name string) *abi.Usage {
	if s == nil {
		return nil
	}
	u, ok := s.nodes[name]
	if !ok {
		return nil
	}
	return &u
}

// Pod returns a copy of the pod's usage, or nil when there is none.
func (s *Snapshot) Pod(namespace, name string) *abi.Usage {
	if s == nil {
		return nil
	}
	u, ok := s.pods[podKey{namespace, name}]
	if !ok {
		return nil
	}
	return &u
}

// Len is how many nodes and pods have usage, for logs and metrics.
func (s *Snapshot) Len() (nodes, pods int) {
	if s == nil {
		return 0, 0
	}
	return len(s.nodes), len(s.pods)
}

// SetNode records a node's usage, replacing any; for building snapshots
// (tests, other sources) before they are handed out.
func (s *Snapshot) SetNode(name string, u abi.Usage) {
	if s.nodes == nil {
		s.nodes = map[string]abi.Usage{}
	}
	s.nodes[name] = u
}

// SetPod records a pod's usage, replacing any; see SetNode.
func (s *Snapshot) SetPod(namespace, name string, u abi.Usage) {
	if s.pods == nil {
		s.pods = map[podKey]abi.Usage{}
	}
	s.pods[podKey{namespace, name}] = u
}

// NodeUsage converts a NodeMetrics: cpu in millicores, memory in bytes,
// the timestamp (the end of the measurement window) in Unix nanoseconds.
// A usage without cpu or without memory is an error: reading the missing
// one as 0 would be the "zero usage" the package refuses to invent.
func NodeUsage(m *metricsv1beta1.NodeMetrics) (abi.Usage, error) {
	u, err := resourceUsage(m.Usage)
	if err != nil {
		return abi.Usage{}, fmt.Errorf("usage: %w", err)
	}
	u.Timestamp = unixNano(m.Timestamp)
	return u, nil
}

// PodUsage converts a PodMetrics: the sum of its containers' usage. A pod
// with no containers has no usage (an error, like a container without
// cpu or memory).
func PodUsage(m *metricsv1beta1.PodMetrics) (abi.Usage, error) {
	if len(m.Containers) == 0 {
		return abi.Usage{}, fmt.Errorf("containers: no container has usage")
	}
	var sum abi.Usage
	for i := range m.Containers {
		c := &m.Containers[i]
		u, err := resourceUsage(c.Usage)
		if err != nil {
			return abi.Usage{}, fmt.Errorf("containers[%d] (%s).usage: %w", i, c.Name, err)
		}
		// Each term is bounded, so checking the sum after each step
		// keeps it from overflowing.
		sum.MilliCPU += u.MilliCPU
		sum.Memory += u.Memory
		if sum.MilliCPU > MaxMilliCPU || sum.Memory > MaxMemory {
			return abi.Usage{}, fmt.Errorf("containers: the sum of the usage is beyond %dm cpu or %d bytes", int64(MaxMilliCPU), int64(MaxMemory))
		}
	}
	sum.Timestamp = unixNano(m.Timestamp)
	return sum, nil
}

// unixNano is a timestamp in Unix nanoseconds, 0 when unset.
func unixNano(t metav1.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// MaxMilliCPU and MaxMemory bound a measurement (a node's, a container's
// and a pod's sum), so sums cannot overflow: about a billion cores, an
// exbibyte.
const (
	MaxMilliCPU = 1 << 40
	MaxMemory   = 1 << 60
)

func resourceUsage(rl corev1.ResourceList) (abi.Usage, error) {
	cpu, okc := rl[corev1.ResourceCPU]
	mem, okm := rl[corev1.ResourceMemory]
	switch {
	case !okc && !okm:
		return abi.Usage{}, fmt.Errorf("neither cpu nor memory is given")
	case !okc:
		return abi.Usage{}, fmt.Errorf("cpu is missing")
	case !okm:
		return abi.Usage{}, fmt.Errorf("memory is missing")
	}
	if cpu.Sign() < 0 || cpu.Cmp(maxCPU) > 0 {
		return abi.Usage{}, fmt.Errorf("cpu %s is outside 0..%s", cpu.String(), maxCPU.String())
	}
	if mem.Sign() < 0 || mem.Cmp(maxMemory) > 0 {
		return abi.Usage{}, fmt.Errorf("memory %s is outside 0..%s", mem.String(), maxMemory.String())
	}
	return abi.Usage{MilliCPU: cpu.MilliValue(), Memory: mem.Value()}, nil
}

var (
	maxCPU    = *resource.NewMilliQuantity(MaxMilliCPU, resource.DecimalSI)
	maxMemory = *resource.NewQuantity(MaxMemory, resource.BinarySI)
)
