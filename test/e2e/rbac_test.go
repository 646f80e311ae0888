package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmsched/wasmsched/deploy"
	"github.com/wasmsched/wasmsched/deploy/charttest"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

// TestDeployRBACIsEnough applies the chart's ServiceAccount and RBAC
// rules (rendered by the real helm with the eviction engine on; the
// scheduling-only defaults are deploy/wasmsched.yaml), then runs serve as
// that ServiceAccount (impersonated;
// the API server enforces RBAC) with the ConfigMap's profiles and leader
// election: binding, Events and the PodScheduled condition must all be
// allowed. With an eviction section added to the profiles, the eviction
// coordinator must be able to evict (Eviction API, live pod reads,
// Events), taint nodes and read metrics.k8s.io as well. A rule missing
// from the chart fails this test.
func TestDeployRBACIsEnough(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	profiles := applyRBAC(t, ctx, admin, charttest.Objects(t, charttest.Helm(t), "engines.eviction=true"))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Impersonate.UserName = "system:serviceaccount:kube-system:wasmsched"
	asSA, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A sanity check that impersonation and RBAC are in force: the
	// ServiceAccount may not delete nodes.
	if err := asSA.CoreV1().Nodes().Delete(ctx, "none", metav1.DeleteOptions{}); err == nil || !isForbidden(err) {
		t.Fatalf("deleting a node as the ServiceAccount: %v, want Forbidden", err)
	}

	// The eviction policies of the builtin bundle, as a user would
	// enable them in the ConfigMap.
	profiles.Eviction = &config.Eviction{SyncPeriod: &config.Duration{Duration: time.Second},
		Policies: []config.EvictionPolicy{{Plugin: "ResourceOvercommit"}, {Plugin: "NodePressure"}}}

	createNode(t, ctx, admin, node("n1", "4"))
	le := kube.DefaultLeaderElection()
	le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = 3*time.Second, 2*time.Second, 250*time.Millisecond
	startServe(t, ctx, kube.ServeOptions{Client: asSA, RESTConfig: cfg, Config: profiles, LeaderElection: &le})
	for _, p := range []*corev1.Pod{pod("fits", "wasmsched", "1"), pod("packed", "wasmsched-bin-packer", "1"), pod("too-big", "wasmsched", "8")} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"fits", "packed"} {
		waitFor(t, ctx, name+" to be bound as the ServiceAccount", func() bool { return boundTo(ctx, admin, name) == "n1" })
	}
	waitFor(t, ctx, "too-big's condition and Event", func() bool {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "too-big", metav1.GetOptions{})
		if err != nil || len(p.Status.Conditions) == 0 || p.Status.Conditions[0].Reason != "Unschedulable" {
			return false
		}
		for _, e := range events(ctx, admin, "too-big") {
			if e.Reason == "FailedScheduling" {
				return true
			}
		}
		return false
	})
	if h := leaseHolder(ctx, admin); h == "" {
		t.Fatal("no Lease holder: leader election did not run as the ServiceAccount")
	}

	// Eviction as the ServiceAccount. fits and packed request 2 CPUs of
	// n1; with 1 allocatable, ResourceOvercommit evicts one of them: the
	// killer reads it (get), posts the Eviction and records EvictCreated
	// (no kubelet runs, so the pod then stays Terminating).
	updateNodeStatus(t, ctx, admin, "n1", setAllocatableCPU("1"))
	waitFor(t, ctx, "an eviction accepted as the ServiceAccount", func() bool {
		for _, name := range []string{"fits", "packed"} {
			if podState(ctx, admin, name) == "terminating" && eventMessage(ctx, admin, name, eviction.ReasonEvictCreated) != "" {
				return true
			}
		}
		return false
	})
	// NodePressure taints a node under memory pressure: get and update
	// nodes.
	pressured := node("n2", "4")
	pressured.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionTrue}}
	createNode(t, ctx, admin, pressured)
	waitFor(t, ctx, "n2's taint set as the ServiceAccount", func() bool {
		return hasTaint(ctx, admin, "n2", eviction.TaintPrefix+"MemoryPressure", corev1.TaintEffectNoSchedule)
	})
	// Usage: the ServiceAccount may list metrics.k8s.io (which this API
	// server does not serve: NotFound, not Forbidden).
	for _, res := range []string{"nodes", "pods"} {
		err := asSA.Discovery().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/" + res).Do(ctx).Error()
		if isForbidden(err) {
			t.Errorf("listing metrics.k8s.io %s as the ServiceAccount: %v", res, err)
		}
	}
}

func isForbidden(err error) bool { return apierrors.IsForbidden(err) }

// applyDeploy creates deploy/wasmsched.yaml's ServiceAccount and RBAC
// objects and returns the profiles of its ConfigMap.
func applyDeploy(t *testing.T, ctx context.Context, admin kubernetes.Interface) *config.Configuration {
	t.Helper()
	objs, err := deploy.Objects()
	if err != nil {
		t.Fatal(err)
	}
	return applyRBAC(t, ctx, admin, objs)
}

// applyRBAC creates the ServiceAccounts and RBAC objects among objs and
// returns the profiles of their ConfigMap.
func applyRBAC(t *testing.T, ctx context.Context, admin kubernetes.Interface, objs []runtime.Object) *config.Configuration {
	t.Helper()
	var err error
	var profiles *config.Configuration
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.ServiceAccount:
			_, err = admin.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			_, err = admin.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = admin.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = admin.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			profiles, err = config.Parse([]byte(o.Data["config.yaml"]))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return profiles
}
