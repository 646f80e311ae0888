package sim

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// workloadTemplate is the pod template the workloads below share: it sets
// every scheduling field the pods must keep.
const workloadTemplate = `  template:
    metadata:
      labels: {app: web, tier: front}
      annotations: {note: kept}
    spec:
      schedulerName: default-scheduler
      priorityClassName: high
      tolerations: [{key: dedicated, operator: Exists}]
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers: [{name: c, image: nginx:1.27, resources: {requests: {cpu: 100m}}}]
`

// workloadsOf lists pods as namespace/name.
func workloadsOf(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestWorkloadsExpandLikeTheirControllers(t *testing.T) {
	ctrl := true
	for _, tc := range []struct {
		name, yaml string
		count      int
		namespace  string
		podName    *regexp.Regexp
		ownerKind  string
		ownerName  *regexp.Regexp
		ownerUID   string
		extra      []string // label keys added to the template's
	}{
		{
			name: "Deployment", count: 3, namespace: "shop",
			yaml:      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n" + workloadTemplate,
			podName:   regexp.MustCompile(`^web-[bcdfghjklmnpqrstvwxz2456789]{8,10}-[bcdfghjklmnpqrstvwxz2456789]{5}$`),
			ownerKind: "ReplicaSet", ownerName: regexp.MustCompile(`^web-[bcdfghjklmnpqrstvwxz2456789]{8,10}$`),
			ownerUID: "uid-replicaset-shop/web-", extra: []string{"pod-template-hash"},
		},
		{
			name: "ReplicaSet with default replicas and namespace", count: 1, namespace: "default",
			yaml:      "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web}\nspec:\n  selector: {matchExpressions: [{key: app, operator: In, values: [web]}]}\n" + workloadTemplate,
			podName:   regexp.MustCompile(`^web-[bcdfghjklmnpqrstvwxz2456789]{5}$`),
			ownerKind: "ReplicaSet", ownerName: regexp.MustCompile(`^web$`), ownerUID: "uid-replicaset-default/web",
		},
		{
			name: "ReplicaSet keeps its own uid", count: 2, namespace: "default",
			yaml:      "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web, uid: rs-1}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n" + workloadTemplate,
			podName:   regexp.MustCompile(`^web-[bcdfghjklmnpqrstvwxz2456789]{5}$`),
			ownerKind: "ReplicaSet", ownerName: regexp.MustCompile(`^web$`), ownerUID: "rs-1",
		},
		{
			name: "StatefulSet", count: 3, namespace: "db",
			yaml:      "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: web, namespace: db}\nspec:\n  replicas: 3\n  serviceName: web\n  selector: {matchLabels: {app: web, tier: front}}\n" + workloadTemplate,
			podName:   regexp.MustCompile(`^web-[0-2]$`),
			ownerKind: "StatefulSet", ownerName: regexp.MustCompile(`^web$`), ownerUID: "uid-statefulset-db/web",
			extra: []string{"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index", "controller-revision-hash"},
		},
		{
			name: "zero replicas", count: 0,
			yaml: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 0\n  selector: {matchLabels: {app: web}}\n" + workloadTemplate,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := read(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Pods) != tc.count {
				t.Fatalf("%d pods, want %d: %v", len(o.Pods), tc.count, workloadsOf(o.Pods))
			}
			seen := map[string]bool{}
			for _, p := range o.Pods {
				if seen[p.Name] {
					t.Errorf("name %s generated twice", p.Name)
				}
				seen[p.Name] = true
				if !tc.podName.MatchString(p.Name) {
					t.Errorf("pod name %q does not match %s", p.Name, tc.podName)
				}
				if p.Namespace != tc.namespace {
					t.Errorf("%s: namespace %q, want %q", p.Name, p.Namespace, tc.namespace)
				}
				want := map[string]string{"app": "web", "tier": "front"}
				for _, k := range tc.extra {
					if p.Labels[k] == "" {
						t.Errorf("%s: label %s missing: %v", p.Name, k, p.Labels)
					}
					want[k] = p.Labels[k]
				}
				if !reflect.DeepEqual(p.Labels, want) {
					t.Errorf("%s: labels %v, want %v", p.Name, p.Labels, want)
				}
				if p.Annotations["note"] != "kept" {
					t.Errorf("%s: annotations %v", p.Name, p.Annotations)
				}
				if len(p.OwnerReferences) != 1 {
					t.Fatalf("%s: owners %+v", p.Name, p.OwnerReferences)
				}
				ref := p.OwnerReferences[0]
				if ref.APIVersion != "apps/v1" || ref.Kind != tc.ownerKind || !tc.ownerName.MatchString(ref.Name) ||
					!strings.HasPrefix(string(ref.UID), tc.ownerUID) || ref.Controller == nil || *ref.Controller != ctrl {
					t.Errorf("%s: owner %+v, want apps/v1 %s %s uid %s… controller", p.Name, ref, tc.ownerKind, tc.ownerName, tc.ownerUID)
				}
				s := p.Spec
				if s.SchedulerName != "default-scheduler" || s.PriorityClassName != "high" || len(s.Tolerations) != 1 ||
					s.Affinity == nil || s.Affinity.NodeAffinity == nil || len(s.TopologySpreadConstraints) != 1 ||
					len(s.Containers) != 1 || s.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 {
					t.Errorf("%s: template spec not kept: %+v", p.Name, s)
				}
			}
		})
	}
}

