package vpod

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// benchPolicy is the README's example policy: fit, at most 100 pods per
// vpod, even spread over pods (MaxSkew 2); zone spread first, then low
// ordinals.
var benchPolicy = &Policy{
	Predicates: []PolicyEntry{pred("PodFitsResources"), pred("NoMaxResourceCount", `{"NumPartitions": 100}`), pred("EvenPodSpread", `{"MaxSkew": 2}`)},
	Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 10, `{"MaxSkew": 2}`), prio("LowestOrdinalPriority", 2)},
}

const (
	benchPods     = 100
	benchNodes    = 9 // 3 per zone
	benchVPods    = 1000
	benchCapacity = 700 // 70 000 slots for ≈ 50 000 vreplicas
)

// benchVPods are 1000 vpods of 1–100 vreplicas (seeded), none placed.
func benchVPodList() ([]VPod, int64) {
	r := rand.New(rand.NewSource(15))
	vpods := make([]VPod, benchVPods)
	var total int64
	for i := range vpods {
		vpods[i] = VPod{Key: Key{Namespace: "bench", Name: fmt.Sprintf("source-%04d", i)}, VReplicas: int32(1 + r.Intn(100))}
		total += int64(vpods[i].VReplicas)
	}
	return vpods, total
}

func benchClusterOf(vpods []VPod) *StaticCluster {
	var nodes []*corev1.Node
	for i := 0; i < benchNodes; i++ {
		nodes = append(nodes, mkNode(fmt.Sprintf("node-%d", i), fmt.Sprintf("zone-%d", i%3)))
	}
	var pods []*corev1.Pod
	for i := 0; i < benchPods; i++ {
		pods = append(pods, mkPod(i, fmt.Sprintf("node-%d", i%benchNodes)))
	}
	return NewStaticCluster(testNS, testSTS, benchPods, pods, nodes, vpods)
}

// BenchmarkPlaceAll places 1000 vpods (≈ 50 000 vreplicas, one
// placement step each) from zero over 100 adapter pods on 9 nodes in 3
// zones, committing each vpod's placements as a controller would, with
// the README policy on the knative bundle in Wasm (wazero), on its
// native twin, and on the in-process fake plugins (no ABI: the engine's
// own cost); with -tags wasmtime also on wasmtime (backend=wasmtime).
// Reports ns per vreplica, wall and CPU (the process's user and system
// time, which moves less with other load on a shared machine).
func BenchmarkPlaceAll(b *testing.B) {
	ctx := context.Background()
	for _, backend := range registryBackends {
		b.Run("backend="+backend, func(b *testing.B) {
			var p *Policies
			var err error
			if backend == "fake" {
				p, err = fakePolicies(benchPolicy, nil, newFakeModule("knative"))
			} else {
				p, err = NewPolicies(ctx, knativeRegistry(b, backend), benchPolicy, nil, nil)
			}
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			vpods, total := benchVPodList()
			var placed int64
			var cpu time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := benchClusterOf(vpods)
				r := rand.New(rand.NewSource(int64(i)))
				s, err := New(Settings{Name: "bench", Namespace: testNS, StatefulSet: testSTS, Capacity: benchCapacity, Strategy: StrategyPolicy, SchedPolicy: benchPolicy},
					c, p, Options{Rand: r.Int63n})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				t := processCPU()
				for _, v := range vpods {
					ps, err := s.Schedule(ctx, v)
					if err != nil {
						b.Fatalf("%s: %v", v.Key, err)
					}
					c.Commit(v.Key, ps)
				}
				cpu += processCPU() - t
				placed += total
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(placed), "ns/vreplica")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(placed), "cpu-ns/vreplica")
		})
	}
}

// BenchmarkColdPlacement is the vpod engine's cold start at scale: each
// op places one vpod of 100 vreplicas from zero with fresh instances (new
// Policies, so the first step pushes the whole topology: 5000 adapter
// pods on 5000 nodes in 3 zones; WASMSCHED_BENCH_NODES sets another size
// for both), with the README policy on the knative bundle in Wasm and on
// its native twin. A step that fails, or placements other than the
// native twin's, fail the benchmark.
func BenchmarkColdPlacement(b *testing.B) {
	ctx := context.Background()
	size := 5000
	if v, err := strconv.Atoi(os.Getenv("WASMSCHED_BENCH_NODES")); err == nil && v > 0 {
		size = v
	}
	v := VPod{Key: Key{Namespace: "bench", Name: "cold"}, VReplicas: 100}
	cluster := func() *StaticCluster {
		var nodes []*corev1.Node
		for i := 0; i < size; i++ {
			nodes = append(nodes, mkNode(fmt.Sprintf("node-%05d", i), fmt.Sprintf("zone-%d", i%3)))
		}
		var pods []*corev1.Pod
		for i := 0; i < size; i++ {
			pods = append(pods, mkPod(i, fmt.Sprintf("node-%05d", i)))
		}
		return NewStaticCluster(testNS, testSTS, int32(size), pods, nodes, []VPod{v})
	}
	place := func(b *testing.B, backend string) []Placement {
		p, err := NewPolicies(ctx, knativeRegistry(b, backend), benchPolicy, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		s, err := New(Settings{Name: "bench", Namespace: testNS, StatefulSet: testSTS, Capacity: benchCapacity, Strategy: StrategyPolicy, SchedPolicy: benchPolicy},
			cluster(), p, Options{Rand: rand.New(rand.NewSource(1)).Int63n})
		if err != nil {
			b.Fatal(err)
		}
		ps, err := s.Schedule(ctx, v)
		if err != nil {
			b.Fatalf("%s: first placement over %d pods on %d nodes: %v", backend, size, size, err)
		}
		return ps
	}
	want := place(b, "native")
	for _, backend := range []string{"wasm", "native"} {
		b.Run(fmt.Sprintf("pods=%d/backend=%s", size, backend), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if got := place(b, backend); !slices.Equal(got, want) {
					b.Fatalf("placed %v, want the native twin's %v", got, want)
				}
			}
		})
	}
}
