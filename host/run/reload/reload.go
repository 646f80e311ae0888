// Package reload changes the policy of a running scheduler — its
// scheduling profiles, eviction policies and settings, and vpod
// schedulers and their policies: it reads a candidate configuration (the config file, every
// module and every vpod policy file it names), builds it completely off
// the hot path — parse, read, sha256 check, compile (through the compile
// cache; unchanged modules are not compiled again), manifest and ABI
// checks, instances initialised with their args, new or changed vpod
// schedulers with their informers synced — exercises it on the current
// state with nothing committed (the canary: every new plugin on a real
// pod and real nodes, a vpod placement step per vpod scheduler, an
// eviction round), and only then swaps every engine's part in, or none. A candidate that fails any step never replaces the
// running configuration: the error names the file, field or plugin, is
// logged and counted, and scheduling goes on as before.
//
// Reloads are triggered by Reload (SIGHUP, tests) and, with Run, by
// changes to the files (package watch, which understands the symlink swap
// of a mounted ConfigMap). `simulate --watch` builds a fresh scheduler per
// run instead, with the same module loading (modules.Options.Previous).
package reload

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/internal/boundedread"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/oci"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/host/run/watch"
)

// DefaultDebounce is how long a burst of file changes must be quiet
// before a reload: a ConfigMap update or an editor's save is several
// events, and a build writing a module several writes.
const DefaultDebounce = 250 * time.Millisecond

// Options configure a Reloader.
type Options struct {
	// ConfigPath is the configuration file; "" means the embedded default,
	// which never changes (Reload then only re-reads nothing).
	ConfigPath string
	// Parts is the running scheduler; Config and Registry are what it
	// runs now (the Registry owned by Parts: AssembleOptions.OwnRegistry).
	Parts    *scheduler.Parts
	Config   *config.Configuration
	Registry *modules.Registry
	// Modules says how modules load (cache dir, log, metrics);
	// Previous is set by each reload.
	Modules modules.Options
	// RequireSHA256 refuses a configuration with a module file that is
	// not pinned by sha256.
	RequireSHA256 bool
	// Debounce for file changes; 0 means DefaultDebounce.
	Debounce time.Duration
	// PollInterval, when positive, is how often Run asks the registry
	// which manifest each tag with pullPolicy Always names now; a tag
	// that moved triggers a reload (which a sha256 pin still checks).
	PollInterval time.Duration
	// Metrics counts reloads and reports the serving modules (nil: none).
	Metrics *metrics.Metrics
	Log     hclog.Logger
	// Eviction, if set, is the running eviction coordinator: a reload
	// builds the new configuration's eviction policies (a failure refuses
	// the reload), runs them once on the current state (Canary) and hands
	// them over with the profiles, with the section's settings (sync
	// period, burst, rate, skip keys, condition transition period).
	Eviction *eviction.Coordinator
	// Killer, if set, is the eviction coordinator's killer: a reload
	// hands it the killer mode and killTimeoutMin.
	Killer *eviction.Killer
	// VPod, if set, is the running vpod schedulers: a reload stages the
	// next vpod section on them (policies rebound, inline or from policy
	// files, which Run watches; in serve also schedulers added, changed
	// or removed), runs a placement step of each on the current state,
	// and swaps them in with the profiles. What cannot change live is
	// refused, naming the field.
	VPod VPodSchedulers
	// OnSwap, if set, is called after each configuration that went live,
	// with it.
	OnSwap func(*config.Configuration)
	// OnUnavailable, if set, is called with the FailOpen modules a
	// configuration going live runs without (at New, and after each swap
	// that has any): serve reports them as Events.
	OnUnavailable func([]modules.Unavailable)
	// Now is the clock for the last-success timestamp (nil: time.Now).
	Now func() time.Time
}

// VPodSchedulers are running vpod schedulers a reload changes:
// *vpod.Group (a fixed set: policies only) or serve's (which also adds,
// replaces and removes schedulers). Stage builds the next configuration's
// vpod section off the hot path, changing nothing running, or refuses it
// with the field named.
type VPodSchedulers interface {
	Stage(ctx context.Context, cfg *config.Configuration, opts modules.Options) (vpod.Staging, error)
}

