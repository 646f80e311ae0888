//go:build wasmtime

package wasmtime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	wt "github.com/bytecodealliance/wasmtime-go/v44"

	"github.com/wasmsched/wasmsched/host/internal/compcache"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// Compiled code is cached in memory per Runtime, by cacheKey, and on disk
// under the runtime's cache directory, one directory per cacheKey holding
// the serialised module (moduleFile) and a manifest of its sha256
// (package compcache). Wasmtime deserialises a module by mapping its
// machine code as it finds it, so an entry is read once, hashed, and
// deserialised only if the manifest vouches for exactly the bytes read; an
// altered or unrecorded entry is removed, logged at error level, counted
// (Runtime.CacheRejected) and recompiled. Entries a different engine
// configuration or Wasmtime version wrote are refused by Wasmtime itself
// and recompiled.
//
// A module from either cache was validated (wasm.InlineFills) when it was
// compiled, so a hit skips the validator; the shape check (checkShape)
// runs on every Compile.

// moduleFile is the serialised module in its cache directory.
const moduleFile = "module.cwasm"

// maxModuleFile bounds what is read back from the disk cache.
const maxModuleFile = 512 << 20

// cacheKeyPrefix ties cache entries to this backend's compiler
// configuration; change it with engineConfig.
const cacheKeyPrefix = "wasmsched wasmtime-go/v44.0.0 cranelift-speed stack=1MiB "

// cacheKey names a module's compiled code: the sha256 of what is compiled
// and how.
func (r *Runtime) cacheKey(bin []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s%s rewrite=%d\x00", cacheKeyPrefix, r.interrupt, wasm.RewriteRevision)
	h.Write(bin)
	return hex.EncodeToString(h.Sum(nil))
}

// compiledModule returns the module compiled from bin, from the memory
// cache, the disk cache, or compiled afresh (validated with
// wasm.Instrument first). cached tells whether compiling was avoided.
func (r *Runtime) compiledModule(name string, bin []byte) (m *wt.Module, cached bool, err error) {
	key := r.cacheKey(bin)
	r.mu.Lock()
	if r.released {
		r.mu.Unlock()
		return nil, false, errClosed
	}
	if m := r.modules[key]; m != nil {
		r.mu.Unlock()
		return m, true, nil
	}
	// One compile per key at a time; others wait for it and share it.
	lock := r.compiles[key]
	if lock == nil {
		lock = &sync.Mutex{}
		r.compiles[key] = lock
	}
	r.mu.Unlock()
	lock.Lock()
	defer lock.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.compiles, key)
		r.mu.Unlock()
	}()
	r.mu.Lock()
	m = r.modules[key]
	r.mu.Unlock()
	if m != nil {
		return m, true, nil
	}

	dir := r.cacheDirFor(name, key)
	if dir != "" {
		if m = r.loadCached(name, dir, key); m != nil {
			cached = true
		}
	}
	if m == nil {
		// The same refusals as package wasm (start sections, unknown
		// instructions, tables and locals over the bounds), with the same
		// words, and small fills inlined; no time or stack checks:
		// Wasmtime stops guests with epochs or fuel instead.
		code, err := wasm.InlineFills(bin)
		if err != nil {
			return nil, false, err
		}
		if m, err = wt.NewModule(r.engine, code); err != nil {
			// Wasmtime's message spans lines ("Caused by: …"): one line.
			return nil, false, fmt.Errorf("compile: %s", strings.Join(strings.Fields(err.Error()), " "))
		}
		if dir != "" {
			r.store(name, dir, key, m)
		}
		// The compile's (and serialisation's) working memory is freed
		// but still resident in the C allocator; see trimMalloc.
		trimMalloc()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		m.Close()
		return nil, false, errClosed
	}
	r.modules[key] = m
	return m, cached, nil
}

// cacheDirFor prepares a module's on-disk cache directory, removing what
// its manifest does not vouch for; "" when the disk cache is off or
// unusable for it.
func (r *Runtime) cacheDirFor(name, key string) string {
	if r.dir == "" {
		return ""
	}
	dir := filepath.Join(r.dir, key)
	rejected, err := compcache.VerifyDir(dir, key)
	r.reject(name, dir, rejected)
	if err == nil {
		err = compcache.PrivateDir(dir)
	}
	if err != nil {
		r.log.Warn("wasmtime compilation cache unusable for this module; compiling in memory",
			"module", name, "dir", dir, "error", err)
		return ""
	}
	return dir
}

// reject counts and logs cache entries found not to match.
func (r *Runtime) reject(name, dir string, rejected []string) {
	if len(rejected) == 0 {
		return
	}
	r.rejected.Add(int64(len(rejected)))
	r.log.Error("wasmtime compilation cache: discarded entries that do not match what this module compiled to; recompiling",
		"module", name, "dir", dir, "rejected", strings.Join(rejected, "; "))
}

// loadCached deserialises a module's cached code if the manifest vouches
// for the bytes read; nil otherwise.
func (r *Runtime) loadCached(name, dir, key string) *wt.Module {
	b, ok, why := compcache.ReadVerified(dir, key, moduleFile, maxModuleFile)
	if !ok {
		if why != "" {
			r.reject(name, dir, []string{moduleFile + ": " + why})
			if err := os.Remove(filepath.Join(dir, moduleFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				r.log.Warn("wasmtime compilation cache: could not remove a rejected entry",
					"module", name, "dir", dir, "error", err)
			}
		}
		return nil
	}
	m, err := wt.NewModuleDeserialize(r.engine, b)
	if err != nil {
		// Written by another Wasmtime version or configuration: not
		// tampering, just stale.
		r.log.Info("wasmtime compilation cache: entry not usable by this build; recompiling",
			"module", name, "dir", dir, "error", err)
		return nil
	}
	return m
}

// store writes a freshly compiled module's code and seals its directory.
func (r *Runtime) store(name, dir, key string, m *wt.Module) {
	err := func() error {
		b, err := m.Serialize()
		if err != nil {
			return err
		}
		if err := compcache.WriteFile(dir, moduleFile, b); err != nil {
			return err
		}
		return compcache.SealDir(dir, key)
	}()
	if err != nil {
		r.log.Warn("wasmtime compilation cache: could not record the module; it will be recompiled next time",
			"module", name, "dir", dir, "error", err)
	}
}
