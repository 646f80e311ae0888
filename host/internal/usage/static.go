package usage

import (
	"context"
	"fmt"

	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// Static is a Source that always gives the same snapshot: the simulation
// reads NodeMetrics and PodMetrics documents from its manifests, so usage
// policies can be tried without a cluster.
type Static struct{ snap *Snapshot }

// NewStatic serves snap (nil: no data).
func NewStatic(snap *Snapshot) *Static {
	if snap == nil {
		snap = &Snapshot{}
	}
	return &Static{snap: snap}
}

// StaticFrom builds a Static source from metrics.k8s.io/v1beta1 objects.
// Unlike the live API, a manifest is written by hand, so mistakes are
// errors naming the object: a node or pod given twice, a usage without
// cpu or memory, a pod without containers. A pod without a namespace is
// in "default", as the simulation admits pods.
func StaticFrom(nodes []metricsv1beta1.NodeMetrics, pods []metricsv1beta1.PodMetrics) (*Static, error) {
	snap := &Snapshot{}
	for i := range nodes {
		m := &nodes[i]
		if m.Name == "" {
			return nil, fmt.Errorf("NodeMetrics #%d: metadata.name must not be empty", i+1)
		}
		if snap.Node(m.Name) != nil {
			return nil, fmt.Errorf("NodeMetrics %s: defined twice", m.Name)
		}
		u, err := NodeUsage(m)
		if err != nil {
			return nil, fmt.Errorf("NodeMetrics %s: %w", m.Name, err)
		}
		snap.SetNode(m.Name, u)
	}
	for i := range pods {
		m := &pods[i]
		ns := m.Namespace
		if ns == "" {
			ns = "default"
		}
		if m.Name == "" {
			return nil, fmt.Errorf("PodMetrics #%d: metadata.name must not be empty", i+1)
		}
		if snap.Pod(ns, m.Name) != nil {
			return nil, fmt.Errorf("PodMetrics %s/%s: defined twice", ns, m.Name)
		}
		u, err := PodUsage(m)
		if err != nil {
			return nil, fmt.Errorf("PodMetrics %s/%s: %w", ns, m.Name, err)
		}
		snap.SetPod(ns, m.Name, u)
	}
	return &Static{snap: snap}, nil
}

// Usage returns the fixed snapshot.
func (s *Static) Usage(context.Context) (*Snapshot, error) { return s.snap, nil }
