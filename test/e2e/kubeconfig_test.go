package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

// kubeSchedulerExample is kube-scheduler's documented configuration,
// examples/kube-scheduler-config.yaml.
var kubeSchedulerExample = filepath.Join("..", "..", "examples", "kube-scheduler-config.yaml")

// TestKubeSchedulerConfigurationServes runs serve on kube-scheduler's own
// file, as written: each of its three profiles schedules its pods (the
// default spreads, bin-packer packs, no-scoring-scheduler filters), and
// the Events carry each profile's name.
func TestKubeSchedulerConfigurationServes(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range []string{"n1", "n2"} {
		createNode(t, ctx, client, node(n, "4"))
	}
	// Requests in the nodes' proportions (1 CPU : 2Gi), so that
	// NodeResourcesBalancedAllocation, on in every profile, scores all
	// nodes alike and the fit strategy decides.
	busy := sizedPod("busy", "other-scheduler", "2", "4Gi") // half of n1, another scheduler's
	busy.Spec.NodeName = "n1"
	if _, err := client.CoreV1().Pods("default").Create(ctx, busy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(kubeSchedulerExample)
	if err != nil {
		t.Fatal(err)
	}
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: cfg})
	unscored := sizedPod("unscored", "no-scoring-scheduler", "1", "2Gi")
	unscored.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": "n1"}
	for _, p := range []*corev1.Pod{sizedPod("spread", "default-scheduler", "1", "2Gi"), sizedPod("packed", "bin-packer", "1", "2Gi"), unscored} {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]string{"spread": "n2", "packed": "n1", "unscored": "n1"} {
		waitFor(t, ctx, name+" to be bound", func() bool { return boundTo(ctx, client, name) != "" })
		if got := boundTo(ctx, client, name); got != want {
			t.Errorf("%s bound to %s, want %s", name, got, want)
		}
	}
	for name, profile := range map[string]string{"spread": "default-scheduler", "packed": "bin-packer", "unscored": "no-scoring-scheduler"} {
		waitFor(t, ctx, "the Scheduled Event of "+name, func() bool {
			for _, e := range events(ctx, client, name) {
				if e.Reason == "Scheduled" {
					if e.ReportingController != profile {
						t.Errorf("%s's Event comes from %q, want its profile %q", name, e.ReportingController, profile)
					}
					return true
				}
			}
			return false
		})
	}
}

// TestKubeSchedulerConnectionSettings runs the wasmsched binary with a
// kube-scheduler file and no connection flags: it reaches the API server
// through the file's clientConnection.kubeconfig and competes for the
// Lease its leaderElection names, with its timings.
func TestKubeSchedulerConnectionSettings(t *testing.T) {
	client, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createNode(t, ctx, client, node("n1", "4"))
	example, err := os.ReadFile(kubeSchedulerExample)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A relative kubeconfig is read next to the configuration file.
	if err := os.Symlink(kubeconfig, filepath.Join(dir, "scheduler.conf")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kube-scheduler.yaml")
	settings := `
clientConnection:
  kubeconfig: scheduler.conf
  qps: 20
  burst: 40
  contentType: application/vnd.kubernetes.protobuf
leaderElection:
  leaderElect: true
  resourceName: e2e-kube-scheduler-config
  resourceNamespace: default
  leaseDuration: 7s
  renewDeadline: 5s
  retryPeriod: 1s
`
	if err := os.WriteFile(path, append(example, settings...), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(wasmschedBinary(t), "serve", "--config", path, "--wasm-cache-dir", t.TempDir(),
		"--log-level", "info", "--metrics-bind-address", freeAddr(t), "--secure-port", "0")
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
			t.Logf("serve log:\n%s", b)
		}
	})
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod("packed", "bin-packer", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "packed to be bound", func() bool { return boundTo(ctx, client, "packed") == "n1" })
	lease, err := client.CoordinationV1().Leases("default").Get(ctx, "e2e-kube-scheduler-config", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease the file names: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" || lease.Spec.LeaseDurationSeconds == nil || *lease.Spec.LeaseDurationSeconds != 7 {
		t.Errorf("lease spec = %+v, want a holder and the file's 7s duration", lease.Spec)
	}
	if _, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "wasmsched", metav1.GetOptions{}); err == nil {
		t.Error("serve also took the flags' default Lease kube-system/wasmsched")
	}
}

// sizedPod is pod with a memory request too.
func sizedPod(name, scheduler, cpu, memory string) *corev1.Pod {
	p := pod(name, scheduler, cpu)
	p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(memory)
	return p
}
