package framework

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/bind"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// DefaultPlugins is kube-scheduler's default multiPoint set with its
// weights and in its order (v1.37 runs NodeName before NodeUnschedulable),
// limited to the plugins wasmsched has. A default whose plugin
// no module or host provides is left out quietly (so a profile keeps
// working before a plugin is written); one a user names is an error.
var DefaultPlugins = []config.Plugin{
	{Name: config.DefaultQueueSort},
	{Name: "NodeName"},
	{Name: "NodeUnschedulable"},
	{Name: "TaintToleration", Weight: 3},
	{Name: "NodeAffinity", Weight: 2},
	{Name: "NodePorts"},
	{Name: "NodeResourcesFit", Weight: 1},
	{Name: "PodTopologySpread", Weight: 2},
	{Name: "InterPodAffinity", Weight: 2},
	{Name: DynamicResourcesName},
	{Name: "DefaultPreemption"},
	{Name: "NodeResourcesBalancedAllocation", Weight: 1},
	{Name: "ImageLocality", Weight: 1},
	{Name: "DefaultBinder"},
	// kube-scheduler appends it to the set (its feature gate is GA in
	// v1.37), so it filters after every other plugin.
	{Name: "NodeDeclaredFeatures"},
}

// HostPlugins maps a host plugin's name to the plugin. The scheduler
// builds it (the plugins need its binder, queue, cache).
type HostPlugins map[string]Plugin

// point is one extension point: its YAML name, the Wasm point bit (0 for
// host-only points) and how to tell whether a host plugin implements it.
type point struct {
	name string
	wasm abi.Point
	host func(Plugin) bool
}

var points = []point{
	{"queueSort", 0, func(p Plugin) bool { return p.Name() == config.DefaultQueueSort }},
	{"preFilter", abi.PointPreFilter, nil},
	{"filter", abi.PointFilter, nil},
	{"postFilter", 0, func(p Plugin) bool { _, ok := p.(PostFilterPlugin); return ok }},
	{"preScore", abi.PointPreScore, nil},
	{"score", abi.PointScore, nil},
	{"reserve", 0, func(p Plugin) bool { _, ok := p.(ReservePlugin); return ok }},
	{"permit", 0, func(p Plugin) bool { _, ok := p.(PermitPlugin); return ok }},
	{"preBind", 0, func(p Plugin) bool { _, ok := p.(PreBindPlugin); return ok }},
	{"bind", 0, func(p Plugin) bool { _, ok := p.(BindPlugin); return ok }},
	{"postBind", 0, func(p Plugin) bool { _, ok := p.(PostBindPlugin); return ok }},
}

// wasmPlugin is a Wasm plugin enabled in a profile.
type wasmPlugin struct {
	name   string
	module int // index into Profile.modules
	index  int // index in the module's manifest
	weight int64
	points abi.Point
	ignore bool                 // failurePolicy Ignore (the plugin's, else its module's)
	timer  *metrics.PluginTimer // this plugin at this point; nil: not timed
}

// profileModule is a module as one profile uses it: its own pool,
// initialised with this profile's args (entry i of Profile.pools for
// Profile.modules[i]).
type profileModule struct {
	mod  *modules.Compiled
	pool *guest.Pool
	// reused: the pool came from the previous profile (it served
	// already; a reload's canary need not exercise it).
	reused bool
}

// Profile is one scheduler profile, ready to run cycles.
type Profile struct {
	Name       string
	percentage int32 // 0: adaptive

	modules []*profileModule
	// pools hold the modules' pools: a reload that leaves a module, its
	// args and its pool size unchanged hands the pool (and its
	// instances' node mirrors) to the new profile.
	pools     *bind.Pools
	preFilter []wasmPlugin
	filter    []wasmPlugin
	preScore  []wasmPlugin
	score     []wasmPlugin

	postFilter []PostFilterPlugin
	reserve    []ReservePlugin
	permit     []PermitPlugin
	preBind    []PreBindPlugin
	bind       []BindPlugin
	postBind   []PostBindPlugin
	preEnqueue []queue.PreEnqueuePlugin

	// policies maps a preemption policy plugin's name to its module and
	// manifest index.
	policies map[string][2]int

	// metrics and failures record the failures failurePolicy Ignore lets
	// pass (wasmsched_plugin_ignored_failures_total, a rate-limited log).
	metrics  *metrics.Metrics
	failures *failureLog
}

