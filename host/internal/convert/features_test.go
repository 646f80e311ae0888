package convert

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// bit is the ABI bit of a registry feature, failing the test for a name
// the registry does not have.
func bit(t *testing.T, name string) uint64 {
	t.Helper()
	i := slices.Index(featureNames, name)
	if i < 0 {
		t.Fatalf("feature %q is not in the registry %q", name, featureNames)
	}
	return 1 << i
}

// The pod fields kube-scheduler v1.37's NodeDeclaredFeatures reads reach
// the ABI pod as its required features.
func TestRequiredFeaturesFollowThePodSpec(t *testing.T) {
	restartAll := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
	bindOpts := []corev1.VolumeMount{{Name: "v", MountPath: "/v", BindMountOptions: []string{"nosuid"}}}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want []string
	}{
		{"plain pod", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}, nil},
		{"restart all containers", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", RestartPolicyRules: restartAll}}},
			[]string{"RestartAllContainersOnContainerExits"}},
		{"restart all containers, init container", corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}},
			InitContainers: []corev1.Container{{Name: "i", RestartPolicyRules: restartAll}}}, []string{"RestartAllContainersOnContainerExits"}},
		{"hostNetwork alone", corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c"}}}, nil},
		{"hostNetwork with hostUsers true", corev1.PodSpec{HostNetwork: true, HostUsers: boolPtr(true), Containers: []corev1.Container{{Name: "c"}}}, nil},
		{"hostNetwork with hostUsers false", corev1.PodSpec{HostNetwork: true, HostUsers: boolPtr(false), Containers: []corev1.Container{{Name: "c"}}},
			[]string{"UserNamespacesHostNetworkSupport"}},
		{"bind mount options", corev1.PodSpec{Containers: []corev1.Container{{Name: "c", VolumeMounts: bindOpts}}},
			[]string{"VolumeBindMountOptions"}},
		{"all three", corev1.PodSpec{HostNetwork: true, HostUsers: boolPtr(false),
			InitContainers: []corev1.Container{{Name: "i", VolumeMounts: bindOpts}},
			Containers:     []corev1.Container{{Name: "c", RestartPolicyRules: restartAll}}},
			[]string{"RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport", "VolumeBindMountOptions"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := convertPod(t, &corev1.Pod{Spec: tt.spec})
			var want uint64
			for _, name := range tt.want {
				want |= bit(t, name)
			}
			if p.RequiredFeatures != want {
				t.Fatalf("required features %b, want %b (%q)", p.RequiredFeatures, want, tt.want)
			}
		})
	}
}

// A node's declared features become bits; names the registry does not
// know are skipped, as kube-scheduler skips them.
func TestDeclaredFeaturesOfANode(t *testing.T) {
	n, err := Node(&corev1.Node{Status: corev1.NodeStatus{DeclaredFeatures: []string{
		"ExampleFeature/sub", "RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport", "ZZUnknown"}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := bit(t, "RestartAllContainersOnContainerExits") | bit(t, "UserNamespacesHostNetworkSupport"); n.DeclaredFeatures != want {
		t.Fatalf("declared features %b, want %b", n.DeclaredFeatures, want)
	}
	if n, err := Node(&corev1.Node{}); err != nil || n.DeclaredFeatures != 0 {
		t.Fatalf("a node declaring nothing: %b, %v", n.DeclaredFeatures, err)
	}
	if len(featureNames) > 64 {
		t.Fatalf("the registry has %d features, more than the ABI's 64 bits", len(featureNames))
	}
}
func boolPtr(v bool) *bool { return &v }
