package modules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
)

func writeModule(t *testing.T) (path, sum string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "bundle.wasm")
	if err := os.WriteFile(path, dist.DefaultWasm, 0o644); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(dist.DefaultWasm)
	return path, hex.EncodeToString(s[:])
}

func load(t *testing.T, mods ...config.ModuleSpec) (*Registry, error) {
	t.Helper()
	cfg := config.Default()
	cfg.Modules = mods
	r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir()})
	if r != nil {
		t.Cleanup(func() { r.Close(context.Background()) })
	}
	return r, err
}

func TestBuiltinModuleServesTheDefaultPlugins(t *testing.T) {
	r, err := load(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"NodeResourcesFit", "TaintToleration", "ImageLocality"} {
		if m := r.PluginModule(p); m == nil || m.Config.Name != config.BuiltinDefaultModule {
			t.Errorf("%s not served by the builtin module", p)
		}
	}
}

func TestModuleFileErrorsNameTheField(t *testing.T) {
	path, sum := writeModule(t)
	wrong := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name string
		mod  config.ModuleSpec
		want string
	}{
		{"missing file", config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: "/nonexistent.wasm"}, "modules[0].path: open /nonexistent.wasm"},
		{"sha256 mismatch", config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: path, SHA256: wrong},
			"modules[0].sha256: " + path + " has sha256 " + sum + ", but the configuration pins " + wrong},
		{"not wasm", config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: "modules_test.go"}, "modules[0] (modules_test.go): "},
		// The builtin module still loads, so the same plugins appear twice.
		{"plugin served twice", config.ModuleSpec{Name: "copy", Path: path}, `plugin "NodeUnschedulable" is served by both module "default" and module "copy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.mod)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestPinnedModuleReplacesTheBuiltin(t *testing.T) {
	path, sum := writeModule(t)
	r, err := load(t, config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: path, SHA256: strings.ToUpper(sum), FailurePolicy: config.FailurePolicyIgnore})
	if err != nil {
		t.Fatal(err)
	}
	m := r.PluginModule("NodePorts")
	if m == nil || m.Config.Path != path || m.FailurePolicy() != config.FailurePolicyIgnore {
		t.Fatalf("NodePorts served by %+v", m)
	}
}

// TestModuleLoadsAreCounted: each configured module's load is counted
// under its name and outcome, and the probe instance every load makes is
// gone from module_instances afterwards.
func TestModuleLoadsAreCounted(t *testing.T) {
	path, _ := writeModule(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Modules = []config.ModuleSpec{{Name: "broken", Path: path, SHA256: strings.Repeat("0", 64)}}
	if _, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Metrics: m}); err == nil {
		t.Fatal("a module with a wrong pin loaded")
	}
	cfg.Modules = nil
	r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if r.Metrics() != m {
		t.Error("the registry does not hand its metrics on to the profiles' pools")
	}
	loads := func(module, result string) float64 {
		return testmetrics.Value(t, reg, "wasmsched_module_loads_total", testmetrics.Labels{"module": module, "result": result})
	}
	// The builtin loaded twice (once beside the broken module), the broken one failed once.
	if got := loads("default", metrics.LoadSuccess); got != 2 {
		t.Errorf("default loaded %v times, want 2", got)
	}
	if got := loads("broken", metrics.LoadError); got != 1 {
		t.Errorf("broken failed %v times, want 1", got)
	}
	if got := loads("broken", metrics.LoadSuccess); got != 0 {
		t.Errorf("broken loaded %v times, want 0", got)
	}
	if got := testmetrics.Value(t, reg, "wasmsched_module_instances", testmetrics.Labels{"module": "default"}); got != 0 {
		t.Errorf("%v live instances after loading, want 0 (the probe is closed)", got)
	}
}

// TestEvictionBundleHasItsOwnMemoryLimit: the builtin eviction bundle,
// which mirrors every pod with its observation, gets EvictionMemoryLimit
// when its entry sets no memoryLimit (the other bundles keep the runtime's
// 64 MiB), and an entry's memoryLimit still sets it; its pools know it
// collects its garbage, so growing to that limit does not get its
// instance replaced.
func TestEvictionBundleHasItsOwnMemoryLimit(t *testing.T) {
	limits := func(t *testing.T, mods ...config.ModuleSpec) map[string]uint64 {
		t.Helper()
		cfg := config.Default()
		cfg.Modules = mods
		cfg.Eviction = &config.Eviction{Policies: []config.EvictionPolicy{{Plugin: "NodePressure"}}}
		r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close(context.Background())
		got := map[string]uint64{}
		for _, m := range r.Modules() {
			inst, err := m.Backend.NewInstance(context.Background())
			if err != nil {
				t.Fatalf("module %q: %v", m.Config.Name, err)
			}
			lm, ok := inst.(guest.LinearMemory)
			if !ok {
				t.Fatalf("module %q: %T has no linear memory", m.Config.Name, inst)
			}
			_, got[m.Config.Name] = lm.MemoryBytes()
			inst.Close(context.Background())
			// The eviction bundle collects its garbage, the default one
			// leaks (Compiled.Collects).
			if want := m.Config.Name == config.BuiltinEvictionModule; m.Collects() != want {
				t.Errorf("module %q: Collects() = %v, want %v", m.Config.Name, m.Collects(), want)
			}
		}
		return got
	}
	got := limits(t)
	if got[config.BuiltinEvictionModule] != EvictionMemoryLimit || got[config.BuiltinDefaultModule] != wasm.DefaultMemoryBytes {
		t.Errorf("memory limits %v, want eviction %d and default %d", got, EvictionMemoryLimit, wasm.DefaultMemoryBytes)
	}
	q := resource.MustParse("32Mi")
	got = limits(t, config.ModuleSpec{Name: config.BuiltinEvictionModule, MemoryLimit: &q})
	if got[config.BuiltinEvictionModule] != 32<<20 {
		t.Errorf("eviction memoryLimit 32Mi: limit %d", got[config.BuiltinEvictionModule])
	}
}
