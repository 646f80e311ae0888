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
	"errors"
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
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/oci"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// MaxModuleBytes bounds a module file. The builtin bundle of every
// default plugin is well under 1 MiB; 64 MiB leaves room for modules in
// heavier languages while refusing, before compiling, a path such as
// /dev/zero that would otherwise be read until memory runs out. A module
// path must name a regular file (a FIFO or device is refused at once).
const MaxModuleBytes = 64 << 20

// Compiled is one compiled module and what its manifest says.
type Compiled struct {
	Config   config.ModuleSpec
	Backend  guest.Backend
	Manifest abi.Manifest
	// SHA256 is the hex digest of the module's bytes ("" for a backend
	// given in Options.Backends or the native twin): what
	// wasmsched_module_info reports and what a reload compares.
	SHA256 string
	// ImageManifest is the digest of the manifest a module from an image
	// came from ("" for a file, or when the cache answered by the sha256
	// pin alone): what a poll of a moved tag compares.
	ImageManifest string
	// Runtime runs the module's code: wazero or wasmtime (the entry's
	// runtime, else Options.Runtime, else DefaultRuntime), "native" for
	// the builtin bundles' native twins, "" for a backend given in
	// Options.Backends. What the load log line reports.
	Runtime string

	shared *sharedBackend
}

// Collects reports whether the module's guest is known to collect its
// garbage, which its pools are told (guest.PoolConfig.Collects): the builtin
// eviction and knative bundles, built with TinyGo's precise collector.
// The builtin default bundle leaks by design, and a module from a file
// may: both are replaced before their memory's last doubling.
func (m *Compiled) Collects() bool { return m.shared.collects }

// CompiledID identifies a module's compiled code: equal for the entries
// of successive registries that share it (see Options.Previous), so that
// profiles can tell when a reload left a module unchanged.
type CompiledID struct{ b *sharedBackend }

// ID returns the identity of the module's compiled code.
func (m *Compiled) ID() CompiledID { return CompiledID{m.shared} }

// sharedBackend is a compiled module that successive registries share
// when a reload leaves it unchanged: it is closed when the last registry
// holding it is closed.
type sharedBackend struct {
	backend  guest.Backend
	key      backendKey
	collects bool // see Compiled.Collects
	refs     atomic.Int32
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
	runtime      string
	timeout      time.Duration
	memory       int64
	native       bool
}

// sharedRuntime is the Wasm runtimes successive registries share.
type sharedRuntime struct {
	c    *compilers
	refs atomic.Int32
}

func (r *sharedRuntime) release(ctx context.Context) {
	if r.refs.Add(-1) == 0 {
		r.c.close(ctx)
	}
}

// FailurePolicy is the module's failure policy, defaulted: what its
// plugins without one of their own use.
func (m *Compiled) FailurePolicy() config.FailurePolicy {
	if m.Config.FailurePolicy == "" {
		return config.FailurePolicyFail
	}
	return m.Config.FailurePolicy
}

// PluginFailurePolicy is one plugin's failure policy: its own
// (modules[].plugins[name].failurePolicy), else the module's, else Fail.
func (m *Compiled) PluginFailurePolicy(plugin string) config.FailurePolicy {
	return m.Config.PluginFailurePolicy(plugin)
}

// HostPluginNames are the plugins the host itself provides (the queue
// sort, the binder, preemption). A module may not declare a plugin of
// one of these names: resolving the name to the module would replace or
// disable the host's plugin in every profile, whether or not a profile
// asked for the module.
var HostPluginNames = []string{config.DefaultQueueSort, "DefaultBinder", "DynamicResources", "DefaultPreemption"}

