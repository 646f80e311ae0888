package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

func read(t *testing.T, yaml string) (*Objects, error) {
	t.Helper()
	o := &Objects{}
	return o, o.Read("test.yaml", strings.NewReader(yaml))
}

func TestManifestErrorsNameFileDocumentAndField(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown kind", "apiVersion: batch/v1\nkind: Job\nmetadata: {name: web}\n",
			`test.yaml:1 (document 0, Job web): unsupported kind batch/v1 "Job"`},
		{"unknown field in the second document", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, resourcez: {}}]\n",
			`test.yaml:9 (document 1, Pod p): spec.containers[0].resourcez: unknown field (did you mean "resources"?)`},
		{"bad quantity", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: i, resources: {requests: {cpu: lots}}}]\n",
			`test.yaml:5 (document 0, Pod p): spec.containers[0].resources.requests.cpu: "lots" is not a quantity (e.g. 64Mi or 500m)`},
		{"no name", "apiVersion: v1\nkind: Node\nmetadata: {}\n", `(document 0, Node): metadata.name: missing`},
		{"no kind", "apiVersion: v1\nmetadata: {name: x}\n", `(document 0): kind: missing`},
		{"no containers", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {}\n", `spec.containers: at least one container is required`},
		{"bad toleration operator", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {tolerations: [{key: k, operator: Maybe}], containers: [{name: c, image: i}]}\n",
			`test.yaml:4 (document 0, Pod p): spec.tolerations[0].operator: Unsupported value: "Maybe": supported values: "Equal", "Exists"`},
		{"bad taint effect", "apiVersion: v1\nkind: Node\nmetadata: {name: node1}\nspec: {taints: [{key: k, effect: Sometimes}]}\n",
			`test.yaml:4 (document 0, Node node1): spec.taints[0].effect: Unsupported value: "Sometimes"`},
		{"not yaml", "apiVersion: v1\nkind: [\n", `test.yaml:2 (document 0): not valid YAML: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestCommentsAndEmptyDocumentsAreSkipped(t *testing.T) {
	o, err := read(t, "# a comment\n---\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\n# trailing\n")
	if err != nil || len(o.Nodes) != 1 {
		t.Fatalf("nodes %d, err %v", len(o.Nodes), err)
	}
}

func TestAdmissionSetsPriorityFromClasses(t *testing.T) {
	o, err := read(t, `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: base}
value: 7
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: -3
preemptionPolicy: Never
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: low, namespace: jobs}
spec: {priorityClassName: batch, containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: crit}
spec: {priorityClassName: system-cluster-critical, containers: [{name: c, image: i}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	_, pods, err := admit(o)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int32{}
	for _, p := range pods {
		got[p.Namespace+"/"+p.Name] = p.Priority
		if p.Name == "low" && !p.PreemptNever {
			t.Error("preemptionPolicy Never not copied from the class")
		}
	}
	if got["default/plain"] != 7 || got["jobs/low"] != -3 || got["default/crit"] != 2000000000 {
		t.Fatalf("priorities = %v", got)
	}
}

func TestAdmissionErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown class", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priorityClassName: gold, containers: [{name: c, image: i}]}\n",
			`Pod default/p: spec.priorityClassName: no PriorityClass "gold"`},
		{"bound to a missing node", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {nodeName: ghost, containers: [{name: c, image: i}]}\n",
			`Pod default/p: spec.nodeName: no Node "ghost"`},
		{"duplicate pod", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n",
			`Pod default/p: defined twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := read(t, tc.yaml)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = admit(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRunWithNoNodesReportsEveryPodUnschedulable(t *testing.T) {
	o, err := read(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i}]}\n")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), o, Options{NativeBuiltin: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Pod("default", "p"); p.Status != StatusUnschedulable || p.Message != "0/0 nodes are available:" || p.Attempts > 3 {
		t.Fatalf("pod = %+v", p)
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: i, resources: {requests: {cpu: 1}}}]}\n"))
	f.Add([]byte("apiVersion: v1\nkind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: 2}}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o := &Objects{}
		if err := o.Read("fuzz", strings.NewReader(string(b))); err != nil {
			return
		}
		_, _, _ = admit(o)
	})
}

func TestControllerSelectorAndNamespaces(t *testing.T) {
	o, err := read(t, `apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: web}}
---
apiVersion: v1
kind: Service
metadata: {name: front, namespace: shop}
spec: {selector: {app: web}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web, tier: a}}
  template:
    metadata: {labels: {app: web, tier: a}}
    spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: Pod
metadata: {name: lone, namespace: other}
spec: {containers: [{name: c, image: i}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	_, pods, err := admit(o)
	if err != nil {
		t.Fatal(err)
	}
	var web, lone *abi.Pod
	for _, p := range pods {
		if p.Namespace == "shop" {
			web = p
		} else {
			lone = p
		}
	}
	cs := web.ControllerSelector
	if cs == nil || len(cs.MatchLabels) != 1 || cs.MatchLabels[0] != (abi.Label{Key: "app", Value: "web"}) || len(cs.MatchExpressions) != 2 {
		t.Fatalf("controller selector = %+v", cs)
	}
	if lone.ControllerSelector != nil {
		t.Fatalf("a pod nothing selects got %+v", lone.ControllerSelector)
	}
	ns := namespaces(o, pods)
	if len(ns) != 2 || ns[0].Name != "other" || ns[1].Name != "shop" {
		t.Fatalf("namespaces = %+v", ns)
	}
	if v, _ := ns[1].Labels.Get("team"); v != "web" {
		t.Fatal("namespace labels lost")
	}
	if v, _ := ns[0].Labels.Get("kubernetes.io/metadata.name"); v != "other" {
		t.Fatal("implicit namespace lacks its metadata.name label")
	}
}
