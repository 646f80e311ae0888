package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

// TestTwoProfilesShareOneCluster runs the example's two profiles in one
// scheduler: the default spreads a pod to the emptier node, bin-packer
// puts the same pod on the fuller one, and each profile's Events carry
// its own schedulerName.
func TestTwoProfilesShareOneCluster(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range []string{"n1", "n2"} {
		createNode(t, ctx, client, node(n, "4"))
	}
	// n1 already runs 2 CPUs of another scheduler's pod.
	busy := pod("busy", "other-scheduler", "2")
	busy.Spec.NodeName = "n1"
	if _, err := client.CoreV1().Pods("default").Create(ctx, busy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join("..", "..", "examples", "profiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: cfg})
	for _, p := range []*corev1.Pod{pod("spread", "default-scheduler", "1"), pod("packed", "bin-packer", "1")} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for pod, want := range map[string]string{"spread": "n2", "packed": "n1"} {
		waitFor(t, ctx, pod+" to be bound", func() bool { return boundTo(ctx, client, pod) != "" })
		if got := boundTo(ctx, client, pod); got != want {
			t.Errorf("%s bound to %s, want %s", pod, got, want)
		}
	}
	for pod, profile := range map[string]string{"spread": "default-scheduler", "packed": "bin-packer"} {
		waitFor(t, ctx, "the Scheduled Event of "+pod, func() bool {
			for _, e := range events(ctx, client, pod) {
				if e.Reason == "Scheduled" {
					if e.ReportingController != profile {
						t.Errorf("%s's Event comes from %q, want its profile %q", pod, e.ReportingController, profile)
					}
					return true
				}
			}
			return false
		})
	}
}

// racingBinder binds the pod somewhere else (or deletes it) just before
// the real binder runs, as a second scheduler or a user would, so the
// real API server answers Conflict (or NotFound).
type racingBinder struct {
	client kubernetes.Interface
	real   kube.Binder
	race   map[string]func(ctx context.Context, pod *abi.Pod) error // by pod name
}

func (b racingBinder) Bind(ctx context.Context, pod *abi.Pod, node string) error {
	if race := b.race[pod.Name]; race != nil {
		if err := race(ctx, pod); err != nil {
			return err
		}
	}
	return b.real.Bind(ctx, pod, node)
}

// TestBindConflictAndDeletedPodAreNotLostOrRetried: when the API server
// refuses a binding because the pod was bound meanwhile (Conflict) or
// deleted (NotFound), the scheduler drops it without a Scheduled Event,
// releases what it assumed on the node, and keeps scheduling.
func TestBindConflictAndDeletedPodAreNotLostOrRetried(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createNode(t, ctx, client, node("ours", "4"))
	createNode(t, ctx, client, node("theirs", "1"))
	binder := racingBinder{client: client, real: kube.Binder{Client: client}, race: map[string]func(context.Context, *abi.Pod) error{
		"raced": func(ctx context.Context, p *abi.Pod) error {
			return client.CoreV1().Pods(p.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: types.UID(p.UID)},
				Target:     corev1.ObjectReference{Kind: "Node", Name: "theirs"},
			}, metav1.CreateOptions{})
		},
		"deleted": func(ctx context.Context, p *abi.Pod) error {
			return client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		},
	}}
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: config.Default(), Binder: binder})
	// Each takes the whole of "ours" (the only node they fit): if a
	// refused binding left its pod assumed there, "after" would not fit.
	for _, name := range []string{"raced", "deleted"} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod(name, "", "4"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, name+"'s race to be over", func() bool {
			p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return (name == "deleted" && err != nil) || (err == nil && p.Spec.NodeName != "")
		})
	}
	if got := boundTo(ctx, client, "raced"); got != "theirs" {
		t.Fatalf("raced is bound to %q; the other binder's choice, theirs, must stand", got)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("after", "", "4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "after to be bound to ours", func() bool { return boundTo(ctx, client, "after") == "ours" })
	time.Sleep(time.Second) // let any wrong Event or retry show up
	for _, name := range []string{"raced", "deleted"} {
		for _, e := range events(ctx, client, name) {
			if e.Reason == "Scheduled" || e.Reason == "FailedScheduling" {
				t.Errorf("%s got a %s Event (%q); a pod lost to a race must be dropped quietly", name, e.Reason, e.Note)
			}
		}
	}
	if got := boundTo(ctx, client, "raced"); got != "theirs" {
		t.Fatalf("raced was rebound to %q", got)
	}
}

// TestSchedulingGatesHoldAPodUntilTheLastIsRemoved: a pod with
// spec.schedulingGates is not scheduled (nor reported unschedulable)
// until its gates are removed, then it is bound.
func TestSchedulingGatesHoldAPodUntilTheLastIsRemoved(t *testing.T) {
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
	attempts := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, mf := range mfs {
			if mf.GetName() == "scheduler_schedule_attempts_total" {
				for _, m := range mf.GetMetric() {
					sum += m.GetCounter().GetValue()
				}
			}
		}
		return sum
	}
	p := pod("gated", "", "1")
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/b"}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("free", "", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "free to be bound", func() bool { return boundTo(ctx, client, "free") == "n1" })
	removeGate := func(keep []corev1.PodSchedulingGate) {
		t.Helper()
		cur, err := client.CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Spec.SchedulingGates = keep
		if _, err := client.CoreV1().Pods("default").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	removeGate(p.Spec.SchedulingGates[1:]) // one gate left: still held
	time.Sleep(2 * time.Second)
	if n := boundTo(ctx, client, "gated"); n != "" {
		t.Fatalf("a pod with a scheduling gate left was bound to %s", n)
	}
	for _, e := range events(ctx, client, "gated") {
		t.Errorf("a gated pod got an Event: %s %q", e.Reason, e.Note)
	}
	// The API server refuses to bind a gated pod (as a Conflict, which
	// would drop it quietly), so count attempts: only free's may exist.
	if n := attempts(); n != 1 {
		t.Errorf("%v scheduling attempts while the pod was gated, want 1 (free's)", n)
	}
	removeGate(nil)
	waitFor(t, ctx, "gated to be bound once its gates are gone", func() bool { return boundTo(ctx, client, "gated") == "n1" })
}
