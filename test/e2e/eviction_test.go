package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// evictionUserAgent tells serve's requests from the test's own in the
// audit log.
const evictionUserAgent = "wasmsched-eviction-e2e"

// evictionConfig is the default profile plus an eviction section.
func evictionConfig(t *testing.T, section string) *config.Configuration {
	t.Helper()
	cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n" +
		"profiles: [{schedulerName: default-scheduler}]\neviction:\n" + section))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// serveForEviction starts serve with cfg as a client of its own user
// agent, a fake kubelet finishing deletions, and a log printed if the
// test fails; it returns serve's metrics.
func serveForEviction(t *testing.T, ctx context.Context, admin kubernetes.Interface, kubeconfig string, cfg *config.Configuration) prometheus.Gatherer {
	t.Helper()
	return serveAs(t, ctx, admin, kubeconfig, evictionUserAgent, cfg)
}

// serveAs starts serve with cfg as a client with the given user agent
// (so the audit log tells its requests apart), a fake kubelet finishing
// deletions, and serve's log (info and up) printed if the test fails; it
// returns serve's metrics.
func serveAs(t *testing.T, ctx context.Context, admin kubernetes.Interface, kubeconfig, userAgent string, cfg *config.Configuration) prometheus.Gatherer {
	t.Helper()
	rc, err := kube.RESTConfig(kubeconfig, 100, 200)
	if err != nil {
		t.Fatal(err)
	}
	rc.UserAgent = userAgent
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry()
	met, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs.String())
		}
	})
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: &logs})
	startServe(t, ctx, kube.ServeOptions{Client: client, RESTConfig: rc, Config: cfg, Metrics: met, Log: log})
	kubeletCtx, stop := context.WithCancel(ctx)
	t.Cleanup(stop)
	go fakeKubelet(kubeletCtx, admin)
	return reg
}

// boundPod is a pod already on node (no scheduling involved), of a
// priority class, that goes at once when deleted.
func boundPod(name, class, cpu, node string, labels map[string]string) *corev1.Pod {
	p := classPod(name, class, cpu, labels)
	p.Spec.NodeName = node
	zero := int64(0)
	p.Spec.TerminationGracePeriodSeconds = &zero
	return p
}

// updateNodeStatus changes a node's status through the status
// subresource, as a kubelet does.
func updateNodeStatus(t *testing.T, ctx context.Context, client kubernetes.Interface, name string, change func(*corev1.NodeStatus)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(&n.Status)
		_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func setAllocatableCPU(cpu string) func(*corev1.NodeStatus) {
	return func(s *corev1.NodeStatus) { s.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu) }
}

func setCondition(typ corev1.NodeConditionType, status corev1.ConditionStatus) func(*corev1.NodeStatus) {
	return func(s *corev1.NodeStatus) {
		now := metav1.Now()
		for i := range s.Conditions {
			if s.Conditions[i].Type == typ {
				s.Conditions[i].Status, s.Conditions[i].LastTransitionTime = status, now
				return
			}
		}
		s.Conditions = append(s.Conditions, corev1.NodeCondition{Type: typ, Status: status, LastHeartbeatTime: now, LastTransitionTime: now})
	}
}

// hasTaint reports whether the node has a taint with key and effect.
func hasTaint(ctx context.Context, client kubernetes.Interface, node, key string, effect corev1.TaintEffect) bool {
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// podState is "gone", "terminating" or "there".
func podState(ctx context.Context, client kubernetes.Interface, name string) string {
	p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "gone"
	case err != nil:
		return "error: " + err.Error()
	case p.DeletionTimestamp != nil:
		return "terminating"
	}
	return "there"
}

// auditCall is one request of the audit log.
type auditCall struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	Received time.Time `json:"requestReceivedTimestamp"`
	Status   struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// podCalls lists the audit log's requests of userAgent on pods (and
// their subresources), in the order the API server received them.
func podCalls(t *testing.T, path, userAgent string) []auditCall {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var out []auditCall
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var c auditCall
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.UserAgent == userAgent && c.ObjectRef.Resource == "pods" {
			out = append(out, c)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("audit log: %v", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Received.Before(out[j].Received) })
	return out
}

