// Package wasm runs policy modules on wazero (compiler mode): it compiles
// a module once (through a checked on-disk compilation cache, cache.go),
// checks its exports and imports, and makes sandboxed instances of it for
// package guest.
//
// Sandbox: a guest gets WASI with no filesystem, no network, no
// environment, no arguments, a fake clock and a deterministic random
// source; its stdout/stderr and its log calls go to the host's logger
// tagged with the module, within bounds (output.go). Each call runs under
// a deadline that loops, calls, bulk memory instructions and host imports
// all observe (the call timeout, plus an allowance in proportion to its
// size for a push of the host's state: guest.Pushable), with a bounded
// call stack and capped tables
// (interrupt.go), and the module's memory is capped; a trap, a deadline
// or a cap reached fails the call in one line (quoting a guest's panic
// message) and the instance is discarded by the pool (see
// guest.ErrInstanceBroken). docs/ARCHITECTURE.md, "Sandbox guarantees",
// states the bounds and the tests that hold them.
package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"

	"github.com/wasmsched/wasmsched/host/internal/compcache"
)

// Runtime holds what modules share: the compilation caches and the logger.
type Runtime struct {
	dir      string // on-disk cache root; "" caches in memory only
	log      hclog.Logger
	mu       sync.Mutex
	mem      wazero.CompilationCache            // when dir is ""
	caches   map[string]wazero.CompilationCache // by module digest, under dir
	rejected atomic.Int64
}

// NewRuntime returns a runtime whose compiled code is cached in cacheDir
// (created private if missing; see cache.go for how entries are checked).
// When another user owns cacheDir (a volume mounted for a container, say),
// the cache goes into a private subdirectory uid-<our uid> of it; when
// that fails too, the runtime caches in memory only, with a warning: a
// cache others can write would let them choose the code a module runs.
// An empty cacheDir caches in memory only.
func NewRuntime(cacheDir string, log hclog.Logger) (*Runtime, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	r := &Runtime{log: log, caches: map[string]wazero.CompilationCache{}}
	if cacheDir != "" {
		dir, err := compcache.Root(cacheDir)
		if err != nil {
			log.Warn("wasm compilation cache not used: it must be a directory only this user can write",
				"dir", cacheDir, "error", err)
		}
		r.dir = dir
	}
	if r.dir == "" {
		r.mem = wazero.NewCompilationCache()
	}
	return r, nil
}

// CacheRejected counts the on-disk cache entries found altered (or not
// written by us) and discarded since the runtime was made.
func (r *Runtime) CacheRejected() int64 { return r.rejected.Load() }

// The on-disk compilation cache is checked before wazero reads it
// (package compcache states how): a private root, one directory per
// sha256 of the instrumented module (what wazero compiles), every file
// checked against a manifest written at compile time; an altered or
// unrecorded file is removed before wazero reads the directory, so wazero
// recompiles, and the rejection is logged and counted
// (Runtime.CacheRejected).

// compilationCache returns the cache to compile a module with, by the
// digest of what is compiled, and whether the caller must seal it once
// compiled (the first use of an on-disk cache directory in this runtime).
func (r *Runtime) compilationCache(name string, compiled []byte) (c wazero.CompilationCache, dir, digest string, seal bool) {
	if r.dir == "" {
		return r.mem, "", "", false
	}
	sum := sha256.Sum256(compiled)
	digest = hex.EncodeToString(sum[:])
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.caches[digest]; ok {
		return c, "", "", false
	}
	dir = filepath.Join(r.dir, digest)
	rejected, err := compcache.VerifyDir(dir, digest)
	if len(rejected) > 0 {
		r.rejected.Add(int64(len(rejected)))
		r.log.Error("wasm compilation cache: discarded entries that do not match what this module compiled to; recompiling",
			"module", name, "dir", dir, "rejected", strings.Join(rejected, "; "))
	}
	if err == nil {
		err = compcache.PrivateDir(dir)
	}
	if err == nil {
		c, err = wazero.NewCompilationCacheWithDir(dir)
	}
	if err != nil {
		// Compile without the disk rather than trust or fail.
		r.log.Warn("wasm compilation cache unusable for this module; compiling in memory",
			"module", name, "dir", dir, "error", err)
		c = wazero.NewCompilationCache()
		dir = ""
	}
	r.caches[digest] = c
	return c, dir, digest, dir != ""
}

// sealCache records a freshly compiled module's cache entries.
func (r *Runtime) sealCache(name, dir, digest string) {
	if err := compcache.SealDir(dir, digest); err != nil {
		r.log.Warn("wasm compilation cache: could not record the entries; they will be recompiled next time",
			"module", name, "dir", dir, "error", err)
	}
}

// DefaultCacheDir is where compiled modules are cached by default: the
// user's cache directory, or the temp directory without one.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "wasmsched", "wazero")
	}
	return filepath.Join(os.TempDir(), "wasmsched-wazero")
}

// Close releases the compilation caches (on-disk entries stay).
func (r *Runtime) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if r.mem != nil {
		errs = append(errs, r.mem.Close(ctx))
	}
	for _, c := range r.caches {
		errs = append(errs, c.Close(ctx))
	}
	r.caches = map[string]wazero.CompilationCache{}
	return errors.Join(errs...)
}

// Limits bound what one module's instances may use.
type Limits struct {
	// MemoryBytes caps each instance's linear memory; 0 means 64 MiB.
	// Rounded up to whole 64 KiB pages.
	MemoryBytes uint64
	// CallTimeout is the deadline of each call into the guest; 0 means 1s.
	// A push of the host's state (guest.Pushable) gets more: its
	// allowance on top.
	CallTimeout time.Duration
}

// Defaults for Limits.
const (
	DefaultMemoryBytes = 64 << 20
	DefaultCallTimeout = time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultMemoryBytes
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = DefaultCallTimeout
	}
	return l
}

const wasmPageSize = 64 << 10

func (l Limits) pages() uint32 {
	p := (l.MemoryBytes + wasmPageSize - 1) / wasmPageSize
	if p > 65536 {
		p = 65536
	}
	return uint32(p)
}
