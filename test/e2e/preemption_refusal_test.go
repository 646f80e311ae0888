package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// preemptionUserAgent tells serve's requests from the test's own in the
// audit log.
const preemptionUserAgent = "wasmsched-preemption-e2e"

// moveBound is how long a preemptor may take, from its creation, to be
// nominated to (or bound on) the next candidate node after the first one
// was refused: a scheduling cycle, one dry-run eviction and a status
// patch take tens of milliseconds; the bound leaves room for a loaded
// 2-core machine and stays far below the ~100 s client-go's silent
// retries of a 429 with Retry-After: 10 cost.
const moveBound = 2 * time.Second

// addLaggingBudget creates the budget "db" over app=db pods as the
// disruption controller last saw it (maxUnavailable: 1, one disruption
// allowed, status observed), then tightens it to maxUnavailable: 0. No
// controller runs, so the status keeps saying one disruption is allowed
// (what the scheduler reads) while the Eviction API, seeing
// observedGeneration behind generation, refuses with 429 and
// Retry-After: 10 ("still being processed by the server").
func addLaggingBudget(t *testing.T, ctx context.Context, client kubernetes.Interface) {
	t.Helper()
	budgets := client.PolicyV1().PodDisruptionBudgets("default")
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	pdb, err := budgets.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: 1,
		CurrentHealthy: 1, DesiredHealthy: 0, ExpectedPods: 1}
	if pdb, err = budgets.UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb.Spec.MaxUnavailable = &zero
	if pdb, err = budgets.Update(ctx, pdb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if pdb.Generation <= pdb.Status.ObservedGeneration || pdb.Status.DisruptionsAllowed != 1 {
		t.Fatalf("budget generation %d, status %+v: want the status one generation behind, still allowing 1",
			pdb.Generation, pdb.Status)
	}
}

// servePreemption starts serve with the default configuration as a
// client of its own user agent (serveAs); it returns serve's metrics.
func servePreemption(t *testing.T, ctx context.Context, admin kubernetes.Interface, kubeconfig string) prometheus.Gatherer {
	t.Helper()
	return serveAs(t, ctx, admin, kubeconfig, preemptionUserAgent, config.Default())
}

// nominationTrail watches the pod and returns, once it is nominated to or
// bound on node, how long after start that was seen and every
// nomination seen on the way.
func nominationTrail(t *testing.T, ctx context.Context, client kubernetes.Interface, name, node string, start time.Time, created func()) (time.Duration, []string) {
	t.Helper()
	w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	created()
	var trail []string
	for ev := range w.ResultChan() {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		if n := p.Status.NominatedNodeName; n != "" && (len(trail) == 0 || trail[len(trail)-1] != n) {
			trail = append(trail, n)
		}
		if p.Status.NominatedNodeName == node || p.Spec.NodeName == node {
			return time.Since(start), trail
		}
	}
	t.Fatalf("the watch of %s ended before it reached %s (nominations %v)", name, node, trail)
	return 0, nil
}

// A KEP-3280 victim whose budget refuses its eviction with 429 and
// Retry-After: 10 makes the preemptor move to the next candidate node at
// once, with the refusal reported on the victim (Event, metric), and the
// API server sees one eviction request, not client-go's silent retries.
func TestServeKEP3280EvictionRefusalMovesToTheNextNodeAtOnce(t *testing.T) {
	t.Setenv("WASMSCHED_AUDIT", "1")
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, admin, node("n1", "1"))
	createNode(t, ctx, admin, node("n2", "1"))
	// db (10) guards its budget against priorities below 2000; low (100)
	// guards nothing. mid (500) may evict db only within its budget.
	addClass(t, ctx, admin, "guarded", 10, "2000")
	addClass(t, ctx, admin, "low", 100, "")
	addClass(t, ctx, admin, "mid", 500, "")
	addLaggingBudget(t, ctx, admin)
	createPod(t, ctx, admin, boundPod("db", "guarded", "1", "n1", map[string]string{"app": "db"}))
	createPod(t, ctx, admin, boundPod("low", "low", "1", "n2", nil))
	// The Eviction API checks budgets only for running pods.
	markRunning(t, ctx, admin, "db")
	markRunning(t, ctx, admin, "low")
	reg := servePreemption(t, ctx, admin, kubeconfig)

	// n1's victim has the lower priority, so n1 is the first candidate;
	// its dry-run eviction is refused and n2 (delete low) is next.
	start := time.Now()
	moved, trail := nominationTrail(t, ctx, admin, "mid", "n2", start, func() {
		createPod(t, ctx, admin, classPod("mid", "mid", "1", nil))
	})
	waitBound(t, ctx, admin, "mid", "n2")
	bound := time.Since(start)
	t.Logf("mid: nominations seen %v; on n2 %s after its creation, bound there after %s",
		trail, moved.Round(time.Millisecond), bound.Round(time.Millisecond))
	if moved >= moveBound {
		t.Errorf("mid reached n2 %s after its creation, want under %s: the 429 stalled preemption", moved, moveBound)
	}
	if p, err := admin.CoreV1().Pods("default").Get(ctx, "db", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("db touched after its budget refused: %v", err)
	}

	var msg string
	waitFor(t, ctx, "db's EvictBlocked event", func() bool {
		msg = eventMessage(ctx, admin, "db", preemption.ReasonEvictBlocked)
		return msg != ""
	})
	for _, want := range []string{"preemptor default/mid on node n1", "PodDisruptionBudget db", "Retry-After 10s", "next candidate node"} {
		if !strings.Contains(msg, want) {
			t.Errorf("db's EvictBlocked event %q does not say %q", msg, want)
		}
	}
	// Every 429 the API server gave was seen and reported: none was
	// repeated behind serve's back. (mid may preempt twice: when it is
	// retried before the informer shows low leaving, n1 comes first
	// again and is refused again, at once.)
	var evictions []int
	for _, c := range podCalls(t, filepath.Join(filepath.Dir(kubeconfig), "audit.log"), preemptionUserAgent) {
		if c.Verb == "create" && c.ObjectRef.Subresource == "eviction" && c.ObjectRef.Name == "db" {
			evictions = append(evictions, c.Status.Code)
		}
	}
	reported := testmetrics.Value(t, reg, "wasmsched_eviction_api_blocked_total", testmetrics.Labels{"caller": metrics.CallerPreemption})
	if len(evictions) == 0 || float64(len(evictions)) != reported || slices.ContainsFunc(evictions, func(code int) bool { return code != 429 }) {
		t.Errorf("evictions of db the API server answered %v, wasmsched_eviction_api_blocked_total{caller=preemption} = %v: "+
			"want as many refusals reported as answered, all 429", evictions, reported)
	}
	t.Logf("db's EvictBlocked: %s", msg)
}