// TestServeEvictionEvictsThroughTheAPIAndTaintsNodesUnderPressure runs
// serve with the builtin eviction bundle's ResourceOvercommit and
// NodePressure policies against a real API server:
//
//   - a node whose allocatable drops below its pods' requests has its
//     pods evicted through the Eviction API, lowest priority first, one
//     round at a time, until the rest fit;
//   - the lowest-priority pod, protected by a budget that allows no
//     disruption, is refused (429) and stays while the others go;
//   - a node reporting MemoryPressure is tainted NoSchedule, a new pod is
//     not scheduled onto it, and the taint goes conditionTransitionPeriod
//     after the condition clears, when the pod is scheduled there.
func TestServeEvictionEvictsThroughTheAPIAndTaintsNodesUnderPressure(t *testing.T) {
	t.Setenv("WASMSCHED_AUDIT", "1")
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, admin, node("n1", "4"))
	createNode(t, ctx, admin, node("n2", "4"))
	addClass(t, ctx, admin, "guarded", 5, "")
	addClass(t, ctx, admin, "low", 10, "")
	addClass(t, ctx, admin, "mid", 20, "")
	addClass(t, ctx, admin, "high", 30, "")
	addDBBudget(t, ctx, admin, 1, 0)
	for _, p := range []*corev1.Pod{
		boundPod("db", "guarded", "1", "n1", map[string]string{"app": "db"}),
		boundPod("low", "low", "1", "n1", nil),
		boundPod("mid", "mid", "1", "n1", nil),
		boundPod("high", "high", "1", "n1", nil),
	} {
		createPod(t, ctx, admin, p)
	}
	// The Eviction API checks budgets only for running pods.
	markRunning(t, ctx, admin, "db")

	const burst = 1
	cfg := evictionConfig(t, `  syncPeriod: 1s
  burst: 1
  conditionTransitionPeriod: 2s
  policies:
  - plugin: ResourceOvercommit
    args: {resources: [cpu]}
  - plugin: NodePressure
    args: {conditions: [MemoryPressure]}
`)
	reg := serveForEviction(t, ctx, admin, kubeconfig, cfg)
	rounds := func() float64 { return testmetrics.Value(t, reg, "wasmsched_eviction_rounds_total", nil) }

	// While the requests fit, rounds run and nothing is evicted.
	waitFor(t, ctx, "two eviction rounds", func() bool { return rounds() >= 2 })
	for _, name := range []string{"db", "low", "mid", "high"} {
		if s := podState(ctx, admin, name); s != "there" {
			t.Fatalf("%s is %s before any threshold was met", name, s)
		}
	}

	// (a) 4 CPUs requested, 1 allocatable: the pods go lowest priority
	// first until what is left fits; (b) db, the lowest, is protected.
	start := time.Now()
	updateNodeStatus(t, ctx, admin, "n1", setAllocatableCPU("1"))
	var order []string
	gone := map[string]bool{}
	waitFor(t, ctx, "low and mid to be evicted", func() bool {
		for _, name := range []string{"db", "low", "mid", "high"} {
			if !gone[name] && podState(ctx, admin, name) == "gone" {
				gone[name] = true
				order = append(order, name)
			}
		}
		return gone["low"] && gone["mid"]
	})
	t.Logf("evicted %v in %s", order, time.Since(start).Round(time.Millisecond))
	if strings.Join(order, ",") != "low,mid" {
		t.Fatalf("pods went in the order %v, want low then mid (db is protected, high fits)", order)
	}
	// A few more rounds, db refused again once its Retry-After passed:
	// db and high stay.
	after := rounds()
	waitFor(t, ctx, "four more rounds", func() bool { return rounds() >= after+4 })
	for _, name := range []string{"db", "high"} {
		if s := podState(ctx, admin, name); s != "there" {
			t.Fatalf("%s is %s; want it there (db: budget; high: fits)", name, s)
		}
	}
	msg := eventMessage(ctx, admin, "db", eviction.ReasonEvictBlocked)
	if !strings.Contains(msg, "PodDisruptionBudget allows no disruption") || !strings.Contains(msg, "ResourceOvercommit") {
		t.Fatalf("db's EvictBlocked event: %q", msg)
	}
	for _, name := range []string{"low", "mid"} {
		var created, succeeded bool
		for _, e := range events(ctx, admin, name) {
			if e.ReportingController != kube.EvictionComponent {
				continue
			}
			created = created || e.Reason == eviction.ReasonEvictCreated && strings.Contains(e.Note, "eviction accepted for policy ResourceOvercommit")
			succeeded = succeeded || e.Reason == eviction.ReasonEvictSucceeded
		}
		if !created || !succeeded {
			t.Errorf("%s: EvictCreated %v, EvictSucceeded %v; events %+v", name, created, succeeded, events(ctx, admin, name))
		}
	}
	// The API server saw Evictions, not deletions, in priority order,
	// each pod's first in its own round (burst 1).
	calls := podCalls(t, filepath.Join(filepath.Dir(kubeconfig), "audit.log"), evictionUserAgent)
	first := map[string]time.Time{}
	var evictOrder []string
	for _, c := range calls {
		if c.Verb == "delete" {
			t.Errorf("serve deleted pod %s: the eviction killer must use the Eviction API", c.ObjectRef.Name)
		}
		if c.Verb != "create" || c.ObjectRef.Subresource != "eviction" {
			continue
		}
		if _, seen := first[c.ObjectRef.Name]; !seen {
			first[c.ObjectRef.Name] = c.Received
			evictOrder = append(evictOrder, c.ObjectRef.Name)
		}
		if c.ObjectRef.Name == "db" && c.Status.Code != 429 || c.ObjectRef.Name != "db" && c.Status.Code != 201 {
			t.Errorf("eviction of %s answered %d", c.ObjectRef.Name, c.Status.Code)
		}
	}
	t.Logf("Evictions posted: %v; db's EvictBlocked: %s", evictOrder, msg)
	if strings.Join(evictOrder, ",") != "db,low,mid" {
		t.Fatalf("Evictions posted in the order %v, want db,low,mid (lowest priority first)", evictOrder)
	}
	for _, pair := range [][2]string{{"db", "low"}, {"low", "mid"}} {
		if gap := first[pair[1]].Sub(first[pair[0]]); gap < 500*time.Millisecond {
			t.Errorf("%s evicted %s after %s: at most %d per node and round of 1s", pair[1], gap, pair[0], burst)
		}
	}
	met := func(result string) float64 {
		return testmetrics.Value(t, reg, "wasmsched_eviction_kills_total", testmetrics.Labels{"result": result})
	}
	if met(metrics.KillSucceeded) != 2 || met(metrics.KillBlocked) < 1 || met(metrics.KillFailed) != 0 {
		t.Errorf("kills: %v succeeded (want 2), %v blocked (want >= 1), %v failed (want 0)",
			met(metrics.KillSucceeded), met(metrics.KillBlocked), met(metrics.KillFailed))
	}

	// (c) MemoryPressure on n2 taints it; a new pod that only n2 has room
	// for (n1 is full) waits.
	const taint = eviction.TaintPrefix + "MemoryPressure"
	updateNodeStatus(t, ctx, admin, "n2", setCondition(corev1.NodeMemoryPressure, corev1.ConditionTrue))
	waitFor(t, ctx, "n2's "+taint+" taint", func() bool { return hasTaint(ctx, admin, "n2", taint, corev1.TaintEffectNoSchedule) })
	newcomer := pod("newcomer", "", "1")
	zero := int64(0)
	newcomer.Spec.TerminationGracePeriodSeconds = &zero
	createPod(t, ctx, admin, newcomer)
	waitFor(t, ctx, "newcomer's FailedScheduling for the taint", func() bool {
		return strings.Contains(eventMessage(ctx, admin, "newcomer", "FailedScheduling"), "untolerated taint")
	})
	if n := boundTo(ctx, admin, "newcomer"); n != "" {
		t.Fatalf("newcomer bound to %s while n2 is tainted and n1 full", n)
	}
	// The condition clears: the taint stays conditionTransitionPeriod
	// after the last round that saw it (at most a sync period before the
	// clear), then goes, and newcomer is scheduled onto n2.
	cleared := time.Now()
	updateNodeStatus(t, ctx, admin, "n2", setCondition(corev1.NodeMemoryPressure, corev1.ConditionFalse))
	waitFor(t, ctx, "n2's taint to go", func() bool { return !hasTaint(ctx, admin, "n2", taint, corev1.TaintEffectNoSchedule) })
	if held := time.Since(cleared); held < time.Second {
		t.Fatalf("the taint went %s after the condition cleared; want at least 2s (transition) - 1s (sync period)", held)
	} else {
		t.Logf("taint removed %s after the condition cleared", held.Round(time.Millisecond))
	}
	waitBound(t, ctx, admin, "newcomer", "n2")
	if s := podState(ctx, admin, "high"); s != "there" {
		t.Fatalf("high is %s", s)
	}
}

