package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// wasmschedBinary builds cmd/wasmsched once per test run, so replicas run
// as real processes that can be killed. It is the binary that ships
// (scripts/build-release.sh, the one build make build and the Dockerfile
// run) for the suite's runtime: the wasmtime build, or the static one
// with WASMSCHED_E2E_RUNTIME=wazero; its default runtime is checked to be
// that runtime.
func wasmschedBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "wasmsched-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "wasmsched")
		rt := e2eRuntime()
		build := exec.Command("scripts/build-release.sh", binPath, rt)
		build.Dir = "../.."
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("scripts/build-release.sh %s: %v\n%s", rt, err, out)
			return
		}
		out, err := exec.Command(binPath, "version", "-o", "json").Output()
		if err != nil {
			buildErr = fmt.Errorf("wasmsched version: %v", err)
			return
		}
		var v struct {
			DefaultRuntime string `json:"defaultRuntime"`
		}
		if err := json.Unmarshal(out, &v); err != nil || v.DefaultRuntime != rt {
			buildErr = fmt.Errorf("the %s build's default runtime is %q (%v), not %s:\n%s", rt, v.DefaultRuntime, err, rt, out)
			return
		}
		fmt.Fprintf(os.Stderr, "e2e: wasmsched binary %s runs modules on %s\n", binPath, v.DefaultRuntime)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// replicaProc is a `wasmsched serve` process and its endpoints' address.
type replicaProc struct {
	cmd  *exec.Cmd
	addr string
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// get fetches a replica's endpoint and returns the status and body.
func (r *replicaProc) get(path string) (int, string) {
	resp, err := http.Get("http://" + r.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startReplica starts `wasmsched serve` as a process with fast leader
// election timings; its output goes to a file shown if the test fails.
func startReplica(t *testing.T, kubeconfig, id string) *replicaProc {
	t.Helper()
	addr := freeAddr(t)
	logPath := filepath.Join(t.TempDir(), id+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wasmschedBinary(t), "serve", "--kubeconfig", kubeconfig,
		"--wasm-cache-dir", t.TempDir(), "--log-level", "info",
		"--leader-elect-identity", id, "--leader-elect-lease-duration", "3s",
		"--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "250ms",
		"--metrics-bind-address", addr, "--secure-port", "0")
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
			t.Logf("replica %s log:\n%s", id, b)
		}
	})
	return &replicaProc{cmd: cmd, addr: addr}
}

func leaseHolder(ctx context.Context, client kubernetes.Interface) string {
	l, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "wasmsched", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestLeaderFailoverLosesAndDoublesNoPod runs two replicas, kills the
// leader with SIGKILL while pods are being created and bound, and checks
// that the standby takes over, every pod ends up bound, and no pod was
// bound by both (each has at most one Scheduled Event; a replica sends
// one only after its own binding succeeded).
func TestLeaderFailoverLosesAndDoublesNoPod(t *testing.T) {
	client, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for i := 0; i < 4; i++ {
		createNode(t, ctx, client, node(fmt.Sprintf("n%d", i), "32"))
	}
	replicas := map[string]*replicaProc{"a": startReplica(t, kubeconfig, "a"), "b": startReplica(t, kubeconfig, "b")}
	waitFor(t, ctx, "a leader", func() bool { return leaseHolder(ctx, client) != "" })
	leader := leaseHolder(ctx, client)
	standby := map[string]string{"a": "b", "b": "a"}[leader]
	// Both are live and ready: the standby's caches are synced, so it can
	// take over at once.
	for id, r := range replicas {
		waitFor(t, ctx, id+" to be ready", func() bool {
			h, _ := r.get("/healthz")
			code, _ := r.get("/readyz")
			return h == http.StatusOK && code == http.StatusOK
		})
	}

	const total = 120
	name := func(i int) string { return fmt.Sprintf("p%03d", i) }
	create := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod(name(i), "", "100m"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bound := func() (n int) {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return n
	}
	create(0, 40)
	waitFor(t, ctx, "the leader to bind pods", func() bool { return bound() >= 20 })
	for _, e := range scheduledEvents(ctx, t, client) {
		if e.ReportingInstance != leader {
			t.Fatalf("%s was scheduled by %q while %q led: a standby must not schedule", e.Regarding.Name, e.ReportingInstance, leader)
		}
	}
	// Kill the leader mid-stream: more pods arrive while nobody leads.
	create(40, 80)
	if _, body := replicas[leader].get("/metrics"); !strings.Contains(body, `scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}`) {
		t.Errorf("the leader's /metrics has no scheduled attempts:\n%.2000s", body)
	}
	if err := replicas[leader].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	create(80, total)
	waitFor(t, ctx, "the standby to take the lease", func() bool { return leaseHolder(ctx, client) == standby })
	waitFor(t, ctx, "every pod to be bound", func() bool { return bound() == total })
	t.Logf("all %d pods bound %v after the leader was killed", total, time.Since(killedAt).Round(100*time.Millisecond))

	time.Sleep(2 * time.Second) // let late Events arrive
	perPod := map[string]int{}
	byReplica := map[string]int{}
	for _, e := range scheduledEvents(ctx, t, client) {
		perPod[e.Regarding.Name] += occurrences(e)
		byReplica[e.ReportingInstance]++
	}
	for p, n := range perPod {
		if n > 1 {
			t.Errorf("pod %s has %d Scheduled Events: bound twice?", p, n)
		}
	}
	if byReplica[standby] == 0 {
		t.Errorf("the standby %s bound no pod after taking over (Events by replica: %v)", standby, byReplica)
	}
	t.Logf("Scheduled Events by replica: %v", byReplica)
}

func scheduledEvents(ctx context.Context, t *testing.T, client kubernetes.Interface) []eventsv1.Event {
	t.Helper()
	evs, err := client.EventsV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}