// Registry holds the compiled modules of one configuration.
type Registry struct {
	runtime *sharedRuntime
	modules []*Compiled          // global and profiles' modules, in load order
	byName  map[string]*Compiled // global modules by name
	plugins map[string]*Compiled // plugin name -> global module serving it
	// scopes are the profiles (and shadows) with modules of their own,
	// by field path ("profiles[1]", "profiles[1].shadow").
	scopes map[string]*scope
	// unavailable are the FailOpen modules that could not be fetched or
	// verified, which this registry runs without.
	unavailable []Unavailable
	metrics     *metrics.Metrics
	log         hclog.Logger
	closed      bool
}

// scope is what one profile with modules of its own sees besides the
// global modules.
type scope struct {
	plugins map[string]*Compiled // plugin name -> the profile's module serving it
	// hidden are the global modules a profile's module replaces by
	// taking their name (a builtin bundle): their plugins are not seen.
	hidden map[*Compiled]bool
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
	Backends map[string]guest.Backend
	// Fetcher pulls modules that name an image; nil pulls with a fetcher
	// caching in OCICacheDir.
	Fetcher *oci.Fetcher
	// OCICacheDir holds modules pulled from registries, by digest; empty
	// uses oci.DefaultCacheDir.
	OCICacheDir string
	// Runtime runs the modules whose entry names no runtime, and the
	// builtin bundles: wazero or wasmtime (serve's and simulate's
	// --runtime). Empty: DefaultRuntime, the fastest this binary has. A
	// runtime the binary lacks fails Load with an error naming it.
	Runtime string
	// Previous is the registry a reload replaces: modules whose bytes,
	// name and limits are unchanged reuse its compiled code (and its
	// wazero runtime) instead of being compiled again. Previous stays
	// usable and must still be closed.
	Previous *Registry
}

