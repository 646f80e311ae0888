package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/host/tools/perfdriver"
)

// TestPerfDriverAgainstServe runs the load driver (wasmsched perf) against
// wasmsched serve on a real API server: a small SchedulingBasic (50 nodes,
// 50 init pods scheduled first, 200 measured pods) must be bound entirely,
// yield at least one throughput sample, and be cleaned up.
func TestPerfDriverAgainstServe(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: config.Default()})

	// Creation is paced so that binding spans a few sample intervals: an
	// unpaced 200 pods may all be bound within the first (dropped) sample.
	rep, err := perfdriver.Run(ctx, client, perfdriver.Options{
		Nodes: 50, Zones: 3, InitPods: 50, Pods: 200, CreateQPS: 50,
		Timeout: time.Minute, Cleanup: true,
		Log: hclog.New(&hclog.LoggerOptions{Name: "perf", Level: hclog.Info, Output: testWriter{t}}),
	})
	if err != nil {
		t.Fatalf("perf: %v (report %+v)", err, rep)
	}
	t.Logf("report: %+v", rep)
	if rep.Bound != 200 {
		t.Errorf("%d of 200 measured pods bound", rep.Bound)
	}
	if rep.Throughput.Samples < 1 || rep.Throughput.Average <= 0 {
		t.Errorf("throughput = %+v, want at least one sample", rep.Throughput)
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: perfdriver.RunLabel})
	if err != nil || len(nodes.Items) != 0 {
		t.Errorf("after cleanup: %d nodes of perf runs left (%v)", len(nodes.Items), err)
	}
	pods, err := client.CoreV1().Pods(rep.Run).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("after cleanup: %d measured pods left (%v)", len(pods.Items), err)
	}
}

// testWriter sends log lines to t.Log, so they show with -v and on failure.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestPerfDriverDaemonsetAgainstServe runs the driver's SchedulingDaemonset
// shape against wasmsched serve on a real API server: one measured pod
// per node, each pinned by a required node affinity on metadata.name,
// must land on its own node; with the scheduler's pid (serve runs in
// this process) the report carries its peak RSS and cold start.
func TestPerfDriverDaemonsetAgainstServe(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: config.Default()})

	const nodes = 60
	rep, err := perfdriver.Run(ctx, client, perfdriver.Options{
		Nodes: nodes, InitPods: 20, InitPodsBound: true, Pods: nodes, Shape: perfdriver.ShapeSchedulingDaemonset,
		// No cleanup: the pods are read back below, and the control plane is this test's alone.
		CreateQPS: 30, SchedulerPID: os.Getpid(), Timeout: time.Minute, Cleanup: false,
		Log: hclog.New(&hclog.LoggerOptions{Name: "perf", Level: hclog.Info, Output: testWriter{t}}),
	})
	if err != nil {
		t.Fatalf("perf: %v (report %+v)", err, rep)
	}
	t.Logf("report: %+v", rep)
	if rep.Bound != nodes || rep.Shape != perfdriver.ShapeSchedulingDaemonset {
		t.Errorf("report: %d of %d bound, shape %q", rep.Bound, nodes, rep.Shape)
	}
	if rep.SchedulerPeakRSSBytes <= 0 || rep.ColdStartSeconds <= 0 || rep.FirstBindSeconds <= 0 {
		t.Errorf("peak RSS %d, cold start %v s, first bind %v s: want all positive", rep.SchedulerPeakRSSBytes, rep.ColdStartSeconds, rep.FirstBindSeconds)
	}
	pods, err := client.CoreV1().Pods(rep.Run).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	onNode := map[string]int{}
	for _, p := range pods.Items {
		pin := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
		if p.Spec.NodeName != pin {
			t.Errorf("pod %s pinned to %s, bound to %q", p.Name, pin, p.Spec.NodeName)
		}
		onNode[p.Spec.NodeName]++
	}
	if len(onNode) != nodes {
		t.Errorf("measured pods on %d nodes, want %d", len(onNode), nodes)
	}
}
