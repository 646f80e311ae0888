package modules

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// Compiler turns a module's bytes into a guest.Backend on one Wasm
// runtime. Each runtime keeps its own compiled-code cache.
type Compiler interface {
	Compile(ctx context.Context, name string, wasm []byte, lim wasm.Limits) (guest.Backend, error)
	Close(ctx context.Context) error
}

// runtimeFactory makes a runtime's Compiler, with its on-disk cache
// under cacheDir (empty caches in memory).
type runtimeFactory func(cacheDir string, log hclog.Logger) (Compiler, error)

// runtimes are the Wasm runtimes this binary has, by the name a module
// entry's `runtime` field uses. wazero is always there; wasmtime only in
// binaries built with the wasmtime tag (runtime_wasmtime.go), since it
// needs cgo.
var runtimes = map[string]runtimeFactory{
	config.RuntimeWazero: func(dir string, log hclog.Logger) (Compiler, error) {
		rt, err := wasm.NewRuntime(dir, log)
		if err != nil {
			return nil, err
		}
		return wazeroCompiler{rt}, nil
	},
}

// DefaultRuntime is the runtime a module runs on when neither its entry
// nor Options.Runtime names one: the fastest this binary has. wasmtime
// (Cranelift-compiled code, in binaries built with the wasmtime tag and
// cgo: the release binary and the image) runs the policy bundles
// measurably closer to native than wazero (docs/PERFORMANCE.md); a pure-Go
// build has only wazero.
func DefaultRuntime() string {
	if _, ok := runtimes[config.RuntimeWasmtime]; ok {
		return config.RuntimeWasmtime
	}
	return config.RuntimeWazero
}

// CheckRuntime reports whether this binary can run modules on the named
// runtime, with an error that says what the binary has and, for
// wasmtime, how to build a binary with it.
func CheckRuntime(name string) error {
	if _, ok := runtimes[name]; ok {
		return nil
	}
	if name == config.RuntimeWasmtime {
		return fmt.Errorf("this wasmsched binary was built without the wasmtime runtime (it needs cgo: build with make build, or CGO_ENABLED=1 go build -tags wasmtime); it has %s", strings.Join(Runtimes(), ", "))
	}
	return fmt.Errorf("unknown runtime %q: this binary has %s", name, strings.Join(Runtimes(), ", "))
}

// Runtimes lists the Wasm runtimes this binary can run modules on.
func Runtimes() []string {
	names := make([]string, 0, len(runtimes))
	for n := range runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// wazeroCompiler adapts wasm.Runtime to Compiler.
type wazeroCompiler struct{ rt *wasm.Runtime }

func (c wazeroCompiler) Compile(ctx context.Context, name string, bin []byte, lim wasm.Limits) (guest.Backend, error) {
	return c.rt.Compile(ctx, name, bin, lim)
}

func (c wazeroCompiler) Close(ctx context.Context) error { return c.rt.Close(ctx) }

// compilers holds the runtimes successive registries share, each made
// on first use: a configuration without a wasmtime module never starts
// wasmtime.
type compilers struct {
	dir string // cache root; each runtime caches in its own subdirectory
	log hclog.Logger
	mu  sync.Mutex
	by  map[string]Compiler
}

// get returns the named runtime's compiler, making it on first use.
func (c *compilers) get(name string) (Compiler, error) {
	if name == "" {
		name = DefaultRuntime()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if comp, ok := c.by[name]; ok {
		return comp, nil
	}
	if err := CheckRuntime(name); err != nil {
		return nil, err
	}
	newCompiler := runtimes[name]
	dir := c.dir
	if dir != "" && name != config.RuntimeWazero {
		// wazero's cache is the configured directory; another runtime's
		// goes next to it ("wazero" -> "wasmtime").
		if filepath.Base(dir) == config.RuntimeWazero {
			dir = filepath.Join(filepath.Dir(dir), name)
		} else {
			dir = dir + "-" + name
		}
	}
	comp, err := newCompiler(dir, c.log)
	if err != nil {
		return nil, fmt.Errorf("start the %s runtime: %w", name, err)
	}
	if c.by == nil {
		c.by = map[string]Compiler{}
	}
	c.by[name] = comp
	return comp, nil
}

// close closes every runtime made.
func (c *compilers) close(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, comp := range c.by {
		comp.Close(ctx)
	}
	c.by = nil
}
