package convert

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
	ndf "k8s.io/component-helpers/nodedeclaredfeatures"
	ndffeatures "k8s.io/component-helpers/nodedeclaredfeatures/features"
)

// The node declared features are kube-scheduler's own registry
// (k8s.io/component-helpers/nodedeclaredfeatures), so which pod fields
// need which feature, and which node features count, follow the
// Kubernetes release wasmsched is built on without a copy of the rules.
// The ABI carries them as bit sets over the registry's sorted names (the
// numbering the registry itself uses): guests compare bits and know no
// feature by name.

// featuresTarget is the Kubernetes version pods are scheduled for, which
// the registry uses to drop features every supported kubelet has (none
// in v1.37): the release whose kube-scheduler wasmsched follows.
var featuresTarget = version.MustParse("1.37.2")

// featureNames are the registry's names in bit order.
var featureNames = func() []string {
	names := make([]string, 0, len(ndffeatures.AllFeatures))
	for _, f := range ndffeatures.AllFeatures {
		names = append(names, f.Name())
	}
	sort.Strings(names)
	return names
}()

// FeatureNames lists the node features the host knows, in the order of
// the bits of abi.Node.DeclaredFeatures and abi.Pod.RequiredFeatures (bit
// i is FeatureNames()[i]), for explanations and tests.
func FeatureNames() []string { return append([]string(nil), featureNames...) }

// featureBits turns a registry feature set into the ABI's bit set.
func featureBits(fs ndf.FeatureSet) (uint64, error) {
	if fs.IsEmpty() {
		return 0, nil
	}
	names, err := ndf.DefaultFramework.Unmap(fs)
	if err != nil {
		return 0, err
	}
	var bits uint64
	for _, name := range names {
		i := sort.SearchStrings(featureNames, name)
		if i >= len(featureNames) || featureNames[i] != name || i >= 64 {
			return 0, fmt.Errorf("node declared feature %q has no bit", name)
		}
		bits |= 1 << i
	}
	return bits, nil
}

// requiredFeatures are the node features scheduling the pod needs, as
// kube-scheduler's NodeDeclaredFeatures PreFilter infers them from the
// spec.
func requiredFeatures(spec *corev1.PodSpec) (uint64, error) {
	fs, err := ndf.DefaultFramework.InferForPodScheduling(&ndf.PodInfo{Spec: spec}, featuresTarget)
	if err != nil {
		return 0, fmt.Errorf("inferring the node features the pod needs: %w", err)
	}
	return featureBits(fs)
}

// declaredFeatures are the node's status.declaredFeatures the registry
// knows. Like kube-scheduler, it reads the list as the sorted list the API
// server validates it to be and skips names it does not know.
func declaredFeatures(declared []string) (uint64, error) {
	if len(declared) == 0 {
		return 0, nil
	}
	return featureBits(ndf.DefaultFramework.TryMap(declared))
}
