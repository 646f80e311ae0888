package modules

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
)

type namedFilter struct{ name string }

func (p namedFilter) Name() string { return p.name }
func (namedFilter) Filter(*plugin.CycleState, *abi.Pod, *plugin.NodeInfo) *plugin.Status {
	return plugin.NewStatus(abi.UnschedulableAndUnresolvable, "no")
}

// filterModule is a module of filter plugins with the given names.
func filterModule(names ...string) guest.Backend {
	var regs []plugin.Registration
	for _, n := range names {
		regs = append(regs, plugin.Registration{Name: n,
			New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return namedFilter{n}, nil }})
	}
	return native.New(nil, regs...)
}

func loadBackends(t *testing.T, backends map[string]guest.Backend, mods ...config.ModuleSpec) (*Registry, error) {
	t.Helper()
	cfg := config.Default()
	cfg.Modules = mods
	r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), NativeBuiltin: true, Backends: backends})
	if r != nil {
		t.Cleanup(func() { r.Close(context.Background()) })
	}
	return r, err
}

// TestHostPluginNamesAreRefused: a module that merely declares a plugin
// named like a host plugin would take it over (or disable it) in every
// profile, so loading refuses it, naming module and plugin.
func TestHostPluginNamesAreRefused(t *testing.T) {
	for _, name := range HostPluginNames {
		t.Run(name, func(t *testing.T) {
			_, err := loadBackends(t, map[string]guest.Backend{"evil": filterModule("Fine", name)},
				config.ModuleSpec{Name: "evil", Path: "in-process"})
			want := `module "evil" declares plugin "` + name + `", the name of a plugin the host provides`
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want it to contain %q", err, want)
			}
		})
	}
}

// TestPerPluginOptionsNameDeclaredPlugins: modules[].plugins may only
// name plugins the module declares; a plugin's failurePolicy overrides
// the module's.
func TestPerPluginOptionsNameDeclaredPlugins(t *testing.T) {
	_, err := loadBackends(t, map[string]guest.Backend{"m": filterModule("A")},
		config.ModuleSpec{Name: "m", Path: "in-process", Plugins: map[string]config.ModulePlugin{"B": {FailurePolicy: config.FailurePolicyIgnore}}})
	if err == nil || !strings.Contains(err.Error(), `module "m": plugins.B: the module declares no such plugin (it declares A)`) {
		t.Fatalf("err = %v", err)
	}
	r, err := loadBackends(t, map[string]guest.Backend{"m": filterModule("A", "B")},
		config.ModuleSpec{Name: "m", Path: "in-process", FailurePolicy: config.FailurePolicyIgnore,
			Plugins: map[string]config.ModulePlugin{"B": {FailurePolicy: config.FailurePolicyFail}}})
	if err != nil {
		t.Fatal(err)
	}
	m := r.PluginModule("A")
	if got := m.PluginFailurePolicy("A"); got != config.FailurePolicyIgnore {
		t.Errorf("A: %s, want the module's Ignore", got)
	}
	if got := m.PluginFailurePolicy("B"); got != config.FailurePolicyFail {
		t.Errorf("B: %s, want its own Fail", got)
	}
}

func TestPluginFailurePolicyValueIsChecked(t *testing.T) {
	_, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- {name: m, path: m.wasm, plugins: {A: {failurePolicy: Maybe}}}
profiles: [{schedulerName: s}]
`))
	if err == nil || !strings.Contains(err.Error(), `modules[0].plugins.A.failurePolicy`) || !strings.Contains(err.Error(), `must be Fail or Ignore, not "Maybe"`) {
		t.Fatalf("err = %v", err)
	}
}