// TestServeEvictionDryRunEvictsNothing: a dry-run policy whose threshold
// is met counts the pods it would evict and leaves them all alone.
func TestServeEvictionDryRunEvictsNothing(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, admin, node("n1", "4"))
	addClass(t, ctx, admin, "low", 10, "")
	names := []string{"a", "b", "c"}
	for _, name := range names {
		createPod(t, ctx, admin, boundPod(name, "low", "1", "n1", nil))
	}
	updateNodeStatus(t, ctx, admin, "n1", setAllocatableCPU("1"))
	reg := serveForEviction(t, ctx, admin, kubeconfig, evictionConfig(t, `  syncPeriod: 1s
  policies:
  - plugin: ResourceOvercommit
    dryRun: true
`))
	dry := func() float64 {
		return testmetrics.Value(t, reg, "wasmsched_eviction_dryrun_victims_total", testmetrics.Labels{"policy": "ResourceOvercommit"})
	}
	waitFor(t, ctx, "three dry-run victims", func() bool { return dry() >= 3 })
	for _, name := range names {
		if s := podState(ctx, admin, name); s != "there" {
			t.Errorf("%s is %s after dry-run rounds", name, s)
		}
		for _, e := range events(ctx, admin, name) {
			if e.ReportingController == kube.EvictionComponent {
				t.Errorf("%s has an eviction event: %s %s", name, e.Reason, e.Note)
			}
		}
	}
	if v := testmetrics.Value(t, reg, "wasmsched_eviction_victims_total", nil); v != 0 {
		t.Errorf("victims_total = %v, want 0", v)
	}
	if v := testmetrics.Value(t, reg, "wasmsched_eviction_kills_total", nil); v != 0 {
		t.Errorf("kills_total = %v, want 0", v)
	}
}