// Result is what one reload did.
type Result string

// Results of Reload, as the wasmsched_config_reloads_total label.
const (
	Swapped   Result = metrics.ReloadSuccess
	Refused   Result = metrics.ReloadRefused
	Unchanged Result = metrics.ReloadUnchanged
)

// Timings are how long the phases of the last reload took.
type Timings struct {
	// Load: reading and parsing the config, reading, checking and
	// compiling (or reusing) the modules, and loading them.
	Load time.Duration
	// Build: the profiles, eviction policies and vpod policies, with
	// their instance pools initialised, and new or changed vpod
	// schedulers with their informers synced.
	Build time.Duration
	// Canary: every new plugin run once on a real pod and nodes, a vpod
	// placement step per vpod scheduler and an eviction round on the
	// current state, nothing committed.
	Canary time.Duration
	// Swap: handing the new profiles, policies and settings to the
	// engines.
	Swap time.Duration
}

// Total is the whole reload, from reading the files to serving.
func (t Timings) Total() time.Duration { return t.Load + t.Build + t.Canary + t.Swap }

// Reloader reloads one scheduler's configuration. Reloads are serialised.
type Reloader struct {
	o   Options
	log hclog.Logger

	mu     sync.Mutex // one reload at a time
	last   Timings
	cfg    *config.Configuration
	reg    *modules.Registry
	digest [sha256.Size]byte // of the config bytes and module digests serving
	snap   *snapshot.Snapshot
	// watching, when set, is called once Run watches the files, so that
	// a change made after it is seen (tests).
	watching func()
}

// New returns a reloader for the running configuration in o, and
// reports the modules serving now.
func New(o Options) (*Reloader, error) {
	if o.Debounce <= 0 {
		o.Debounce = DefaultDebounce
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if o.Modules.Fetcher == nil {
		dir := o.Modules.OCICacheDir
		if dir == "" {
			dir = oci.DefaultCacheDir()
		}
		o.Modules.Fetcher = oci.NewFetcher(oci.FetcherOptions{CacheDir: dir, MaxBytes: modules.MaxModuleBytes, Log: log.Named("oci")})
	}
	r := &Reloader{o: o, log: log.Named("reload"), cfg: o.Config, reg: o.Registry, snap: snapshot.New()}
	raw, err := r.readConfig()
	if err != nil {
		return nil, err
	}
	r.digest = fingerprint(raw, o.Config, o.Registry)
	o.Metrics.SetServingModules(servingModules(o.Registry))
	o.Metrics.SetUnavailableModules(unavailable(o.Registry))
	if u := o.Registry.Unavailable(); len(u) > 0 && o.OnUnavailable != nil {
		o.OnUnavailable(u)
	}
	o.Metrics.Reloaded(string(Swapped), o.Now())
	return r, nil
}

// CheckPinned refuses a configuration with a module file that has no
// sha256 pin, or a module image named by a tag without one (serve
// --require-sha256); an image named by digest is pinned by it.
func CheckPinned(cfg *config.Configuration) error {
	for _, m := range cfg.AllModules() {
		if m.Module.Path != "" && m.Module.SHA256 == "" {
			return fmt.Errorf("%s (%s): no sha256 pin, and --require-sha256 is set", m.Field, m.Module.Name)
		}
		if src, err := config.ParseImage(m.Module.Image); err == nil && src.Digest == "" && m.Module.SHA256 == "" {
			return fmt.Errorf("%s (%s): the image %s is a tag without a sha256 pin, and --require-sha256 is set", m.Field, m.Module.Name, m.Module.Image)
		}
	}
	return nil
}

// Paths are the files a change of which may change the configuration:
// the config file and every module file and vpod policy file it names.
func (r *Reloader) Paths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paths()
}

func (r *Reloader) paths() []string {
	var ps []string
	if r.o.ConfigPath != "" {
		ps = append(ps, r.o.ConfigPath)
	}
	ps = append(ps, r.cfg.ModulePaths()...)
	return append(ps, r.cfg.VPodPolicyPaths()...)
}

