package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/wasmsched/wasmsched/deploy"
	"github.com/wasmsched/wasmsched/host/config"
)

// TestDeployManifestMatchesTheCommand keeps deploy/wasmsched.yaml (the
// chart rendered with its defaults) true: its profiles parse, its
// container arguments are flags serve has, and its RBAC subjects name its
// ServiceAccount.
func TestDeployManifestMatchesTheCommand(t *testing.T) {
	objs, err := deploy.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var dep *appsv1.Deployment
	var cm *corev1.ConfigMap
	var sa *corev1.ServiceAccount
	var bindings []rbacv1.Subject
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.ConfigMap:
			cm = o
		case *corev1.ServiceAccount:
			sa = o
		case *rbacv1.ClusterRoleBinding:
			bindings = append(bindings, o.Subjects...)
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o.Subjects...)
		}
	}
	// The ClusterRole's, secure serving's two (auth-delegator, the
	// authentication ConfigMap's reader) and leader election's.
	if dep == nil || cm == nil || sa == nil || len(bindings) != 4 {
		t.Fatalf("manifest lacks a Deployment, ConfigMap, ServiceAccount or its four bindings: %d objects, %d bindings", len(objs), len(bindings))
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2 (leader election needs a standby)", dep.Spec.Replicas)
	}
	if dep.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("pods run as %q, RBAC is for %q", dep.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	for _, s := range bindings {
		if s.Kind != "ServiceAccount" || s.Name != sa.Name || s.Namespace != sa.Namespace {
			t.Errorf("binding subject %+v is not the ServiceAccount %s/%s", s, sa.Namespace, sa.Name)
		}
	}
	cfg, err := config.Parse([]byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatalf("the ConfigMap's profiles: %v", err)
	}
	if len(cfg.Profiles) != 2 {
		t.Errorf("%d profiles in the ConfigMap, want 2", len(cfg.Profiles))
	}
	args := dep.Spec.Template.Spec.Containers[0].Args
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("container args %v do not run serve", args)
	}
	root := newRootCommand()
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags(args[1:]); err != nil {
		t.Fatalf("serve rejects the Deployment's args %v: %v", args[1:], err)
	}
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "--config=") && a != "--config=/etc/wasmsched/config.yaml" {
			t.Errorf("config flag %q does not point at the mounted ConfigMap", a)
		}
	}
}
