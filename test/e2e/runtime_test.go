package e2e

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// e2eRuntime is the Wasm runtime the suite runs serve on:
// WASMSCHED_E2E_RUNTIME (make e2e sets it: wasmtime, the release build,
// when a C compiler is there), else the default of this test binary.
func e2eRuntime() string {
	if rt := os.Getenv("WASMSCHED_E2E_RUNTIME"); rt != "" {
		return rt
	}
	return modules.DefaultRuntime()
}

// TestMain says which runtime the suite runs, and refuses to run the
// in-process tests on another one than asked: a test binary built
// without -tags wasmtime cannot run what the release binary runs.
func TestMain(m *testing.M) {
	if os.Getenv("WASMSCHED_E2E") == "1" {
		rt := e2eRuntime()
		if err := modules.CheckRuntime(rt); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: WASMSCHED_E2E_RUNTIME=%s: %v (make e2e builds the suite with -tags wasmtime for it)\n", rt, err)
			os.Exit(1)
		}
		build := "the static pure-Go build"
		if slices.Contains(modules.Runtimes(), config.RuntimeWasmtime) {
			build = "the release build (cgo, -tags wasmtime)"
		}
		fmt.Fprintf(os.Stderr, "e2e: serve runs modules on %s; test binary and wasmsched binary: %s\n", rt, build)
	}
	os.Exit(m.Run())
}
