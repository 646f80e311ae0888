package framework_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/internal/testoci"
)

// A profile that enables plugins of a FailOpen module the registry could
// not serve runs without them; with FailClose the load is refused.
func TestFailOpenModuleLeavesItsPluginsOut(t *testing.T) {
	const yaml = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: extra
  image: registry.example:5000/policies/extra@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  failStrategy: FailOpen
profiles:
- schedulerName: default-scheduler
  plugins:
    filter:
      enabled: [{name: ExtraFilter}]
    score:
      enabled: [{name: ExtraScore, weight: 3}]
  pluginConfig:
  - name: ExtraFilter
    args: {strict: true}
`
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	f := testoci.Unreachable()
	reg, err := modules.Load(context.Background(), cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir(), Fetcher: f})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	p, err := framework.BuildProfile(context.Background(), cfg, 0, reg, host)
	if err != nil {
		t.Fatalf("FailOpen: %v", err)
	}
	defer p.Close(context.Background())
	if slices.Contains(p.FilterPlugins(), "ExtraFilter") || p.ScorePlugins()["ExtraScore"] != 0 {
		t.Fatalf("the unavailable module's plugins are enabled: %v %v", p.FilterPlugins(), p.ScorePlugins())
	}
	if !slices.Contains(p.FilterPlugins(), "NodeResourcesFit") {
		t.Fatalf("the default plugins are gone: %v", p.FilterPlugins())
	}

	cfg.Modules[0].FailStrategy = ""
	if _, err := modules.Load(context.Background(), cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir(), Fetcher: f}); err == nil ||
		!strings.Contains(err.Error(), "modules[0].image") {
		t.Fatalf("FailClose: %v", err)
	}
}
