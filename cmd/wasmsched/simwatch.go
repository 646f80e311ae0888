package main

// simulate --watch: a plugin author's loop. Edit a plugin, rebuild its
// module (or edit the profiles or the manifests), and the simulation runs
// again by itself and says which pods went elsewhere.

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/reload"
	"github.com/wasmsched/wasmsched/host/run/sim"
	"github.com/wasmsched/wasmsched/host/run/watch"
)

// watchOptions are what a `simulate --watch` session runs: the same
// inputs as one simulate run, plus how the loop waits and where it writes.
type watchOptions struct {
	Manifests  []string
	ConfigPath string // "" for the default configuration
	ShadowPath string // "" for no shadow run
	// Output is "table" or "json": the format of each run's result, as
	// simulate without --watch prints it.
	Output     string
	Seed       uint64
	APILatency time.Duration
	// EvictionRounds is --eviction-rounds; nil for the configuration's
	// eviction.simulateRounds.
	EvictionRounds *int
	// Runtime is --runtime: the Wasm runtime of the modules whose entry
	// names none (sim.Options.Runtime).
	Runtime string
	// Debounce is how quiet the files must be before a re-run; 0 means
	// reload.DefaultDebounce, the live scheduler's.
	Debounce time.Duration
	// Notes receives what is not a run's result — the re-run banners,
	// what changed, a failed run's error — so that -o json keeps its
	// output a stream of JSON documents. Nil means the result writer.
	Notes io.Writer
	// Metrics, if set, records module loads and the runs (tests read it
	// to see a module reused rather than compiled again).
	Metrics *metrics.Metrics
	Log     hclog.Logger
	// Explain is --explain and --explain-top.
	Explain explainFlags
}

// watchRun is one run of simulate (a good one, under --watch): its
// reports, and the registries they were scheduled with, which the next
// run loads through (modules.Options.Previous) so that unchanged modules
// are not compiled again.
type watchRun struct {
	live, shadow       *sim.Report
	liveReg, shadowReg *modules.Registry
}

func (r *watchRun) close(ctx context.Context) {
	if r == nil {
		return
	}
	if r.liveReg != nil {
		r.liveReg.Close(ctx)
	}
	if r.shadowReg != nil {
		r.shadowReg.Close(ctx)
	}
}

// watchSession is the loop's state between runs.
type watchSession struct {
	o          watchOptions
	out, notes io.Writer
	w          *watch.Watcher
	// last is the last good run: the base of the next "what changed"
	// and the registries the next run reuses. A failed run leaves it.
	last *watchRun
	// liveModules and shadowModules are the module files the last
	// configurations that parsed name: watched even while a later edit
	// of the configuration does not parse.
	liveModules, shadowModules []string
	// seen is the content digest of each watched file as of the last
	// run, to name the files a change event was about.
	seen map[string][sha256.Size]byte
}

