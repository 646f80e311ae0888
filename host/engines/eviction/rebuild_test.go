package eviction

import (
	"context"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// A reload's set shares the running set's pool of a module whose code
// and init args are unchanged (what a policy's dryRun or force says is
// not the module's business), and loads a new one when the args change.
func TestReloadPoliciesKeepsUnchangedPools(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	parse := func(policies string) *config.Configuration {
		t.Helper()
		cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n" +
			"profiles: [{schedulerName: a}]\neviction:\n  policies:\n" + policies))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	// As the reloader does: each configuration's scheduler registry takes
	// the previous one's compiled code, and the set's own registry the
	// scheduler's.
	var sched *modules.Registry
	reload := func(cfg *config.Configuration, prev *PolicySet) *PolicySet {
		t.Helper()
		reg, err := modules.Load(ctx, cfg, modules.Options{NativeBuiltin: true, CacheDir: dir, Previous: sched})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { reg.Close(ctx) })
		sched = reg
		set, err := ReloadPolicies(ctx, cfg, modules.Options{NativeBuiltin: true, CacheDir: dir, Previous: reg}, prev)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { set.Close(ctx) })
		return set
	}
	running := reload(parse("  - plugin: ResourceOvercommit\n  - plugin: NodePressure\n    dryRun: true\n"), nil)
	pool := running.policies[0].pool
	if running.policies[1].pool != pool {
		t.Fatal("two policies of one module have two pools")
	}
	next := reload(parse("  - plugin: ResourceOvercommit\n  - plugin: NodePressure\n"), running)
	if next.policies[0].pool != pool || next.policies[1].pool != pool || !next.pools.Entry(0).Reused {
		t.Fatalf("unchanged module: pools %p, %p, want the running %p", next.policies[0].pool, next.policies[1].pool, pool)
	}
	running.Close(ctx)
	c, err := pool.Get(ctx)
	if err != nil {
		t.Fatalf("the kept pool after the running set closed: %v", err)
	}
	pool.Put(ctx, c)
	changed := reload(parse("  - plugin: ResourceOvercommit\n    args: {resources: [cpu]}\n  - plugin: NodePressure\n"), next)
	if changed.policies[0].pool == pool || changed.pools.Entry(0).Reused {
		t.Error("changed args kept the pool")
	}
	fresh := reload(parse("  - plugin: ResourceOvercommit\n  - plugin: NodePressure\n"), nil)
	if fresh.policies[0].pool == pool {
		t.Error("a set built without prev shares a pool")
	}
}

// RebuildPolicies over the same registry keeps the pool of the fake
// module, and its policies' tables.
func TestRebuildPoliciesKeepsPools(t *testing.T) {
	ctx := context.Background()
	mod := &fakeModule{policies: []*fakePolicy{{name: "A", points: abi.PointEvictPods}, {name: "B", points: abi.PointEvictPods}}, keys: []string{"k"}}
	reg := fakeRegistry(t, mod)
	old, err := BuildPolicies(ctx, []PolicySpec{{Plugin: "A"}}, reg, "eviction.policies")
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(ctx)
	set, err := RebuildPolicies(ctx, []PolicySpec{{Plugin: "B"}, {Plugin: "A", DryRun: true}}, reg, "eviction.policies", old)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close(ctx)
	if set.policies[0].pool != old.policies[0].pool || set.policies[1].pool != old.policies[0].pool {
		t.Fatal("the rebuilt set does not share the running set's pool")
	}
	if set.policies[0].index != 1 || set.policies[1].index != 0 || set.policies[0].table != 0 || len(set.keys) != 1 {
		t.Fatalf("rebuilt policies: %+v %+v, tables %v", set.policies[0], set.policies[1], set.keys)
	}
}
