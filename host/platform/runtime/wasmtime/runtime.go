//go:build wasmtime

package wasmtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	wt "github.com/bytecodealliance/wasmtime-go/v44"
	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/internal/compcache"
)

// Interrupt is how a call's deadline stops a guest.
type Interrupt int

const (
	// InterruptEpoch checks an engine-wide epoch counter at loop headers
	// and function entries; a ticker advances it (the default).
	InterruptEpoch Interrupt = iota
	// InterruptFuel also counts instructions against a per-call budget
	// of CallTimeout × FuelPerSecond, a deterministic bound; the epoch
	// deadline stays armed, because fuel counts a bulk memory instruction
	// as one whatever its size (a loop of memory.fill over 32 MiB ran on,
	// 5 s past a 100 ms deadline, on fuel alone).
	InterruptFuel
)

func (i Interrupt) String() string {
	if i == InterruptFuel {
		return "fuel"
	}
	return "epoch"
}

// EpochTick is how often a Runtime advances its engine's epoch: a call is
// stopped between its deadline and two ticks later.
const EpochTick = 10 * time.Millisecond

// FuelPerSecond converts a call timeout into fuel (about one unit per
// Wasm instruction) under InterruptFuel. The default bundle burns ~11e9
// per second on the 2-core development machine (BenchmarkFuelRate); the
// rate is set above that so that a guest is not stopped before its
// deadline on a faster machine — on a slower one it runs past it.
const FuelPerSecond = 16_000_000_000

// MaxWasmStack bounds the native stack a call's Wasm frames may use;
// deeper recursion traps ("call stack exhausted"). Wasm runs on the
// calling thread's stack, so this stays well under a thread's.
const MaxWasmStack = 1 << 20

// Options configure a Runtime beyond NewRuntime's defaults.
type Options struct {
	// Interrupt selects how deadlines stop guests (InterruptEpoch if
	// zero).
	Interrupt Interrupt
}

// Runtime holds what modules share: the Wasmtime engine (its compiler
// configuration), the compiled-code caches, the epoch ticker and the
// logger. Modules compiled by one Runtime run on its engine, so the
// engine lives until the Runtime and every Backend it made are closed.
type Runtime struct {
	dir       string // on-disk cache root; "" caches in memory only
	log       hclog.Logger
	interrupt Interrupt
	engine    *wt.Engine
	linker    *wt.Linker    // the host functions every instance imports
	epoch     atomic.Uint64 // the engine's epoch as the ticker advanced it
	stop      chan struct{}
	ticker    sync.WaitGroup
	rejected  atomic.Int64

	mu       sync.Mutex
	modules  map[string]*wt.Module // compiled modules by cache key
	compiles map[string]*sync.Mutex
	live     int  // Backends not yet closed
	closed   bool // Close was called
	released bool // the engine and modules are gone
}

// NewRuntime returns a runtime with epoch deadlines whose compiled code
// is cached in cacheDir (created private if missing; see cache.go for how
// entries are checked), as package wasm's NewRuntime does: when another
// user owns cacheDir the cache goes into a private subdirectory
// uid-<our uid> of it, and when that fails too, in memory only, with a
// warning. An empty cacheDir caches in memory only.
func NewRuntime(cacheDir string, log hclog.Logger) (*Runtime, error) {
	return NewRuntimeWithOptions(cacheDir, log, Options{})
}

// NewRuntimeWithOptions is NewRuntime with Options.
func NewRuntimeWithOptions(cacheDir string, log hclog.Logger, opts Options) (*Runtime, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if err := checkLayout(); err != nil {
		return nil, err
	}
	if opts.Interrupt != InterruptEpoch && opts.Interrupt != InterruptFuel {
		return nil, fmt.Errorf("wasmtime: unknown interrupt mode %d", opts.Interrupt)
	}
	r := &Runtime{
		log:       log,
		interrupt: opts.Interrupt,
		modules:   map[string]*wt.Module{},
		compiles:  map[string]*sync.Mutex{},
		stop:      make(chan struct{}),
	}
	if cacheDir != "" {
		dir, err := compcache.Root(cacheDir)
		if err != nil {
			log.Warn("wasmtime compilation cache not used: it must be a directory only this user can write",
				"dir", cacheDir, "error", err)
		}
		r.dir = dir
	}
	if v := os.Getenv(ProfileEnv); v != "" {
		if _, ok := profilers[v]; !ok {
			log.Warn("wasmtime profiling not enabled: unknown value", "env", ProfileEnv, "value", v, "want", "perfmap or jitdump")
		}
	}
	r.engine = wt.NewEngineWithConfig(engineConfig(opts.Interrupt))
	linker, err := newLinker(r.engine)
	if err != nil {
		r.engine.Close()
		return nil, fmt.Errorf("wasmtime: host functions: %w", err)
	}
	r.linker = linker
	r.ticker.Add(1)
	go r.tick()
	return r, nil
}

