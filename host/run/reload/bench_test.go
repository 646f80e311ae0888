package reload_test

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

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/memapi"
	"github.com/wasmsched/wasmsched/host/run/reload"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
)

// bundleVariant is the default bundle with a custom section naming v: the
// same code, other bytes, so another digest (a module the running
// registry cannot reuse, which the compile cache may or may not hold).
func bundleVariant(v string) []byte {
	name := "wasmsched-bench"
	payload := append([]byte{byte(len(name))}, name...)
	payload = append(payload, v...)
	out := append([]byte(nil), dist.DefaultWasm...)
	out = append(out, 0, byte(len(payload)))
	return append(out, payload...)
}

// bundleConfig serves the default profile from a module file replacing
// the builtin bundle.
const bundleConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: default
  path: bundle.wasm
profiles:
- schedulerName: default-scheduler
`

// harness is a scheduler over n SchedulingBasic nodes with a reloader.
type harness struct {
	dir     string
	parts   *scheduler.Parts
	cluster *memapi.Cluster
	r       *reload.Reloader
	reg     *prometheus.Registry
}

func newHarness(tb testing.TB, nodes int, cfgYAML string, files map[string][]byte, cacheDir string) *harness {
	tb.Helper()
	h := &harness{dir: tb.TempDir(), reg: prometheus.NewRegistry()}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(h.dir, name), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	cfgPath := filepath.Join(h.dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfgYAML), 0o644); err != nil {
		tb.Fatal(err)
	}
	m, err := metrics.New(h.reg)
	if err != nil {
		tb.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	mo := modules.Options{CacheDir: cacheDir, Log: hclog.NewNullLogger(), Metrics: m}
	reg, err := modules.Load(ctx, cfg, mo)
	if err != nil {
		tb.Fatal(err)
	}
	h.cluster = memapi.New(nil)
	h.parts, err = scheduler.Assemble(ctx, scheduler.AssembleOptions{Config: cfg, Registry: reg, Binder: h.cluster,
		Metrics: m, OwnRegistry: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.parts.Close(context.Background()) })
	h.cluster.SetWatcher(h.parts.Scheduler)
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		h.parts.Scheduler.OnNodeAdd(&abi.Node{Name: name, AllowedPods: 110,
			Labels:      abi.Labels{{Key: "kubernetes.io/hostname", Value: name}},
			Allocatable: abi.Resources{MilliCPU: 4000, Memory: 32 << 30}})
	}
	h.r, err = reload.New(reload.Options{ConfigPath: cfgPath, Parts: h.parts, Config: cfg, Registry: reg, Modules: mo, Metrics: m})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func (h *harness) write(tb testing.TB, name string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, name), b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// basicPod is SchedulingBasic's pod-default: 100m CPU, 500Mi.
func basicPod(ns string, i int) *abi.Pod {
	name := fmt.Sprintf("pod-%06d", i)
	return &abi.Pod{UID: ns + "/" + name, Namespace: ns, Name: name, SchedulerName: config.DefaultSchedulerName,
		Containers: []abi.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10",
			Requests: abi.Resources{MilliCPU: 100, Memory: 500 << 20}}}}
}

// BenchmarkReloadToServing measures a reload of the default bundle from
// the call to Reload to serving: cold (bytes the compile cache has never
// seen) and with a compile-cache hit (bytes compiled before, but not the
// running module's). It reports the canary's share separately.
func BenchmarkReloadToServing(b *testing.B) {
	for _, mode := range []string{"cold", "cache-hit"} {
		b.Run(mode, func(b *testing.B) {
			cacheDir := b.TempDir()
			h := newHarness(b, 100, bundleConfig, map[string][]byte{"bundle.wasm": bundleVariant("start")}, cacheDir)
			ctx := context.Background()
			if mode == "cache-hit" {
				// Compile both variants once; then every reload switches
				// to the one not running, which the cache holds.
				for _, v := range []string{"a", "b"} {
					h.write(b, "bundle.wasm", bundleVariant(v))
					if res, err := h.r.Reload(ctx); err != nil || res != reload.Swapped {
						b.Fatal(res, err)
					}
				}
			}
			var total, canary time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				v := fmt.Sprintf("cold-%d-%d", i, time.Now().UnixNano())
				if mode == "cache-hit" {
					v = []string{"a", "b"}[i%2]
				}
				h.write(b, "bundle.wasm", bundleVariant(v))
				b.StartTimer()
				res, err := h.r.Reload(ctx)
				if err != nil || res != reload.Swapped {
					b.Fatal(res, err)
				}
				t := h.r.LastTimings()
				total += t.Total()
				canary += t.Canary
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/reload")
			b.ReportMetric(float64((total-canary).Microseconds())/1000/float64(b.N), "ms-excl-canary/reload")
			b.ReportMetric(float64(canary.Microseconds())/1000/float64(b.N), "ms-canary/reload")
		})
	}
}

// strategyConfig is the default profile with NodeResourcesFit's scoring
// strategy set: switching it changes the bundle's init args, so a reload
// makes a new pool (new instances, a full mirror sync, a canary).
func strategyConfig(strategy, shadow string) string {
	s := `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: ` + strategy + "\n"
	if shadow != "" {
		s += `  shadow:
    pluginConfig:
    - name: NodeResourcesFit
      args:
        scoringStrategy:
          type: ` + shadow + "\n"
	}
	return s
}

// BenchmarkSchedulingUnderRollout is SchedulingBasic (5000 nodes, 1000
// pods placed, 10000 measured) while policy rolls out: "none" as the
// baseline; "reload-every-second" replacing the default bundle's module
// file every second by another build of the same code (other bytes: it is
// loaded from the compile cache, gets a new pool, a full mirror sync and a
// canary, while placements stay comparable); "shadow" with a shadow profile
// (MostAllocated) evaluating every pod it can. It fails if any cycle fails.
func BenchmarkSchedulingUnderRollout(b *testing.B) {
	const nodes, placed, measured = 5000, 1000, 10000
	for _, mode := range []string{"none", "reload-every-second", "shadow"} {
		b.Run(mode, func(b *testing.B) {
			cacheDir := b.TempDir()
			var reloads, refused int
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				shadow := ""
				if mode == "shadow" {
					shadow = "MostAllocated"
				}
				cfg, files := strategyConfig("LeastAllocated", shadow), map[string][]byte(nil)
				if mode == "reload-every-second" {
					cfg, files = bundleConfig, map[string][]byte{"bundle.wasm": bundleVariant("b")}
				}
				h := newHarness(b, nodes, cfg, files, cacheDir)
				for j := 0; j < placed; j++ {
					p := basicPod("init", j)
					p.NodeName = fmt.Sprintf("node-%05d", j%nodes)
					h.parts.Scheduler.OnPodAdd(p)
				}
				for j := 0; j < measured; j++ {
					p := basicPod("measured", j)
					h.cluster.AddPod(p)
					h.parts.Scheduler.OnPodAdd(p)
				}
				ctx := context.Background()
				stop := make(chan struct{})
				var wg sync.WaitGroup
				if mode == "reload-every-second" {
					wg.Add(1)
					go func() {
						defer wg.Done()
						tick := time.NewTicker(time.Second)
						defer tick.Stop()
						for k := 0; ; k++ {
							select {
							case <-stop:
								return
							case <-tick.C:
							}
							h.write(b, "bundle.wasm", bundleVariant([]string{"a", "b"}[k%2]))
							res, err := h.r.Reload(ctx)
							reloads++
							if res != reload.Swapped {
								refused++
								b.Errorf("reload %d: %v %v", k, res, err)
							}
						}
					}()
				}
				b.StartTimer()
				for j := 0; j < measured; j++ {
					if err := h.parts.Scheduler.ScheduleOne(ctx); err != nil {
						b.Fatal(err)
					}
				}
				h.parts.Scheduler.WaitBindings()
				b.StopTimer()
				close(stop)
				wg.Wait()
				if failed := sample(b, h.reg, "scheduler_schedule_attempts_total", "result", metrics.ResultError) +
					sample(b, h.reg, "scheduler_schedule_attempts_total", "result", metrics.ResultUnschedulable); failed != 0 {
					b.Fatalf("%v cycles failed", failed)
				}
				if got := sample(b, h.reg, "scheduler_schedule_attempts_total", "result", metrics.ResultScheduled); got != measured {
					b.Fatalf("%v pods scheduled, want %d", got, measured)
				}
				if mode == "shadow" {
					evaluated := sample(b, h.reg, "wasmsched_shadow_decisions_total", "profile", config.DefaultSchedulerName) -
						sample(b, h.reg, "wasmsched_shadow_decisions_total", "result", metrics.ShadowSkipped)
					b.ReportMetric(evaluated/measured*100, "%shadowed")
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(measured)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			if mode == "reload-every-second" {
				b.ReportMetric(float64(reloads)/float64(b.N), "reloads/op")
			}
		})
	}
}
