package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

// serve starts wasmsched on the control plane and waits until it
// schedules. No kubelet runs, so a fake one finishes the graceful
// deletion of terminating pods (deleted pods bound to a node would
// otherwise stay Terminating for ever).
func serve(t *testing.T, ctx context.Context, client kubernetes.Interface) {
	t.Helper()
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: config.Default()})
	kubeletCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go fakeKubelet(kubeletCtx, client)
}

func fakeKubelet(ctx context.Context, client kubernetes.Interface) {
	zero := int64(0)
	for ctx.Err() == nil {
		pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, p := range pods.Items {
				if p.DeletionTimestamp != nil {
					_ = client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func addClass(t *testing.T, ctx context.Context, client kubernetes.Interface, name string, value int32, guard string) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	if guard != "" {
		pc.Annotations = map[string]string{abi.AnnotationAllowDisruptionByPriority: guard}
	}
	if _, err := client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func classPod(name, class, cpu string, labels map[string]string) *corev1.Pod {
	p := pod(name, "", cpu)
	p.Spec.PriorityClassName = class
	p.Labels = labels
	return p
}

func createPod(t *testing.T, ctx context.Context, client kubernetes.Interface, p *corev1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitBound(t *testing.T, ctx context.Context, client kubernetes.Interface, name, node string) {
	t.Helper()
	waitFor(t, ctx, name+" to be bound to "+node, func() bool { return boundTo(ctx, client, name) == node })
}

func waitGone(t *testing.T, ctx context.Context, client kubernetes.Interface, name string) {
	t.Helper()
	waitFor(t, ctx, name+" to be deleted", func() bool {
		_, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

func eventMessage(ctx context.Context, client kubernetes.Interface, pod, reason string) string {
	for _, e := range events(ctx, client, pod) {
		if e.Reason == reason {
			return e.Note
		}
	}
	return ""
}

// addDBBudget creates the budget "db" over app=db pods with minAvailable,
// and gives it the status the disruption controller would write (none
// runs here): one healthy pod, allowed disruptions as given.
func addDBBudget(t *testing.T, ctx context.Context, client kubernetes.Interface, minAvailable, allowed int32) {
	t.Helper()
	budget := intstr.FromInt32(minAvailable)
	pdb, err := client.PolicyV1().PodDisruptionBudgets("default").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &budget, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed,
		CurrentHealthy: 1, DesiredHealthy: minAvailable, ExpectedPods: 1}
	if _, err := client.PolicyV1().PodDisruptionBudgets("default").UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// markRunning makes a bound pod Running and Ready, as a kubelet would;
// the Eviction API ignores budgets for Pending pods.
func markRunning(t *testing.T, ctx context.Context, client kubernetes.Interface, name string) {
	t.Helper()
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	p.Status.Phase = corev1.PodRunning
	p.Status.StartTime = &now
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now})
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestServePreemptsLowerPriorityPods(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, client, node("n1", "2"))
	addClass(t, ctx, client, "low", 10, "")
	addClass(t, ctx, client, "high", 1000, "")
	serve(t, ctx, client)
	createPod(t, ctx, client, classPod("low-1", "low", "1", nil))
	createPod(t, ctx, client, classPod("low-2", "low", "1", nil))
	waitBound(t, ctx, client, "low-1", "n1")
	waitBound(t, ctx, client, "low-2", "n1")

	createPod(t, ctx, client, classPod("urgent", "high", "2", nil))
	waitBound(t, ctx, client, "urgent", "n1")
	waitGone(t, ctx, client, "low-1")
	waitGone(t, ctx, client, "low-2")
	waitFor(t, ctx, "a Preempted event on low-1", func() bool {
		return strings.Contains(eventMessage(ctx, client, "low-1", "Preempted"), "Preempted by pod default/urgent on node n1 (deleted)")
	})
}

func TestServeKEP3280GuardBlocksALowPreemptorAndLetsAHighOneThrough(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, client, node("n1", "1"))
	addClass(t, ctx, client, "guarded", 10, "2000")
	addClass(t, ctx, client, "mid", 500, "")
	addClass(t, ctx, client, "top", 5000, "")
	// A budget that allows no disruption.
	addDBBudget(t, ctx, client, 1, 0)
	serve(t, ctx, client)
	createPod(t, ctx, client, classPod("db", "guarded", "1", map[string]string{"app": "db"}))
	waitBound(t, ctx, client, "db", "n1")
	markRunning(t, ctx, client, "db")

	// 500 < 2000: the db would violate its budget, so it is not a victim.
	createPod(t, ctx, client, classPod("mid", "mid", "1", nil))
	waitFor(t, ctx, "mid's FailedScheduling saying why preemption did not happen", func() bool {
		return strings.Contains(eventMessage(ctx, client, "mid", "FailedScheduling"),
			"preemption: 0/1 nodes are available: 1 preemption would violate a PodDisruptionBudget its PriorityClass guards against this priority.")
	})
	if p, err := client.CoreV1().Pods("default").Get(ctx, "db", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("db touched by a preemptor below its guard: %v", err)
	}

	// 5000 >= 2000: best effort as today, through the Eviction API; the
	// budget refuses (429) and the victim is deleted instead.
	createPod(t, ctx, client, classPod("boss", "top", "1", nil))
	waitBound(t, ctx, client, "boss", "n1")
	waitGone(t, ctx, client, "db")
	waitFor(t, ctx, "db's Preempted event", func() bool {
		return strings.Contains(eventMessage(ctx, client, "db", "Preempted"), "Preempted by pod default/boss on node n1 (deleted after the Eviction API refused (429))")
	})
	if p, err := client.CoreV1().Pods("default").Get(ctx, "mid", metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Fatalf("mid = %+v, %v; want it still pending", p.Spec.NodeName, err)
	}
}

func TestServeKEP3280BelowTheGuardEvictsWhenTheBudgetAllows(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, client, node("n1", "1"))
	addClass(t, ctx, client, "guarded", 10, "2000")
	addClass(t, ctx, client, "mid", 500, "")
	addDBBudget(t, ctx, client, 0, 1)
	serve(t, ctx, client)
	createPod(t, ctx, client, classPod("db", "guarded", "1", map[string]string{"app": "db"}))
	waitBound(t, ctx, client, "db", "n1")
	markRunning(t, ctx, client, "db")
	// 500 < 2000, but the budget allows one disruption: the victim goes
	// through the Eviction API, which spends the budget.
	createPod(t, ctx, client, classPod("mid", "mid", "1", nil))
	waitBound(t, ctx, client, "mid", "n1")
	waitFor(t, ctx, "db's Preempted event", func() bool {
		return strings.Contains(eventMessage(ctx, client, "db", "Preempted"), "Preempted by pod default/mid on node n1 (evicted through the Eviction API)")
	})
	got, err := client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "db", metav1.GetOptions{})
	if err != nil || got.Status.DisruptionsAllowed != 0 || len(got.Status.DisruptedPods) != 1 {
		t.Fatalf("budget after the eviction: %+v, %v", got.Status, err)
	}
}
