// Package e2e runs wasmsched against a real kube-apiserver and etcd on
// loopback (scripts/controlplane.sh builds and starts them). It runs when
// WASMSCHED_E2E=1 (`make e2e`); the first build of the binaries takes
// several minutes, cached runs seconds.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testwait"
)

func controlPlane(t *testing.T) kubernetes.Interface {
	t.Helper()
	client, _ := controlPlaneWithKubeconfig(t)
	return client
}

// controlPlaneWithKubeconfig starts a fresh kube-apiserver and etcd for
// the test and returns an admin client and the kubeconfig's path.
func controlPlaneWithKubeconfig(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	if os.Getenv("WASMSCHED_E2E") != "1" {
		t.Skip("set WASMSCHED_E2E=1 (make e2e) to run against a real kube-apiserver")
	}
	script, err := filepath.Abs("../../scripts/controlplane.sh")
	if err != nil {
		t.Fatal(err)
	}
	run := t.TempDir()
	if out, err := exec.Command(script, "start", run).CombinedOutput(); err != nil {
		t.Fatalf("start the control plane: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(script, "stop", run).Run() })
	kubeconfig := filepath.Join(run, "kubeconfig")
	client, err := kube.Client(kubeconfig, 100, 200)
	if err != nil {
		t.Fatal(err)
	}
	return client, kubeconfig
}

// createNode creates a node and sets its status (create ignores status).
func createNode(t *testing.T, ctx context.Context, client kubernetes.Interface, n *corev1.Node) {
	t.Helper()
	created, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = n.Status
	if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startServe runs kube.Serve in the background until the test ends and
// waits until its informers have synced. It checks the API server first,
// as the serve command does, so every test that starts serve this way
// shows the release under test passes that check.
func startServe(t *testing.T, ctx context.Context, o kube.ServeOptions) {
	t.Helper()
	ready := make(chan struct{})
	o.Ready = ready
	o.CheckAPIServer = true
	if o.Runtime == "" {
		o.Runtime = e2eRuntime()
	}
	if o.CacheDir == "" {
		o.CacheDir = t.TempDir()
	}
	serveCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { stop(); <-done })
	go func() {
		defer close(done)
		if err := kube.Serve(serveCtx, o); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("serve did not become ready")
	}
}

// events lists the Events about a pod in the default namespace, through
// events.k8s.io/v1, where serve posts them (as kube-scheduler does).
func events(ctx context.Context, client kubernetes.Interface, pod string) []eventsv1.Event {
	evs, err := client.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("regarding.name", pod).String()})
	if err != nil {
		return nil
	}
	return evs.Items
}

// occurrences is how many times an Event happened: its series' count
// when repeats made it a series, else once.
func occurrences(e eventsv1.Event) int {
	if e.Series != nil {
		return int(max(e.Series.Count, 1))
	}
	return 1
}

// boundTo returns the node a pod is bound to ("" when pending or gone).
func boundTo(ctx context.Context, client kubernetes.Interface, name string) string {
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return p.Spec.NodeName
}

func node(name, cpu string) *corev1.Node {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl}}
}

func pod(name, scheduler, cpu string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{{Name: "c", Image: "pause",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}
}

func TestServeBindsAndReports(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, client, node("n1", "4"))
	reg := metrics.NewRegistry()
	met, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: config.Default(), Metrics: met})
	for _, p := range []*corev1.Pod{pod("fits", "", "1"), pod("too-big", "", "10"), pod("not-ours", "other-scheduler", "1")} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "fits to be bound", func() bool { return boundTo(ctx, client, "fits") == "n1" })
	// With DefaultPreemption in the default profile the message ends, as
	// kube-scheduler's does, with why preemption cannot help.
	const msg = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
	waitFor(t, ctx, "too-big's PodScheduled=False condition", func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, "too-big", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == "Unschedulable" && c.Message == msg {
				return true
			}
		}
		return false
	})
	for pod, want := range map[string]string{"fits": "Successfully assigned default/fits to n1", "too-big": msg} {
		waitFor(t, ctx, "an Event for "+pod, func() bool {
			for _, e := range events(ctx, client, pod) {
				if strings.Contains(e.Note, want) && e.ReportingController == "default-scheduler" {
					return true
				}
			}
			return false
		})
	}
	p, err := client.CoreV1().Pods("default").Get(ctx, "not-ours", metav1.GetOptions{})
	if err != nil || p.Spec.NodeName != "" || len(p.Status.Conditions) != 0 {
		t.Fatalf("a pod of another scheduler was touched: %+v (%v)", p.Status, err)
	}
	// The attempts are recorded under the profile (too-big may have been
	// retried by the time we look, so at least once).
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	attempts := func(result string) float64 {
		for _, mf := range mfs {
			if mf.GetName() != "scheduler_schedule_attempts_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				l := map[string]string{}
				for _, lp := range m.GetLabel() {
					l[lp.GetName()] = lp.GetValue()
				}
				if l["result"] == result && l["profile"] == config.DefaultSchedulerName {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	if s, u := attempts(metrics.ResultScheduled), attempts(metrics.ResultUnschedulable); s != 1 || u < 1 {
		t.Errorf("schedule_attempts_total: %v scheduled (want 1), %v unschedulable (want at least 1)", s, u)
	}
}

func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	// Each check reads the API server: every 100ms is often enough.
	if !testwait.Until(ctx, 100*time.Millisecond, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
