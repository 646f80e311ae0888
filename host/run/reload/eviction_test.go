package reload_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/host/run/reload"
)

type cacheCluster struct{ e *env }

func (c cacheCluster) UpdateSnapshot(dst *snapshot.Snapshot) { c.e.parts.Cache.UpdateSnapshot(dst) }
func (c cacheCluster) SetEvictionTaints(context.Context, string, []abi.Taint) error {
	return nil
}

type noKiller struct{}

func (noKiller) Submit([]eviction.KillRequest) {}
func (noKiller) Holds(string) bool             { return false }

func policyNames(c *eviction.Coordinator) string {
	var out []string
	for _, p := range c.Policies() {
		s := p.Name()
		if p.DryRun {
			s += "(dry-run)"
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}

// evictionReloader is a reloader of e handing its eviction policies to
// a coordinator without any (closed when the test ends).
func evictionReloader(t *testing.T, e *env) (*eviction.Coordinator, *reload.Reloader) {
	t.Helper()
	coord := eviction.New(eviction.Options{Cluster: cacheCluster{e}, Killer: noKiller{}}, nil)
	t.Cleanup(func() { coord.Close(context.Background()) })
	r, err := reload.New(reload.Options{ConfigPath: e.cfgPath, Parts: e.parts, Config: e.cfg, Registry: e.modReg,
		Modules: e.modOpts, Metrics: e.m, Eviction: coord})
	if err != nil {
		t.Fatal(err)
	}
	return coord, r
}

// A reload hands the eviction coordinator the new configuration's
// policies; a configuration whose eviction section cannot be built is
// refused whole, and the running policies stay.
func TestReloadSwapsEvictionPolicies(t *testing.T) {
	e := newEnv(t, policyConfig("LeastAllocated", ""))
	ctx := context.Background()
	coord, r := evictionReloader(t, e)
	e.write("config.yaml", policyConfig("LeastAllocated", "eviction:\n  policies:\n  - plugin: ResourceOvercommit\n  - plugin: NodePressure\n    dryRun: true\n"))
	if res, err := r.Reload(ctx); res != reload.Swapped || err != nil {
		t.Fatalf("reload: %v %v", res, err)
	}
	if got := policyNames(coord); got != "ResourceOvercommit,NodePressure(dry-run)" {
		t.Fatalf("policies after reload: %q", got)
	}
	coord.RunRound(ctx) // closes the replaced (empty) set; the new one runs
	e.write("config.yaml", policyConfig("LeastAllocated", "eviction:\n  policies:\n  - plugin: NodeResourcesFit\n"))
	res, err := r.Reload(ctx)
	if res != reload.Refused || err == nil || !strings.Contains(err.Error(), "is not an eviction policy") {
		t.Fatalf("bad eviction section: %v %v", res, err)
	}
	if got := policyNames(coord); got != "ResourceOvercommit,NodePressure(dry-run)" {
		t.Fatalf("policies after a refused reload: %q", got)
	}
	if r := coord.RunRound(ctx); len(r.Failures) != 0 {
		t.Fatalf("round after refused reload: %+v", r.Failures)
	}
}

// A reload that leaves the eviction policies' module and args unchanged
// hands the running set's pool (its instance and what it was sent) to
// the new set: no second instance of the module is made.
func TestReloadKeepsEvictionPools(t *testing.T) {
	const policies = "eviction:\n  policies:\n  - plugin: ResourceOvercommit\n  - plugin: NodePressure\n"
	const dryRun = "eviction:\n  policies:\n  - plugin: ResourceOvercommit\n  - plugin: NodePressure\n    dryRun: true\n"
	e := newEnv(t, policyConfig("LeastAllocated", ""))
	ctx := context.Background()
	coord, r := evictionReloader(t, e)
	instances := func() float64 { return sample(t, e.reg, "wasmsched_module_instances", "module", "eviction") }
	e.write("config.yaml", policyConfig("LeastAllocated", policies))
	if res, err := r.Reload(ctx); res != reload.Swapped || err != nil {
		t.Fatalf("reload: %v %v", res, err)
	}
	coord.RunRound(ctx)
	if n := instances(); n != 1 {
		t.Fatalf("%v instances of the eviction module after the first reload, want 1", n)
	}
	// The scheduling profile changes, and what the coordinator does with
	// a policy's answers, not the eviction module or its args.
	e.write("config.yaml", policyConfig("MostAllocated", dryRun))
	if res, err := r.Reload(ctx); res != reload.Swapped || err != nil {
		t.Fatalf("reload: %v %v", res, err)
	}
	if got := policyNames(coord); got != "ResourceOvercommit,NodePressure(dry-run)" {
		t.Fatalf("policies after reload: %q", got)
	}
	if n := instances(); n != 1 {
		t.Fatalf("%v instances of the eviction module while both sets are open, want the one they share", n)
	}
	if r := coord.RunRound(ctx); len(r.Failures) != 0 {
		t.Fatalf("round on the shared pool: %+v", r.Failures)
	}
	if n := instances(); n != 1 {
		t.Fatalf("%v instances of the eviction module after the replaced set closed, want 1", n)
	}
}
