package framework

import (
	"context"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// A rebuilt profile shares the running profile's pool of a module whose
// code, args and pool size are unchanged (marked reused: the canary
// skips it), and loads a new one when the module's args change.
func TestRebuildProfileKeepsUnchangedPools(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var reg *modules.Registry
	build := func(profile string, prev *Profile) *Profile {
		t.Helper()
		cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\nprofiles: [" + profile + "]\n"))
		if err != nil {
			t.Fatal(err)
		}
		// As a reload does: the new registry takes the previous one's
		// compiled code.
		r, err := modules.Load(ctx, cfg, modules.Options{NativeBuiltin: true, CacheDir: dir, Previous: reg})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(ctx) })
		reg = r
		host := HostPlugins{config.DefaultQueueSort: PrioritySort{}, "DefaultBinder": DefaultBinder{}}
		p, err := RebuildProfile(ctx, cfg, 0, reg, host, prev)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(ctx) })
		return p
	}
	running := build("{schedulerName: a}", nil)
	if len(running.modules) != 1 || running.modules[0].reused {
		t.Fatalf("first build: %d modules, reused %v", len(running.modules), running.modules[0].reused)
	}
	pool := running.modules[0].pool
	next := build("{schedulerName: a, plugins: {score: {disabled: [{name: ImageLocality}]}}}", running)
	if next.modules[0].pool != pool || !next.modules[0].reused {
		t.Fatalf("unchanged module: pool %p reused %v, want the running %p", next.modules[0].pool, next.modules[0].reused, pool)
	}
	running.Close(ctx)
	c, err := pool.Get(ctx)
	if err != nil {
		t.Fatalf("the kept pool after the running profile closed: %v", err)
	}
	pool.Put(ctx, c)
	changed := build("{schedulerName: a, pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}]}", next)
	if changed.modules[0].pool == pool || changed.modules[0].reused {
		t.Error("changed args kept the pool")
	}
}
