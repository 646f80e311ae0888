// Package config reads wasmsched's configuration: YAML a kube-scheduler
// user recognises (KubeSchedulerConfiguration's profiles, plugins and
// pluginConfig) plus a `modules` list saying where plugins' Wasm comes
// from. Load checks what can be checked without loading modules and names
// the offending field in every error; checks that need the modules'
// manifests (unknown plugins, extension points) happen when profiles are
// built, with the same field paths.
package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmsched/wasmsched/host/internal/yamlcheck"
)

// Kind and API version of the configuration document.
const (
	APIVersion = "wasmsched.io/v1alpha1"
	Kind       = "WasmSchedulerConfiguration"
)

// DefaultSchedulerName is the profile pods get when they name none, as in
// Kubernetes.
const DefaultSchedulerName = "default-scheduler"

// IsBuiltinModule reports whether name is one of the embedded bundles: a
// module entry of that name without a path sets the bundle's options
// (limits, runtime, failure policy) instead of replacing it.
func IsBuiltinModule(name string) bool {
	return name == BuiltinDefaultModule || name == BuiltinEvictionModule || name == BuiltinKnativeModule
}

// BuiltinDefaultModule names the embedded default policy bundle.
const BuiltinDefaultModule = "default"

// BuiltinEvictionModule names the embedded default eviction policies
// (ResourceOvercommit, NodePressure, UsageThreshold), loaded when the
// eviction section lists policies.
const BuiltinEvictionModule = "eviction"

// BuiltinKnativeModule names the embedded Knative vpod policies (the ten
// predicates and priorities of Knative Eventing v1.16.0), loaded when the
// vpod section configures a scheduler.
const BuiltinKnativeModule = "knative"

