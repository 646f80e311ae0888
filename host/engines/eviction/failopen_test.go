package eviction

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/internal/testoci"
)

// An eviction policy whose plugin no module serves is left out, not
// refused, when a FailOpen module could not be fetched (the plugin may be
// that module's); the other policies run. With FailClose the load is
// refused naming the module's image, and with every module available an
// unserved plugin is still an error.
func TestFailOpenModuleLeavesItsEvictionPoliciesOut(t *testing.T) {
	ctx := context.Background()
	const yaml = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: extra
  image: registry.example:5000/policies/extra@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  failStrategy: FailOpen
profiles: [{schedulerName: a}]
eviction:
  policies:
  - plugin: ExtraPressure
  - plugin: NodePressure
`
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	unreachable := testoci.Unreachable()
	opts := modules.Options{NativeBuiltin: true, CacheDir: t.TempDir(), Fetcher: unreachable}
	set, err := LoadPolicies(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("FailOpen: %v", err)
	}
	defer set.Close(ctx)
	if got := set.Policies(); len(got) != 1 || got[0].Name() != "NodePressure" {
		t.Fatalf("policies %v, want only NodePressure", got)
	}

	cfg.Modules[0].FailStrategy = ""
	if _, err := LoadPolicies(ctx, cfg, opts); err == nil || !strings.Contains(err.Error(), "modules[0].image") {
		t.Fatalf("FailClose: %v", err)
	}

	cfg.Modules = nil
	if _, err := LoadPolicies(ctx, cfg, opts); err == nil || !strings.Contains(err.Error(), `no module serves plugin "ExtraPressure"`) {
		t.Fatalf("no FailOpen module unavailable: %v", err)
	}
}
