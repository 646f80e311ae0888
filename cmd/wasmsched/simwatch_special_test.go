package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/sim"
	"github.com/wasmsched/wasmsched/host/run/watch"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/plugins-wasm/dist"
)

// runSignal is a notes writer that tells the test each time the loop has
// finished a run (it prints the watching line then), so that the test
// waits on the loop itself rather than on a clock.
type runSignal struct {
	testlog.Buffer
	runs chan struct{}
}

func newRunSignal() *runSignal { return &runSignal{runs: make(chan struct{}, 64)} }

func (r *runSignal) Write(p []byte) (int, error) {
	n, err := r.Buffer.Write(p)
	for i := strings.Count(string(p), watching); i > 0; i-- {
		r.runs <- struct{}{}
	}
	return n, err
}

// wait returns the output of run n (1-based) once the loop has finished
// it, failing the test if ctx ends first: a loop that hangs on a file
// fails here instead of hanging the test.
func (r *runSignal) wait(ctx context.Context, t *testing.T, n int) string {
	t.Helper()
	select {
	case <-r.runs:
	case <-ctx.Done():
		t.Fatalf("run %d did not finish before the test's deadline (a read blocked?); output so far:\n%s", n, r.String())
	}
	return runOutput(r.String(), n)
}

// replace puts what make creates at path in one rename, as a build or
// a ConfigMap swap does.
func replace(t *testing.T, path string, make func(tmp string) error) {
	t.Helper()
	tmp := path + ".new"
	if err := make(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A module file swapped under --watch for a /dev/zero symlink or a FIFO
// is refused with an error naming it and what it is, at once: the watch's
// digests read it with os.ReadFile, so /dev/zero grew the process until
// memory ran out and the FIFO blocked the loop for ever. The last good run
// (and its compiled module) stays, and the loop goes on watching: when the
// module comes back, the next run reuses the module compiled before.
func TestWatchLoopRefusesSpecialModuleFiles(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	cluster := copyTestdata(t, dir, "shadow-cluster.yaml")
	wasmPath := filepath.Join(dir, "plugins.wasm")
	if err := os.WriteFile(wasmPath, dist.DefaultWasm, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "wasmsched.yaml")
	if err := os.WriteFile(cfg, []byte(spreadConfig+"modules:\n- name: default\n  path: plugins.wasm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	promReg := prometheus.NewRegistry()
	m, err := metrics.New(promReg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	notes := newRunSignal()
	var out testlog.Buffer
	done := make(chan error, 1)
	go func() {
		done <- watchLoop(ctx, &out, watchOptions{Manifests: []string{cluster}, ConfigPath: cfg, Output: "table",
			Seed: 1, Debounce: 50 * time.Millisecond, Notes: notes, Metrics: m, Log: hclog.NewNullLogger()})
	}()

	if first := notes.wait(ctx, t, 1); strings.Contains(first, "error") {
		t.Fatalf("first run:\n%s", first)
	}
	for i, tc := range []struct {
		name, want string
		make       func(tmp string) error
	}{
		{"/dev/zero symlink", wasmPath + ": is a character device, not a regular file",
			func(tmp string) error { return os.Symlink("/dev/zero", tmp) }},
		{"FIFO", wasmPath + ": is a pipe (FIFO), not a regular file",
			func(tmp string) error { return syscall.Mkfifo(tmp, 0o600) }},
	} {
		replace(t, wasmPath, tc.make)
		got := notes.wait(ctx, t, i+2)
		if !strings.Contains(got, "--- re-running: "+wasmPath+" ---") || !strings.Contains(got, "error: modules[0].path: "+tc.want) ||
			!strings.Contains(got, "the last good run stays") {
			t.Errorf("%s: run %d:\n%s", tc.name, i+2, got)
		}
	}
	// The module comes back: the loop still watches it, and runs with the
	// module compiled for the first run, which the refusals left alone.
	replace(t, wasmPath, func(tmp string) error { return os.WriteFile(tmp, dist.DefaultWasm, 0o644) })
	last := notes.wait(ctx, t, 4)
	if strings.Contains(last, "error") || !strings.Contains(last, "6 pods: 6 same, 0 moved") {
		t.Errorf("module restored, run 4:\n%s", last)
	}
	if got := moduleLoads(t, promReg, "default", "success"); got != 1 {
		t.Errorf("%v loads of module default, want 1: the first run's module is reused", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("watchLoop = %v", err)
	}
}

// Digest reads at least what any loader would accept: a file too large
// for it is refused by its loader anyway.
func TestWatchDigestCoversEveryInputLimit(t *testing.T) {
	for name, limit := range map[string]int64{
		"modules.MaxModuleBytes":   modules.MaxModuleBytes,
		"config.MaxFileBytes":      config.MaxFileBytes,
		"config.MaxVPodPolicyFile": config.MaxVPodPolicyFileBytes,
		"sim.MaxManifestBytes":     sim.MaxManifestBytes,
	} {
		if watch.MaxDigestBytes < limit {
			t.Errorf("watch.MaxDigestBytes %d < %s %d", watch.MaxDigestBytes, name, limit)
		}
	}
}
