package perfdriver

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeScheduler binds, by polling, every pending pod of schedulerName to
// the nodes of the cluster round-robin, until ctx ends. It refuses to bind
// to a node whose status has no allocatable CPU, as a real scheduler would.
func fakeScheduler(ctx context.Context, t *testing.T, client *fake.Clientset, schedulerName string) {
	go func() {
		next := 0
		for ctx.Err() == nil {
			time.Sleep(2 * time.Millisecond)
			nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			var ready []string
			for _, n := range nodes.Items {
				if !n.Status.Allocatable.Cpu().IsZero() {
					ready = append(ready, n.Name)
				}
			}
			pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			if err != nil || len(ready) == 0 {
				continue
			}
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" || p.Spec.SchedulerName != schedulerName {
					continue
				}
				p.Spec.NodeName = ready[next%len(ready)]
				next++
				if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
					// A pinned pod (SchedulingDaemonset) goes where its metadata.name field selects.
					p.Spec.NodeName = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
				}
				if _, err := client.CoreV1().Pods(p.Namespace).Update(ctx, &p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
					t.Errorf("fake scheduler: bind %s/%s: %v", p.Namespace, p.Name, err)
				}
			}
		}
	}()
}

func TestRunCreatesTheWorkloadAndCountsBindings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	fakeScheduler(ctx, t, client, "perf-test")
	rep, err := Run(ctx, client, Options{Nodes: 3, Zones: 2, InitPods: 4, Pods: 30, SchedulerName: "perf-test", Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bound != 30 || rep.Pods != 30 || rep.Nodes != 3 || rep.Scheduler != "perf-test" || !strings.HasPrefix(rep.Run, "perf-") {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Throughput.Samples != len(rep.Samples) || rep.WallSeconds <= 0 || rep.CreateSeconds <= 0 || rep.InitSeconds <= 0 {
		t.Fatalf("report = %+v", rep)
	}

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("nodes = %v, %v", nodes, err)
	}
	zones := map[string]int{}
	for _, n := range nodes.Items {
		st := n.Status
		if st.Capacity.Cpu().String() != "4" || st.Allocatable.Memory().String() != "32Gi" || st.Allocatable.Pods().Value() != 110 ||
			len(st.Conditions) != 1 || st.Conditions[0].Type != corev1.NodeReady || st.Conditions[0].Status != corev1.ConditionTrue {
			t.Errorf("node %s status = %+v", n.Name, st)
		}
		if n.Labels[corev1.LabelHostname] != n.Name || n.Labels[RunLabel] != rep.Run {
			t.Errorf("node %s labels = %v", n.Name, n.Labels)
		}
		zones[n.Labels[ZoneLabel]]++
	}
	if zones["zone-0"] != 2 || zones["zone-1"] != 1 {
		t.Errorf("zones = %v", zones)
	}

	for ns, want := range map[string]int{rep.Run: 30, rep.Run + "-init": 4} {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(pods.Items) != want {
			t.Fatalf("pods in %s: %d (%v), want %d", ns, len(pods.Items), err, want)
		}
		for _, p := range pods.Items {
			c := p.Spec.Containers[0]
			if p.Spec.NodeName == "" || p.Spec.SchedulerName != "perf-test" || c.Resources.Requests.Cpu().MilliValue() != 100 ||
				c.Resources.Requests.Memory().String() != "500Mi" || c.Resources.Limits.Cpu().MilliValue() != 100 {
				t.Errorf("pod %s/%s = %+v", ns, p.Name, p.Spec)
			}
		}
	}
}

func TestRunBoundInitPodsNeedNoScheduler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	fakeScheduler(ctx, t, client, "measured-only")
	rep, err := Run(ctx, client, Options{Nodes: 2, InitPods: 5, InitPodsBound: true, Pods: 3, SchedulerName: "measured-only"})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := client.CoreV1().Pods(rep.Run+"-init").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 5 {
		t.Fatalf("init pods: %v, %v", pods, err)
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
	}
	if perNode[rep.Run+"-node-0"] != 3 || perNode[rep.Run+"-node-1"] != 2 {
		t.Fatalf("init pods per node = %v", perNode)
	}
}

func TestRunTimesOutAndStillCleansUp(t *testing.T) {
	client := fake.NewClientset()
	// No scheduler: nothing is ever bound.
	rep, err := Run(context.Background(), client, Options{Nodes: 2, InitPods: 2, InitPodsBound: true, Pods: 5, Timeout: 2 * time.Second, Cleanup: true})
	// On a loaded machine the timeout may strike before the measured phase.
	if err == nil || !strings.Contains(err.Error(), "--timeout") ||
		(strings.Contains(err.Error(), "measured pods bound") && !strings.Contains(err.Error(), "0 of 5 measured pods bound")) {
		t.Fatalf("err = %v", err)
	}
	if rep == nil || rep.Bound != 0 || rep.Throughput.Samples != 0 || rep.Scheduler != corev1.DefaultSchedulerName {
		t.Fatalf("report = %+v", rep)
	}
	ctx := context.Background()
	if nodes, _ := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); len(nodes.Items) != 0 {
		t.Errorf("%d nodes left", len(nodes.Items))
	}
	if nss, _ := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); len(nss.Items) != 0 {
		t.Errorf("%d namespaces left", len(nss.Items))
	}
	if pods, _ := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("%d pods left", len(pods.Items))
	}
}

