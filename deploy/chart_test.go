package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmsched/wasmsched/deploy"
	"github.com/wasmsched/wasmsched/deploy/charttest"
	"github.com/wasmsched/wasmsched/host/config"
)

// TestManifestIsTheRenderedChart keeps deploy/wasmsched.yaml the chart
// rendered with its default values, so the two never drift apart.
func TestManifestIsTheRenderedChart(t *testing.T) {
	helm := charttest.Helm(t)
	out, err := charttest.Template(t, helm)
	if err != nil {
		t.Fatal(err)
	}
	want := append(bytes.Clone(deploy.ManifestHeader), out...)
	if !bytes.Equal(deploy.Manifest, want) {
		t.Fatalf("deploy/wasmsched.yaml is not the chart rendered with its defaults: run make manifest and commit it\n%s",
			firstDifference(deploy.Manifest, want))
	}
}

// TestVPodCRDIsTheChartsCopy keeps the chart's copy of the VPod CRD (a
// chart reads only files under its directory) deploy/vpod-crd.yaml.
func TestVPodCRDIsTheChartsCopy(t *testing.T) {
	root := charttest.RepoRoot(t)
	a, err := os.ReadFile(filepath.Join(root, "deploy", "vpod-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, deploy.ChartDir, "files", "vpod-crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("%s/files/vpod-crd.yaml differs from deploy/vpod-crd.yaml: copy it", deploy.ChartDir)
	}
}

// grant is one verb on one resource (or a non-resource URL) that a rule
// allows, so rule sets compare however their rules are grouped.
type grant struct{ group, resource, verb string }

func (g grant) String() string {
	group := g.group
	if group == "" {
		group = `""`
	}
	return g.verb + " " + group + "/" + g.resource
}

func grants(rules []rbacv1.PolicyRule) map[grant]bool {
	out := map[grant]bool{}
	for _, r := range rules {
		for _, v := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				out[grant{"", u, v}] = true
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					out[grant{g, res, v}] = true
				}
			}
		}
	}
	return out
}

func grantSet(lines ...string) map[grant]bool {
	out := map[grant]bool{}
	for _, l := range lines {
		f := strings.Fields(l) // "group resource verb..."; group "-" is the core group
		g := f[0]
		if g == "-" {
			g = ""
		}
		for _, v := range f[2:] {
			out[grant{g, f[1], v}] = true
		}
	}
	return out
}

// What each engine needs, from the API calls serve makes (host/run/kube):
// scheduling's informers, binding, status patches, Events and preemption;
// the eviction coordinator's killer reads, node taints and usage; the
// vpod engine's VPods and StatefulSet scales.
var (
	schedulingGrants = grantSet(
		"- pods list watch", "- nodes list watch", "- namespaces list watch", "- services list watch",
		"- replicationcontrollers list watch", "apps replicasets list watch", "apps statefulsets list watch",
		"policy poddisruptionbudgets list watch", "scheduling.k8s.io priorityclasses list watch",
		"- pods/binding create", "- pods/status patch", "- pods/eviction create", "- pods delete",
		"- events create patch update", "events.k8s.io events create patch update")
	evictionGrants = grantSet("- pods get", "- nodes get update", "metrics.k8s.io nodes list", "metrics.k8s.io pods list")
	vpodGrants     = grantSet("wasmsched.io vpods get list watch", "wasmsched.io vpods/status update", "apps statefulsets/scale get update")
	// serve --record-decisions patches the metadata of pods left unplaced.
	recordDecisionsGrants = grantSet("- pods patch")
)

func union(sets ...map[grant]bool) map[grant]bool {
	out := map[grant]bool{}
	for _, s := range sets {
		for g := range s {
			out[g] = true
		}
	}
	return out
}

type rendered struct {
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]*rbacv1.Role
	crbs         []*rbacv1.ClusterRoleBinding
	rbs          []*rbacv1.RoleBinding
	sa           *corev1.ServiceAccount
	cm           *corev1.ConfigMap
	dep          *appsv1.Deployment
	other        []*unstructured.Unstructured
}