// Configuration is the whole file.
type Configuration struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// PercentageOfNodesToScore applies to profiles that set none; 0 means
	// kube-scheduler's adaptive default.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	// PodInitialBackoffSeconds and PodMaxBackoffSeconds shape the queue's
	// backoff (defaults 1 and 10).
	PodInitialBackoffSeconds *int64 `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64 `json:"podMaxBackoffSeconds,omitempty"`
	// Modules are the Wasm modules plugins come from; the builtin
	// "default" bundle is always available unless a module takes its name.
	Modules  []ModuleSpec `json:"modules,omitempty"`
	Profiles []Profile    `json:"profiles,omitempty"`
	// Eviction configures the eviction coordinator; nil runs none.
	Eviction *Eviction `json:"eviction,omitempty"`
	// VPod configures Knative-style vpod schedulers; nil runs none.
	VPod *VPod `json:"vpod,omitempty"`
	// LeaderElection and ClientConnection are kube-scheduler's settings
	// of the same names, which serve honours (a flag given on the command
	// line wins over them); nil leaves serve's flags and defaults.
	LeaderElection   *LeaderElection   `json:"leaderElection,omitempty"`
	ClientConnection *ClientConnection `json:"clientConnection,omitempty"`

	// source and lines say where the configuration was read from, so
	// errors found after parsing can name the line (see Position).
	source string
	lines  yamlcheck.Lines
	// warnings are what a KubeSchedulerConfiguration asked for that
	// wasmsched leaves out rather than refuses (see Warnings);
	// kubeFormat says the file was one.
	warnings   []string
	kubeFormat bool
}

// FailurePolicy says what a cycle does when a module's plugin fails
// (traps, times out, returns Error).
type FailurePolicy string

const (
	// FailurePolicyFail makes the plugin's failure the cycle's: the pod is
	// retried after backoff. The default, as in kube-scheduler.
	FailurePolicyFail FailurePolicy = "Fail"
	// FailurePolicyIgnore treats a failed filter as passing and a failed
	// score as zero.
	FailurePolicyIgnore FailurePolicy = "Ignore"
)

// ModuleSpec is one Wasm module.
type ModuleSpec struct {
	Name string `json:"name"`
	// Path of the .wasm file, relative to the configuration file's
	// directory unless absolute; empty only for the builtin module or a
	// module from a registry (Image).
	Path string `json:"path,omitempty"`
	// Image is an OCI reference to pull the module from instead of Path:
	// REGISTRY/REPO@sha256:DIGEST (immutable: pulled once, cached by
	// digest) or REGISTRY/REPO:TAG (with a SHA256 pin, or pullPolicy
	// Always to accept whatever the tag names). See ImageSource.
	Image string `json:"image,omitempty"`
	// PullPolicy, PullSecret, CAFile and FailStrategy say how Image is
	// pulled and what a failed pull does; they need Image.
	PullPolicy PullPolicy `json:"pullPolicy,omitempty"`
	// PullSecret is a kubernetes.io/dockerconfigjson file (a mounted
	// Secret's .dockerconfigjson key) with the registry's credentials,
	// relative to the configuration file's directory unless absolute.
	PullSecret string `json:"pullSecret,omitempty"`
	// CAFile is a PEM bundle of CAs the registry's certificate is checked
	// against (besides the system's), for a registry with a private CA.
	CAFile string `json:"caFile,omitempty"`
	// FailStrategy says what a module that cannot be pulled or verified
	// does to the configuration: FailClose (default) refuses it, FailOpen
	// runs without the module's plugins, loudly. A digest or sha256
	// mismatch never runs either way.
	FailStrategy FailStrategy `json:"failStrategy,omitempty"`
	// SHA256 pins the module's content (hex): the file's, or the Wasm
	// bytes pulled from Image; content that differs is refused.
	SHA256 string `json:"sha256,omitempty"`
	// MemoryLimit caps each instance's memory, as a quantity ("64Mi").
	// Unset: 64 MiB, or 256 MiB for the builtin eviction bundle, which
	// mirrors every pod (modules.EvictionMemoryLimit). TinyGo guests grow
	// their memory by doubling it, so they use at most the largest power
	// of two under the limit.
	MemoryLimit *resource.Quantity `json:"memoryLimit,omitempty"`
	// CallTimeout is each call's deadline, as a duration ("250ms"). The
	// host's pushes of its state (sync, observe, vpod_topology) get
	// guest.PushAllowance of their size on top: moving the cluster into
	// an instance is the host's work, not the policy's.
	CallTimeout Duration `json:"callTimeout,omitempty"`
	// FailurePolicy: Fail (default) or Ignore; the default of the
	// module's plugins.
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
	// Plugins sets options of single plugins of the module, by plugin
	// name (e.g. `plugins: {MyFilter: {failurePolicy: Ignore}}`); the
	// names must be plugins the module declares.
	Plugins map[string]ModulePlugin `json:"plugins,omitempty"`
	// PoolSize caps the instances kept per profile; 0 means GOMAXPROCS.
	PoolSize int `json:"poolSize,omitempty"`
	// Runtime is the Wasm runtime that runs the module: wazero (the
	// default, pure Go) or wasmtime (Cranelift-compiled code, in binaries
	// built with the wasmtime tag; see docs/PERFORMANCE.md for when it
	// pays).
	Runtime string `json:"runtime,omitempty"`
}

// PullPolicy says when a module's image is pulled, as a pod's
// imagePullPolicy does.
type PullPolicy string

const (
	// PullIfNotPresent uses the local cache when it holds the content
	// (the digest, or the sha256 pin of a tag) and pulls otherwise: the
	// default for a digest or a pinned tag.
	PullIfNotPresent PullPolicy = "IfNotPresent"
	// PullAlways resolves the reference at the registry at every load and
	// every module poll interval: the default for an unpinned tag, which
	// must ask for it explicitly. Pinned content still falls back to the
	// cache when the registry cannot be reached.
	PullAlways PullPolicy = "Always"
	// PullNever uses only the cache (filled by an earlier pull or by
	// `wasmsched plugin pull --cache`).
	PullNever PullPolicy = "Never"
)

// FailStrategy says what a module that cannot be fetched or verified does
// to its configuration (at start and at a reload).
type FailStrategy string

const (
	// FailClose refuses the configuration: serve does not start, a reload
	// is refused and the running configuration keeps serving.
	FailClose FailStrategy = "FailClose"
	// FailOpen runs without the module: its plugins are left out of the
	// profiles that enable them, with an error log, the metric
	// wasmsched_module_fetch_failures_total and a /readyz detail.
	FailOpen FailStrategy = "FailOpen"
)

// EffectivePullPolicy is the entry's pull policy with its default:
// IfNotPresent for a digest or a pinned tag, Always otherwise.
func (m *ModuleSpec) EffectivePullPolicy() PullPolicy {
	if m.PullPolicy != "" {
		return m.PullPolicy
	}
	if src, err := ParseImage(m.Image); err == nil && src.Digest == "" && m.SHA256 == "" {
		return PullAlways
	}
	return PullIfNotPresent
}

// EffectiveFailStrategy is the entry's fail strategy, FailClose unless
// it says FailOpen.
func (m *ModuleSpec) EffectiveFailStrategy() FailStrategy {
	if m.FailStrategy == FailOpen {
		return FailOpen
	}
	return FailClose
}

// Wasm runtimes a module entry may name.
const (
	RuntimeWazero   = "wazero"
	RuntimeWasmtime = "wasmtime"
)

// ModulePlugin is one plugin's options in its module's entry.
type ModulePlugin struct {
	// FailurePolicy overrides the module's for this plugin.
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`
}