func TestRunRefusesImpossibleWorkloads(t *testing.T) {
	for _, o := range []Options{
		{Nodes: 0, Pods: 1},
		{Nodes: 1, Pods: 0},
		{Nodes: 1, Pods: 1, InitPods: -1},
		{Nodes: 2, InitPods: 41, Pods: 40}, // 81 > 2 × 40
	} {
		if _, err := Run(context.Background(), fake.NewClientset(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestRunReportsCreationErrors(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("create", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("quota exceeded")
	})
	_, err := Run(context.Background(), client, Options{Nodes: 2, Pods: 1})
	if err == nil || !strings.Contains(err.Error(), "create node") || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("err = %v", err)
	}
}

func TestDaemonsetShapePinsOnePodPerNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := fake.NewClientset()
	fakeScheduler(ctx, t, client, "perf-test")
	rep, err := Run(ctx, client, Options{Nodes: 7, Pods: 7, Shape: ShapeSchedulingDaemonset, SchedulerName: "perf-test", Parallelism: 3, SchedulerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Bound != 7 || rep.Shape != ShapeSchedulingDaemonset || rep.FirstBindSeconds <= 0 {
		t.Fatalf("report = %+v", rep)
	}
	if rep.SchedulerPeakRSSBytes <= 0 || rep.ColdStartSeconds <= 0 {
		t.Errorf("scheduler facts of this process: peak RSS %d, cold start %v", rep.SchedulerPeakRSSBytes, rep.ColdStartSeconds)
	}
	pods, err := client.CoreV1().Pods(rep.Run).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range pods.Items {
		terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		pin := terms[0].MatchFields[0]
		if pin.Key != "metadata.name" || pin.Operator != corev1.NodeSelectorOpIn || p.Spec.NodeName != pin.Values[0] {
			t.Errorf("pod %s: pinned by %+v, bound to %q", p.Name, pin, p.Spec.NodeName)
		}
		seen[p.Spec.NodeName] = true
	}
	if len(seen) != 7 {
		t.Errorf("pods on %d distinct nodes, want 7", len(seen))
	}
}

func TestShapeAndPIDAreChecked(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Nodes: 5, Pods: 4, Shape: ShapeSchedulingDaemonset}, "pods (4) must equal nodes (5)"},
		{Options{Nodes: 5, Pods: 4, Shape: "Daemonset"}, `not "Daemonset"`},
		{Options{Nodes: 5, Pods: 4, SchedulerPID: -1}, "scheduler pid"},
	} {
		if _, err := Run(context.Background(), fake.NewClientset(), c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.o, err, c.want)
		}
	}
	// A process that does not exist is named before anything is created.
	client := fake.NewClientset()
	if _, err := Run(context.Background(), client, Options{Nodes: 1, Pods: 1, SchedulerPID: 1 << 30}); err == nil || !strings.Contains(err.Error(), "scheduler pid 1073741824") {
		t.Errorf("a missing process: %v", err)
	}
	if nodes, _ := client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); len(nodes.Items) != 0 {
		t.Errorf("%d nodes created for a run that could not start", len(nodes.Items))
	}
}

func TestProcessFactsFromProc(t *testing.T) {
	dir := t.TempDir()
	saved := procRoot
	procRoot = dir
	defer func() { procRoot = saved }()
	if err := os.MkdirAll(dir+"/42", 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		if err := os.WriteFile(dir+"/"+p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n")
	// A command name with a space and a parenthesis; starttime (field 22) = 12345 ticks.
	write("42/stat", "42 (wasm sched) x) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 12 0 12345 1000 200 18446744073709551615\n")
	write("42/status", "Name:\twasmsched\nVmPeak:\t  900000 kB\nVmHWM:\t  262144 kB\nVmRSS:\t 1000 kB\n")
	start, err := processStart(42)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(1700000000, 0).Add(123450 * time.Millisecond); !start.Equal(want) {
		t.Errorf("start %v, want %v", start, want)
	}
	// utime 5 and stime 6 ticks (fields 14 and 15).
	if cpu, err := cpuSeconds(42); err != nil || cpu != 0.11 {
		t.Errorf("CPU %v s, %v; want 0.11", cpu, err)
	}
	rss, err := peakRSS(42)
	if err != nil || rss != 256<<20 {
		t.Errorf("peak RSS %d, %v; want 256 MiB", rss, err)
	}
	if _, err := peakRSS(43); err == nil || !strings.Contains(err.Error(), "scheduler pid 43") {
		t.Errorf("a missing process: %v", err)
	}
}
