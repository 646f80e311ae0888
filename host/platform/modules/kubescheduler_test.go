package modules_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// TestKubePluginsAreServed: every kube-scheduler plugin a
// KubeSchedulerConfiguration may enable is served by the builtin bundle
// or the host, so a converted file never names a plugin nobody has.
func TestKubePluginsAreServed(t *testing.T) {
	reg, err := modules.Load(context.Background(), config.Default(), modules.Options{NativeBuiltin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	for _, name := range config.KubeSchedulerPlugins() {
		if reg.PluginModule(name) == nil && !slices.Contains(modules.HostPluginNames, name) && name != "SchedulingGates" {
			t.Errorf("%s: accepted in a KubeSchedulerConfiguration but served by no module and no host plugin", name)
		}
	}
}

// queueAndBinder are the host plugins every profile needs (a queue sort
// and a binder, as kube-scheduler requires), for building profiles here.
var queueAndBinder = framework.HostPlugins{config.DefaultQueueSort: framework.PrioritySort{}, framework.DefaultBinderName: framework.DefaultBinder{}}

// TestKubeConfigurationBuildsProfiles: a converted file builds profiles
// with kube-scheduler's plugins and weights.
func TestKubeConfigurationBuildsProfiles(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: no-scoring-scheduler
  plugins:
    preScore:
      disabled: [{name: '*'}]
    score:
      disabled: [{name: '*'}]
- schedulerName: reweighted
  plugins:
    multiPoint:
      enabled: [{name: SchedulingGates}, {name: TaintToleration}]
      disabled: [{name: VolumeBinding}, {name: ImageLocality}]
    score:
      enabled: [{name: NodeResourcesFit, weight: 5}]
    filter:
      disabled: [{name: NodePorts}]
`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := modules.Load(context.Background(), cfg, modules.Options{NativeBuiltin: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	for i, want := range []struct {
		score   map[string]int64
		noPorts bool
	}{
		// kube-scheduler v1's default weights, minus its volume plugins.
		{score: map[string]int64{"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "PodTopologySpread": 2,
			"InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}},
		{score: map[string]int64{}},
		// TaintToleration re-enabled without a weight gets 1 (not its
		// default 3); score.enabled's 5 wins over the default 1.
		{score: map[string]int64{"TaintToleration": 1, "NodeAffinity": 2, "NodeResourcesFit": 5, "PodTopologySpread": 2,
			"InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1}, noPorts: true},
	} {
		prof, err := framework.BuildProfile(context.Background(), cfg, i, reg, queueAndBinder)
		if err != nil {
			t.Fatalf("profiles[%d]: %v", i, err)
		}
		defer prof.Close(context.Background())
		if got := prof.ScorePlugins(); !reflect.DeepEqual(got, want.score) {
			t.Errorf("profiles[%d] score weights %v, want %v", i, got, want.score)
		}
		if got := slices.Contains(prof.FilterPlugins(), "NodePorts"); got == want.noPorts {
			t.Errorf("profiles[%d] filters %v", i, prof.FilterPlugins())
		}
	}
}

// TestProfilesResolvePluginsInTheirOwnModules: a profile can enable a
// plugin only its own modules serve; another profile naming it gets
// "unknown plugin", with the profile's field.
func TestProfilesResolvePluginsInTheirOwnModules(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: with-batch
  modules: [{name: batch, path: ../../../plugins-wasm/dist/batchpreemption.tinygo.wasm}]
  pluginConfig:
  - name: BatchFirstPreemption
- schedulerName: without
  pluginConfig:
  - name: BatchFirstPreemption
`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := modules.Load(context.Background(), cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(context.Background())
	prof, err := framework.BuildProfile(context.Background(), cfg, 0, reg, queueAndBinder)
	if err != nil {
		t.Fatalf("profiles[0]: %v", err)
	}
	prof.Close(context.Background())
	_, err = framework.BuildProfile(context.Background(), cfg, 1, reg, queueAndBinder)
	if err == nil || !strings.Contains(err.Error(), `profiles[1].pluginConfig[0].name: unknown plugin "BatchFirstPreemption"`) {
		t.Fatalf("profiles[1]: err = %v", err)
	}
}