// PluginFailurePolicy is the failure policy of one of the module's
// plugins: its own, else the module's, else Fail.
func (m *ModuleSpec) PluginFailurePolicy(plugin string) FailurePolicy {
	if p := m.Plugins[plugin].FailurePolicy; p != "" {
		return p
	}
	if m.FailurePolicy != "" {
		return m.FailurePolicy
	}
	return FailurePolicyFail
}

// ModuleRef is one module entry of the configuration and where it was
// written.
type ModuleRef struct {
	// Field is the entry's path: "modules[0]", "profiles[1].modules[0]"
	// or "profiles[1].shadow.modules[0]".
	Field string
	// Profile is the field path of the profile that owns the module
	// ("profiles[1]", "profiles[1].shadow"), "" for a global module.
	Profile string
	Module  *ModuleSpec
}

// AllModules lists every module entry, the global ones first, then each
// profile's and its shadow's, in file order: what a pin check or a file
// watch must cover.
func (c *Configuration) AllModules() []ModuleRef {
	var out []ModuleRef
	for i := range c.Modules {
		out = append(out, ModuleRef{Field: fmt.Sprintf("modules[%d]", i), Module: &c.Modules[i]})
	}
	add := func(p *Profile, field string) {
		for k := range p.Modules {
			out = append(out, ModuleRef{Field: fmt.Sprintf("%s.modules[%d]", field, k), Profile: field, Module: &p.Modules[k]})
		}
	}
	for i := range c.Profiles {
		p := &c.Profiles[i]
		add(p, fmt.Sprintf("profiles[%d]", i))
		if p.Shadow != nil {
			add(p.Shadow, fmt.Sprintf("profiles[%d].shadow", i))
		}
	}
	return out
}

// ModulePaths lists the files of every module entry (AllModules): module
// files, and the pull secrets and CA files of modules from images, the
// files whose change may change what runs: what a reload watches.
func (c *Configuration) ModulePaths() []string {
	var ps []string
	for _, m := range c.AllModules() {
		for _, p := range []string{m.Module.Path, m.Module.PullSecret, m.Module.CAFile} {
			if p != "" {
				ps = append(ps, p)
			}
		}
	}
	return ps
}

// ModuleImages lists the entries whose module comes from an image.
func (c *Configuration) ModuleImages() []ModuleRef {
	var out []ModuleRef
	for _, m := range c.AllModules() {
		if m.Module.Image != "" {
			out = append(out, m)
		}
	}
	return out
}

// Profile is one scheduler profile, selected by pods' spec.schedulerName.
type Profile struct {
	SchedulerName            string         `json:"schedulerName"`
	PercentageOfNodesToScore *int32         `json:"percentageOfNodesToScore,omitempty"`
	Plugins                  *Plugins       `json:"plugins,omitempty"`
	PluginConfig             []PluginConfig `json:"pluginConfig,omitempty"`
	// Modules are Wasm modules only this profile sees, besides the global
	// ones: two profiles may each take a plugin of the same name from a
	// module of their own. A module named like a builtin bundle
	// ("default") replaces that bundle in this profile only. Names must
	// differ from the global modules' and from each other; a plugin must
	// be served by one module only among those the profile sees. A
	// shadow sees its own modules and the global ones, not its profile's.
	Modules []ModuleSpec `json:"modules,omitempty"`
	// Shadow is a candidate policy evaluated next to this profile: for
	// every pod this profile schedules, the shadow profile (same shape;
	// any module's plugins) decides too, off the scheduling goroutine and
	// on the same cluster state, and the two decisions are compared
	// (wasmsched_shadow_decisions_total, /debug/shadow). A shadow never
	// binds, nominates or preempts. Its schedulerName only names it in
	// logs (default: this profile's name + "/shadow").
	Shadow *Profile `json:"shadow,omitempty"`
}

