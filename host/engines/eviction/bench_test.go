package eviction

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/cache"
	"github.com/wasmsched/wasmsched/host/platform/modules"

	clocktesting "k8s.io/utils/clock/testing"
)

// mapUsage is usage from maps.
type mapUsage struct {
	nodes map[string]*abi.Usage
	pods  map[string]*abi.Usage
}

func (u *mapUsage) Node(name string) *abi.Usage           { return u.nodes[name] }
func (u *mapUsage) Pod(namespace, name string) *abi.Usage { return u.pods[namespace+"/"+name] }
func (u *mapUsage) Usage(context.Context) (Usage, error)  { return u, nil }

// benchCluster fills a cache with nodes×podsPerNode pods: every 10th node
// has requests above its allocatable (ResourceOvercommit is met), every
// 20th reports MemoryPressure (NodePressure), every 15th uses 95% of its
// memory (UsageThreshold); every pod and node has usage.
func benchCluster(nodes, podsPerNode int) (*cache.Cache, *mapUsage) {
	c := cache.New(0, nil)
	u := &mapUsage{nodes: map[string]*abi.Usage{}, pods: map[string]*abi.Usage{}}
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("node-%05d", i)
		n := abi.Node{Name: name, AllowedPods: 110, Allocatable: abi.Resources{MilliCPU: 8000, Memory: 32 << 30}}
		if i%20 == 0 {
			n.Conditions = []abi.NodeCondition{{Type: "MemoryPressure", Status: abi.ConditionTrue}}
		}
		if i%10 == 0 {
			n.Allocatable.MilliCPU = 2000
		}
		c.AddNode(n)
		mem := int64(8 << 30)
		if i%15 == 0 {
			mem = 31 << 30
		}
		u.nodes[name] = &abi.Usage{MilliCPU: 3000, Memory: mem}
		for j := 0; j < podsPerNode; j++ {
			p := &abi.Pod{UID: fmt.Sprintf("%s-%d", name, j), Namespace: "bench", Name: fmt.Sprintf("%s-p%d", name, j), NodeName: name,
				Priority: int32(j * 10), QoS: abi.QoSBurstable, Labels: abi.Labels{{Key: "app", Value: fmt.Sprintf("a%d", j%4)}},
				Containers: []abi.Container{{Name: "c", Requests: abi.Resources{MilliCPU: 300, Memory: 1 << 30}}}}
			if err := c.AddPod(p); err != nil {
				panic(err)
			}
			u.pods["bench/"+p.Name] = &abi.Usage{MilliCPU: 250, Memory: int64(j%3+1) << 29}
		}
	}
	return c, u
}

