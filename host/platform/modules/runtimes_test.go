package modules

import (
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