// ShadowName is the name a profile's shadow goes by in logs and errors.
func (p *Profile) ShadowName() string {
	if p.Shadow != nil && p.Shadow.SchedulerName != "" {
		return p.Shadow.SchedulerName
	}
	return p.SchedulerName + "/shadow"
}

// Plugins says which plugins run at each extension point, on top of the
// defaults: MultiPoint enables a plugin at every point it implements.
type Plugins struct {
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
	QueueSort  PluginSet `json:"queueSort,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	Permit     PluginSet `json:"permit,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
	Bind       PluginSet `json:"bind,omitempty"`
	PostBind   PluginSet `json:"postBind,omitempty"`
}

// Points lists the extension points in the order a cycle runs them, with
// their YAML names, for code that walks them all.
func (p *Plugins) Points() []NamedSet {
	return []NamedSet{
		{"multiPoint", &p.MultiPoint}, {"queueSort", &p.QueueSort}, {"preFilter", &p.PreFilter},
		{"filter", &p.Filter}, {"postFilter", &p.PostFilter}, {"preScore", &p.PreScore},
		{"score", &p.Score}, {"reserve", &p.Reserve}, {"permit", &p.Permit},
		{"preBind", &p.PreBind}, {"bind", &p.Bind}, {"postBind", &p.PostBind},
	}
}

// NamedSet is an extension point's YAML name and its set.
type NamedSet struct {
	Name string
	Set  *PluginSet
}

// PluginSet adds (Enabled) and removes (Disabled; "*" removes all the
// defaults) plugins at one extension point.
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin, with a weight at the score point.
type Plugin struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight,omitempty"`
}

// PluginConfig holds one plugin's args, passed to its module's init.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// MaxWeight bounds score weights, so weight × 100 × plugins stays far from
// overflow and no plugin can drown the others by accident.
const MaxWeight = 100

// Duration is a time.Duration written as "250ms" in YAML.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"250ms\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Error is a configuration problem at a field path such as
// "profiles[1].plugins.score.enabled[0].weight", with the file and line
// it was written on when they are known.
type Error struct {
	File  string // the configuration file as given, "" if parsed from bytes
	Line  int    // 1-based; 0 if unknown
	Field string
	Msg   string
}

// Error reads "profiles.yaml:12: profiles[1].plugins.filter.enable: unknown field".
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found, so a user fixes them in one go.
type Errors []*Error

