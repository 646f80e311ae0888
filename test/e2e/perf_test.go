package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestPerfBacklogAgainstServe runs `wasmsched perf --backlog` as a user
// does, against a real API server: with no scheduler running it creates
// 50 nodes, 20 init pods (bound) and 300 measured pods, then starts
// `wasmsched serve` from --scheduler-cmd. Every measured pod must be
// bound, each with a Scheduled Event and no failed binding, and the report
// must carry the scheduler's CPU time, peak RSS and cold start; the
// scheduler must be stopped at the end.
func TestPerfBacklogAgainstServe(t *testing.T) {
	_, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := wasmschedBinary(t)
	dir := t.TempDir()
	schedLog := filepath.Join(dir, "scheduler.log")
	serve := fmt.Sprintf("%s serve --kubeconfig %s --kube-api-qps 5000 --kube-api-burst 5000 --leader-elect=false --secure-port 0 --wasm-cache-dir %s --log-level info",
		bin, kubeconfig, filepath.Join(dir, "cache"))
	cmd := exec.CommandContext(ctx, bin, "perf", "--kubeconfig", kubeconfig, "--nodes", "50", "--init-pods", "20", "--pods", "300",
		"--backlog", "--scheduler-cmd", serve, "--scheduler-log", schedLog, "--label", "wasmsched", "--events-wait", "1m",
		"--timeout", "2m", "-o", "json", "--log-level", "info")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("perf log:\n%s", stderr.String())
	if err != nil {
		b, _ := os.ReadFile(schedLog)
		t.Fatalf("perf: %v\n%s\nscheduler log:\n%s", err, stdout.String(), b)
	}
	var rep perfdriver.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	t.Logf("report: %s", stdout.String())
	if !rep.Complete || !rep.Backlog || rep.Label != "wasmsched" || rep.Bound != 300 || rep.PodsPerSecond <= 0 || rep.FirstBindSeconds <= 0 {
		t.Errorf("report: complete %v, backlog %v, label %q, %d of 300 bound, %v pods/s, first bind %v s",
			rep.Complete, rep.Backlog, rep.Label, rep.Bound, rep.PodsPerSecond, rep.FirstBindSeconds)
	}
	if rep.SchedulerCPUSeconds <= 0 || rep.SchedulerCPUSecondsPerPod <= 0 || rep.SchedulerPeakRSSBytes <= 0 || rep.ColdStartSeconds <= 0 {
		t.Errorf("scheduler: CPU %v s (%v s/pod), peak RSS %d, cold start %v s: want all positive",
			rep.SchedulerCPUSeconds, rep.SchedulerCPUSecondsPerPod, rep.SchedulerPeakRSSBytes, rep.ColdStartSeconds)
	}
	if e := rep.Events; e == nil || e.PodsScheduled != 300 || e.Scheduled < 300 || e.FailedBindings != 0 {
		t.Errorf("events = %+v: want a Scheduled Event for each of the 300 pods and no failed binding", e)
	}
	// The scheduler perf started is gone.
	if out, _ := exec.Command("pgrep", "-f", "--", "serve --kubeconfig "+kubeconfig).Output(); len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("the scheduler still runs after perf: pids %s", out)
	}
}