// engineConfig is the compiler and runtime configuration of every
// module: Cranelift optimising for speed, the Wasm features wazero runs
// (no threads, SIMD, 64-bit or multiple memories, GC or the component
// model: wasm.Instrument refuses them anyway), a bounded stack, and the
// deadline instrumentation.
func engineConfig(mode Interrupt) *wt.Config {
	cfg := wt.NewConfig()
	cfg.SetStrategy(wt.StrategyCranelift)
	cfg.SetCraneliftOptLevel(wt.OptLevelSpeed)
	cfg.SetMaxWasmStack(MaxWasmStack)
	cfg.SetWasmThreads(false)
	cfg.SetWasmRelaxedSIMD(false)
	cfg.SetWasmSIMD(false)
	cfg.SetWasmMemory64(false)
	cfg.SetWasmMultiMemory(false)
	cfg.SetWasmGC(false)
	cfg.SetWasmFunctionReferences(false)
	cfg.SetWasmComponentModel(false)
	cfg.SetEpochInterruption(true)
	cfg.SetConsumeFuel(mode == InterruptFuel)
	if p, ok := profilers[os.Getenv(ProfileEnv)]; ok {
		cfg.SetProfiler(p)
	}
	return cfg
}

// ProfileEnv names the environment variable that makes wasmtime describe
// its compiled guest code to Linux perf, so `perf record` attributes time
// to guest functions by name: "perfmap" (a /tmp/perf-PID.map, enough for
// perf report) or "jitdump" (code too, for perf annotate after perf
// inject --jit). It is how docs/PERFORMANCE.md's per-function costs were
// found; production runs leave it unset.
const ProfileEnv = "WASMSCHED_WASMTIME_PROFILE"

// profilers are ProfileEnv's values, as wasmtime's profiling strategies
// (wasmtime/config.h; wasmtime-go names only jitdump).
var profilers = map[string]wt.ProfilingStrategy{
	"perfmap": wt.ProfilingStrategy(3), // WASMTIME_PROFILING_STRATEGY_PERFMAP
	"jitdump": wt.ProfilingStrategyJitdump,
}

// tick advances the engine's epoch, and r.epoch that host imports read,
// every EpochTick until the runtime is released.
func (r *Runtime) tick() {
	defer r.ticker.Done()
	t := time.NewTicker(EpochTick)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.engine.IncrementEpoch()
			r.epoch.Add(1)
		}
	}
}

// epochsFor is how many epochs a call of the given timeout may run: it is
// stopped between its deadline and two ticks after.
func epochsFor(timeout time.Duration) uint64 {
	return uint64((timeout+EpochTick-1)/EpochTick) + 1
}

// CacheRejected counts the on-disk cache entries found altered (or not
// written by us) and discarded since the runtime was made.
func (r *Runtime) CacheRejected() int64 { return r.rejected.Load() }

// Interrupt reports how this runtime's deadlines stop guests.
func (r *Runtime) Interrupt() Interrupt { return r.interrupt }

// DefaultCacheDir is where compiled modules are cached by default: the
// user's cache directory, or the temp directory without one.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "wasmsched", "wasmtime")
	}
	return filepath.Join(os.TempDir(), "wasmsched-wasmtime")
}

// errClosed is returned by Compile after Close.
var errClosed = errors.New("wasmtime runtime closed")

// acquire registers a new Backend; it fails once the runtime is closed.
func (r *Runtime) acquire() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	r.live++
	return nil
}

// releaseBackend is called by Backend.Close.
func (r *Runtime) releaseBackend() {
	r.mu.Lock()
	r.live--
	last := r.closed && r.live == 0
	r.mu.Unlock()
	if last {
		r.release()
	}
}

// Close releases the compiled modules, the ticker and the engine (on-disk
// cache entries stay) — at once, or when the last Backend of this runtime
// is closed: the engine runs their instances until then.
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	now := r.live == 0
	r.mu.Unlock()
	if now {
		r.release()
	}
	return nil
}

// release frees what the runtime holds; called once, with no Backend left.
func (r *Runtime) release() {
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return
	}
	r.released = true
	modules := r.modules
	r.modules = map[string]*wt.Module{}
	r.mu.Unlock()
	close(r.stop)
	r.ticker.Wait()
	for _, m := range modules {
		m.Close()
	}
	r.linker.Close()
	r.engine.Close()
}