// A configuration with an eviction section and no profiles runs the
// eviction coordinator alone against the real API server: an overcommitted
// node's pod is evicted through the Eviction API, and a pending pod for
// the default scheduler stays pending (no scheduling profile binds it).
func TestServeEvictionWithoutProfiles(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, admin, node("n1", "4"))
	createNode(t, ctx, admin, node("n2", "4"))
	addClass(t, ctx, admin, "low", 10, "")
	for _, name := range []string{"a", "b"} {
		createPod(t, ctx, admin, boundPod(name, "low", "1", "n1", nil))
	}
	updateNodeStatus(t, ctx, admin, "n1", setAllocatableCPU("1"))
	cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n" +
		"eviction:\n  syncPeriod: 1s\n  policies:\n  - plugin: ResourceOvercommit\n"))
	if err != nil {
		t.Fatalf("an eviction-only configuration: %v", err)
	}
	reg := serveForEviction(t, ctx, admin, kubeconfig, cfg)
	createPod(t, ctx, admin, pod("pending", "default-scheduler", "1"))
	waitFor(t, ctx, "a victim evicted", func() bool {
		return testmetrics.Value(t, reg, "wasmsched_eviction_victims_total", nil) >= 1 &&
			(podState(ctx, admin, "a") == "gone" || podState(ctx, admin, "b") == "gone")
	})
	p, err := admin.CoreV1().Pods("default").Get(ctx, "pending", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" {
		t.Errorf("serve with no profiles bound the default scheduler's pod to %s", p.Spec.NodeName)
	}
}