// LastTimings are the phase durations of the last reload that got past
// loading (a refused one included, up to where it stopped).
func (r *Reloader) LastTimings() Timings {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

func (r *Reloader) readConfig() ([]byte, error) {
	if r.o.ConfigPath == "" {
		return nil, nil
	}
	b, err := boundedread.ReadFile(r.o.ConfigPath, config.MaxFileBytes, boundedread.RegularOrPipe, "a configuration file")
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return b, nil
}

// fingerprint identifies a configuration: its bytes, the vpod policies
// it read from files, and the digests of the modules it loaded.
func fingerprint(raw []byte, cfg *config.Configuration, reg *modules.Registry) [sha256.Size]byte {
	h := sha256.New()
	h.Write(raw)
	if settings, err := cfg.VPod.Defaulted(); err != nil {
		fmt.Fprintf(h, "\x00vpod error %v", err)
	} else {
		for _, s := range settings {
			b, _ := json.Marshal([]*config.VPodPolicy{s.SchedPolicy, s.DeschedPolicy})
			fmt.Fprintf(h, "\x00vpod %s=%s", s.Name, b)
		}
	}
	for _, m := range reg.Modules() {
		fmt.Fprintf(h, "\x00%s=%s", m.Config.Name, m.SHA256)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// unavailable are the FailOpen modules reg runs without, by name.
func unavailable(reg *modules.Registry) map[string]string {
	out := map[string]string{}
	for _, u := range reg.Unavailable() {
		out[u.Module] = u.Err.Error()
	}
	return out
}

func servingModules(reg *modules.Registry) []metrics.ModuleDigest {
	var out []metrics.ModuleDigest
	for _, m := range reg.Modules() {
		out = append(out, metrics.ModuleDigest{Module: m.Config.Name, SHA256: m.SHA256})
	}
	return out
}

// Reload reads the configuration and its modules again and, if they
// changed and pass every check, swaps them in. A refused candidate
// returns its error (also logged and counted); the running configuration
// is untouched.
func (r *Reloader) Reload(ctx context.Context) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := r.o.Now()
	res, err := r.reload(ctx)
	r.o.Metrics.Reloaded(string(res), r.o.Now())
	switch res {
	case Refused:
		r.log.Error("configuration refused; the running one keeps serving", "config", r.o.ConfigPath, "error", err)
	case Swapped:
		r.log.Info("configuration reloaded", "config", r.o.ConfigPath, "took", time.Since(start),
			"load", r.last.Load, "build", r.last.Build, "canary", r.last.Canary, "swap", r.last.Swap)
	default:
		r.log.Debug("configuration unchanged", "config", r.o.ConfigPath)
	}
	return res, err
}

func (r *Reloader) reload(ctx context.Context) (Result, error) {
	r.last = Timings{}
	t0 := time.Now()
	phase := func(d *time.Duration) {
		now := time.Now()
		*d, t0 = now.Sub(t0), now
	}
	raw, err := r.readConfig()
	if err != nil {
		return Refused, err
	}
	cfg := config.Default()
	if r.o.ConfigPath != "" {
		if cfg, err = config.Load(r.o.ConfigPath); err != nil {
			return Refused, err
		}
	}
	if r.o.RequireSHA256 {
		if err := CheckPinned(cfg); err != nil {
			return Refused, err
		}
	}
	mo := r.o.Modules
	mo.Previous = r.reg
	reg, err := modules.Load(ctx, cfg, mo)
	if err != nil {
		return Refused, err
	}
	phase(&r.last.Load)
	fp := fingerprint(raw, cfg, reg)
	if fp == r.digest {
		reg.Close(ctx)
		return Unchanged, nil
	}
	built, err := r.o.Parts.BuildProfiles(ctx, cfg, reg)
	if err != nil {
		phase(&r.last.Build)
		reg.Close(ctx)
		return Refused, err
	}
	// What the new profiles own, closed when they are replaced in turn
	// (the shadows the scheduler closes itself).
	release := func() {
		for _, p := range built.Profiles {
			p.Close(context.Background())
		}
		reg.Close(context.Background())
	}
	discard := func() {
		built.Close(context.Background())
		reg.Close(context.Background())
	}
	var evictionSet *eviction.PolicySet
	evictionSettings := cfg.Eviction.Defaulted()
	if r.o.Eviction != nil {
		eo := r.o.Modules
		eo.Previous = reg
		// The running set's unchanged modules keep their pools.
		if evictionSet, err = eviction.ReloadPolicies(ctx, cfg, eo, r.o.Eviction.PolicySet()); err != nil {
			discard()
			return Refused, err
		}
		prior := discard
		discard = func() {
			evictionSet.Close(context.Background())
			prior()
		}
	}
	var vpods vpod.Staging
	if r.o.VPod != nil {
		vo := r.o.Modules
		vo.Previous = reg
		// Each kept scheduler's unchanged modules keep their pools; new
		// or changed schedulers are built and synced; what cannot
		// change live is refused here, naming the field.
		if vpods, err = r.o.VPod.Stage(ctx, cfg, vo); err != nil {
			discard()
			return Refused, err
		}
		prior := discard
		discard = func() {
			vpods.Discard(context.Background())
			prior()
		}
	}
	phase(&r.last.Build)
	pod := r.canaryPod()
	r.o.Parts.Cache.UpdateSnapshot(r.snap)
	for _, p := range built.All() {
		if err := p.Canary(ctx, pod, r.snap); err != nil {
			discard()
			return Refused, err
		}
	}
	if vpods != nil {
		if err := vpods.Canary(ctx); err != nil {
			discard()
			return Refused, err
		}
	}
	if r.o.Eviction != nil {
		if err := r.o.Eviction.Canary(ctx, evictionSet, evictionSettings.Burst); err != nil {
			discard()
			return Refused, err
		}
	}
	phase(&r.last.Canary)
	r.warnRestartOnly(cfg)
	// Only this step can still fail; what follows it cannot, so every
	// engine swaps or none does.
	if err := r.o.Parts.Scheduler.SwapProfiles(built.Profiles, built.Shadows, release); err != nil {
		discard()
		return Refused, err
	}
	if r.o.Eviction != nil {
		r.o.Eviction.SetPolicies(evictionSet)
		r.o.Eviction.SetSettings(eviction.SettingsFrom(evictionSettings))
		if r.o.Killer != nil {
			r.o.Killer.Reconfigure(eviction.KillerOptionsFrom(evictionSettings))
		}
		r.logEvictionSettings(evictionSettings)
	}
	if vpods != nil {
		vpods.Commit(context.Background())
	}
	phase(&r.last.Swap)
	r.cfg, r.reg, r.digest = cfg, reg, fp
	r.o.Metrics.SetServingModules(servingModules(reg))
	r.o.Metrics.SetUnavailableModules(unavailable(reg))
	if u := reg.Unavailable(); len(u) > 0 && r.o.OnUnavailable != nil {
		r.o.OnUnavailable(u)
	}
	if r.o.OnSwap != nil {
		r.o.OnSwap(cfg)
	}
	return Swapped, nil
}

// canaryPod is the pod the canary runs: the last one scheduled, else a
// small pod of the first profile.
func (r *Reloader) canaryPod() *abi.Pod {
	if p := r.o.Parts.Scheduler.LastPod(); p != nil {
		return p
	}
	name := config.DefaultSchedulerName
	if len(r.cfg.Profiles) > 0 {
		name = r.cfg.Profiles[0].SchedulerName
	}
	return &abi.Pod{Name: "wasmsched-canary", Namespace: "default", UID: "wasmsched-canary", SchedulerName: name,
		Containers: []abi.Container{{Name: "c", Requests: abi.Resources{MilliCPU: 100, Memory: 64 << 20}}}}
}

// logEvictionSettings logs the eviction settings a reload changed (they
// apply from the coordinator's next round and the killer's next kill).
func (r *Reloader) logEvictionSettings(next config.EvictionSettings) {
	prev := r.cfg.Eviction.Defaulted()
	prev.Policies, next.Policies = nil, nil
	if reflect.DeepEqual(prev, next) {
		return
	}
	r.log.Info("eviction settings changed; they apply from the next round", "sync_period", next.SyncPeriod, "burst", next.Burst,
		"rate", next.Rate, "rate_burst", next.RateBurst, "killer", next.Killer, "kill_timeout_min", next.KillTimeoutMin)
}

// warnRestartOnly logs the settings a reload does not apply.
func (r *Reloader) warnRestartOnly(cfg *config.Configuration) {
	same := func(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
	if !same(cfg.PodInitialBackoffSeconds, r.cfg.PodInitialBackoffSeconds) || !same(cfg.PodMaxBackoffSeconds, r.cfg.PodMaxBackoffSeconds) {
		r.log.Warn("podInitialBackoffSeconds and podMaxBackoffSeconds changed; they take effect at the next restart")
	}
	if !reflect.DeepEqual(cfg.LeaderElection, r.cfg.LeaderElection) || !reflect.DeepEqual(cfg.ClientConnection, r.cfg.ClientConnection) {
		r.log.Warn("leaderElection or clientConnection changed; they take effect at the next restart")
	}
}

// Run reloads on every change to the files (when watch is set) and on
// SIGHUP (when signals is set), until ctx ends.
func (r *Reloader) Run(ctx context.Context, watchFiles, signals bool) error {
	var changes <-chan struct{}
	var w *watch.Watcher
	if watchFiles && r.o.ConfigPath != "" {
		var err error
		if w, err = watch.New(r.Paths(), r.o.Debounce, r.log); err != nil {
			return fmt.Errorf("watch the configuration: %w", err)
		}
		defer w.Close()
		changes = w.Changes()
		if r.watching != nil {
			r.watching()
		}
	}
	var poll <-chan time.Time
	if r.o.PollInterval > 0 {
		t := time.NewTicker(r.o.PollInterval)
		defer t.Stop()
		poll = t.C
	}
	var hup chan os.Signal
	if signals {
		hup = make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
		case <-hup:
			r.log.Info("SIGHUP: reloading the configuration")
		case <-poll:
			if !r.tagsMoved(ctx) {
				continue
			}
		}
		before := r.Paths()
		if _, err := r.Reload(ctx); err != nil && errors.Is(err, context.Canceled) {
			return nil
		}
		if after := r.Paths(); w != nil && !slices.Equal(before, after) {
			if err := w.SetPaths(after); err != nil {
				r.log.Error("watch the new module files", "error", err)
			}
		}
	}
}

// pollable are the serving configuration's modules from a tag with
// pullPolicy Always, whose tag a poll re-resolves.
func (r *Reloader) pollable() []*modules.Compiled {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*modules.Compiled
	for _, m := range r.reg.Modules() {
		if m.Config.Image == "" || m.Config.EffectivePullPolicy() != config.PullAlways {
			continue
		}
		if src, err := config.ParseImage(m.Config.Image); err == nil && src.Tag != "" {
			out = append(out, m)
		}
	}
	return out
}

// tagsMoved reports whether a polled tag names another manifest than the
// one serving, or a FailOpen module the serving configuration runs
// without is due another try. A registry that cannot be asked is logged
// and changes nothing: the serving module keeps serving.
func (r *Reloader) tagsMoved(ctx context.Context) bool {
	r.mu.Lock()
	gone := r.reg.Unavailable()
	r.mu.Unlock()
	if len(gone) > 0 {
		r.log.Info("retrying the modules the configuration runs without", "modules", len(gone))
		return true
	}
	for _, m := range r.pollable() {
		d, err := r.o.Modules.Fetcher.Resolve(ctx, &m.Config)
		if err != nil {
			r.log.Warn("could not re-resolve a module's tag; the serving module stays", "module", m.Config.Name, "image", m.Config.Image, "error", err)
			continue
		}
		if d != m.ImageManifest {
			r.log.Info("a module's tag moved; reloading", "module", m.Config.Name, "image", m.Config.Image, "from", m.ImageManifest, "to", d)
			return true
		}
	}
	return false
}
