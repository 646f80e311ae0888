package sim

import (
	"context"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// A registry the caller gives is used and left open: two runs on it both
// schedule, and a registry loaded from it still reuses its modules.
func TestRunWithGivenRegistryLeavesItOpen(t *testing.T) {
	ctx := context.Background()
	objs, err := read(t, `apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	for i := range 2 {
		rep, err := Run(ctx, objs, Options{Config: cfg, Seed: 1, Registry: reg})
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if p := rep.Pod("default", "p"); p == nil || p.Node != "n1" || p.Status != StatusScheduled {
			t.Fatalf("run %d: pod %+v", i, p)
		}
	}
	if len(reg.Modules()) == 0 {
		t.Fatal("the runs closed the registry they were given")
	}
	next, err := modules.Load(ctx, cfg, modules.Options{Previous: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close(ctx)
	if next.Modules()[0].ID() != reg.Modules()[0].ID() {
		t.Error("a registry loaded from the given one compiled its module again")
	}
}
