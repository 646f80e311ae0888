package parity

// The declaredfeatures family: nodes' status.declaredFeatures and pending
// pods whose spec needs node features (kube-scheduler's
// NodeDeclaredFeatures, in the default profile since 1.36).

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// declarableFeatures are what generated nodes declare: the three a pod's
// spec can need in 1.37, one the registry knows that no pod needs, and
// one it does not know (skipped by both schedulers).
var declarableFeatures = []string{
	"RestartAllContainersOnContainerExits",
	"UserNamespacesHostNetworkSupport",
	"VolumeBindMountOptions",
	"InPlacePodLevelResourcesVerticalScaling",
	"VendorExample/accelerated",
}

func (g *gen) declaredFeatures() {
	for _, n := range g.c.Nodes {
		var fs []string
		for _, f := range declarableFeatures {
			if g.chance(0.6) {
				fs = append(fs, f)
			}
		}
		// The API server keeps the list sorted and unique.
		sort.Strings(fs)
		n.Status.DeclaredFeatures = fs
	}
	p := g.c.Pending
	if g.chance(0.5) {
		c := &p.Spec.Containers[g.r.IntN(len(p.Spec.Containers))]
		action := corev1.ContainerRestartRuleActionRestartAllContainers
		if g.chance(0.2) {
			action = corev1.ContainerRestartRuleActionRestart
		}
		rule := corev1.ContainerRestartRule{Action: action,
			ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
		if g.chance(0.3) {
			ic := g.container("init")
			ic.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			ic.RestartPolicyRules = []corev1.ContainerRestartRule{rule}
			p.Spec.InitContainers = append(p.Spec.InitContainers, ic)
		} else {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			c.RestartPolicyRules = []corev1.ContainerRestartRule{rule}
		}
	}
	// hostNetwork with hostUsers false needs
	// UserNamespacesHostNetworkSupport, but the API server refuses such a
	// pod while that gate is alpha (off in 1.37); bindMountOptions need
	// VolumeBindMountOptions, but the API server drops them at create
	// while that gate is alpha (off in 1.37), so no stored pod has them.
	// The convert tests cover both inferences; here a plain mount, which
	// needs nothing.
	if g.chance(0.35) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c := &p.Spec.Containers[0]
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: "/data"})
	}
}
