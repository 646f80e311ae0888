package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmsched/wasmsched/deploy/charttest"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

// TestHelmChartInstallsAndServes renders the chart with every engine on
// (the real helm), applies everything it renders to a real API server —
// CRD, ServiceAccount, RBAC, ConfigMap, Deployment (no kubelet runs, so
// the Deployment makes no pods) — then runs `wasmsched serve` as a
// process the way the Deployment's container would: its arguments, the
// ConfigMap's files in place of the mounted volume, and a token of the
// rendered ServiceAccount minted with the TokenRequest API. The pod it
// is given must be bound, as that ServiceAccount, holding the Lease.
// Where serve has secure serving (--secure-port), its HTTPS endpoints
// answer as README "Running in a cluster" says: /healthz to anyone,
// /metrics to a token bound to the chart's metrics reader ClusterRole
// (values.metricsReaders), 403 to another token, 401 to none.
func TestHelmChartInstallsAndServes(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	helm := charttest.Helm(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}

	objs := charttest.Objects(t, helm, "engines.eviction=true", "engines.vpod=true",
		"metricsReaders[0].kind=ServiceAccount", "metricsReaders[0].name=scraper", "metricsReaders[0].namespace=kube-system")
	applyAll(t, ctx, admin, dynamic.NewForConfigOrDie(restCfg), objs)
	var dep *appsv1.Deployment
	var cm *corev1.ConfigMap
	var sa *corev1.ServiceAccount
	for _, o := range objs {
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.ConfigMap:
			cm = o
		case *corev1.ServiceAccount:
			sa = o
		}
	}
	if dep == nil || cm == nil || sa == nil {
		t.Fatal("the chart rendered no Deployment, ConfigMap or ServiceAccount")
	}
	if _, err := admin.AppsV1().Deployments(dep.Namespace).Get(ctx, dep.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the rendered Deployment was not created: %v", err)
	}

	// The ServiceAccount's token, as the kubelet would project it.
	saToken := mintToken(t, ctx, admin, sa.Namespace, sa.Name)
	saKubeconfig := writeTokenKubeconfig(t, kubeconfig, saToken, filepath.Join(t.TempDir(), "sa.kubeconfig"))
	asSA, err := kube.Client(saKubeconfig, 50, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := asSA.CoreV1().Nodes().Delete(ctx, "none", metav1.DeleteOptions{}); !isForbidden(err) {
		t.Fatalf("deleting a node with the ServiceAccount's token: %v, want Forbidden", err)
	}

	// The ConfigMap's files where the container mounts them.
	configDir := t.TempDir()
	for name, data := range cm.Data {
		if err := os.WriteFile(filepath.Join(configDir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := containerArgs(t, dep, map[string]string{"/etc/wasmsched/": configDir + "/", "/var/cache/wasmsched": t.TempDir()})
	args = append(args, "--kubeconfig="+saKubeconfig, "--metrics-bind-address="+freeAddr(t))
	// The secure endpoints' flags, where serve has them: a free port, and
	// the token's kubeconfig for the delegated authentication and
	// authorization the chart's RBAC allows.
	help, _ := exec.Command(wasmschedBinary(t), "serve", "--help").CombinedOutput()
	secureAddr := ""
	if strings.Contains(string(help), "--secure-port") {
		secureAddr = freeAddr(t)
		host, port, _ := strings.Cut(secureAddr, ":")
		args = append(args, "--secure-port="+port)
		if strings.Contains(string(help), "--bind-address") {
			args = append(args, "--bind-address="+host)
		}
	}
	for _, f := range []string{"--authentication-kubeconfig", "--authorization-kubeconfig"} {
		if strings.Contains(string(help), f) {
			args = append(args, f+"="+saKubeconfig)
		}
	}
	startServeProcess(t, args)

	createNode(t, ctx, admin, node("n1", "4"))
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod("from-chart", "wasmsched", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "from-chart bound by serve running as the chart's ServiceAccount", func() bool {
		return boundTo(ctx, admin, "from-chart") == "n1"
	})
	waitFor(t, ctx, "the Scheduled Event", func() bool {
		for _, e := range events(ctx, admin, "from-chart") {
			if e.Reason == "Scheduled" {
				return true
			}
		}
		return false
	})
	if h := leaseHolder(ctx, admin); h == "" {
		t.Fatal("no Lease holder: leader election did not run with the rendered arguments")
	}
	if secureAddr == "" {
		t.Log("serve has no --secure-port: its HTTPS endpoints are not checked")
		return
	}

	if _, err := admin.CoreV1().ServiceAccounts("kube-system").Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: "kube-system"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	scraper := mintToken(t, ctx, admin, "kube-system", "scraper")
	waitFor(t, ctx, "/healthz over HTTPS without a token", func() bool {
		code, _ := httpsGet(secureAddr, "/healthz", "")
		return code == http.StatusOK
	})
	for _, c := range []struct {
		who, token string
		want       int
	}{{"no token", "", http.StatusUnauthorized}, {"the scheduler's own token", saToken, http.StatusForbidden},
		{"a metrics reader's token", scraper, http.StatusOK}} {
		if code, body := httpsGet(secureAddr, "/metrics", c.token); code != c.want {
			t.Errorf("/metrics with %s: %d, want %d\n%.300s", c.who, code, c.want, body)
		}
	}
}

// httpsGet fetches path from serve's secure port, with a bearer token
// unless it is empty; serve's certificate is its self-signed one.
func httpsGet(addr, path, token string) (int, string) {
	code, body, _ := fetch(httpsClient(), "https://"+addr+path, token)
	return code, body
}

// applyAll creates every rendered object through the dynamic client, in
// helm's order (CRDs and RBAC before the workloads).
func applyAll(t *testing.T, ctx context.Context, admin kubernetes.Interface, dyn dynamic.Interface, objs []runtime.Object) {
	t.Helper()
	groups, err := restmapper.GetAPIGroupResources(admin.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	for _, o := range objs {
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Empty() {
			kinds, _, err := scheme.Scheme.ObjectKinds(o)
			if err != nil {
				t.Fatal(err)
			}
			gvk = kinds[0]
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetGroupVersionKind(gvk)
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s %s: %v", gvk, u.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if ns := u.GetNamespace(); ns != "" {
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
	}
}

// containerArgs returns the Deployment's container arguments with the
// container's paths replaced by local ones (prefix => replacement).
func containerArgs(t *testing.T, dep *appsv1.Deployment, paths map[string]string) []string {
	t.Helper()
	var out []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		for from, to := range paths {
			if name, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(val, from) {
				a = name + "=" + to + strings.TrimPrefix(val, from)
			}
		}
		out = append(out, a)
	}
	if len(out) == 0 || out[0] != "serve" {
		t.Fatalf("the Deployment's container does not run serve: %v", out)
	}
	return out
}

// startServeProcess runs the wasmsched binary with args until the test
// ends; its output is shown if the test fails.
func startServeProcess(t *testing.T, args []string) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wasmschedBinary(t), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("serve %v:\n%s", args, b)
		}
	})
}