func split(t *testing.T, objs []runtime.Object) rendered {
	t.Helper()
	r := rendered{clusterRoles: map[string]*rbacv1.ClusterRole{}, roles: map[string]*rbacv1.Role{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *rbacv1.ClusterRole:
			r.clusterRoles[o.Name] = o
		case *rbacv1.Role:
			r.roles[o.Namespace+"/"+o.Name] = o
		case *rbacv1.ClusterRoleBinding:
			r.crbs = append(r.crbs, o)
		case *rbacv1.RoleBinding:
			r.rbs = append(r.rbs, o)
		case *corev1.ServiceAccount:
			r.sa = o
		case *corev1.ConfigMap:
			r.cm = o
		case *appsv1.Deployment:
			r.dep = o
		case *corev1.Service:
		case *unstructured.Unstructured:
			r.other = append(r.other, o)
		default:
			t.Fatalf("unexpected object %T", o)
		}
	}
	if r.sa == nil || r.cm == nil || r.dep == nil {
		t.Fatal("the chart rendered no ServiceAccount, ConfigMap or Deployment")
	}
	return r
}

func (r rendered) kinds() []string {
	var out []string
	for _, u := range r.other {
		out = append(out, u.GetKind())
	}
	return out
}

// TestChartRBACPerEngineMix renders the chart for each mix of engines
// and checks that its ClusterRole grants exactly what those engines use,
// that every binding names the rendered ServiceAccount, that secure
// serving's delegation and the metrics reader are always there, and that
// helm lint passes.
func TestChartRBACPerEngineMix(t *testing.T) {
	helm := charttest.Helm(t)
	mixes := []struct {
		name      string
		set       []string
		want      map[grant]bool
		vpodCRD   bool
		lintValue string
	}{
		{"scheduling", nil, schedulingGrants, false, ""},
		{"scheduling+eviction", []string{"engines.eviction=true"}, union(schedulingGrants, evictionGrants), false, ""},
		{"scheduling+vpod", []string{"engines.vpod=true"}, union(schedulingGrants, vpodGrants), true, ""},
		{"all", []string{"engines.eviction=true", "engines.vpod=true"}, union(schedulingGrants, evictionGrants, vpodGrants), true, ""},
		{"scheduling+recordDecisions", []string{"recordDecisions=true"}, union(schedulingGrants, recordDecisionsGrants), false, ""},
	}
	for _, m := range mixes {
		t.Run(m.name, func(t *testing.T) {
			lint := []string{"lint", deploy.ChartDir, "--strict"}
			for _, s := range m.set {
				lint = append(lint, "--set", s)
			}
			if out, err := charttest.Run(t, helm, lint...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			r := split(t, charttest.Objects(t, helm, m.set...))
			main := r.clusterRoles["wasmsched"]
			if main == nil {
				t.Fatal("no ClusterRole wasmsched")
			}
			got := grants(main.Rules)
			for g := range m.want {
				if !got[g] {
					t.Errorf("ClusterRole lacks %v", g)
				}
			}
			for g := range got {
				if !m.want[g] {
					t.Errorf("ClusterRole grants %v, which %s does not use", g, m.name)
				}
			}
			if hasCRD := slices.Contains(r.kinds(), "CustomResourceDefinition"); hasCRD != m.vpodCRD {
				t.Errorf("VPod CRD rendered: %v, want %v", hasCRD, m.vpodCRD)
			}
			for _, u := range r.other {
				if u.GetKind() == "CustomResourceDefinition" && u.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
					t.Errorf("the VPod CRD is not kept on helm uninstall (annotations %v): its VPods would go with it", u.GetAnnotations())
				}
			}
			checkCommon(t, r)
		})
	}
}

