package modules

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// loadProfiles loads a configuration whose profiles have modules of their
// own, served in-process by backends (the builtins as native twins).
func loadProfiles(t *testing.T, backends map[string]guest.Backend, profiles ...config.Profile) (*Registry, error) {
	t.Helper()
	cfg := config.Default()
	cfg.Profiles = profiles
	r, err := Load(context.Background(), cfg, Options{CacheDir: t.TempDir(), NativeBuiltin: true, Backends: backends})
	if r != nil {
		t.Cleanup(func() { r.Close(context.Background()) })
	}
	return r, err
}

func inProcess(name string) config.ModuleSpec {
	return config.ModuleSpec{Name: name, Path: "in-process"}
}

func servedBy(r *Registry, profile, plugin string) string {
	if m := r.ProfilePluginModule(profile, plugin); m != nil {
		return m.Config.Name
	}
	return ""
}

// TestProfilesTakeAPluginNameFromTheirOwnModules: two profiles each get
// "Foo" from their own module; a profile without modules does not see
// either, and every profile still sees the builtin bundle.
func TestProfilesTakeAPluginNameFromTheirOwnModules(t *testing.T) {
	r, err := loadProfiles(t, map[string]guest.Backend{"ma": filterModule("Foo"), "mb": filterModule("Foo", "Bar")},
		config.Profile{SchedulerName: "a", Modules: []config.ModuleSpec{inProcess("ma")}},
		config.Profile{SchedulerName: "b", Modules: []config.ModuleSpec{inProcess("mb")}},
		config.Profile{SchedulerName: "plain"},
		config.Profile{SchedulerName: "shadowed", Shadow: &config.Profile{Modules: []config.ModuleSpec{inProcess("mb")}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ profile, plugin, want string }{
		{"profiles[0]", "Foo", "ma"},
		{"profiles[1]", "Foo", "mb"},
		{"profiles[1]", "Bar", "mb"},
		{"profiles[0]", "Bar", ""},
		{"profiles[2]", "Foo", ""},
		{"profiles[3]", "Foo", ""},
		{"profiles[3].shadow", "Foo", "mb"},
		{"profiles[0]", "NodeResourcesFit", config.BuiltinDefaultModule},
		{"profiles[2]", "NodeResourcesFit", config.BuiltinDefaultModule},
	} {
		if got := servedBy(r, tc.profile, tc.plugin); got != tc.want {
			t.Errorf("%s: %s served by %q, want %q", tc.profile, tc.plugin, got, tc.want)
		}
	}
	if r.PluginModule("Foo") != nil {
		t.Error("a profile's plugin leaked into the global index")
	}
	if r.ProfilePluginModule("profiles[0]", "Foo") == r.ProfilePluginModule("profiles[1]", "Foo") {
		t.Error("both profiles got the same module for Foo")
	}
	names := strings.Join(r.ProfilePluginNames("profiles[1]"), ",")
	if !strings.Contains(names, "Bar,") || !strings.Contains(names, "Foo,") || !strings.Contains(names, "NodeResourcesFit") {
		t.Errorf("profiles[1] sees %s", names)
	}
	if strings.Contains(strings.Join(r.ProfilePluginNames("profiles[2]"), ","), "Foo") {
		t.Error("profiles[2] sees Foo")
	}
}

// TestProfileModuleNamedLikeABuiltinReplacesIt: a profile's module named
// "default" takes the builtin bundle's place in that profile only.
func TestProfileModuleNamedLikeABuiltinReplacesIt(t *testing.T) {
	r, err := loadProfiles(t, map[string]guest.Backend{config.BuiltinDefaultModule: filterModule("NodeResourcesFit", "Extra")},
		config.Profile{SchedulerName: "mine", Modules: []config.ModuleSpec{inProcess(config.BuiltinDefaultModule)}},
		config.Profile{SchedulerName: "theirs"},
	)
	if err != nil {
		t.Fatal(err)
	}
	mine, builtin := r.ProfilePluginModule("profiles[0]", "NodeResourcesFit"), r.ProfilePluginModule("profiles[1]", "NodeResourcesFit")
	if mine == nil || builtin == nil || mine == builtin || mine.Config.Path != "in-process" || builtin.Config.Path != "" {
		t.Fatalf("NodeResourcesFit: mine %+v, theirs %+v", mine, builtin)
	}
	if got := servedBy(r, "profiles[0]", "TaintToleration"); got != "" {
		t.Errorf("the replaced bundle's TaintToleration still served by %q", got)
	}
	if got := servedBy(r, "profiles[1]", "Extra"); got != "" {
		t.Errorf("the other profile sees Extra from %q", got)
	}
}

// TestProfileModuleConflictsNameTheField: a plugin must have one module
// among those a profile sees.
func TestProfileModuleConflictsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backends map[string]guest.Backend
		profiles []config.Profile
		want     string
	}{
		{"two modules of one profile", map[string]guest.Backend{"ma": filterModule("Foo"), "mb": filterModule("Foo")},
			[]config.Profile{{SchedulerName: "a"}, {SchedulerName: "b", Modules: []config.ModuleSpec{inProcess("ma"), inProcess("mb")}}},
			`profiles[1].modules[1]: plugin "Foo" is served by both profiles[1].modules[0] (module "ma") and this module ("mb")`},
		{"a shadow's two modules", map[string]guest.Backend{"ma": filterModule("Foo"), "mb": filterModule("Foo")},
			[]config.Profile{{SchedulerName: "a", Shadow: &config.Profile{Modules: []config.ModuleSpec{inProcess("ma"), inProcess("mb")}}}},
			`profiles[0].shadow.modules[1]: plugin "Foo" is served by both profiles[0].shadow.modules[0]`},
		{"a builtin plugin redeclared", map[string]guest.Backend{"fit": filterModule("NodeResourcesFit")},
			[]config.Profile{{SchedulerName: "a", Modules: []config.ModuleSpec{inProcess("fit")}}},
			`profiles[0].modules[0]: plugin "NodeResourcesFit" is also served by the global module "default", which profiles[0] sees too; ` +
				`a profile's module may not redeclare a plugin the profile already has: name the module "default" to replace that builtin bundle in this profile`},
		{"a host plugin's name", map[string]guest.Backend{"evil": filterModule("DefaultBinder")},
			[]config.Profile{{SchedulerName: "a", Modules: []config.ModuleSpec{inProcess("evil")}}},
			`profiles[0].modules[0]: module "evil" declares plugin "DefaultBinder", the name of a plugin the host provides`},
		{"a missing file", nil,
			[]config.Profile{{SchedulerName: "a", Modules: []config.ModuleSpec{{Name: "gone", Path: "/nonexistent.wasm"}}}},
			`profiles[0].modules[0].path: open /nonexistent.wasm`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadProfiles(t, tc.backends, tc.profiles...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// TestProfileModuleNamesAreChecked: validation refuses a profile's
// module named like a global one (which of the two would a log mean?) or
// like another of the profile's, and resolves its path like a global
// module's.
func TestProfileModuleNamesAreChecked(t *testing.T) {
	const head = "apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"a global module's name", head + "modules: [{name: m, path: a.wasm}]\nprofiles:\n- schedulerName: s\n  modules: [{name: m, path: b.wasm}]\n",
			`line 6: profiles[0].modules[0].name: "m" is already the name of modules[0]`},
		{"twice in one profile", head + "profiles:\n- schedulerName: s\n  modules: [{name: m, path: a.wasm}, {name: m, path: b.wasm}]\n",
			`profiles[0].modules[1].name: "m" is already used by profiles[0].modules[0]`},
		{"settings checked as a global module's", head + "profiles:\n- schedulerName: s\n  shadow:\n    modules: [{name: m, path: a.wasm, poolSize: -1}]\n",
			`profiles[0].shadow.modules[0].poolSize: -1 is outside 0..256`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
	// The same name in two profiles is fine: each is its profile's.
	c, err := config.Parse([]byte(head + "profiles:\n- schedulerName: a\n  modules: [{name: m, path: a.wasm}]\n- schedulerName: b\n  modules: [{name: m, path: b.wasm}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, ref := range c.AllModules() {
		fields = append(fields, ref.Field+"@"+ref.Profile)
	}
	if got := strings.Join(fields, " "); got != "profiles[0].modules[0]@profiles[0] profiles[1].modules[0]@profiles[1]" {
		t.Errorf("AllModules = %s", got)
	}
}

// TestProfileModulesShareCompiledCode: the same file listed by two
// profiles is compiled once, and a reload that keeps it reuses it.
func TestProfileModulesShareCompiledCode(t *testing.T) {
	root, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	mod := config.ModuleSpec{Name: "batch", Path: filepath.Join(root, "plugins-wasm/dist/batchpreemption.tinygo.wasm")}
	cfg := config.Default()
	cfg.Profiles = []config.Profile{{SchedulerName: "a", Modules: []config.ModuleSpec{mod}}, {SchedulerName: "b", Modules: []config.ModuleSpec{mod}}}
	opts := Options{CacheDir: t.TempDir(), NativeBuiltin: true}
	r, err := Load(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	a, b := r.ProfilePluginModule("profiles[0]", "BatchFirstPreemption"), r.ProfilePluginModule("profiles[1]", "BatchFirstPreemption")
	if a == nil || b == nil || a == b || a.ID() != b.ID() {
		t.Fatalf("profiles[0] %p, profiles[1] %p: want two entries sharing compiled code", a, b)
	}
	opts.Previous = r
	r2, err := Load(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close(context.Background())
	if c := r2.ProfilePluginModule("profiles[0]", "BatchFirstPreemption"); c == nil || c.ID() != a.ID() {
		t.Error("a reload compiled the unchanged profile module again")
	}
	// Closing the first registry leaves the second's (shared) code open.
	r.Close(context.Background())
	if _, order := preemptionCalls(t, r2.ProfilePluginModule("profiles[1]", "BatchFirstPreemption"), "BatchFirstPreemption"); len(order) == 0 {
		t.Error("the shared module stopped answering")
	}
}
