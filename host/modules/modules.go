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
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/native"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/wasm"
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
	// SHA256 is the hex digest of the module's bytes ("" for a backend
	// given in Options.Backends or the native twin): what
	// wasmsched_module_info reports and what a reload compares.
	SHA256 string

	shared *sharedBackend
}

// CompiledID identifies a module's compiled code: equal for the entries
// of successive registries that share it (see Options.Previous), so that
// profiles can tell when a reload left a module unchanged.
type CompiledID struct{ b *sharedBackend }

// Compiled returns the identity of the module's compiled code.
func (m *Module) Compiled() CompiledID { return CompiledID{m.shared} }

// sharedBackend is a compiled module that successive registries share
// when a reload leaves it unchanged: it is closed when the last registry
// holding it is closed.
type sharedBackend struct {
	backend policy.Backend
	key     backendKey
	refs    atomic.Int32
}

func (b *sharedBackend) release(ctx context.Context) {
	if b.refs.Add(-1) == 0 {
		b.backend.Close(ctx)
	}
}

// backendKey is what makes two module entries the same compiled module:
// the same bytes compiled under the same limits, under the same name
// (which tags its logs and metrics).
type backendKey struct {
	name, digest string
	timeout      time.Duration
	memory       int64
	native       bool
}

// sharedRuntime is the wazero runtime successive registries share.
type sharedRuntime struct {
	rt   *wasm.Runtime
	refs atomic.Int32
}

func (r *sharedRuntime) release(ctx context.Context) {
	if r.refs.Add(-1) == 0 {
		r.rt.Close(ctx)
	}
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
	runtime *sharedRuntime
	modules []*Module
	byName  map[string]*Module
	plugins map[string]*Module // plugin name -> module serving it
	metrics *metrics.Metrics
	log     hclog.Logger
	closed  bool
}

// Options tune how modules are run.
type Options struct {
	// CacheDir for compiled code; empty uses wasm.DefaultCacheDir.
	CacheDir string
	// NativeBuiltin runs the builtin bundles (default, eviction, knative) as
	// native twins instead of Wasm: the baseline the benchmarks compare
	// against.
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
	// Previous is the registry a reload replaces: modules whose bytes,
	// name and limits are unchanged reuse its compiled code (and its
	// wazero runtime) instead of being compiled again. Previous stays
	// usable and must still be closed.
	Previous *Registry
}