// checkCommon checks what every mix renders: bindings to the
// ServiceAccount, secure serving's delegation, leader election's Lease
// (two replicas), the metrics reader, and a configuration serve parses.
func checkCommon(t *testing.T, r rendered) {
	t.Helper()
	subject := rbacv1.Subject{Kind: "ServiceAccount", Name: r.sa.Name, Namespace: r.sa.Namespace}
	refs := map[string]bool{}
	for _, b := range r.crbs {
		refs["ClusterRole/"+b.RoleRef.Name] = true
		if !slices.Equal(b.Subjects, []rbacv1.Subject{subject}) {
			t.Errorf("ClusterRoleBinding %s binds %+v, want the ServiceAccount", b.Name, b.Subjects)
		}
	}
	for _, b := range r.rbs {
		refs[b.Namespace+"/"+b.RoleRef.Kind+"/"+b.RoleRef.Name] = true
		if !slices.Equal(b.Subjects, []rbacv1.Subject{subject}) {
			t.Errorf("RoleBinding %s binds %+v, want the ServiceAccount", b.Name, b.Subjects)
		}
	}
	for _, want := range []string{"ClusterRole/wasmsched", "ClusterRole/system:auth-delegator",
		"kube-system/Role/extension-apiserver-authentication-reader", "kube-system/Role/wasmsched-leader-election"} {
		if !refs[want] {
			t.Errorf("no binding to %s (have %v)", want, refs)
		}
	}
	lease := r.roles["kube-system/wasmsched-leader-election"]
	if lease == nil || !maps(grants(lease.Rules), grantSet("coordination.k8s.io leases create get update")) {
		t.Errorf("leader election Role: %+v", lease)
	}
	reader := r.clusterRoles["wasmsched-metrics-reader"]
	if reader == nil || !maps(grants(reader.Rules), map[grant]bool{{"", "/metrics", "get"}: true}) {
		t.Errorf("metrics reader ClusterRole: %+v", reader)
	}
	if len(r.clusterRoles) != 2 {
		t.Errorf("ClusterRoles %v, want wasmsched and wasmsched-metrics-reader", keys(r.clusterRoles))
	}
	if _, err := config.Parse([]byte(r.cm.Data["config.yaml"])); err != nil {
		t.Errorf("the ConfigMap's configuration: %v", err)
	}
	c := r.dep.Spec.Template.Spec.Containers[0]
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Scheme != corev1.URISchemeHTTPS || p.HTTPGet.Port.StrVal != "https" {
			t.Errorf("probe %+v is not HTTPS on the secure port", p)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 10259 {
		t.Errorf("container ports %+v, want only https 10259", c.Ports)
	}
}

func maps(a, b map[grant]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestChartOptions renders the options a platform engineer sets: one
// replica without leader election, modules from ConfigMaps and a
// registry's pull Secret, a TLS Secret, metrics readers and the
// ServiceMonitor.
func TestChartOptions(t *testing.T) {
	helm := charttest.Helm(t)

	r := split(t, charttest.Objects(t, helm, "replicas=1"))
	if len(r.roles) != 0 {
		t.Errorf("one replica renders leader election's Role: %v", keys(r.roles))
	}
	if args := r.dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--leader-elect=false") {
		t.Errorf("one replica's args %v do not turn leader election off", args)
	}
	if args := r.dep.Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--record-decisions") {
		t.Errorf("args %v record decisions by default", args)
	}
	if args := split(t, charttest.Objects(t, helm, "recordDecisions=true")).dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--record-decisions") {
		t.Errorf("recordDecisions=true: args %v lack --record-decisions", args)
	}

	r = split(t, charttest.Objects(t, helm, "modules.configMaps={team-policies}", "modules.pullSecrets={registry-creds}",
		"secureServing.tlsSecret=wasmsched-tls", "secureServing.port=8443",
		"metricsReaders[0].kind=ServiceAccount", "metricsReaders[0].name=prometheus", "metricsReaders[0].namespace=monitoring",
		"serviceMonitor.enabled=true"))
	pod := r.dep.Spec.Template.Spec
	mounts := map[string]string{}
	for _, m := range pod.Containers[0].VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	sources := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.ConfigMap != nil:
			sources[v.Name] = "configmap/" + v.ConfigMap.Name
		case v.Secret != nil:
			sources[v.Name] = "secret/" + v.Secret.SecretName
		}
	}
	for vol, want := range map[string][2]string{
		"module-team-policies": {"/var/lib/wasmsched/modules/team-policies", "configmap/team-policies"},
		"pull-registry-creds":  {"/var/run/secrets/wasmsched/pull/registry-creds", "secret/registry-creds"},
		"tls":                  {"/etc/wasmsched-tls", "secret/wasmsched-tls"},
	} {
		if mounts[vol] != want[0] || sources[vol] != want[1] {
			t.Errorf("volume %s: mounted at %q from %q, want %q from %q", vol, mounts[vol], sources[vol], want[0], want[1])
		}
	}
	args := pod.Containers[0].Args
	for _, want := range []string{"--secure-port=8443", "--tls-cert-file=/etc/wasmsched-tls/tls.crt", "--tls-private-key-file=/etc/wasmsched-tls/tls.key"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--module-cache-dir") }) {
		t.Errorf("args %v keep pulled modules without a module from a registry", args)
	}

	// A module from a registry: pulled modules are kept in the cache volume.
	r2 := split(t, charttest.Objects(t, helm, "--set-file=config="+writeFile(t, "modules: [{name: p, image: reg.example/p@sha256:00}]\n")))
	if args := r2.dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--module-cache-dir=/var/cache/wasmsched/modules") {
		t.Errorf("with a module from a registry, args %v do not keep pulled modules in the cache volume", args)
	}

	// The runtime: the image's default unless the value names one; both
	// runtimes cache their compiled code in the cache volume.
	if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--runtime") }) {
		t.Errorf("args %v pick a runtime without the runtime value", args)
	}
	if !slices.Contains(args, "--wasm-cache-dir=/var/cache/wasmsched/wazero") {
		t.Errorf("args %v do not cache compiled code in the cache volume's wazero directory", args)
	}
	r3 := split(t, charttest.Objects(t, helm, "--set=runtime=wazero"))
	if args := r3.dep.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--runtime=wazero") {
		t.Errorf("with runtime=wazero, args %v lack --runtime=wazero", args)
	}

	var readers []rbacv1.Subject
	for _, b := range r.crbs {
		if b.RoleRef.Name == "wasmsched-metrics-reader" {
			readers = b.Subjects
		}
	}
	if !slices.Equal(readers, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"}}) {
		t.Errorf("metrics reader binding subjects %+v", readers)
	}
	if !slices.Contains(r.kinds(), "ServiceMonitor") {
		t.Fatalf("no ServiceMonitor rendered: %v", r.kinds())
	}
	for _, u := range r.other {
		if u.GetKind() != "ServiceMonitor" {
			continue
		}
		eps, _, _ := unstructured.NestedSlice(u.Object, "spec", "endpoints")
		if len(eps) != 1 {
			t.Fatalf("ServiceMonitor endpoints %v", eps)
		}
		ep := eps[0].(map[string]any)
		if ep["scheme"] != "https" || ep["port"] != "https" || ep["bearerTokenFile"] == nil {
			t.Errorf("ServiceMonitor endpoint %v does not scrape HTTPS with a token", ep)
		}
	}
}

// TestChartRefusesValuesThatCannotWork: an engine configured but without
// its RBAC, and replicas without leader election, fail helm template
// with a message that says what to change.
func TestChartRefusesValuesThatCannotWork(t *testing.T) {
	helm := charttest.Helm(t)
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"config=eviction: {policies: [{plugin: NodePressure}]}"}, "engines.eviction=true"},
		{[]string{"config=vpod: {schedulers: []}"}, "engines.vpod=true"},
		{[]string{"replicas=2", "leaderElection.enabled=false"}, "leader election is off"},
		{[]string{"config=profiles: [unclosed"}, "not YAML"},
	} {
		_, err := charttest.Template(t, helm, c.set...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("helm template --set %v: %v, want an error saying %q", c.set, err, c.want)
		}
	}
}

// writeFile writes content to a temporary file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// firstDifference shows the first line where a and b differ.
func firstDifference(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  committed: %q\n  rendered:  %q", i+1, x, y)
		}
	}
	return ""
}
