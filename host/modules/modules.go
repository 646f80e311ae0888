// Package modules turns the `modules` section of the configuration into
// compiled, validated policy modules: it reads each file (or the embedded
// default bundle), checks its sha256 pin, compiles it once, reads its
// manifest, and indexes which module serves which plugin. Profiles then
// make their own instance pools from these (one per profile, since each
// profile may give the same plugin different args).
package modules

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/native"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/wasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
)

// MaxModuleBytes bounds a module file. The builtin bundle of every
// default plugin is well under 1 MiB; 64 MiB leaves room for modules in
// heavier languages while refusing, before compiling, a path such as
// /dev/zero that would otherwise be read until memory runs out. A module
// path must name a regular file (a FIFO or device is refused at once).
const MaxModuleBytes = 64 << 20

// Module is one compiled module and what its manifest says.
type Module struct {
	Config   config.Module
	Backend  policy.Backend
	Manifest abi.Manifest
}

// FailurePolicy is the module's failure policy, defaulted: what its
// plugins without one of their own use.
func (m *Module) FailurePolicy() config.FailurePolicy {
	if m.Config.FailurePolicy == "" {
		return config.FailurePolicyFail
	}
	return m.Config.FailurePolicy
}

// PluginFailurePolicy is one plugin's failure policy: its own
// (modules[].plugins[name].failurePolicy), else the module's, else Fail.
func (m *Module) PluginFailurePolicy(plugin string) config.FailurePolicy {
	return m.Config.PluginFailurePolicy(plugin)
}

// HostPluginNames are the plugins the host itself provides (the queue
// sort, the binder, preemption). A module may not declare a plugin of
// one of these names: resolving the name to the module would replace or
// disable the host's plugin in every profile, whether or not a profile
// asked for the module.
var HostPluginNames = []string{config.DefaultQueueSort, "DefaultBinder", "DefaultPreemption"}

// Registry holds the compiled modules of one configuration.
type Registry struct {
	runtime *wasm.Runtime
	modules []*Module
	byName  map[string]*Module
	plugins map[string]*Module // plugin name -> module serving it
	metrics *metrics.Metrics
	log     hclog.Logger
}

// Options tune how modules are run.
type Options struct {
	// CacheDir for compiled code; empty uses wasm.DefaultCacheDir.
	CacheDir string
	// NativeBuiltin runs the builtin default bundle as a native twin
	// instead of Wasm: the baseline the benchmarks compare against.
	NativeBuiltin bool
	Log           hclog.Logger
	// Metrics counts module loads here, and guest traps, deadlines and
	// instances in every pool made from these modules (see Metrics).
	// Nil counts nothing.
	Metrics *metrics.Metrics
	// Backends serve configured modules in-process, by module name,
	// instead of compiling their path: for tests that need a guest
	// misbehaving in ways a real build cannot, and for embedders with
	// native twins. Everything else (manifest checks, plugin names,
	// profiles) is as for a file.
	Backends map[string]policy.Backend
}

// Load compiles every module of cfg, plus the builtin default bundle
// unless a module takes its name. Errors name the module's field.
func Load(ctx context.Context, cfg *config.Configuration, opts Options) (*Registry, error) {
	log := opts.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	dir := opts.CacheDir
	if dir == "" {
		dir = wasm.DefaultCacheDir()
	}
	rt, err := wasm.NewRuntime(dir, log)
	if err != nil {
		return nil, err
	}
	r := &Registry{runtime: rt, byName: map[string]*Module{}, plugins: map[string]*Module{}, metrics: opts.Metrics, log: log}
	fail := func(err error) (*Registry, error) {
		r.Close(ctx)
		return nil, err
	}
	mods := cfg.Modules
	builtinOverridden := false
	for _, m := range mods {
		if m.Name == config.BuiltinDefaultModule {
			builtinOverridden = true
		}
	}
	if !builtinOverridden {
		if err := r.add(ctx, -1, config.Module{Name: config.BuiltinDefaultModule}, opts); err != nil {
			return fail(err)
		}
	}
	for i, m := range mods {
		if err := r.add(ctx, i, m, opts); err != nil {
			return fail(err)
		}
	}
	for _, m := range r.modules {
		if err := checkPluginNames(m); err != nil {
			return fail(err)
		}
		for _, p := range m.Manifest.Plugins {
			if other, dup := r.plugins[p.Name]; dup {
				return fail(fmt.Errorf("plugin %q is served by both module %q and module %q; a plugin name must be unique",
					p.Name, other.Config.Name, m.Config.Name))
			}
			r.plugins[p.Name] = m
		}
	}
	return r, nil
}