// watchLoop runs the simulation, prints its result, and runs it again
// after each change to a manifest, the configuration, the shadow
// configuration or a module file they name, until ctx ends; it then
// returns nil. A run that fails is reported on Notes and the loop goes
// on. It returns an error only when the files cannot be watched at all.
func watchLoop(ctx context.Context, out io.Writer, o watchOptions) error {
	for _, m := range o.Manifests {
		if m == "-" {
			return errors.New(`--watch: standard input ("-") cannot be watched; name manifest files`)
		}
	}
	if o.ConfigPath == "-" || o.ShadowPath == "-" {
		return errors.New(`--watch: standard input ("-") cannot be watched; name the configuration file`)
	}
	if o.Debounce <= 0 {
		o.Debounce = reload.DefaultDebounce
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	s := &watchSession{o: o, out: out, notes: o.Notes}
	if s.notes == nil {
		s.notes = out
	}
	// Watch before the first run reads anything, so that an edit made
	// while it runs is not missed.
	w, err := watch.New(s.paths(), o.Debounce, o.Log.Named("watch"))
	if err != nil {
		return fmt.Errorf("--watch: %w", err)
	}
	s.w = w
	defer func() {
		w.Close()
		s.last.close(context.Background())
	}()
	s.seen = s.digests()
	s.run(ctx)
	for {
		if ctx.Err() != nil {
			return nil
		}
		files := "files"
		if len(s.paths()) == 1 {
			files = "file"
		}
		fmt.Fprintf(s.notes, "--- watching %d %s; Ctrl-C to stop ---\n", len(s.paths()), files)
		select {
		case <-ctx.Done():
			return nil
		case <-w.Changes():
		}
		now := s.digests()
		fmt.Fprintf(s.notes, "\n--- re-running: %s ---\n", changedFiles(s.seen, now))
		s.seen = now
		s.run(ctx)
	}
}

// paths are the files whose change re-runs the simulation, in a stable
// order: the manifests, the configurations, then their module files.
func (s *watchSession) paths() []string {
	ps := slices.Clone(s.o.Manifests)
	if s.o.ConfigPath != "" {
		ps = append(ps, s.o.ConfigPath)
	}
	if s.o.ShadowPath != "" {
		ps = append(ps, s.o.ShadowPath)
	}
	ps = append(ps, s.liveModules...)
	ps = append(ps, s.shadowModules...)
	var out []string
	for _, p := range ps {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// digests reads every watched file's content digest (see digest).
func (s *watchSession) digests() map[string][sha256.Size]byte {
	d := map[string][sha256.Size]byte{}
	for _, p := range s.paths() {
		d[p] = digest(p)
	}
	return d
}

// digest is one watched file's content digest, read within bounds
// (watch.Digest). A file that cannot be read — gone, or swapped for a
// device, a FIFO or something too large — gets the digest of why, so
// that its disappearing, coming back or turning from one kind into
// another counts as a change of that file; the run that follows says
// why, as its loader refuses the file.
func digest(p string) [sha256.Size]byte {
	sum, err := watch.Digest(p)
	if err != nil {
		return sha256.Sum256([]byte("unreadable: " + err.Error()))
	}
	return sum
}

// changedFiles names the files whose content differs between two
// digests, or says "change detected" when the watcher saw an event but
// no content moved (a touch, a save of the same bytes).
func changedFiles(before, after map[string][sha256.Size]byte) string {
	var changed []string
	for p, sum := range after {
		if old, ok := before[p]; !ok || old != sum {
			changed = append(changed, p)
		}
	}
	if len(changed) == 0 {
		return "change detected"
	}
	slices.Sort(changed)
	return strings.Join(changed, ", ")
}

// setConfigModules records the module files and vpod policy files cfg
// names and watches them. It runs before the modules are read
// (watch.SetPaths' rule), so a module rebuilt while this run reads it
// still triggers the next one.
func (s *watchSession) setConfigModules(shadow bool, cfg *config.Configuration) {
	ps := append(cfg.ModulePaths(), cfg.VPodPolicyPaths()...)
	if shadow {
		s.shadowModules = ps
	} else {
		s.liveModules = ps
	}
	if err := s.w.SetPaths(s.paths()); err != nil {
		// The run goes on; it will say whether the file is there.
		fmt.Fprintf(s.notes, "warning: cannot watch the module files: %v\n", err)
	}
	for _, p := range ps {
		if _, ok := s.seen[p]; !ok {
			s.seen[p] = digest(p)
		}
	}
}

// run makes one simulation and prints it; a failure is printed instead
// and leaves the last good run as it was.
func (s *watchSession) run(ctx context.Context) {
	next, err := s.simulate(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return // interrupted: not the run's fault
		}
		fmt.Fprintf(s.notes, "error: %v\n", err)
		if s.last != nil {
			fmt.Fprintln(s.notes, "(the last good run stays the base for the next comparison)")
		}
		return
	}
	if s.last != nil {
		s.printChanges(s.last, next)
	}
	if err := s.printResult(next); err != nil {
		fmt.Fprintf(s.notes, "error: print the result: %v\n", err)
	}
	s.last.close(context.Background())
	s.last = next
}

// simulate reads everything again and runs: the configuration(s), the
// manifests, the modules (through the last good run's registries), then
// the live run and the shadow run, as simulate does once.
func (s *watchSession) simulate(ctx context.Context) (*watchRun, error) {
	o := s.o
	live, err := loadConfig(o.ConfigPath)
	if err != nil {
		return nil, err
	}
	s.setConfigModules(false, live)
	var shadow *config.Configuration
	if o.ShadowPath != "" {
		if shadow, err = config.Load(o.ShadowPath); err != nil {
			return nil, fmt.Errorf("--shadow: %w", err)
		}
		s.setConfigModules(true, shadow)
	}
	objs, err := sim.LoadFiles(o.Manifests...)
	if err != nil {
		return nil, err
	}
	opts := sim.Options{Seed: o.Seed, APILatency: o.APILatency, EvictionRounds: o.EvictionRounds, Log: o.Log, Metrics: o.Metrics, Runtime: o.Runtime,
		Explain: o.Explain.match()}
	return runSimulations(ctx, objs, live, shadow, o.ShadowPath, opts, s.last)
}

// runSimulations schedules objs under live and, when shadow is set, under
// shadow too (opts gives the rest), loading the modules through prev's
// registries (nil: none) so that unchanged modules are not compiled
// again; the shadow run reuses the live run's modules when prev has none.
// sim.Run copies what it admits and leaves objs as read, so both runs
// start from the same objects (host/run/sim TestRunLeavesItsObjectsAsRead).
func runSimulations(ctx context.Context, objs *sim.Objects, live, shadow *config.Configuration, shadowPath string,
	opts sim.Options, prev *watchRun) (_ *watchRun, err error) {
	r := &watchRun{}
	defer func() {
		if err != nil {
			r.close(context.Background())
		}
	}()
	var prevLive, prevShadow *modules.Registry
	if prev != nil {
		prevLive, prevShadow = prev.liveReg, prev.shadowReg
	}
	mo := modules.Options{Log: opts.Log, Metrics: opts.Metrics, Previous: prevLive, Runtime: opts.Runtime}
	if r.liveReg, err = modules.Load(ctx, live, mo); err != nil {
		return nil, err
	}
	opts.Config, opts.Registry = live, r.liveReg
	if r.live, err = sim.Run(ctx, objs, opts); err != nil {
		return nil, err
	}
	if shadow == nil {
		return r, nil
	}
	mo.Previous, mo.Log = prevShadow, opts.Log.Named("shadow")
	if mo.Previous == nil {
		mo.Previous = r.liveReg
	}
	if r.shadowReg, err = modules.Load(ctx, shadow, mo); err != nil {
		return nil, fmt.Errorf("--shadow %s: %w", shadowPath, err)
	}
	opts.Config, opts.Log, opts.Registry = shadow, mo.Log, r.shadowReg
	// The shadow run's records say why a pod moved (sim.Compare).
	opts.Explain = func(string) bool { return true }
	if r.shadow, err = sim.Run(ctx, objs, opts); err != nil {
		return nil, fmt.Errorf("shadow run with %s: %w", shadowPath, err)
	}
	return r, nil
}

// printResult prints a run as simulate without --watch does.
func (s *watchSession) printResult(r *watchRun) error {
	return printRun(s.out, s.o.Output, r, &s.o.Explain)
}

// printRun prints a run in the output format: the comparison when it has
// a shadow run, else the live report.
func printRun(w io.Writer, output string, r *watchRun, ex *explainFlags) error {
	switch {
	case r.shadow != nil && output == "json":
		return writeJSON(w, sim.Compare(r.live, r.shadow))
	case r.shadow != nil:
		c := sim.Compare(r.live, r.shadow)
		if err := printComparison(w, c); err != nil {
			return err
		}
		printMoved(w, c)
		return printExplanations(w, ex, r.live)
	case output == "json":
		return writeJSON(w, r.live)
	}
	if err := printTable(w, r.live); err != nil {
		return err
	}
	return printExplanations(w, ex, r.live)
}

// printChanges prints what changed since the last good run: per pod
// whose node or status changed, its outcome before and now, then the
// counts (in Compare's words); for the shadow run too when there is one.
func (s *watchSession) printChanges(before, now *watchRun) {
	if now.shadow == nil {
		fmt.Fprintln(s.notes, "CHANGES SINCE THE LAST RUN")
		printRunChanges(s.notes, before.live, now.live)
	} else {
		fmt.Fprintln(s.notes, "CHANGES SINCE THE LAST RUN, LIVE (--config)")
		printRunChanges(s.notes, before.live, now.live)
		fmt.Fprintln(s.notes, "CHANGES SINCE THE LAST RUN, SHADOW (--shadow)")
		printRunChanges(s.notes, before.shadow, now.shadow)
	}
	fmt.Fprintln(s.notes)
}

// printRunChanges prints `ns/name: old -> new` for each pod whose node or
// status differs between two runs of the same kind, then the summary. A
// side is the pod's node when it runs on one, else its status: the
// reasons are in the result printed next. Compare counts two not-placed
// outcomes as the same (Unschedulable -> SchedulerError, a pod new to the
// files and pending); a pod listed here is never counted "same": the
// summary counts it as having changed status instead.
func printRunChanges(w io.Writer, before, now *sim.Report) {
	c := sim.Compare(before, now)
	statusChanged := 0
	for _, p := range c.Pods {
		if p.Live != nil && p.Shadow != nil && p.Live.Node == p.Shadow.Node && p.Live.Status == p.Shadow.Status {
			continue
		}
		if p.Change == sim.ChangeSame {
			statusChanged++
		}
		fmt.Fprintf(w, "%s/%s: %s -> %s\n", p.Namespace, p.Name, placement(p.Live), placement(p.Shadow))
	}
	sum := c.Summary
	sum.Same -= statusChanged
	line := summaryLine(sum)
	if statusChanged > 0 {
		line += fmt.Sprintf(", %d changed status (placed in neither run)", statusChanged)
	}
	fmt.Fprintln(w, line)
}

// placement is where a run left a pod, in one word.
func placement(r *sim.PodResult) string {
	if r == nil {
		return "(absent)"
	}
	if node, ok := r.Placed(); ok {
		return node
	}
	return r.Status
}
