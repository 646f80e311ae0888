package modules

import (
	"context"
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

// BenchmarkKnativeStep is one vpod_step of Knative's README policy over
// 100 adapter pods on 9 nodes in 3 zones, the vpod present on 10 pods:
// the per-vreplica cost of the guest side, Wasm against the native twin.
func BenchmarkKnativeStep(b *testing.B) {
	topo := &abi.VPodTopology{Generation: 1, StatefulSet: "adapter", Capacity: 10, Replicas: 100, Zones: []string{"a", "b", "c"}}
	for n := 0; n < 9; n++ {
		topo.Nodes = append(topo.Nodes, abi.VPodNode{Name: fmt.Sprintf("node-%d", n), Zone: uint32(n % 3)})
	}
	step := &abi.VPodStep{Policy: 1, Topology: 1, Namespace: "ns", Name: "src", VReplicas: 20}
	nodes, zones := map[uint32]int32{}, map[uint32]int32{}
	for i := 0; i < 100; i++ {
		topo.Pods = append(topo.Pods, abi.VPodPod{Ordinal: int32(i), Node: uint32(i % 9)})
		step.Free = append(step.Free, int32(i%7))
		if i%10 == 0 {
			step.PodSpread = append(step.PodSpread, abi.VPodCount{Index: uint32(i), VReplicas: 2})
			nodes[uint32(i%9)] += 2
			zones[uint32(i%9%3)] += 2
		}
		step.Candidates = append(step.Candidates, uint32(i))
	}
	step.NodeSpread, step.ZoneSpread = countsOf(nodes), countsOf(zones)
	for _, backend := range []string{"wasm", "native"} {
		b.Run("backend="+backend, func(b *testing.B) {
			c := evictionClient(b, config.BuiltinKnativeModule, dist.KnativeWasm, nil, nil)
			if backend == "native" {
				c = evictionClient(b, config.BuiltinKnativeModule, nil, knativedefaults.Plugins(), nil)
			}
			m := c.Module().Manifest()
			skew := knativeArgs(`{"MaxSkew": 2}`)
			pol := &abi.VPodPolicy{ID: 1, Entries: []abi.VPodEntry{
				vpodEntry(b, m, "PodFitsResources", abi.VPodPredicate, ""),
				vpodEntry(b, m, "NoMaxResourceCount", abi.VPodPredicate, knativeArgs(`{"NumPartitions": 100}`)),
				vpodEntry(b, m, "EvenPodSpread", abi.VPodPredicate, skew),
				vpodEntry(b, m, "AvailabilityZonePriority", abi.VPodPriority, skew),
				vpodEntry(b, m, "LowestOrdinalPriority", abi.VPodPriority, ""),
			}}
			ctx := context.Background()
			if _, err := c.EnsureVPodPolicy(ctx, pol); err != nil {
				b.Fatal(err)
			}
			if err := c.VPodTopology(ctx, topo); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.VPodStep(ctx, pol, step); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
