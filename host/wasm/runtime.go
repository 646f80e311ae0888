// Package wasm runs policy modules on wazero (compiler mode): it compiles
// a module once (through an on-disk compilation cache), checks its exports
// and imports, and makes sandboxed instances of it for package policy.
//
// Sandbox: a guest gets WASI with no filesystem, no network, no
// environment, no arguments, a fake clock and a deterministic random
// source; its stdout/stderr and its log calls go to the host's logger
// tagged with the module. Each call runs under a deadline and the module's
// memory is capped; a trap, a deadline or the cap reached fails the call
// and the instance is discarded by the pool (see policy.ErrInstanceBroken).
package wasm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
)

// Runtime holds what modules share: the compilation cache and the logger.
type Runtime struct {
	cache wazero.CompilationCache
	log   hclog.Logger
}

// NewRuntime returns a runtime whose compiled code is cached in cacheDir
// (created if missing); an empty cacheDir caches in memory only.
func NewRuntime(cacheDir string, log hclog.Logger) (*Runtime, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	r := &Runtime{log: log}
	if cacheDir == "" {
		r.cache = wazero.NewCompilationCache()
		return r, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("wasm compilation cache %q: %w", cacheDir, err)
	}
	c, err := wazero.NewCompilationCacheWithDir(cacheDir)
	if err != nil {
		return nil, fmt.Errorf("wasm compilation cache %q: %w", cacheDir, err)
	}
	r.cache = c
	return r, nil
}

// DefaultCacheDir is where compiled modules are cached by default: the
// user's cache directory, or the temp directory without one.
func DefaultCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "wasmsched", "wazero")
	}
	return filepath.Join(os.TempDir(), "wasmsched-wazero")
}

// Close releases the compilation cache (on-disk entries stay).
func (r *Runtime) Close(ctx context.Context) error { return r.cache.Close(ctx) }

// Limits bound what one module's instances may use.
type Limits struct {
	// MemoryBytes caps each instance's linear memory; 0 means 64 MiB.
	// Rounded up to whole 64 KiB pages.
	MemoryBytes uint64
	// CallTimeout is the deadline of each call into the guest; 0 means 1s.
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