// BuildProfile resolves profile idx of cfg against the modules and host
// plugins: the default plugin set, then the profile's multiPoint and
// per-point enabled/disabled lists, then pluginConfig args handed to the
// modules' init. Every error names the offending field.
func BuildProfile(ctx context.Context, cfg *config.Configuration, idx int, reg *modules.Registry, host HostPlugins) (*Profile, error) {
	return RebuildProfile(ctx, cfg, idx, reg, host, nil)
}

// RebuildProfile is BuildProfile for a reload: where prev (the running
// profile of the same name, or nil) has a pool of the same compiled
// module with the same args and size, the new profile shares it instead
// of making and initialising new instances, so their node mirrors are
// not sent again. prev stays usable and must still be closed.
func RebuildProfile(ctx context.Context, cfg *config.Configuration, idx int, reg *modules.Registry, host HostPlugins, prev *Profile) (*Profile, error) {
	return buildProfile(ctx, cfg, &cfg.Profiles[idx], cfg.Profiles[idx].SchedulerName, fmt.Sprintf("profiles[%d]", idx), reg, host, prev, false)
}

// BuildShadow builds the shadow of profile idx (nil when it has none),
// sharing prev's pools as RebuildProfile does. A shadow gets the host's
// queue sort and nothing else of the host: it never binds, nominates or
// preempts, so DefaultBinder and DefaultPreemption are left out of its
// defaults (and naming them is an error).
func BuildShadow(ctx context.Context, cfg *config.Configuration, idx int, reg *modules.Registry, host HostPlugins, prev *Profile) (*Profile, error) {
	pc := &cfg.Profiles[idx]
	if pc.Shadow == nil {
		return nil, nil
	}
	sortOnly := HostPlugins{}
	if qs, ok := host[config.DefaultQueueSort]; ok {
		sortOnly[config.DefaultQueueSort] = qs
	}
	return buildProfile(ctx, cfg, pc.Shadow, pc.ShadowName(), fmt.Sprintf("profiles[%d].shadow", idx), reg, sortOnly, prev, true)
}

