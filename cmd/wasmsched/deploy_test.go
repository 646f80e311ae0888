package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/wasmsched/wasmsched/deploy"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/endpoints"
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
	refs := map[string]rbacv1.RoleRef{} // binding name: what it grants
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
			refs[o.Name] = o.RoleRef
		case *rbacv1.RoleBinding:
			bindings = append(bindings, o.Subjects...)
			refs[o.Namespace+"/"+o.Name] = o.RoleRef
		}
	}
	if dep == nil || cm == nil || sa == nil || len(bindings) != 4 {
		t.Fatalf("manifest lacks a Deployment, ConfigMap, ServiceAccount or its four bindings: %d objects", len(objs))
	}
	// The secure port reviews tokens and authorizes requests through the
	// API server (system:auth-delegator) and reads the client CA from
	// kube-system's extension-apiserver-authentication ConfigMap.
	granted := map[string]bool{}
	for _, r := range refs {
		granted[r.Kind+" "+r.Name] = true
	}
	for _, want := range []string{"ClusterRole system:auth-delegator", "Role extension-apiserver-authentication-reader", "ClusterRole wasmsched", "Role wasmsched-leader-election"} {
		if !granted[want] {
			t.Errorf("no binding grants the ServiceAccount the %s; bindings: %v", want, refs)
		}
	}
	if r, ok := refs["kube-system/wasmsched-authentication-reader"]; !ok || r.Kind != "Role" {
		t.Errorf("the authentication reader must be a RoleBinding in kube-system (the Role and the ConfigMap are there): %v", refs)
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
	checkProbesOnTheSecurePort(t, serve, dep.Spec.Template.Spec.Containers[0])
}

// checkProbesOnTheSecurePort: the probes ask the secure port, over
// HTTPS, for paths open without credentials, and the plain-HTTP port is
// not turned on.
func checkProbesOnTheSecurePort(t *testing.T, serve *cobra.Command, c corev1.Container) {
	t.Helper()
	secure, err := serve.Flags().GetInt("secure-port")
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := serve.Flags().GetString("metrics-bind-address"); plain != "" {
		t.Errorf("the Deployment serves plain HTTP on %q: nothing there is authenticated", plain)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, p := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: none, or not httpGet", name)
			continue
		}
		g := p.HTTPGet
		if g.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("%s probe scheme %q, want HTTPS", name, g.Scheme)
		}
		port := g.Port.IntVal
		if g.Port.StrVal != "" {
			port = ports[g.Port.StrVal]
		}
		if int(port) != secure {
			t.Errorf("%s probe port %s (%d), want the secure port %d", name, g.Port.String(), port, secure)
		}
		if !slices.Contains(endpoints.AlwaysAllowed, g.Path) {
			t.Errorf("%s probe path %q needs credentials the kubelet does not send; open paths: %v", name, g.Path, endpoints.AlwaysAllowed)
		}
	}
}
