package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/clusterread"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// A live cluster read through clusterread's guarded client becomes a
// simulation: the bound pod stays where it is, the pending one is placed
// in the room left, finished pods are gone and the ReplicaSet is not
// expanded. The API server's audit log shows the reader asked nothing
// but reads.
func TestClusterReadIsReadOnlyAndSimulates(t *testing.T) {
	t.Setenv("WASMSCHED_AUDIT", "1")
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	createNode(t, ctx, admin, node("n1", "4"))
	createNode(t, ctx, admin, node("n2", "2"))
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "web"}}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}, metav1.CreateOptions{})
		return err
	})
	web := pod("web-0", "", "3")
	web.Namespace, web.Labels, web.Spec.PriorityClassName = "shop", map[string]string{"app": "web"}, "high"
	createBound(t, ctx, admin, web, "n1")
	done := pod("done", "", "2")
	createBound(t, ctx, admin, done, "n2")
	got, err := admin.CoreV1().Pods("default").Get(ctx, "done", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = corev1.PodSucceeded
	if _, err := admin.CoreV1().Pods("default").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*corev1.Pod{pod("new", "", "2"), pod("theirs", "other-scheduler", "1")} {
		mustCreate(t, func() error {
			_, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
			return err
		})
	}
	webSel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	mustCreate(t, func() error {
		_, err := admin.PolicyV1().PodDisruptionBudgets("shop").Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(1)), Selector: webSel}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.AppsV1().ReplicaSets("shop").Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptrTo(int32(3)), Selector: webSel, Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}}}}}, metav1.CreateOptions{})
		return err
	})
	mustCreate(t, func() error {
		_, err := admin.CoreV1().Services("shop").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
		return err
	})

	client, guard, err := clusterread.ClientWithTransport(kubeconfig, clusterread.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// Pages of 2 so that every kind with more than two objects is read
	// over several requests, continuations and all.
	objs, err := clusterread.Read(ctx, client, clusterread.Options{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := objNames(objs.Pods); !slices.Equal(got, []string{"default/new", "default/theirs", "shop/web-0"}) {
		t.Errorf("pods = %v", got)
	}
	if got := objNames(objs.Nodes); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Errorf("nodes = %v", got)
	}
	for what, list := range map[string][]string{
		"priority classes": objNames(objs.PriorityClasses), "namespaces": objNames(objs.Namespaces),
		"services": objNames(objs.Services), "replica sets": objNames(objs.ReplicaSets), "budgets": objNames(objs.PDBs),
	} {
		want := map[string][]string{"priority classes": {"high", "system-cluster-critical", "system-node-critical"},
			"namespaces": {"default", "shop"}, "services": {"shop/web"}, "replica sets": {"shop/web"}, "budgets": {"shop/web"}}[what]
		for _, w := range want {
			if !slices.Contains(list, w) {
				t.Errorf("%s = %v, want %s among them", what, list, w)
			}
		}
	}

	// Read-only, seen from the client: nothing but GETs, several pages.
	reqs := guard.Requests()
	if len(reqs) != 1 || reqs["GET"] <= 8 {
		t.Errorf("requests by method = %v, want only GETs, more than one per kind", reqs)
	}
	// And from the API server: the audit log has one event per request
	// of this user agent, every one a read.
	auditLog := filepath.Join(filepath.Dir(kubeconfig), "audit.log")
	var verbs map[string]int
	waitFor(t, ctx, "the audit log to have every request of the reader", func() bool {
		verbs = auditVerbs(t, auditLog, clusterread.UserAgent)
		n := 0
		for _, c := range verbs {
			n += c
		}
		return n >= reqs["GET"]
	})
	t.Logf("the reader's requests by method: %v; the API server's audit events for it by verb: %v", reqs, verbs)
	for verb, n := range verbs {
		if verb != "list" {
			t.Errorf("the API server saw %d %q requests from %s", n, verb, clusterread.UserAgent)
		}
	}
	// The log does record writes: the admin client's (kube.Client's user
	// agent) are there.
	if admin := auditVerbs(t, auditLog, "wasmsched"); admin["create"] == 0 || admin["update"] == 0 {
		t.Errorf("the audit log has no writes of the admin client: %v", admin)
	}

	// The objects run as a simulation.
	rep, err := sim.Run(ctx, objs, sim.Options{Config: config.Default(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []sim.PodResult{
		{Namespace: "shop", Name: "web-0", Status: sim.StatusBound, Node: "n1"},
		{Namespace: "default", Name: "new", Status: sim.StatusScheduled, Node: "n2"},
		{Namespace: "default", Name: "theirs", Status: sim.StatusNotOurs},
	} {
		got := rep.Pod(want.Namespace, want.Name)
		if got == nil || got.Status != want.Status || got.Node != want.Node {
			t.Errorf("%s/%s: %+v, want %s on %q", want.Namespace, want.Name, got, want.Status, want.Node)
		}
	}
	if len(rep.Pods) != 3 {
		t.Errorf("report has %d pods, want 3: %+v", len(rep.Pods), rep.Pods)
	}

	// The command line: the same cluster plus a manifest of extra pods,
	// under the default policy and a shadow one, read-only as well.
	simulateFromClusterCLI(t, ctx, kubeconfig, auditLog)

	// What `kubectl get -o yaml` prints for the same cluster — one v1
	// List with the server's fields, managedFields included — reads as
	// manifests: API server objects pass the simulation's validation.
	listYAML := kubectlList(t, ctx, admin)
	fromYAML := &sim.Objects{}
	if err := fromYAML.Read("kubectl.yaml", bytes.NewReader(listYAML)); err != nil {
		t.Fatalf("the kubectl-style List was refused: %v", err)
	}
	if len(fromYAML.Nodes) != 2 || len(fromYAML.Pods) != 4 || len(fromYAML.PriorityClasses) < 3 || len(fromYAML.PDBs) != 1 {
		t.Errorf("from the List: %d nodes, %d pods, %d priority classes, %d budgets", len(fromYAML.Nodes), len(fromYAML.Pods), len(fromYAML.PriorityClasses), len(fromYAML.PDBs))
	}
}

func mustCreate(t *testing.T, create func() error) {
	t.Helper()
	if err := create(); err != nil {
		t.Fatal(err)
	}
}

func ptrTo[T any](v T) *T { return &v }

// createBound creates a pod and binds it to node through pods/binding,
// as a scheduler would.
func createBound(t *testing.T, ctx context.Context, client kubernetes.Interface, p *corev1.Pod, node string) {
	t.Helper()
	created, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: created.Name, UID: created.UID}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func objNames[T metav1.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		n := o.GetName()
		if o.GetNamespace() != "" {
			n = o.GetNamespace() + "/" + n
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// auditVerbs counts the audit log's events from a user agent, by verb.
func auditVerbs(t *testing.T, path, userAgent string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.UserAgent == userAgent {
			out[ev.Verb]++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	return out
}

// kubectlList builds what `kubectl get nodes,pods,priorityclasses,pdb -A
// -o yaml` prints: the objects as the API server returns them, each with
// its apiVersion and kind, in one v1 List.
func kubectlList(t *testing.T, ctx context.Context, c kubernetes.Interface) []byte {
	t.Helper()
	var items []runtime.RawExtension
	add := func(apiVersion, kind string, obj runtime.Object) {
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["apiVersion"], m["kind"] = apiVersion, kind
		raw, _ := json.Marshal(m)
		items = append(items, runtime.RawExtension{Raw: raw})
	}
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range nodes.Items {
		add("v1", "Node", &nodes.Items[i])
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		add("v1", "Pod", &pods.Items[i])
	}
	pcs, err := c.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pcs.Items {
		add("scheduling.k8s.io/v1", "PriorityClass", &pcs.Items[i])
	}
	pdbs, err := c.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pdbs.Items {
		add("policy/v1", "PodDisruptionBudget", &pdbs.Items[i])
	}
	out, err := sigsyaml.Marshal(&metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: items})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("managedFields")) {
		t.Fatal("the List lacks the server's managedFields; it is not what kubectl prints")
	}
	return out
}

// simulateFromClusterCLI runs `wasmsched simulate --from-cluster` with an
// extra pod and a shadow configuration against the test's cluster, and
// checks the result and that the API server saw only lists from it.
func simulateFromClusterCLI(t *testing.T, ctx context.Context, kubeconfig, auditLog string) {
	t.Helper()
	dir := t.TempDir()
	extra := filepath.Join(dir, "extra.yaml")
	if err := os.WriteFile(extra, []byte(`apiVersion: v1
kind: Pod
metadata: {name: extra, namespace: default}
spec:
  containers:
  - name: c
    image: pause
    resources: {requests: {cpu: "1"}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	shadow := filepath.Join(dir, "shadow.yaml")
	if err := os.WriteFile(shadow, []byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := auditVerbs(t, auditLog, clusterread.UserAgent)
	cmd := exec.CommandContext(ctx, wasmschedBinary(t), "simulate", "--from-cluster", "--kubeconfig", kubeconfig,
		"--shadow", shadow, "-o", "json", extra)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("simulate --from-cluster: %v\n%s", err, out)
	}
	var cmp struct {
		Pods []struct {
			Namespace, Name, Change string
			Live                    *sim.PodResult
		}
		Summary struct{ Pods int }
	}
	if err := json.Unmarshal(out, &cmp); err != nil {
		t.Fatalf("output is not the comparison JSON: %v\n%s", err, out)
	}
	found := false
	for _, p := range cmp.Pods {
		if p.Namespace == "default" && p.Name == "extra" {
			found = true
			if p.Live == nil || p.Live.Status != sim.StatusScheduled {
				t.Errorf("the extra pod: %+v, want scheduled", p.Live)
			}
		}
	}
	if !found || cmp.Summary.Pods != 4 {
		t.Errorf("want the 3 cluster pods and the extra one compared, got %d: %s", cmp.Summary.Pods, out)
	}
	waitFor(t, ctx, "the audit log to have the command's lists", func() bool {
		after := auditVerbs(t, auditLog, clusterread.UserAgent)
		return after["list"] > before["list"]
	})
	for verb, n := range auditVerbs(t, auditLog, clusterread.UserAgent) {
		if verb != "list" {
			t.Errorf("the API server saw %d %q requests from simulate --from-cluster", n, verb)
		}
	}
}
