package reload_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/oci"
	"github.com/wasmsched/wasmsched/host/run/reload"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/internal/testwait"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// envFetcher, when set, is the module fetcher newEnv's modules use.
var envFetcher *oci.Fetcher

const pollConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: zonepicker
  image: registry.example/policies/zonepicker:stable
  pullPolicy: Always
  failStrategy: FailOpen
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled: [{name: ZonePicker}]
`

// TestPollRetriesFailOpenAndFollowsAMovedTag: serving starts without a
// FailOpen module whose registry is down; the poll retries it once the
// registry answers, and then follows its tag when it moves.
func TestPollRetriesFailOpenAndFollowsAMovedTag(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	var down atomic.Bool
	down.Store(true)
	envFetcher = oci.NewFetcher(oci.FetcherOptions{CacheDir: t.TempDir(), MaxBytes: modules.MaxModuleBytes,
		Target: func(*config.ModuleSpec, config.ImageSource) (oras.ReadOnlyTarget, error) {
			if down.Load() {
				return nil, errors.New("dial tcp: connection refused")
			}
			return store, nil
		}})
	defer func() { envFetcher = nil }()
	e := newEnv(t, pollConfig)
	if got := testmetrics.Value(t, e.reg, "wasmsched_module_unavailable", testmetrics.Labels{"module": "zonepicker"}); got != 1 {
		t.Fatalf("wasmsched_module_unavailable = %v, want 1", got)
	}
	if got := e.m.UnavailableModules(); len(got) != 1 {
		t.Fatalf("unavailable modules %q", got)
	}
	r, err := reload.New(reload.Options{ConfigPath: e.cfgPath, Parts: e.parts, Config: e.cfg, Registry: e.modReg,
		Modules: e.modOpts, Metrics: e.m, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx, false, false) }()
	defer func() { cancel(); <-done }()

	a, err := oci.Push(ctx, store, "stable", testwasm.GoBytes(t, testwasm.ZonePickerA))
	if err != nil {
		t.Fatal(err)
	}
	down.Store(false)
	serving := func(sha string) func() bool {
		return func() bool {
			return testmetrics.Value(t, e.reg, "wasmsched_module_info", testmetrics.Labels{"module": "zonepicker", "sha256": sha}) == 1
		}
	}
	// Each reload compiles a 2.4 MB Go module (under -race on a shared
	// machine: tens of seconds); the bound only catches a reload that never comes.
	testwait.Eventually(t, 3*time.Minute, serving(a.SHA256), "the FailOpen module retried and serving")
	if got := e.m.UnavailableModules(); len(got) != 0 {
		t.Fatalf("still unavailable: %q", got)
	}
	b, err := oci.Push(ctx, store, "stable", testwasm.GoBytes(t, testwasm.ZonePickerB))
	if err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 3*time.Minute, serving(b.SHA256), "the moved tag serving")
	if got := e.reloads(metrics.ReloadRefused); got != 0 {
		t.Fatalf("%v reloads refused", got)
	}
}
