package modules

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
)

// TestModuleRuntimeSelection: a module entry picks its runtime; one this
// binary lacks, or an unknown one, is a load error naming the field, and
// the same bytes on two runtimes are two compilations.
func TestModuleRuntimeSelection(t *testing.T) {
	path, _ := writeModule(t)
	r, err := load(t, config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: path, Runtime: config.RuntimeWazero})
	if err != nil {
		t.Fatalf("runtime wazero: %v", err)
	}
	if m := r.PluginModule("NodeAffinity"); m == nil || m.Config.Runtime != config.RuntimeWazero {
		t.Fatal("NodeAffinity is not served by the module on wazero")
	}
	_, err = load(t, config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: path, Runtime: "v8"})
	if err == nil || !strings.Contains(err.Error(), `modules[0].runtime: unknown runtime "v8"`) {
		t.Fatalf("unknown runtime: err = %v", err)
	}
	_, err = load(t, config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: path, Runtime: config.RuntimeWasmtime})
	has := false
	for _, n := range Runtimes() {
		has = has || n == config.RuntimeWasmtime
	}
	switch {
	case has && err != nil:
		t.Fatalf("runtime wasmtime in a binary that has it: %v", err)
	case !has && (err == nil || !strings.Contains(err.Error(), "modules[0].runtime: this wasmsched binary was built without the wasmtime runtime")):
		t.Fatalf("runtime wasmtime in a binary without it: err = %v", err)
	}
}

func TestConfigRefusesAnUnknownRuntime(t *testing.T) {
	_, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: SchedulerConfiguration\nmodules:\n- name: m\n  path: m.wasm\n  runtime: v8\n"))
	if err == nil || !strings.Contains(err.Error(), "modules[0].runtime: must be wazero or wasmtime") {
		t.Fatalf("err = %v", err)
	}
}

// TestBuiltinEntryWithoutPathSetsItsOptions: `{name: default, runtime:
// ...}` runs the embedded bundle with the entry's options.
func TestBuiltinEntryWithoutPathSetsItsOptions(t *testing.T) {
	r, err := load(t, config.ModuleSpec{Name: config.BuiltinDefaultModule, Runtime: config.RuntimeWazero, FailurePolicy: config.FailurePolicyIgnore})
	if err != nil {
		t.Fatal(err)
	}
	m := r.PluginModule("NodeAffinity")
	if m == nil || m.FailurePolicy() != config.FailurePolicyIgnore {
		t.Fatalf("the builtin bundle did not take the entry's options: %+v", m)
	}
	_, err = config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: SchedulerConfiguration\nmodules:\n- name: mine\n"))
	if err == nil || !strings.Contains(err.Error(), "modules[0].path: must not be empty") {
		t.Fatalf("a non-builtin module without a path: err = %v", err)
	}
}

// TestDefaultRuntimeFollowsTheBinary: modules whose entry names no
// runtime, and the builtin bundles, run on the fastest runtime the binary
// has (wasmtime when built with it), or on Options.Runtime when set; an
// entry's own runtime wins over both; a runtime the binary lacks in
// Options.Runtime fails the load.
func TestDefaultRuntimeFollowsTheBinary(t *testing.T) {
	want := config.RuntimeWazero
	for _, n := range Runtimes() {
		if n == config.RuntimeWasmtime {
			want = config.RuntimeWasmtime
		}
	}
	if DefaultRuntime() != want {
		t.Fatalf("DefaultRuntime() = %q with runtimes %v; want %q", DefaultRuntime(), Runtimes(), want)
	}
	path, _ := writeModule(t)
	loadWith := func(rt string, mods ...config.ModuleSpec) (*Registry, error) {
		cfg := config.Default()
		cfg.Modules = mods
		r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), Runtime: rt})
		if r != nil {
			t.Cleanup(func() { r.Close(context.Background()) })
		}
		return r, err
	}
	r, err := loadWith("")
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Modules()[0].Runtime; got != want {
		t.Errorf("the builtin bundle runs on %q; want the binary's default %q", got, want)
	}
	r, err = loadWith(config.RuntimeWazero, config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range r.Modules() {
		if m.Runtime != config.RuntimeWazero {
			t.Errorf("with Options.Runtime wazero module %q runs on %q", m.Config.Name, m.Runtime)
		}
	}
	r, err = loadWith(DefaultRuntime(), config.ModuleSpec{Name: config.BuiltinDefaultModule, Path: path, Runtime: config.RuntimeWazero})
	if err != nil {
		t.Fatal(err)
	}
	if m := r.byName[config.BuiltinDefaultModule]; m == nil || m.Runtime != config.RuntimeWazero {
		t.Errorf("the entry's runtime: wazero did not win over Options.Runtime: %+v", m)
	}
	if _, err := loadWith("v8"); err == nil || !strings.Contains(err.Error(), `unknown runtime "v8"`) {
		t.Errorf("Options.Runtime v8: err = %v", err)
	}
	if r, err := Load(context.Background(), config.Default(), Options{CacheDir: t.TempDir(), NativeBuiltin: true}); err != nil || r.Modules()[0].Runtime != "native" {
		t.Errorf("native twin: runtime %v, err %v", r, err)
	} else {
		r.Close(context.Background())
	}
}