// Load compiles every module of cfg, plus the builtin default bundle,
// the builtin eviction bundle when the eviction section lists policies,
// and the builtin knative bundle when the vpod section configures a
// scheduler, each unless a module takes its name; then each profile's own
// modules (see ProfilePluginModule). Errors name the module's field.
func Load(ctx context.Context, cfg *config.Configuration, opts Options) (*Registry, error) {
	log := opts.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if opts.Runtime != "" {
		if err := CheckRuntime(opts.Runtime); err != nil {
			return nil, fmt.Errorf("the runtime for modules that name none: %w", err)
		}
	}
	var rt *sharedRuntime
	if opts.Previous != nil {
		rt = opts.Previous.runtime
	} else {
		dir := opts.CacheDir
		if dir == "" {
			dir = wasm.DefaultCacheDir()
		}
		rt = &sharedRuntime{c: &compilers{dir: dir, log: log}}
	}
	rt.refs.Add(1)
	r := &Registry{runtime: rt, byName: map[string]*Compiled{}, plugins: map[string]*Compiled{}, scopes: map[string]*scope{}, metrics: opts.Metrics, log: log}
	fail := func(err error) (*Registry, error) {
		r.Close(ctx)
		return nil, err
	}
	if opts.Fetcher == nil {
		dir := opts.OCICacheDir
		if dir == "" {
			dir = oci.DefaultCacheDir()
		}
		opts.Fetcher = oci.NewFetcher(oci.FetcherOptions{CacheDir: dir, MaxBytes: MaxModuleBytes, Log: log.Named("oci")})
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
		m, err := r.add(ctx, fmt.Sprintf("builtin module %q", name), true, config.ModuleSpec{Name: name}, opts)
		if err != nil {
			return fail(err)
		}
		r.byName[name] = m
	}
	for i, mc := range mods {
		// A builtin bundle's entry without a path sets its options.
		builtin := mc.Path == "" && mc.Image == "" && config.IsBuiltinModule(mc.Name)
		m, err := r.add(ctx, fmt.Sprintf("modules[%d]", i), builtin, mc, opts)
		if r.failOpen(mc, "", err) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		r.byName[mc.Name] = m
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
	if err := r.loadProfileModules(ctx, cfg, opts); err != nil {
		return fail(err)
	}
	return r, nil
}

// loadProfileModules loads the modules profiles (and shadows) list for
// themselves and indexes, per profile, which of them serves each plugin.
// A profile's module named like a global one that Load made implicitly
// (a builtin bundle) replaces it in that profile; any other plugin the
// profile would see twice is refused, naming both modules.
func (r *Registry) loadProfileModules(ctx context.Context, cfg *config.Configuration, opts Options) error {
	type loaded struct {
		ref config.ModuleRef
		m   *Compiled
	}
	var all []loaded
	for _, ref := range cfg.AllModules() {
		if ref.Profile == "" {
			continue
		}
		m, err := r.add(ctx, ref.Field, ref.Module.Path == "" && ref.Module.Image == "" && config.IsBuiltinModule(ref.Module.Name), *ref.Module, opts)
		if r.failOpen(*ref.Module, ref.Profile, err) {
			continue
		}
		if err != nil {
			return err
		}
		if err := checkPluginNames(m); err != nil {
			return fmt.Errorf("%s: %w", ref.Field, err)
		}
		all = append(all, loaded{ref, m})
		sc := r.scopes[ref.Profile]
		if sc == nil {
			sc = &scope{plugins: map[string]*Compiled{}, hidden: map[*Compiled]bool{}}
			r.scopes[ref.Profile] = sc
		}
		if g := r.byName[m.Config.Name]; g != nil {
			sc.hidden[g] = true // validation allows this for builtins only
		}
	}
	field := map[*Compiled]string{}
	for _, l := range all {
		sc := r.scopes[l.ref.Profile]
		field[l.m] = l.ref.Field
		for _, p := range l.m.Manifest.Plugins {
			if other, dup := sc.plugins[p.Name]; dup {
				return fmt.Errorf("%s: plugin %q is served by both %s (module %q) and this module (%q); a plugin name must be unique among a profile's modules",
					l.ref.Field, p.Name, field[other], other.Config.Name, l.m.Config.Name)
			}
			if g := r.plugins[p.Name]; g != nil && !sc.hidden[g] {
				fix := "rename the plugin, or list the global module only in the profiles that need it"
				if g.Config.Path == "" && g.Config.Image == "" {
					fix = fmt.Sprintf("name the module %q to replace that builtin bundle in this profile, or rename the plugin", g.Config.Name)
				}
				return fmt.Errorf("%s: plugin %q is also served by the global module %q, which %s sees too; a profile's module may not redeclare a plugin the profile already has: %s",
					l.ref.Field, p.Name, g.Config.Name, l.ref.Profile, fix)
			}
			sc.plugins[p.Name] = l.m
		}
	}
	return nil
}

// FetchError is a module from an image that could not be pulled or
// verified: what failStrategy decides about.
type FetchError struct {
	Field, Module string
	Err           error
}

func (e *FetchError) Error() string { return fmt.Sprintf("%s.image: %v", e.Field, e.Err) }

func (e *FetchError) Unwrap() error { return e.Err }

// Unavailable is a module with failStrategy FailOpen that a registry runs
// without.
type Unavailable struct {
	// Field is the module's entry ("modules[2]"), Profile the scope it
	// was listed in ("" for a global module).
	Field, Profile, Module string
	Err                    error
}

// failOpen reports whether err is a fetch failure of a FailOpen module,
// which the registry then runs without (recorded, logged and counted).
func (r *Registry) failOpen(mc config.ModuleSpec, profile string, err error) bool {
	var fe *FetchError
	if err == nil || !errors.As(err, &fe) {
		return false
	}
	if mc.EffectiveFailStrategy() != config.FailOpen {
		return false
	}
	r.unavailable = append(r.unavailable, Unavailable{Field: fe.Field, Profile: profile, Module: mc.Name, Err: fe.Err})
	r.log.Error("module unavailable; failStrategy FailOpen: running without its plugins", "module", mc.Name, "image", mc.Image, "field", fe.Field, "error", fe.Err)
	return true
}

// Unavailable lists the FailOpen modules this registry runs without.
func (r *Registry) Unavailable() []Unavailable { return r.unavailable }

// UnavailableIn reports whether a FailOpen module the profile (its field
// path, "" for the global scope) would see is unavailable: a plugin no
// module serves may then be that module's, and is left out instead of
// refused.
func (r *Registry) UnavailableIn(profile string) []Unavailable {
	var out []Unavailable
	for _, u := range r.unavailable {
		if u.Profile == "" || u.Profile == profile {
			out = append(out, u)
		}
	}
	return out
}

// UnavailableNames lists, comma-separated, the FailOpen modules scope
// would see that are unavailable (UnavailableIn), for the log line of a
// plugin left out because no module serves it; "" when there are none or
// r is nil.
func (r *Registry) UnavailableNames(scope string) string {
	if r == nil {
		return ""
	}
	var names []string
	for _, u := range r.UnavailableIn(scope) {
		names = append(names, u.Module)
	}
	return strings.Join(names, ", ")
}

// checkPluginNames refuses a module that declares a host plugin's name,
// and per-plugin options for plugins the module does not declare.
func checkPluginNames(m *Compiled) error {
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

// add loads one module (field names it in errors; builtin: an embedded
// bundle), records it and counts the load's outcome.
func (r *Registry) add(ctx context.Context, field string, builtin bool, mc config.ModuleSpec, opts Options) (_ *Compiled, err error) {
	reused := false
	defer func() {
		if !reused {
			r.metrics.ModuleLoaded(mc.Name, err)
		}
	}()
	key := backendKey{name: mc.Name, timeout: mc.CallTimeout.Duration, runtime: mc.Runtime}
	if key.runtime == "" {
		key.runtime = opts.Runtime
	}
	if key.runtime == "" {
		key.runtime = DefaultRuntime()
	}
	switch {
	case mc.MemoryLimit != nil:
		key.memory = mc.MemoryLimit.Value()
	case builtin:
		key.memory = builtinMemoryLimit(mc.Name)
	}
	var bin []byte
	var manifest string
	var given guest.Backend
	switch {
	case !builtin && opts.Backends[mc.Name] != nil:
		given = opts.Backends[mc.Name]
	case builtin && opts.NativeBuiltin:
		key.native = true
	case builtin:
		bin, key.digest, _ = builtinModule(mc.Name)
	case mc.Image != "":
		mod, ferr := opts.Fetcher.Fetch(ctx, &mc)
		if ferr != nil {
			r.metrics.ModuleFetchFailed(mc.Name)
			return nil, &FetchError{Field: field, Module: mc.Name, Err: ferr}
		}
		bin, key.digest, manifest = mod.Bytes, mod.SHA256, mod.Manifest
		if mod.Cached {
			r.log.Debug("module from the cache", "module", mc.Name, "image", mc.Image, "sha256", mod.SHA256)
		} else {
			r.log.Info("module pulled", "module", mc.Name, "image", mc.Image, "manifest", mod.Manifest, "sha256", mod.SHA256)
		}
	default:
		if bin, err = boundedread.ReadFile(mc.Path, MaxModuleBytes, boundedread.Regular, "a Wasm module"); err != nil {
			return nil, fmt.Errorf("%s.path: %w", field, err)
		}
		sum := sha256.Sum256(bin)
		key.digest = hex.EncodeToString(sum[:])
		if mc.SHA256 != "" && !strings.EqualFold(key.digest, mc.SHA256) {
			return nil, fmt.Errorf("%s.sha256: %s has sha256 %s, but the configuration pins %s", field, mc.Path, key.digest, mc.SHA256)
		}
	}
	if given == nil {
		// The same module listed by two profiles, or kept by a reload,
		// is compiled once.
		prev := r.sharedFor(key)
		if prev == nil && opts.Previous != nil {
			prev = opts.Previous.sharedFor(key)
		}
		if prev != nil {
			prev.shared.refs.Add(1)
			reused = true
			m := &Compiled{Config: mc, Backend: prev.Backend, Manifest: prev.Manifest, SHA256: prev.SHA256, Runtime: prev.Runtime, shared: prev.shared}
			m.ImageManifest = manifest
			r.modules = append(r.modules, m)
			return m, nil
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
		comp, err := r.runtime.c.get(key.runtime)
		if err != nil {
			return nil, fmt.Errorf("%s.runtime: %w", field, err)
		}
		b, err := comp.Compile(ctx, mc.Name, bin, lim)
		if err != nil {
			if builtin {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			src := mc.Path
			if src == "" {
				src = mc.Image
			}
			return nil, fmt.Errorf("%s (%s): %w", field, src, err)
		}
		backend = b
	}
	// Probe: load once with default args to validate and read the manifest.
	probe, err := guest.Load(ctx, backend, guest.PoolConfig{Name: mc.Name, PoolSize: 1, Metrics: r.metrics})
	if err != nil {
		backend.Close(ctx)
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	m := &Compiled{Config: mc, Backend: backend, Manifest: *probe.Manifest(), SHA256: key.digest, ImageManifest: manifest,
		Runtime: key.runtime, shared: &sharedBackend{backend: backend, key: key, collects: builtin && builtinCollects(mc.Name)}}
	probe.Close(ctx)
	m.shared.refs.Add(1)
	switch {
	case given != nil:
		m.shared.key = backendKey{} // never reused: the caller owns its lifetime
		m.Runtime = ""
	case key.native:
		m.Runtime = "native"
	}
	r.log.Info("module loaded", "module", mc.Name, "field", field, "runtime", m.Runtime, "sha256", key.digest)
	r.modules = append(r.modules, m)
	return m, nil
}

// sharedFor returns the module compiled from key, if this registry has
// one a reload may reuse.
func (r *Registry) sharedFor(key backendKey) *Compiled {
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
func (r *Registry) Modules() []*Compiled { return r.modules }

// Metrics are the metrics the registry was loaded with (nil if none): the
// profiles' pools count their guests' failures there.
func (r *Registry) Metrics() *metrics.Metrics { return r.metrics }

// Log is the logger the registry was loaded with (never nil): profiles
// log their plugins' ignored failures there.
func (r *Registry) Log() hclog.Logger { return r.log }

// PluginModule returns the global module serving a plugin, or nil: what
// every profile sees unless it has modules of its own (see
// ProfilePluginModule), and what eviction and vpod policies use.
func (r *Registry) PluginModule(plugin string) *Compiled { return r.plugins[plugin] }

// PluginNames lists every plugin the global modules serve, sorted.
func (r *Registry) PluginNames() []string {
	names := make([]string, 0, len(r.plugins))
	for n := range r.plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ProfilePluginModule returns the module serving a plugin in one profile,
// or nil. profile is the profile's field path as errors name it
// ("profiles[1]", or "profiles[1].shadow" for its shadow): the profile's
// own modules first, then the global ones it has not replaced. A profile
// without modules of its own sees the global ones, as PluginModule.
func (r *Registry) ProfilePluginModule(profile, plugin string) *Compiled {
	sc := r.scopes[profile]
	if sc == nil {
		return r.plugins[plugin]
	}
	if m := sc.plugins[plugin]; m != nil {
		return m
	}
	if m := r.plugins[plugin]; m != nil && !sc.hidden[m] {
		return m
	}
	return nil
}

// ProfilePluginNames lists every plugin one profile sees, sorted (see
// ProfilePluginModule).
func (r *Registry) ProfilePluginNames(profile string) []string {
	sc := r.scopes[profile]
	if sc == nil {
		return r.PluginNames()
	}
	var names []string
	for n, m := range r.plugins {
		if !sc.hidden[m] {
			names = append(names, n)
		}
	}
	for n := range sc.plugins {
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
