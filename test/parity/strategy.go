package parity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	core "k8s.io/kubernetes/pkg/apis/core"
	podstore "k8s.io/kubernetes/pkg/registry/core/pod"
)

// applyCreateStrategy does to p's scheduling terms what kube-apiserver's
// pod strategy does when the pod is created (PrepareForCreate, upstream's
// own code): matchLabelKeys and mismatchLabelKeys of pod affinity terms,
// and matchLabelKeys of topology spread constraints, merged into their
// label selectors with the pod's own label values. Only those fields are
// taken back: the rest of PrepareForCreate (a fresh status among them)
// is about a pod being created, and the generator's bound pods carry the
// status a kubelet would have written since.
func applyCreateStrategy(p *corev1.Pod) error {
	var in core.Pod
	if err := legacyscheme.Scheme.Convert(p, &in, nil); err != nil {
		return fmt.Errorf("convert pod %s: %w", p.Name, err)
	}
	podstore.Strategy.PrepareForCreate(context.Background(), &in)
	var out corev1.Pod
	if err := legacyscheme.Scheme.Convert(&in, &out, nil); err != nil {
		return fmt.Errorf("convert pod %s back: %w", p.Name, err)
	}
	p.Spec.Affinity = out.Spec.Affinity
	p.Spec.TopologySpreadConstraints = out.Spec.TopologySpreadConstraints
	return nil
}