// buildProfile builds one profile or, with shadow, a shadow profile
// (which needs neither a queue sort nor a binder: it sorts no queue and
// never binds).
func buildProfile(ctx context.Context, cfg *config.Configuration, pc *config.Profile, name, field string, reg *modules.Registry,
	host HostPlugins, prev *Profile, shadow bool) (*Profile, error) {
	prof := &Profile{Name: name, metrics: reg.Metrics(), failures: newFailureLog(reg.Log().With("profile", name)),
		pools: bind.New(bind.Options{RequireAll: true, Metrics: reg.Metrics()})}
	switch {
	case pc.PercentageOfNodesToScore != nil:
		prof.percentage = *pc.PercentageOfNodesToScore
	case cfg.PercentageOfNodesToScore != nil:
		prof.percentage = *cfg.PercentageOfNodesToScore
	}

	implements := func(name string, pt point) (known, ok bool) {
		if m := reg.ProfilePluginModule(field, name); m != nil {
			info := m.Manifest.Plugins[m.Manifest.Plugin(name)]
			return true, pt.wasm != 0 && info.Points.Has(pt.wasm)
		}
		if hp, found := host[name]; found {
			return true, pt.host != nil && pt.host(hp)
		}
		return false, false
	}
	known := func(name string) bool {
		k, _ := implements(name, points[0])
		return k
	}
	// A default comes from the host or the module named "default" (the
	// builtin bundle or a module replacing it), never from another
	// module: listing a module in `modules` changes no profile that does
	// not name its plugins.
	isDefault := func(name string) bool {
		if m := reg.ProfilePluginModule(field, name); m != nil {
			return m.Config.Name == config.BuiltinDefaultModule
		}
		_, ok := host[name]
		return ok
	}
	for name := range host {
		if m := reg.ProfilePluginModule(field, name); m != nil {
			return nil, fmt.Errorf("%s: module %q declares plugin %q, the name of a host plugin", field, m.Config.Name, name)
		}
	}
	unknown := func(f, name string) error {
		return fmt.Errorf("%s: unknown plugin %q (known: %s)", f, name, strings.Join(knownNames(reg, field, host), ", "))
	}
	if gone := reg.UnavailableNames(field); gone != "" {
		pc = withoutUnserved(pc, known, field, gone, reg.Log())
	}

	host, err := configureHostPlugins(pc, field, host)
	if err != nil {
		return nil, err
	}

	var plugins config.Plugins
	if pc.Plugins != nil {
		plugins = *pc.Plugins
	}
	// MultiPoint: the defaults, minus what multiPoint disables, plus what
	// it enables (a weight there overrides the default's).
	multi := []config.Plugin{}
	if !disablesAll(plugins.MultiPoint) {
		for _, d := range DefaultPlugins {
			if isDefault(d.Name) && !disables(plugins.MultiPoint, d.Name) {
				multi = append(multi, d)
			}
		}
	}
	for k, e := range plugins.MultiPoint.Enabled {
		if !known(e.Name) {
			return nil, unknown(fmt.Sprintf("%s.plugins.multiPoint.enabled[%d].name", field, k), e.Name)
		}
		multi = upsert(multi, e)
	}

	for _, pt := range points {
		set := pointSet(&plugins, pt.name)
		var list []config.Plugin
		if !disablesAll(*set) {
			for _, p := range multi {
				if _, ok := implements(p.Name, pt); ok && !disables(*set, p.Name) {
					list = append(list, p)
				}
			}
		}
		for k, e := range set.Enabled {
			f := fmt.Sprintf("%s.plugins.%s.enabled[%d].name", field, pt.name, k)
			isKnown, ok := implements(e.Name, pt)
			if !isKnown {
				return nil, unknown(f, e.Name)
			}
			if !ok {
				return nil, fmt.Errorf("%s: plugin %q does not implement %s", f, e.Name, pt.name)
			}
			list = upsert(list, e)
		}
		if err := prof.enable(pt, field, list, reg, host); err != nil {
			return nil, err
		}
		if !shadow {
			if err := checkRequiredPoint(pt, len(list), field, name, host); err != nil {
				return nil, err
			}
		}
	}
	if err := prof.resolvePolicies(field, reg); err != nil {
		return nil, err
	}
	if err := prof.initModules(ctx, pc, field, reg, known, unknown, prev); err != nil {
		prof.Close(ctx)
		return nil, err
	}
	return prof, nil
}

// checkRequiredPoint applies kube-scheduler's refusals of a profile
// without the plugins every cycle needs (NewFramework's "only one queue
// sort plugin required" and "at least one bind plugin is needed"): such a
// profile would accept pods and fail each one at bind, so it is refused
// when built, at start and at a reload, which then keeps the running
// configuration. n is the number of plugins enabled at pt; field and name
// are the profile's path and schedulerName.
func checkRequiredPoint(pt point, n int, field, name string, host HostPlugins) error {
	switch {
	case pt.name == "queueSort" && n != 1:
		hint := ""
		if n == 0 {
			hint = reenable(pt, "multiPoint.disabled or queueSort.disabled", host)
		}
		return fmt.Errorf("%s.plugins.queueSort: only one queue sort plugin required for profile with scheduler name %q, but got %d%s",
			field, name, n, hint)
	case pt.name == "bind" && n == 0:
		return fmt.Errorf("%s.plugins.bind: at least one bind plugin is needed for profile with scheduler name %q%s",
			field, name, reenable(pt, "multiPoint.disabled or bind.disabled", host))
	}
	return nil
}