// checkPluginNames refuses a module that declares a host plugin's name,
// and per-plugin options for plugins the module does not declare.
func checkPluginNames(m *Module) error {
	for _, p := range m.Manifest.Plugins {
		for _, h := range HostPluginNames {
			if p.Name == h {
				return fmt.Errorf("module %q declares plugin %q, the name of a plugin the host provides (%s); rename the plugin",
					m.Config.Name, p.Name, strings.Join(HostPluginNames, ", "))
			}
		}
	}
	names := make([]string, 0, len(m.Config.Plugins))
	for name := range m.Config.Plugins {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if m.Manifest.Plugin(name) < 0 {
			declared := make([]string, len(m.Manifest.Plugins))
			for i, p := range m.Manifest.Plugins {
				declared[i] = p.Name
			}
			return fmt.Errorf("module %q: plugins.%s: the module declares no such plugin (it declares %s)",
				m.Config.Name, name, strings.Join(declared, ", "))
		}
	}
	return nil
}

// add loads one module and counts the load's outcome.
func (r *Registry) add(ctx context.Context, idx int, mc config.Module, opts Options) (err error) {
	defer func() { r.metrics.ModuleLoaded(mc.Name, err) }()
	field := fmt.Sprintf("modules[%d]", idx)
	lim := wasm.Limits{CallTimeout: mc.CallTimeout.Duration}
	if mc.MemoryLimit != nil {
		lim.MemoryBytes = uint64(mc.MemoryLimit.Value())
	}
	var backend policy.Backend
	switch {
	case idx >= 0 && opts.Backends[mc.Name] != nil:
		backend = opts.Backends[mc.Name]
	case idx < 0 && opts.NativeBuiltin:
		backend = native.New(opts.Log, defaults.Plugins()...)
	case idx < 0:
		b, err := r.runtime.Compile(ctx, mc.Name, dist.DefaultWasm, lim)
		if err != nil {
			return fmt.Errorf("builtin module: %w", err)
		}
		backend = b
	default:
		bin, err := boundedread.ReadFile(mc.Path, MaxModuleBytes, boundedread.Regular, "a Wasm module")
		if err != nil {
			return fmt.Errorf("%s.path: %w", field, err)
		}
		if mc.SHA256 != "" {
			sum := sha256.Sum256(bin)
			if got := hex.EncodeToString(sum[:]); !strings.EqualFold(got, mc.SHA256) {
				return fmt.Errorf("%s.sha256: %s has sha256 %s, but the configuration pins %s", field, mc.Path, got, mc.SHA256)
			}
		}
		b, err := r.runtime.Compile(ctx, mc.Name, bin, lim)
		if err != nil {
			return fmt.Errorf("%s (%s): %w", field, mc.Path, err)
		}
		backend = b
	}
	// Probe: load once with default args to validate and read the manifest.
	probe, err := policy.Load(ctx, backend, policy.Config{Name: mc.Name, PoolSize: 1, Metrics: r.metrics})
	if err != nil {
		backend.Close(ctx)
		if idx < 0 {
			return fmt.Errorf("builtin module: %w", err)
		}
		return fmt.Errorf("%s: %w", field, err)
	}
	m := &Module{Config: mc, Backend: backend, Manifest: *probe.Manifest()}
	probe.Close(ctx)
	r.modules = append(r.modules, m)
	r.byName[mc.Name] = m
	return nil
}

// Metrics are the metrics the registry was loaded with (nil if none): the
// profiles' pools count their guests' failures there.
func (r *Registry) Metrics() *metrics.Metrics { return r.metrics }

// Log is the logger the registry was loaded with (never nil): profiles
// log their plugins' ignored failures there.
func (r *Registry) Log() hclog.Logger { return r.log }

// PluginModule returns the module serving a plugin, or nil.
func (r *Registry) PluginModule(plugin string) *Module { return r.plugins[plugin] }

// PluginNames lists every plugin the modules serve, sorted.
func (r *Registry) PluginNames() []string {
	names := make([]string, 0, len(r.plugins))
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Close releases every module and the runtime.
func (r *Registry) Close(ctx context.Context) {
	for _, m := range r.modules {
		m.Backend.Close(ctx)
	}
	r.runtime.Close(ctx)
}
