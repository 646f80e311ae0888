package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
)

func TestReportNodesAreWhereThePodsWent(t *testing.T) {
	objs, err := LoadFiles("../../../examples/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), objs, Options{Seed: 1, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != len(objs.Nodes) {
		t.Fatalf("%d nodes in the report, %d in the input", len(rep.Nodes), len(objs.Nodes))
	}
	if !slices.IsSortedFunc(rep.Nodes, func(a, b NodeResult) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("nodes not by name")
	}
	byName := map[string]NodeResult{}
	for _, n := range rep.Nodes {
		byName[n.Name] = n
		if n.MilliCPU.Allocatable <= 0 || n.MemoryBytes.Allocatable <= 0 || n.Zone == "" {
			t.Errorf("node %+v: no allocatable or zone", n)
		}
	}
	placed := 0
	for _, p := range rep.Pods {
		node, ok := p.Placed()
		if !ok {
			continue
		}
		placed++
		if !slices.Contains(byName[node].Pods, p.Namespace+"/"+p.Name) {
			t.Errorf("%s/%s on %s, but the node lists %v", p.Namespace, p.Name, node, byName[node].Pods)
		}
	}
	total := 0
	for _, n := range rep.Nodes {
		total += len(n.Pods)
		if len(n.Pods) > 0 && n.MilliCPU.Requested <= 0 {
			t.Errorf("node %s has pods but requests nothing: %+v", n.Name, n)
		}
	}
	if total != placed {
		t.Errorf("nodes list %d pods, the report placed %d", total, placed)
	}
	if c2 := byName["node-c2"]; !c2.Unschedulable {
		t.Errorf("node-c2 is cordoned in the input: %+v", c2)
	}
}