// reenable says which host plugins serve pt, for an error saying that
// none is enabled there (where is what can have disabled them).
func reenable(pt point, where string, host HostPlugins) string {
	var names []string
	for n, hp := range host {
		if pt.host != nil && pt.host(hp) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return fmt.Sprintf(" (%s disables %s; list it under %s.enabled)", where, strings.Join(names, ", "), pt.name)
}

// knownNames lists the plugins a profile (field: its path) can name.
func knownNames(reg *modules.Registry, field string, host HostPlugins) []string {
	names := reg.ProfilePluginNames(field)
	for n := range host {
		names = append(names, n)
	}
	return names
}

func disablesAll(s config.PluginSet) bool { return disables(s, "*") }

func disables(s config.PluginSet, name string) bool {
	for _, d := range s.Disabled {
		if d.Name == name || d.Name == "*" {
			return true
		}
	}
	return false
}

// upsert adds p, or updates the weight of an entry of the same name.
func upsert(list []config.Plugin, p config.Plugin) []config.Plugin {
	for i := range list {
		if list[i].Name == p.Name {
			if p.Weight != 0 {
				list[i].Weight = p.Weight
			}
			return list
		}
	}
	return append(list, p)
}

func pointSet(p *config.Plugins, name string) *config.PluginSet {
	for _, ns := range p.Points() {
		if ns.Name == name {
			return ns.Set
		}
	}
	panic("framework: unknown extension point " + name) // a bug in the points table
}

// enable records the plugins of one extension point (field: the
// profile's path, whose modules serve them).
func (prof *Profile) enable(pt point, field string, list []config.Plugin, reg *modules.Registry, host HostPlugins) error {
	for _, p := range list {
		if m := reg.ProfilePluginModule(field, p.Name); m != nil {
			mi := prof.moduleIndex(m)
			idx := m.Manifest.Plugin(p.Name)
			w := int64(p.Weight)
			if w == 0 {
				w = 1
			}
			wp := wasmPlugin{name: p.Name, module: mi, index: idx, weight: w,
				points: m.Manifest.Plugins[idx].Points, ignore: m.PluginFailurePolicy(p.Name) == config.FailurePolicyIgnore}
			switch pt.wasm {
			case abi.PointPreFilter:
				prof.preFilter = append(prof.preFilter, wp)
			case abi.PointFilter:
				prof.filter = append(prof.filter, wp)
			case abi.PointPreScore:
				prof.preScore = append(prof.preScore, wp)
			case abi.PointScore:
				prof.score = append(prof.score, wp)
			}
			continue
		}
		hp := host[p.Name]
		switch pt.name {
		case "postFilter":
			prof.postFilter = append(prof.postFilter, hp.(PostFilterPlugin))
		case "reserve":
			prof.reserve = append(prof.reserve, hp.(ReservePlugin))
		case "permit":
			prof.permit = append(prof.permit, hp.(PermitPlugin))
		case "preBind":
			prof.preBind = append(prof.preBind, hp.(PreBindPlugin))
		case "bind":
			prof.bind = append(prof.bind, hp.(BindPlugin))
		case "postBind":
			prof.postBind = append(prof.postBind, hp.(PostBindPlugin))
		}
		if pe, ok := hp.(queue.PreEnqueuePlugin); ok && !prof.hasPreEnqueue(pe.Name()) {
			prof.preEnqueue = append(prof.preEnqueue, pe)
		}
	}
	return nil
}

func (prof *Profile) hasPreEnqueue(name string) bool {
	for _, pe := range prof.preEnqueue {
		if pe.Name() == name {
			return true
		}
	}
	return false
}

// configureHostPlugins builds this profile's instances of the
// Configurable host plugins from its pluginConfig.
func configureHostPlugins(pc *config.Profile, field string, host HostPlugins) (HostPlugins, error) {
	out := make(HostPlugins, len(host))
	for name, hp := range host {
		out[name] = hp
		c, ok := hp.(Configurable)
		if !ok {
			continue
		}
		var args []byte
		f := field + ".pluginConfig"
		for k, cfg := range pc.PluginConfig {
			if cfg.Name == name {
				args, f = cfg.Args, fmt.Sprintf("%s.pluginConfig[%d].args", field, k)
			}
		}
		p, err := c.ForProfile(ProfileInfo{Name: pc.SchedulerName}, args)
		if err != nil {
			return nil, fmt.Errorf("%s: plugin %q: %w", f, name, err)
		}
		out[name] = p
	}
	return out, nil
}

// resolvePolicies finds the module of every preemption policy an enabled
// host plugin uses and adds it to the profile.
func (prof *Profile) resolvePolicies(field string, reg *modules.Registry) error {
	for _, p := range prof.postFilter {
		u, ok := p.(PreemptionPolicyUser)
		if !ok {
			continue
		}
		name := u.PreemptionPolicy()
		m, idx, err := bind.Resolve(reg, field, bind.Need{Plugin: name, Points: abi.PointPreemption, Role: "a preemption policy"})
		var unserved *bind.UnservedError
		var points *bind.PointsError
		switch {
		case errors.As(err, &unserved):
			return fmt.Errorf("%s: plugin %q: preemption policy %q: no module serves it (known: %s)", field, p.Name(), name, strings.Join(unserved.Served, ", "))
		case errors.As(err, &points):
			return fmt.Errorf("%s: plugin %q: preemption policy %q does not implement the Preemption point (it implements %s)", field, p.Name(), name, points.Has)
		case err != nil:
			return fmt.Errorf("%s: plugin %q: preemption policy %q: %w", field, p.Name(), name, err)
		}
		if prof.policies == nil {
			prof.policies = map[string][2]int{}
		}
		prof.policies[name] = [2]int{prof.moduleIndex(m), idx}
	}
	return nil
}

// preemptionPolicy returns the module and manifest index of a policy.
func (prof *Profile) preemptionPolicy(name string) (module, plugin int, err error) {
	ref, ok := prof.policies[name]
	if !ok {
		return 0, 0, fmt.Errorf("preemption policy %q is not loaded in profile %q", name, prof.Name)
	}
	return ref[0], ref[1], nil
}

// moduleIndex returns the index of m in the profile, adding it.
func (prof *Profile) moduleIndex(m *modules.Compiled) int {
	i := prof.pools.Add(m)
	if i == len(prof.modules) {
		prof.modules = append(prof.modules, &profileModule{mod: m})
	}
	return i
}

// initModules gives each module of the profile its pool, initialised with
// the profile's args for that module's plugins, or prev's pool made the
// same way (see RebuildProfile).
func (prof *Profile) initModules(ctx context.Context, pc *config.Profile, field string, reg *modules.Registry,
	known func(string) bool, unknown func(string, string) error, prev *Profile) error {
	argField := map[string]string{}
	for k, c := range pc.PluginConfig {
		f := fmt.Sprintf("%s.pluginConfig[%d]", field, k)
		if !known(c.Name) {
			return unknown(f+".name", c.Name)
		}
		m := reg.ProfilePluginModule(field, c.Name)
		if m == nil {
			continue // a host plugin: configureHostPlugins took its args
		}
		v, err := config.ArgsValue(c.Args)
		if err != nil {
			return fmt.Errorf("%s.args: %w", f, err)
		}
		if prof.pools.Index(m) >= 0 {
			prof.pools.Add(m, abi.PluginArgs{Name: c.Name, Args: v})
		}
		argField[c.Name] = f + ".args"
	}
	var prevPools *bind.Pools
	if prev != nil {
		prevPools = prev.pools
	}
	if err := prof.pools.Load(ctx, prevPools); err != nil {
		var le *bind.LoadError
		if !errors.As(err, &le) {
			return fmt.Errorf("%s: %w", field, err)
		}
		// Point at the args the guest refused, when it names a plugin.
		for name, f := range argField {
			if strings.Contains(le.Err.Error(), "plugin "+name+":") {
				return fmt.Errorf("%s: %w", f, le.Err)
			}
		}
		return fmt.Errorf("%s: module %q: %w", field, le.Module.Config.Name, le.Err)
	}
	for i, e := range prof.pools.Entries() {
		prof.modules[i].pool, prof.modules[i].reused = e.Pool, e.Reused
	}
	return nil
}

// Instrument gives the profile's Wasm plugins their duration timers
// (plugin_execution_duration_seconds, one per plugin per extension point,
// resolved now so a timed call costs no label lookup). Call it before the
// first cycle; a nil m leaves the plugins untimed.
func (prof *Profile) Instrument(m *metrics.Metrics) {
	for _, pt := range []struct {
		list  []wasmPlugin
		point string
	}{{prof.preFilter, metrics.PreFilter}, {prof.filter, metrics.Filter},
		{prof.preScore, metrics.PreScore}, {prof.score, metrics.Score}} {
		for i := range pt.list {
			pt.list[i].timer = m.PluginTimer(pt.list[i].name, pt.point)
		}
	}
}

// modulePlugins lists the plugins of module mi that the profile enables
// (each once, whatever its extension points), with their failure
// policies, preemption policies included.
func (prof *Profile) modulePlugins(mi int) []wasmPlugin {
	var out []wasmPlugin
	seen := map[string]bool{}
	for _, list := range [][]wasmPlugin{prof.preFilter, prof.filter, prof.preScore, prof.score} {
		for _, p := range list {
			if p.module == mi && !seen[p.name] {
				seen[p.name] = true
				out = append(out, p)
			}
		}
	}
	for name, ref := range prof.policies {
		if ref[0] == mi && !seen[name] {
			seen[name] = true
			m := prof.modules[mi].mod
			out = append(out, wasmPlugin{name: name, module: mi, index: ref[1],
				ignore: m.PluginFailurePolicy(name) == config.FailurePolicyIgnore})
		}
	}
	return out
}

// PreEnqueuePlugins are the profile's queue gates.
func (prof *Profile) PreEnqueuePlugins() []queue.PreEnqueuePlugin { return prof.preEnqueue }

// ScorePlugins lists the enabled score plugins with their weights, for
// logs and tests.
func (prof *Profile) ScorePlugins() map[string]int64 {
	m := map[string]int64{}
	for _, p := range prof.score {
		m[p.name] = p.weight
	}
	return m
}

// FilterPlugins lists the enabled filter plugins in order.
func (prof *Profile) FilterPlugins() []string {
	var names []string
	for _, p := range prof.filter {
		names = append(names, p.name)
	}
	return names
}

// Close releases the profile's instance pools (a pool a later profile
// shares stays open until that one is closed too).
func (prof *Profile) Close(ctx context.Context) {
	prof.pools.Close(ctx)
}

// withoutUnserved is pc without the plugins no module serves, when a
// module with failStrategy FailOpen the profile would see could not be
// fetched: those plugins may be that module's, and the profile runs
// without them instead of being refused. Each one left out is logged,
// with gone, the unavailable modules (modules.Registry.UnavailableNames).
func withoutUnserved(pc *config.Profile, known func(string) bool, field, gone string, log hclog.Logger) *config.Profile {
	out := *pc
	drop := func(name, f string) bool {
		if known(name) {
			return false
		}
		log.Error("plugin left out: no module serves it and a FailOpen module is unavailable", "profile", field, "field", f, "plugin", name, "unavailable", gone)
		return true
	}
	if pc.Plugins != nil {
		ps := *pc.Plugins
		for _, ns := range ps.Points() {
			var kept []config.Plugin
			for k, e := range ns.Set.Enabled {
				if !drop(e.Name, fmt.Sprintf("%s.plugins.%s.enabled[%d]", field, ns.Name, k)) {
					kept = append(kept, e)
				}
			}
			ns.Set.Enabled = kept
		}
		out.Plugins = &ps
	}
	out.PluginConfig = nil
	for k, c := range pc.PluginConfig {
		if !drop(c.Name, fmt.Sprintf("%s.pluginConfig[%d]", field, k)) {
			out.PluginConfig = append(out.PluginConfig, c)
		}
	}
	return &out
}