// BenchmarkEvictionRound is one round over 5000 nodes and 50 000 pods
// with the three default policies (ResourceOvercommit, NodePressure,
// UsageThreshold), on the builtin eviction bundle in Wasm and on its
// native twin. Victims go to a recording killer, so every round finds the
// same work. "steady" rounds follow a first one (mirrors and
// observations synced; nothing changed); "cold" rounds start from fresh
// instances (everything sent). Every round, the first included, must
// drop no policy's answer and find as many victims as the native twin's
// first round: a cold round that loses an answer (a sync cut by the call
// timeout, say) fails the benchmark. cpu-ns/op is the process's CPU time
// per round (user and system, every thread), which moves less than wall
// time with other load on a shared machine. WASMSCHED_BENCH_NODES sets another
// number of nodes (of 10 pods each). With -tags wasmtime the bundle also
// runs on wasmtime (backend=wasmtime).
func BenchmarkEvictionRound(b *testing.B) {
	nodes := 5000
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_NODES")); err == nil && v > 0 {
		nodes = v
	}
	c, u := benchCluster(nodes, 10)
	cfg := config.Default()
	cfg.Eviction = &config.Eviction{Policies: []config.EvictionPolicy{
		{Plugin: "ResourceOvercommit"}, {Plugin: "NodePressure"}, {Plugin: "UsageThreshold"}}}
	ctx := context.Background()
	want := referenceVictims(b, cfg, c, u)
	for _, backend := range benchBackends {
		for _, mode := range []string{"steady", "cold"} {
			b.Run(fmt.Sprintf("backend=%s/%s", backend, mode), func(b *testing.B) {
				reg, err := modules.Load(ctx, onRuntime(cfg, backend), modules.Options{CacheDir: b.TempDir(), NativeBuiltin: backend == "native"})
				if err != nil {
					b.Fatal(err)
				}
				defer reg.Close(ctx)
				coord := benchCoordinator(b, cfg, reg, c, u)
				checkRound(b, "first round", coord.RunRound(ctx), want)
				var cpu time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if mode == "cold" {
						b.StopTimer()
						coord.Close(ctx)
						coord = benchCoordinator(b, cfg, reg, c, u)
						b.StartTimer()
					}
					t := processCPU()
					r := coord.RunRound(ctx)
					cpu += processCPU() - t
					b.StopTimer()
					checkRound(b, fmt.Sprintf("round %d", i+1), r, want)
					b.StartTimer()
				}
				b.StopTimer()
				coord.Close(ctx)
				b.ReportMetric(float64(want), "victims/round")
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// benchBackends are the backends BenchmarkEvictionRound compares: the
// builtin bundle on wazero ("wasm") and its native twin, and on wasmtime
// in a test binary built with -tags wasmtime (bench_wasmtime_test.go).
var benchBackends = []string{"wasm", "native"}

// onRuntime is cfg with the builtin eviction bundle on the backend's
// runtime: wasmtime for "wasmtime", wazero for "wasm" (in every build,
// also where wasmtime is the binary's default), cfg itself for "native".
func onRuntime(cfg *config.Configuration, backend string) *config.Configuration {
	runtime := map[string]string{"wasm": config.RuntimeWazero, "wasmtime": config.RuntimeWasmtime}[backend]
	if runtime == "" {
		return cfg
	}
	c := *cfg
	c.Modules = append([]config.ModuleSpec{{Name: config.BuiltinEvictionModule, Runtime: runtime}}, cfg.Modules...)
	return &c
}

// referenceVictims is how many victims the native twin's first round
// finds: what every round of every backend must find.
func referenceVictims(b *testing.B, cfg *config.Configuration, c *cache.Cache, u *mapUsage) int {
	ctx := context.Background()
	reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: b.TempDir(), NativeBuiltin: true})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close(ctx)
	coord := benchCoordinator(b, cfg, reg, c, u)
	defer coord.Close(ctx)
	r := coord.RunRound(ctx)
	if len(r.Failures) > 0 || len(r.Victims) == 0 {
		b.Fatalf("native reference round: %d victims, failures %+v", len(r.Victims), r.Failures)
	}
	return len(r.Victims)
}

// benchCoordinator is a coordinator of the policies over fresh instances
// of reg's modules, with no cluster-wide throttle, so every round does the
// same work.
func benchCoordinator(b *testing.B, cfg *config.Configuration, reg *modules.Registry, c *cache.Cache, u *mapUsage) *Coordinator {
	set, err := PoliciesFrom(context.Background(), cfg, reg)
	if err != nil {
		b.Fatal(err)
	}
	return New(Options{Settings: Settings{Rate: 1e9, RateBurst: 1 << 30}, Cluster: &fakeCluster{cache: c}, Killer: &fakeKiller{}, Usage: u,
		Clock: clocktesting.NewFakeClock(t0)}, set)
}

// checkRound fails the benchmark when a round dropped a policy's answer
// or found other than want victims.
func checkRound(b *testing.B, which string, r *Round, want int) {
	b.Helper()
	if len(r.Failures) > 0 {
		b.Fatalf("%s dropped %d policy answers (%d victims, want %d): %+v", which, len(r.Failures), len(r.Victims), want, r.Failures)
	}
	if len(r.Victims) != want {
		b.Fatalf("%s: %d victims, want %d (the native twin's)", which, len(r.Victims), want)
	}
}
