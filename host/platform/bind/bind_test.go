package bind_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/bind"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// nativeRegistry loads the builtin default bundle as its native twin.
func nativeRegistry(t *testing.T, prev *modules.Registry) *modules.Registry {
	t.Helper()
	reg, err := modules.Load(context.Background(), config.Default(), modules.Options{NativeBuiltin: true, CacheDir: t.TempDir(), Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(context.Background()) })
	return reg
}

// counting is a backend counting the instances it makes and closes.
type counting struct {
	guest.Backend
	opened, closed atomic.Int32
}

func (b *counting) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := b.Backend.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	b.opened.Add(1)
	return countedInstance{inst, b}, nil
}

// Close leaves the wrapped backend to its own registry.
func (b *counting) Close(context.Context) error { return nil }

type countedInstance struct {
	guest.Instance
	b *counting
}

func (i countedInstance) Close(ctx context.Context) error {
	i.b.closed.Add(1)
	return i.Instance.Close(ctx)
}

// countingRegistry serves the default bundle's plugins through a
// counting backend: the module "default" configured with a path (so not
// the builtin bundle; Options.Backends serves it instead of the file).
func countingRegistry(t *testing.T) (*modules.Registry, *counting) {
	t.Helper()
	b := &counting{Backend: nativeRegistry(t, nil).PluginModule("NodeName").Backend}
	cfg := config.Default()
	cfg.Modules = append(cfg.Modules, config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: "counting.wasm"})
	reg, err := modules.Load(context.Background(), cfg, modules.Options{CacheDir: t.TempDir(),
		Backends: map[string]guest.Backend{config.BuiltinDefaultModule: b}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(context.Background()) })
	return reg, b
}

func TestResolve(t *testing.T) {
	reg := nativeRegistry(t, nil)
	t.Run("served", func(t *testing.T) {
		m, idx, err := bind.Resolve(reg, "", bind.Need{Plugin: "NodeName", Points: abi.PointFilter, Role: "a filter"})
		if err != nil {
			t.Fatal(err)
		}
		if m.Config.Name != config.BuiltinDefaultModule || m.Manifest.Plugins[idx].Name != "NodeName" {
			t.Fatalf("resolved to plugin %d of module %q", idx, m.Config.Name)
		}
	})
	t.Run("unserved", func(t *testing.T) {
		_, _, err := bind.Resolve(reg, "", bind.Need{Plugin: "Nope", Points: abi.PointFilter, Role: "a filter"})
		var unserved *bind.UnservedError
		if !errors.As(err, &unserved) || !slices.Contains(unserved.Served, "NodeName") {
			t.Fatalf("error %#v, want an UnservedError listing NodeName", err)
		}
		if !strings.HasPrefix(err.Error(), `no module serves plugin "Nope" (modules serve: `) || !strings.Contains(err.Error(), "NodeName") {
			t.Errorf("error text %q", err)
		}
	})
	t.Run("no registry", func(t *testing.T) {
		_, _, err := bind.Resolve(nil, "", bind.Need{Plugin: "NodeName", Points: abi.PointFilter})
		var unserved *bind.UnservedError
		if !errors.As(err, &unserved) {
			t.Fatalf("error %v, want an UnservedError", err)
		}
	})
	t.Run("wrong points", func(t *testing.T) {
		m, _, err := bind.Resolve(reg, "", bind.Need{Plugin: "NodeName", Points: abi.PointsEviction, Role: "an eviction policy",
			Hint: "an eviction policy implements EvictionThreshold or EvictPods"})
		var points *bind.PointsError
		if !errors.As(err, &points) || m == nil || points.Has&abi.PointFilter == 0 {
			t.Fatalf("error %#v (module %v), want a PointsError", err, m)
		}
		want := `plugin "NodeName" of module "default" is not an eviction policy (it implements `
		if got := err.Error(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "; an eviction policy implements EvictionThreshold or EvictPods)") {
			t.Errorf("error text %q", got)
		}
	})
	t.Run("any of the points", func(t *testing.T) {
		if _, _, err := bind.Resolve(reg, "", bind.Need{Plugin: "NodeName", Points: abi.PointFilter | abi.PointsEviction}); err != nil {
			t.Fatal(err)
		}
	})
}

