package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// reloadConfig scores nodes by the ZonePicker module alone, so where a pod
// lands says which build of the module placed it.
const reloadConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: zonepicker
  path: zonepicker.wasm
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: ZonePicker
`

// mountedConfigMap lays files out as the kubelet mounts a ConfigMap and
// updates one: a timestamped directory, ..data pointing at it, a symlink
// per key; an update renames a new ..data over the old one.
type mountedConfigMap struct {
	t   *testing.T
	dir string
	n   int
}

func (m *mountedConfigMap) update(files map[string][]byte) {
	m.t.Helper()
	m.n++
	ts := filepath.Join(m.dir, fmt.Sprintf("..2026_11_24_00_00_%02d.%d", m.n, m.n))
	if err := os.Mkdir(ts, 0o755); err != nil {
		m.t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(ts, name), b, 0o644); err != nil {
			m.t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(m.dir, name)); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), filepath.Join(m.dir, name)); err != nil {
				m.t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(m.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		m.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(m.dir, "..data")); err != nil {
		m.t.Fatal(err)
	}
}

func zoneNode(name, zone string) *corev1.Node {
	n := node(name, "64")
	n.Labels["topology.kubernetes.io/zone"] = zone
	return n
}

// TestHotReloadThroughConfigMapSwap: serve runs with its config and module
// in a directory laid out like a mounted ConfigMap. While pods keep
// arriving, the module is replaced (a ..data swap) by a build with the
// opposite policy; pods created after the swap follow it. A corrupt module
// is then refused and scheduling goes on with the previous one. Every pod
// ends bound exactly once, none failed.
func TestHotReloadThroughConfigMapSwap(t *testing.T) {
	client := controlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	preferA := testwasm.GoBytes(t, testwasm.ZonePickerA)
	preferB := testwasm.GoBytes(t, testwasm.ZonePickerB)

	cm := &mountedConfigMap{t: t, dir: t.TempDir()}
	cm.update(map[string][]byte{"config.yaml": []byte(reloadConfig), "zonepicker.wasm": preferA})
	cfgPath := filepath.Join(cm.dir, "config.yaml")
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	createNode(t, ctx, client, zoneNode("node-a", "zone-a"))
	createNode(t, ctx, client, zoneNode("node-b", "zone-b"))

	promReg := prometheus.NewRegistry()
	met, err := metrics.New(promReg)
	if err != nil {
		t.Fatal(err)
	}
	startServe(t, ctx, kube.ServeOptions{Client: client, Config: cfg, ConfigPath: cfgPath, Watch: true, Metrics: met,
		Log: hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: testWriter{t}})})
	reloads := func(result string) float64 {
		return testmetrics.Value(t, promReg, "wasmsched_config_reloads_total", testmetrics.Labels{"result": result})
	}

	// A steady load: one pod every 20ms until stopped; each remembers
	// which phase it was created in.
	var mu sync.Mutex
	phase := "a"
	created := map[string]string{} // pod -> phase at creation
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			mu.Lock()
			p := phase
			mu.Unlock()
			name := fmt.Sprintf("load-%03d", i)
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod(name, "", "10m"), metav1.CreateOptions{}); err != nil {
				t.Errorf("create %s: %v", name, err)
				return
			}
			mu.Lock()
			created[name] = p
			mu.Unlock()
		}
	}()
	setPhase := func(p string) {
		mu.Lock()
		phase = p
		mu.Unlock()
	}
	waitFor(t, ctx, "some pods bound before the swap", func() bool { return countBound(ctx, client) >= 10 })

	// Swap the module for the zone-b build.
	setPhase("swapping")
	cm.update(map[string][]byte{"config.yaml": []byte(reloadConfig), "zonepicker.wasm": preferB})
	waitFor(t, ctx, "the reload of the zone-b module", func() bool { return reloads(metrics.ReloadSuccess) >= 2 })
	setPhase("b")
	n := countBound(ctx, client)
	waitFor(t, ctx, "pods bound after the swap", func() bool { return countBound(ctx, client) >= n+20 })

	// A corrupt module is refused; zone-b keeps serving.
	setPhase("refusing")
	cm.update(map[string][]byte{"config.yaml": []byte(reloadConfig), "zonepicker.wasm": []byte("\x00asm\x01\x00\x00\x00garbage")})
	waitFor(t, ctx, "the corrupt module to be refused", func() bool { return reloads(metrics.ReloadRefused) >= 1 })
	setPhase("b-after-refusal")
	n = countBound(ctx, client)
	waitFor(t, ctx, "pods bound after the refusal", func() bool { return countBound(ctx, client) >= n+20 })
	close(stop)
	<-loadDone

	mu.Lock()
	defer mu.Unlock()
	waitFor(t, ctx, "every pod bound", func() bool { return countBound(ctx, client) == len(created) })
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byPhase := map[string]map[string]int{}
	for _, p := range pods.Items {
		ph := created[p.Name]
		if byPhase[ph] == nil {
			byPhase[ph] = map[string]int{}
		}
		byPhase[ph][p.Spec.NodeName]++
		scheduled, failed := 0, 0
		for _, ev := range events(ctx, client, p.Name) {
			switch ev.Reason {
			case "Scheduled":
				scheduled += occurrences(ev)
			case "FailedScheduling":
				failed++
			}
		}
		if scheduled != 1 || failed != 0 {
			t.Errorf("pod %s: %d Scheduled and %d FailedScheduling events, want exactly one Scheduled", p.Name, scheduled, failed)
		}
	}
	t.Logf("placements by phase: %v", byPhase)
	if byPhase["a"]["node-b"] != 0 || byPhase["a"]["node-a"] == 0 {
		t.Errorf("before the swap pods went %v, want all on node-a", byPhase["a"])
	}
	for _, ph := range []string{"b", "b-after-refusal"} {
		if byPhase[ph]["node-a"] != 0 || byPhase[ph]["node-b"] == 0 {
			t.Errorf("phase %s: pods went %v, want all on node-b (the new module)", ph, byPhase[ph])
		}
	}
}

// countBound counts the bound pods in the default namespace.
func countBound(ctx context.Context, client kubernetes.Interface) int {
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return -1
	}
	n := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}