// Load compiles every module of cfg, plus the builtin default bundle,
// the builtin eviction bundle when the eviction section lists policies,
// and the builtin knative bundle when the vpod section configures a
// scheduler, each unless a module takes its name. Errors name the module's
// field.
func Load(ctx context.Context, cfg *config.Configuration, opts Options) (*Registry, error) {
	log := opts.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var rt *sharedRuntime
	if opts.Previous != nil {
		rt = opts.Previous.runtime
	} else {
		dir := opts.CacheDir
		if dir == "" {
			dir = wasm.DefaultCacheDir()
		}
		w, err := wasm.NewRuntime(dir, log)
		if err != nil {
			return nil, err
		}
		rt = &sharedRuntime{rt: w}
	}
	rt.refs.Add(1)
	r := &Registry{runtime: rt, byName: map[string]*Module{}, plugins: map[string]*Module{}, metrics: opts.Metrics, log: log}
	fail := func(err error) (*Registry, error) {
		r.Close(ctx)
		return nil, err
	}
	mods := cfg.Modules
	overridden := map[string]bool{}
	for _, m := range mods {
		overridden[m.Name] = true
	}
	builtins := []string{config.BuiltinDefaultModule}
	if len(cfg.Eviction.Defaulted().Policies) > 0 {
		builtins = append(builtins, config.BuiltinEvictionModule)
	}
	if cfg.HasVPod() {
		builtins = append(builtins, config.BuiltinKnativeModule)
	}
	for _, name := range builtins {
		if overridden[name] {
			continue
		}
		if err := r.add(ctx, -1, config.Module{Name: name}, opts); err != nil {
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
	reused := false
	defer func() {
		if !reused {
			r.metrics.ModuleLoaded(mc.Name, err)
		}
	}()
	field := fmt.Sprintf("modules[%d]", idx)
	if idx < 0 {
		field = fmt.Sprintf("builtin module %q", mc.Name)
	}
	key := backendKey{name: mc.Name, timeout: mc.CallTimeout.Duration}
	if mc.MemoryLimit != nil {
		key.memory = mc.MemoryLimit.Value()
	}
	var bin []byte
	var given policy.Backend
	switch {
	case idx >= 0 && opts.Backends[mc.Name] != nil:
		given = opts.Backends[mc.Name]
	case idx < 0 && opts.NativeBuiltin:
		key.native = true
	case idx < 0:
		bin, key.digest, _ = builtinModule(mc.Name)
	default:
		if bin, err = boundedread.ReadFile(mc.Path, MaxModuleBytes, boundedread.Regular, "a Wasm module"); err != nil {
			return fmt.Errorf("%s.path: %w", field, err)
		}
		sum := sha256.Sum256(bin)
		key.digest = hex.EncodeToString(sum[:])
		if mc.SHA256 != "" && !strings.EqualFold(key.digest, mc.SHA256) {
			return fmt.Errorf("%s.sha256: %s has sha256 %s, but the configuration pins %s", field, mc.Path, key.digest, mc.SHA256)
		}
	}
	if given == nil && opts.Previous != nil {
		if prev := opts.Previous.sharedFor(key); prev != nil {
			prev.shared.refs.Add(1)
			reused = true
			r.adopt(&Module{Config: mc, Backend: prev.Backend, Manifest: prev.Manifest, SHA256: prev.SHA256, shared: prev.shared})
			return nil
		}
	}
	backend := given
	switch {
	case given != nil:
	case key.native:
		_, _, twin := builtinModule(mc.Name)
		backend = native.New(opts.Log, twin...)
	default:
		lim := wasm.Limits{CallTimeout: mc.CallTimeout.Duration, MemoryBytes: uint64(key.memory)}
		b, err := r.runtime.rt.Compile(ctx, mc.Name, bin, lim)
		if err != nil {
			if idx < 0 {
				return fmt.Errorf("%s: %w", field, err)
			}
			return fmt.Errorf("%s (%s): %w", field, mc.Path, err)
		}
		backend = b
	}
	// Probe: load once with default args to validate and read the manifest.
	probe, err := policy.Load(ctx, backend, policy.Config{Name: mc.Name, PoolSize: 1, Metrics: r.metrics})
	if err != nil {
		backend.Close(ctx)
		return fmt.Errorf("%s: %w", field, err)
	}
	m := &Module{Config: mc, Backend: backend, Manifest: *probe.Manifest(), SHA256: key.digest,
		shared: &sharedBackend{backend: backend, key: key}}
	probe.Close(ctx)
	m.shared.refs.Add(1)
	if given != nil {
		m.shared.key = backendKey{} // never reused: the caller owns its lifetime
	}
	r.adopt(m)
	return nil
}

// adopt records a loaded module.
func (r *Registry) adopt(m *Module) {
	r.modules = append(r.modules, m)
	r.byName[m.Config.Name] = m
}

// sharedFor returns the module compiled from key, if this registry has
// one a reload may reuse.
func (r *Registry) sharedFor(key backendKey) *Module {
	if key.digest == "" && !key.native {
		return nil
	}
	for _, m := range r.modules {
		if m.shared.key == key {
			return m
		}
	}
	return nil
}

// Modules lists the registry's modules, the builtin bundle first unless
// a module replaces it.
func (r *Registry) Modules() []*Module { return r.modules }

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

// Close releases the registry's modules and runtime; what a later
// registry still shares (Options.Previous) stays open until that one is
// closed too.
func (r *Registry) Close(ctx context.Context) {
	if r.closed {
		return
	}
	r.closed = true
	for _, m := range r.modules {
		m.shared.release(ctx)
	}
	r.modules = nil
	r.runtime.release(ctx)
}