// load adds m with args to new Pools of size and loads them over prev.
func load(t *testing.T, m *modules.Compiled, size int, prev *bind.Pools, args ...abi.PluginArgs) *bind.Pools {
	t.Helper()
	ps := bind.New(bind.Options{PoolSize: size})
	if i := ps.Add(m, args...); i != 0 {
		t.Fatalf("first module at index %d", i)
	}
	if err := ps.Load(context.Background(), prev); err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestPoolsReuse(t *testing.T) {
	ctx := context.Background()
	reg := nativeRegistry(t, nil)
	m := reg.PluginModule("NodeName")
	first := load(t, m, 1, nil)
	defer first.Close(ctx)
	if first.Entry(0).Reused || first.Entry(0).Pool == nil {
		t.Fatalf("first load: %+v", first.Entry(0))
	}
	pool := first.Entry(0).Pool

	same := load(t, m, 1, first)
	defer same.Close(ctx)
	if e := same.Entry(0); e.Pool != pool || !e.Reused {
		t.Errorf("unchanged module: pool %p reused %v, want %p reused", e.Pool, e.Reused, pool)
	}
	// A reload's registry shares the compiled module (Options.Previous):
	// its entry is the same module as far as pools go.
	m2 := nativeRegistry(t, reg).PluginModule("NodeName")
	if m2 == m {
		t.Fatal("the second registry returned the first one's module")
	}
	reloaded := load(t, m2, 1, first)
	defer reloaded.Close(ctx)
	if e := reloaded.Entry(0); e.Pool != pool || !e.Reused {
		t.Errorf("module of a reloaded registry: pool %p, want %p", e.Pool, pool)
	}

	args, err := config.ArgsValue([]byte(`{"scoringStrategy": {"type": "MostAllocated"}}`))
	if err != nil {
		t.Fatal(err)
	}
	withArgs := load(t, m, 1, first, abi.PluginArgs{Name: "NodeResourcesFit", Args: args})
	defer withArgs.Close(ctx)
	if e := withArgs.Entry(0); e.Pool == pool || e.Reused {
		t.Errorf("changed args kept the pool")
	}
	bigger := load(t, m, 2, first)
	defer bigger.Close(ctx)
	if e := bigger.Entry(0); e.Pool == pool || e.Reused {
		t.Errorf("changed pool size kept the pool")
	}
	// Without prev's registry sharing the compiled code, nothing is reused.
	other := load(t, nativeRegistry(t, nil).PluginModule("NodeName"), 1, first)
	defer other.Close(ctx)
	if e := other.Entry(0); e.Pool == pool || e.Reused {
		t.Errorf("a module compiled again kept the pool")
	}
}

func TestPoolsAddGroupsByModule(t *testing.T) {
	m := nativeRegistry(t, nil).PluginModule("NodeName")
	ps := bind.New(bind.Options{})
	a := abi.PluginArgs{Name: "NodeResourcesFit"}
	if ps.Index(m) != -1 {
		t.Fatal("an empty Pools has the module")
	}
	if i, j := ps.Add(m), ps.Add(m, a); i != 0 || j != 0 || len(ps.Entries()) != 1 || len(ps.Entry(0).Args) != 1 {
		t.Fatalf("indexes %d, %d; entries %+v", i, j, ps.Entries())
	}
}

// A pool shared by successive Pools is closed when the last of them is.
func TestPoolsReleaseWithLastHolder(t *testing.T) {
	ctx := context.Background()
	reg, b := countingRegistry(t)
	m := reg.PluginModule("NodeName")
	opened0, closed0 := b.opened.Load(), b.closed.Load() // the registry's probe
	opened := func() int32 { return b.opened.Load() - opened0 }
	closed := func() int32 { return b.closed.Load() - closed0 }
	first := load(t, m, 1, nil)
	second := load(t, m, 1, first)
	third := load(t, m, 1, second)
	if n := opened(); n != 1 {
		t.Fatalf("%d instances made for three Pools of one unchanged module, want 1", n)
	}
	first.Close(ctx)
	second.Close(ctx)
	second.Close(ctx) // a second Close releases nothing more
	if n := closed(); n != 0 {
		t.Fatalf("%d instances closed while a Pools still holds the pool", n)
	}
	pool := third.Entry(0).Pool
	c, err := pool.Get(ctx)
	if err != nil {
		t.Fatalf("the pool the last holder keeps: %v", err)
	}
	pool.Put(ctx, c)
	// A closed Pools hands nothing on.
	after := load(t, m, 1, first)
	if after.Entry(0).Reused || opened() != 2 {
		t.Errorf("a closed Pools handed its pool on (reused %v, %d instances made)", after.Entry(0).Reused, opened())
	}
	third.Close(ctx)
	if n := closed(); n != 1 {
		t.Fatalf("%d instances closed after the last holder closed, want 1", n)
	}
	after.Close(ctx)
	if n := closed(); n != 2 {
		t.Fatalf("%d instances closed, want 2", n)
	}
}

// A load failure names the module and leaves what loaded before held.
func TestPoolsLoadError(t *testing.T) {
	ctx := context.Background()
	m := nativeRegistry(t, nil).PluginModule("NodeName")
	args, err := config.ArgsValue([]byte(`{"scoringStrategy": {"type": "Bogus"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ps := bind.New(bind.Options{PoolSize: 1})
	ps.Add(m, abi.PluginArgs{Name: "NodeResourcesFit", Args: args})
	err = ps.Load(ctx, nil)
	var le *bind.LoadError
	if !errors.As(err, &le) || le.Module != m || !strings.Contains(err.Error(), `module "default"`) {
		t.Fatalf("error %v, want a LoadError naming the module", err)
	}
	ps.Close(ctx)
}