// Error is the one problem as Error reads it, or, for several, a line
// saying how many followed by one indented line each: a configuration
// with many mistakes stays readable in a terminal and in a log.
func (es Errors) Error() string {
	if len(es) == 1 {
		return es[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(es))
	for _, e := range es {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find each *Error.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Default is the configuration used with no file: one profile named
// default-scheduler with the builtin module's plugins at kube-scheduler's
// default weights.
func Default() *Configuration {
	return &Configuration{APIVersion: APIVersion, Kind: Kind, Profiles: []Profile{{SchedulerName: DefaultSchedulerName}}}
}

// Validate checks everything that needs no module loaded.
func (c *Configuration) Validate() error {
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, &Error{File: c.source, Line: c.lines.Find(field), Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if c.APIVersion != APIVersion {
		add("apiVersion", "must be %q, not %q", APIVersion, c.APIVersion)
	}
	if c.Kind != Kind {
		add("kind", "must be %q, not %q", Kind, c.Kind)
	}
	checkPercentage(c.PercentageOfNodesToScore, "percentageOfNodesToScore", add)
	checkBackoff(c.PodInitialBackoffSeconds, "podInitialBackoffSeconds", add)
	checkBackoff(c.PodMaxBackoffSeconds, "podMaxBackoffSeconds", add)
	checkBackoffOrder(c.PodInitialBackoffSeconds, c.PodMaxBackoffSeconds, add)

	moduleNames := map[string]int{}
	for i := range c.Modules {
		m := &c.Modules[i]
		f := fmt.Sprintf("modules[%d]", i)
		if checkModuleName(m.Name, f, add) {
			if j, dup := moduleNames[m.Name]; dup {
				add(f+".name", "%q is already used by modules[%d]", m.Name, j)
			}
			moduleNames[m.Name] = i
		}
		checkModule(m, f, add)
	}

	if len(c.Profiles) == 0 && c.Eviction == nil && c.VPod == nil {
		add("profiles", "at least one profile is required (a configuration with an eviction or vpod section may have none)")
	}
	names := map[string]int{}
	for i, p := range c.Profiles {
		f := fmt.Sprintf("profiles[%d]", i)
		if p.SchedulerName == "" {
			add(f+".schedulerName", "must not be empty")
		} else if j, dup := names[p.SchedulerName]; dup {
			add(f+".schedulerName", "duplicate %q (also profiles[%d])", p.SchedulerName, j)
		} else {
			names[p.SchedulerName] = i
		}
		checkProfileBody(&p, f, add)
		checkProfileModules(&p, f, moduleNames, add)
		if p.Shadow != nil {
			checkProfileBody(p.Shadow, f+".shadow", add)
			checkProfileModules(p.Shadow, f+".shadow", moduleNames, add)
			if p.Shadow.Shadow != nil {
				add(f+".shadow.shadow", "a shadow profile cannot have a shadow of its own")
			}
		}
	}
	checkCommonQueueSort(c.Profiles, add)
	checkEviction(c.Eviction, add)
	checkVPod(c.VPod, add)
	checkLeaderElection(c.LeaderElection, add)
	checkClientConnection(c.ClientConnection, add)
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// checkModuleName checks a module's name (f is the module's field path)
// and reports whether it can be compared with other names.
func checkModuleName(name, f string, add func(field, format string, a ...any)) bool {
	switch {
	case name == "":
		add(f+".name", "must not be empty")
	case strings.ContainsAny(name, "/ "):
		add(f+".name", "%q must not contain '/' or spaces", name)
	default:
		return true
	}
	return false
}

// checkProfileModules checks a profile's own modules: names unique within
// the profile and distinct from the global modules' (global maps each
// global module's name to its index), settings as for a global module.
func checkProfileModules(p *Profile, f string, global map[string]int, add func(field, format string, a ...any)) {
	own := map[string]int{}
	for k := range p.Modules {
		m := &p.Modules[k]
		mf := fmt.Sprintf("%s.modules[%d]", f, k)
		if checkModuleName(m.Name, mf, add) {
			if j, dup := global[m.Name]; dup {
				add(mf+".name", "%q is already the name of modules[%d]; give the profile's module a name of its own, or use the global one", m.Name, j)
			} else if j, dup := own[m.Name]; dup {
				add(mf+".name", "%q is already used by %s.modules[%d]", m.Name, f, j)
			}
			own[m.Name] = k
		}
		checkModule(m, mf, add)
	}
}

// checkModule checks one module entry's settings (f is its field path).
func checkModule(m *ModuleSpec, f string, add func(field, format string, a ...any)) {
	switch {
	case m.Path != "" && m.Image != "":
		add(f+".image", "a module comes from a path or an image, not both")
	case m.Image != "":
		checkImage(m, f, add)
	case m.Path == "" && !IsBuiltinModule(m.Name):
		add(f+".path", "must not be empty (only a builtin module, %s, %s or %s, may leave it out to set its options; or give an image)",
			BuiltinDefaultModule, BuiltinEvictionModule, BuiltinKnativeModule)
	case m.Path == "" && m.SHA256 != "":
		add(f+".sha256", "pins a file, and the builtin module %q has no path", m.Name)
	}
	if m.Image == "" {
		for _, o := range []struct{ name, val string }{{"pullPolicy", string(m.PullPolicy)}, {"pullSecret", m.PullSecret},
			{"caFile", m.CAFile}, {"failStrategy", string(m.FailStrategy)}} {
			if o.val != "" {
				add(f+"."+o.name, "applies to a module from an image; this module has no image")
			}
		}
	}
	if m.SHA256 != "" && !isHex64(m.SHA256) {
		add(f+".sha256", "must be 64 hex digits")
	}
	if m.MemoryLimit != nil && (m.MemoryLimit.Value() < 1<<20 || m.MemoryLimit.Value() > 4<<30) {
		add(f+".memoryLimit", "%s is outside 1Mi..4Gi", m.MemoryLimit.String())
	}
	if m.CallTimeout.Duration < 0 || m.CallTimeout.Duration > time.Minute {
		add(f+".callTimeout", "%s is outside 0..1m", m.CallTimeout)
	}
	if m.FailurePolicy != "" && m.FailurePolicy != FailurePolicyFail && m.FailurePolicy != FailurePolicyIgnore {
		add(f+".failurePolicy", "must be Fail or Ignore, not %q", m.FailurePolicy)
	}
	for name, mp := range m.Plugins {
		if mp.FailurePolicy != "" && mp.FailurePolicy != FailurePolicyFail && mp.FailurePolicy != FailurePolicyIgnore {
			add(fmt.Sprintf("%s.plugins.%s.failurePolicy", f, name), "must be Fail or Ignore, not %q", mp.FailurePolicy)
		}
	}
	if m.PoolSize < 0 || m.PoolSize > MaxPoolSize {
		add(f+".poolSize", "%d is outside 0..%d (0 means GOMAXPROCS)", m.PoolSize, MaxPoolSize)
	}
	if m.Runtime != "" && m.Runtime != RuntimeWazero && m.Runtime != RuntimeWasmtime {
		add(f+".runtime", "must be %s or %s, not %q", RuntimeWazero, RuntimeWasmtime, m.Runtime)
	}
}

// checkProfileBody checks what a profile and a shadow profile share:
// percentage, plugin lists and pluginConfig (f is the field path).
func checkProfileBody(p *Profile, f string, add func(field, format string, a ...any)) {
	checkPercentage(p.PercentageOfNodesToScore, f+".percentageOfNodesToScore", add)
	if p.Plugins != nil {
		for _, ns := range p.Plugins.Points() {
			checkPluginSet(ns, f+".plugins."+ns.Name, add)
		}
		checkOneQueueSortEnabled(p.Plugins.QueueSort, f+".plugins.queueSort", add)
	}
	seen := map[string]int{}
	for k, pc := range p.PluginConfig {
		pf := fmt.Sprintf("%s.pluginConfig[%d]", f, k)
		if pc.Name == "" {
			add(pf+".name", "must not be empty")
		} else if j, dup := seen[pc.Name]; dup {
			add(pf+".name", "duplicate %q (also pluginConfig[%d])", pc.Name, j)
		}
		seen[pc.Name] = k
		checkArgsObject(pc.Args, pf+".args", add)
	}
}

// DefaultQueueSort is the queue sort every profile uses unless it names
// another (priority, then enqueue time).
const DefaultQueueSort = "PrioritySort"

// MaxBackoffSeconds bounds both backoff settings: a day is already far
// past any useful retry interval, and it keeps seconds × time.Second far
// from int64 overflow (which would make the backoff negative).
const MaxBackoffSeconds = 24 * 60 * 60

// MaxPoolSize bounds a module's instances per profile: each may hold up
// to the module's memoryLimit, and the pool's channels are allocated up
// front at this size.
const MaxPoolSize = 256

// DefaultPodInitialBackoffSeconds and DefaultPodMaxBackoffSeconds are the
// queue's backoff when the file sets none, as in kube-scheduler.
const (
	DefaultPodInitialBackoffSeconds = 1
	DefaultPodMaxBackoffSeconds     = 10
)

func checkBackoff(s *int64, field string, add func(string, string, ...any)) {
	if s != nil && (*s <= 0 || *s > MaxBackoffSeconds) {
		add(field, "%d is outside 1..%d seconds", *s, MaxBackoffSeconds)
	}
}

func checkPercentage(p *int32, field string, add func(string, string, ...any)) {
	if p != nil && (*p < 0 || *p > 100) {
		add(field, "%d is outside 0..100", *p)
	}
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
