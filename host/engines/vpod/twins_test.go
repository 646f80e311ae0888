package vpod

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

// The knative bundle's plugins served two ways: as native twins (the
// plugins as plain Go behind the real guest runtime and ABI encoding)
// and as the TinyGo Wasm build in wazero. The module is configured by
// name (with an in-process backend, or a path to the embedded bytes), so
// these tests do not depend on the vpod configuration section.
const knativeTestModule = "knative-bundle"

var (
	registriesOnce sync.Once
	registries     map[string]*modules.Registry
	registriesErr  error
	registriesDir  string
)

// registryBackends are the backends knativeRegistry serves: the native
// twins and the Wasm build on wazero ("wasm"), and on wasmtime in a test
// binary built with -tags wasmtime (bench_wasmtime_test.go).
var registryBackends = []string{"native", "wasm"}

// knativeRegistry loads (once per test binary) a registry serving the
// knative plugins: backend "native", "wasm" or (with -tags wasmtime)
// "wasmtime".
func knativeRegistry(tb testing.TB, backend string) *modules.Registry {
	tb.Helper()
	registriesOnce.Do(func() {
		registries = map[string]*modules.Registry{}
		registriesDir, registriesErr = os.MkdirTemp("", "vpod-test-")
		if registriesErr != nil {
			return
		}
		wasmPath := filepath.Join(registriesDir, "knative.wasm")
		if registriesErr = os.WriteFile(wasmPath, dist.KnativeWasm, 0o600); registriesErr != nil {
			return
		}
		ctx := context.Background()
		for _, b := range registryBackends {
			cfg := config.Default()
			opts := modules.Options{CacheDir: filepath.Join(registriesDir, "cache"), NativeBuiltin: true}
			if b == "native" {
				cfg.Modules = []config.ModuleSpec{{Name: knativeTestModule}}
				opts.Backends = map[string]guest.Backend{knativeTestModule: native.New(nil, knativedefaults.Plugins()...)}
			} else {
				cfg.Modules = []config.ModuleSpec{{Name: knativeTestModule, Path: wasmPath}}
				// "wasm" is wazero in every build, also where wasmtime
				// is the binary's default.
				cfg.Modules[0].Runtime = config.RuntimeWazero
				if b == "wasmtime" {
					cfg.Modules[0].Runtime = config.RuntimeWasmtime
				}
			}
			reg, err := modules.Load(ctx, cfg, opts)
			if err != nil {
				registriesErr = fmt.Errorf("%s registry: %w", b, err)
				return
			}
			registries[b] = reg
		}
	})
	if registriesErr != nil {
		tb.Fatal(registriesErr)
	}
	return registries[backend]
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, r := range registries {
		r.Close(context.Background())
	}
	if registriesDir != "" {
		os.RemoveAll(registriesDir)
	}
	os.Exit(code)
}

func init() {
	for _, b := range []string{"native", "wasm"} {
		b := b
		policyBackends[b] = func(t *testing.T, sched, desched *Policy) *Policies {
			p, err := NewPolicies(context.Background(), knativeRegistry(t, b), sched, desched, nil)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
}