func TestDeploymentCreatesOneOwnedReplicaSet(t *testing.T) {
	o, err := read(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n"+workloadTemplate)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Deployments) != 1 || len(o.ReplicaSets) != 1 {
		t.Fatalf("%d deployments, %d replicasets", len(o.Deployments), len(o.ReplicaSets))
	}
	d, rs := o.Deployments[0], o.ReplicaSets[0]
	hash := rs.Labels["pod-template-hash"]
	if rs.Name != "web-"+hash || rs.Namespace != "default" || *rs.Spec.Replicas != 2 {
		t.Errorf("replicaset %s/%s replicas %d, hash %q", rs.Namespace, rs.Name, *rs.Spec.Replicas, hash)
	}
	if rs.Spec.Selector.MatchLabels["pod-template-hash"] != hash || rs.Spec.Template.Labels["pod-template-hash"] != hash {
		t.Errorf("hash not in the replicaset's selector and template: %+v %v", rs.Spec.Selector, rs.Spec.Template.Labels)
	}
	if _, ok := d.Spec.Template.Labels["pod-template-hash"]; ok {
		t.Error("the Deployment's own template was changed")
	}
	ref := rs.OwnerReferences
	if len(ref) != 1 || ref[0].Kind != "Deployment" || ref[0].Name != "web" || ref[0].UID != d.UID || d.UID == "" || !*ref[0].Controller {
		t.Errorf("replicaset owners %+v (deployment uid %q)", ref, d.UID)
	}
	for _, p := range o.Pods {
		if !strings.HasPrefix(p.Name, rs.Name+"-") || p.Labels["pod-template-hash"] != hash || p.OwnerReferences[0].UID != rs.UID {
			t.Errorf("pod %s labels %v owner %+v not from replicaset %s", p.Name, p.Labels, p.OwnerReferences[0], rs.Name)
		}
	}
}

