// Package wasmtest runs built policy modules in the real host, in-process,
// from a Go test: it loads a configuration (whose modules entries name the
// .wasm files under test), reads Kubernetes manifests, and schedules them on
// the in-memory cluster exactly as `wasmsched simulate` does — queue,
// profiles, sandbox, the modules' real machine code — returning the report.
//
// It is the in-process twin of guest-sdk/plugintest.Simulate (which runs
// the wasmsched binary): use it where the test's Go module can import the
// host (this repository, or a project that requires
// github.com/wasmsched/wasmsched), and plugintest where it cannot.
package wasmtest

import (
	"context"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// Simulate loads the configuration file (module paths relative to it, as
// everywhere) and the manifests, schedules every pod, and returns where each
// went. A configuration or manifest the host refuses, or a module that does
// not load, fails the test with the host's own message.
func Simulate(tb testing.TB, configPath string, manifests ...string) *sim.Report {
	tb.Helper()
	cfg, err := config.Load(configPath)
	if err != nil {
		tb.Fatalf("wasmtest: %v", err)
	}
	return Run(tb, cfg, manifests...)
}

// Run is Simulate with a configuration already in hand (e.g. built in the
// test); module paths in it must be absolute or relative to the working
// directory.
func Run(tb testing.TB, cfg *config.Configuration, manifests ...string) *sim.Report {
	tb.Helper()
	objs, err := sim.LoadFiles(manifests...)
	if err != nil {
		tb.Fatalf("wasmtest: %v", err)
	}
	rep, err := sim.Run(context.Background(), objs, sim.Options{Config: cfg, CacheDir: tb.TempDir()})
	if err != nil {
		tb.Fatalf("wasmtest: %v", err)
	}
	return rep
}