func TestPodTemplateHashIsDeterministic(t *testing.T) {
	deploy := func(tmpl string) []string {
		t.Helper()
		o, err := read(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 3\n  selector: {matchLabels: {app: web}}\n"+tmpl)
		if err != nil {
			t.Fatal(err)
		}
		return workloadsOf(o.Pods)
	}
	base := deploy(workloadTemplate)
	if again := deploy(workloadTemplate); !reflect.DeepEqual(base, again) {
		t.Fatalf("same input, different names: %v vs %v", base, again)
	}
	reordered := strings.Replace(workloadTemplate, "{app: web, tier: front}", "{tier: front, app: web}", 1)
	if got := deploy(reordered); !reflect.DeepEqual(base, got) {
		t.Errorf("map key order changed the names: %v vs %v", base, got)
	}
	hashOf := func(name string) string { return strings.Split(name, "-")[1] }
	for _, change := range []struct{ from, to string }{
		{"nginx:1.27", "nginx:1.28"},
		{"cpu: 100m", "cpu: 200m"},
		{"annotations: {note: kept}", "annotations: {note: changed}"},
	} {
		changed := deploy(strings.Replace(workloadTemplate, change.from, change.to, 1))
		if hashOf(changed[0]) == hashOf(base[0]) {
			t.Errorf("%s -> %s kept hash %s", change.from, change.to, hashOf(base[0]))
		}
	}
}

func TestStatefulSetOrdinals(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		want       []string
	}{
		{"from zero", "  replicas: 3\n", []string{"db-0", "db-1", "db-2"}},
		{"from ordinals.start", "  replicas: 2\n  ordinals: {start: 5}\n", []string{"db-5", "db-6"}},
		{"default one replica", "", []string{"db-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := read(t, "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n"+tc.spec+
				"  selector: {matchLabels: {app: web}}\n"+workloadTemplate)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range o.Pods {
				got = append(got, p.Name)
				if p.Labels["statefulset.kubernetes.io/pod-name"] != p.Name ||
					"db-"+p.Labels["apps.kubernetes.io/pod-index"] != p.Name ||
					!strings.HasPrefix(p.Labels["controller-revision-hash"], "db-") {
					t.Errorf("%s: labels %v", p.Name, p.Labels)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("pods %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWorkloadPodsKeepInputOrderAndAreAdmitted(t *testing.T) {
	o, err := read(t, `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Pod
metadata: {name: first}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
`+workloadTemplate+`---
apiVersion: v1
kind: Pod
metadata: {name: middle}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
`+workloadTemplate+`---
apiVersion: v1
kind: Pod
metadata: {name: last}
spec: {containers: [{name: c, image: i}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	_, pods, err := admit(o)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range pods {
		got = append(got, p.Name)
		if strings.HasPrefix(p.Name, "db-") || strings.HasPrefix(p.Name, "rs-") {
			if p.Priority != 1000 || len(p.Owners) != 1 || !p.Owners[0].Controller {
				t.Errorf("%s: priority %d owners %+v", p.Name, p.Priority, p.Owners)
			}
		}
	}
	pattern := regexp.MustCompile(`^first db-0 db-1 middle rs-\w{5} rs-\w{5} last$`)
	if s := strings.Join(got, " "); !pattern.MatchString(s) {
		t.Fatalf("order %s, want %s", s, pattern)
	}
}

func TestWorkloadErrors(t *testing.T) {
	const sel = "  selector: {matchLabels: {app: web}}\n"
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"missing template", deploy + sel,
			`(document 0, Deployment web): spec.template: missing`},
		{"selector does not match", deploy + "  selector: {matchLabels: {app: api}}\n" + workloadTemplate,
			`(document 0, Deployment web): spec.selector: does not match spec.template.metadata.labels`},
		{"selector expression does not match", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n" +
			"  selector: {matchExpressions: [{key: tier, operator: NotIn, values: [front]}]}\n" + workloadTemplate,
			`(document 0, StatefulSet db): spec.selector: does not match spec.template.metadata.labels`},
		{"missing selector", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n" + workloadTemplate,
			`(document 0, ReplicaSet rs): spec.selector: missing (required in apps/v1)`},
		{"empty selector", deploy + "  selector: {}\n" + workloadTemplate,
			`(document 0, Deployment web): spec.selector: empty selector is invalid`},
		{"bad selector operator", deploy + "  selector: {matchExpressions: [{key: app, operator: Like, values: [web]}]}\n" + workloadTemplate,
			`(document 0, Deployment web): spec.selector: "Like" is not a valid label selector operator`},
		{"negative replicas", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n" +
			"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  replicas: -1\n" + sel + workloadTemplate,
			`(document 1, StatefulSet db): spec.replicas: must be greater than or equal to 0, got -1`},
		{"too many replicas", deploy + "  replicas: 1000000000\n" + sel + workloadTemplate,
			`(document 0, Deployment web): spec.replicas: 1000000000 is more than the simulation's limit of 100000`},
		{"negative ordinals start", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  ordinals: {start: -2}\n" + sel + workloadTemplate,
			`(document 0, StatefulSet db): spec.ordinals.start: must be greater than or equal to 0, got -2`},
		{"template without containers", "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs}\nspec:\n" + sel +
			"  template: {metadata: {labels: {app: web}}, spec: {}}\n",
			`(document 0, ReplicaSet rs): spec.template.spec.containers: at least one container is required`},
		{"unknown template field", deploy + sel + strings.Replace(workloadTemplate, "schedulerName:", "schedulerNam:", 1),
			`(document 0, Deployment web): spec.template.spec.schedulerNam: unknown field (did you mean "schedulerName"?)`},
		{"deployment defined twice", deploy + sel + workloadTemplate + "---\n" + deploy + sel + workloadTemplate,
			`(document 1, Deployment web): metadata.name: Deployment default/web is already defined`},
		{"old api version", "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: web}\n",
			`(document 0, Deployment web): unsupported kind extensions/v1beta1 "Deployment" (supported: v1 Node, Pod, Namespace, Service; apps/v1 Deployment, ReplicaSet, StatefulSet;`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("err %T is not a *ManifestError", err)
			}
		})
	}
}

func TestNamespacesKeepLabelsAndAreOptional(t *testing.T) {
	o, err := read(t, `apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: a, env: prod}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: shop}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: q, namespace: undeclared}
spec: {containers: [{name: c, image: i}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Namespaces) != 1 || !reflect.DeepEqual(o.Namespaces[0].Labels, map[string]string{"team": "a", "env": "prod"}) {
		t.Fatalf("namespaces %+v", o.Namespaces)
	}
	_, pods, err := admit(o)
	if err != nil || len(pods) != 2 || pods[1].Namespace != "undeclared" {
		t.Fatalf("pods %v err %v", pods, err)
	}
}

func TestRunSchedulesDeploymentPodsUnderTheirGeneratedNames(t *testing.T) {
	var nodes string
	for _, n := range []string{"n1", "n2", "n3"} {
		nodes += "apiVersion: v1\nkind: Node\nmetadata: {name: " + n + "}\nstatus: {allocatable: {cpu: '1', memory: 1Gi, pods: '10'}}\n---\n"
	}
	o, err := read(t, nodes+`apiVersion: v1
kind: Pod
metadata: {name: before}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 600m}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: after}
spec: {containers: [{name: c, image: i}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	generated := workloadsOf(o.Pods)[1:4]
	rep, err := Run(context.Background(), o, Options{NativeBuiltin: true, CacheDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pods) != 5 || rep.Pods[0].Name != "before" || rep.Pods[4].Name != "after" {
		t.Fatalf("report %+v", rep.Pods)
	}
	used := map[string]bool{}
	for i, want := range generated {
		got := rep.Pods[i+1]
		if got.Namespace+"/"+got.Name != want || got.Status != StatusScheduled || got.Node == "" {
			t.Errorf("report[%d] = %+v, want %s scheduled", i+1, got, want)
		}
		if used[got.Node] {
			t.Errorf("%s: node %s already holds a 600m replica of 1 CPU", got.Name, got.Node)
		}
		used[got.Node] = true
	}
	if !regexp.MustCompile(`^default/web-\w{8,10}-\w{5}$`).MatchString(generated[0]) {
		t.Errorf("generated name %s", generated[0])
	}
}

// The ReplicaSet's own metadata must not leak into the pods beyond what
// the template says.
func TestPodFromTemplateCopiesNotShares(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	p := podFromTemplate(tmpl, "ns", "p", metav1.OwnerReference{Name: "o"})
	p.Labels["x"] = "y"
	p.Spec.Containers[0].Name = "changed"
	if len(tmpl.Labels) != 1 || tmpl.Spec.Containers[0].Name != "c" {
		t.Fatalf("template changed through its pod: %+v", tmpl)
	}
}
