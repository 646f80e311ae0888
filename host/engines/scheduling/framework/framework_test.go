package framework_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

func TestNumFeasibleNodesToFind(t *testing.T) {
	for _, tc := range []struct {
		pct   int32
		nodes int
		want  int
	}{
		{0, 50, 50},     // small clusters: every node
		{0, 99, 99},     //
		{0, 500, 230},   // 50 - 500/125 = 46%
		{0, 5000, 500},  // 50 - 40 = 10%
		{0, 6000, 300},  // 50 - 48 = 2% -> floor of 5%
		{0, 1000, 420},  // 42%
		{10, 500, 100},  // 50 nodes, raised to the minimum of 100
		{30, 1000, 300}, // explicit percentage
		{100, 5000, 5000},
	} {
		if got := framework.NumFeasibleNodesToFind(tc.pct, tc.nodes); got != tc.want {
			t.Errorf("NumFeasibleNodesToFind(%d, %d) = %d, want %d", tc.pct, tc.nodes, got, tc.want)
		}
	}
}

func TestFitErrorMessage(t *testing.T) {
	cpu := framework.NewStatus(abi.Unschedulable, "Insufficient cpu")
	taint := framework.NewStatus(abi.UnschedulableAndUnresolvable, "node(s) had untolerated taint(s)")
	both := framework.NewStatus(abi.Unschedulable, "Insufficient cpu", "Insufficient memory")
	f := &framework.FitError{NumAllNodes: 4}
	f.Diagnosis.AddRejection("a", cpu)
	f.Diagnosis.AddRejection("b", cpu)
	f.Diagnosis.AddRejection("c", taint)
	f.Diagnosis.AddRejection("d", both)
	want := "0/4 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), 3 Insufficient cpu."
	if got := f.Error(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	f.Diagnosis.PostFilterMsg = "preemption: not eligible due to preemptionPolicy=Never."
	if got := f.Error(); !strings.HasSuffix(got, "3 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.") {
		t.Errorf("post-filter message not appended: %q", got)
	}
	// The PostFilter message ends as its plugin ends it: kube-scheduler
	// adds no period.
	f.Diagnosis.PostFilterMsg = "preemption: found a potential placement for pod on node a, preempting 1 victims"
	if got := f.Error(); !strings.HasSuffix(got, "3 Insufficient cpu. preemption: found a potential placement for pod on node a, preempting 1 victims") {
		t.Errorf("post-filter message changed: %q", got)
	}
	p := &framework.FitError{NumAllNodes: 3, Diagnosis: framework.Diagnosis{PreFilterMsg: "pod affinity terms conflict"}}
	if got := p.Error(); got != "0/3 nodes are available: pod affinity terms conflict." {
		t.Errorf("pre-filter message: %q", got)
	}
}

func registry(t *testing.T, cfg *config.Configuration) *modules.Registry {
	t.Helper()
	reg, err := modules.Load(context.Background(), cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(context.Background()) })
	return reg
}

var host = framework.HostPlugins{"PrioritySort": framework.PrioritySort{}, "DefaultBinder": framework.DefaultBinder{}}

func build(t *testing.T, yaml string) (*framework.Profile, error) {
	t.Helper()
	cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n" + yaml))
	if err != nil {
		t.Fatal(err)
	}
	p, err := framework.BuildProfile(context.Background(), cfg, len(cfg.Profiles)-1, registry(t, cfg), host)
	if p != nil {
		t.Cleanup(func() { p.Close(context.Background()) })
	}
	return p, err
}

func TestDefaultProfileHasKubeSchedulerWeightsAndFilterOrder(t *testing.T) {
	p, err := build(t, "profiles: [{schedulerName: default-scheduler}]")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
		"PodTopologySpread": 2, "InterPodAffinity": 2}
	got := p.ScorePlugins()
	for name, w := range want {
		if got[name] != w {
			t.Errorf("score weight of %s = %d, want %d", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("score plugins = %v", got)
	}
	if f := strings.Join(p.FilterPlugins(), ","); f != "NodeName,NodeUnschedulable,TaintToleration,NodeAffinity,NodePorts,NodeResourcesFit,PodTopologySpread,InterPodAffinity,NodeDeclaredFeatures" {
		t.Errorf("filter order = %s", f)
	}
}

func TestPluginSetsMergeLikeKubeScheduler(t *testing.T) {
	p, err := build(t, `profiles:
- schedulerName: custom
  plugins:
    score:
      disabled: [{name: "*"}]
      enabled: [{name: NodeResourcesFit, weight: 7}, {name: ImageLocality}]
    filter:
      disabled: [{name: NodePorts}]
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ScorePlugins(); len(got) != 2 || got["NodeResourcesFit"] != 7 || got["ImageLocality"] != 1 {
		t.Errorf("score plugins = %v", got)
	}
	if f := strings.Join(p.FilterPlugins(), ","); strings.Contains(f, "NodePorts") {
		t.Errorf("disabled filter still enabled: %s", f)
	}
}

func TestProfileErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown score plugin", "profiles: [{schedulerName: a, plugins: {score: {enabled: [{name: Nope}]}}}]",
			`profiles[0].plugins.score.enabled[0].name: unknown plugin "Nope"`},
		{"plugin at a point it lacks", "profiles: [{schedulerName: a, plugins: {filter: {enabled: [{name: ImageLocality}]}}}]",
			`profiles[0].plugins.filter.enabled[0].name: plugin "ImageLocality" does not implement filter`},
		{"unknown multiPoint plugin", "profiles: [{schedulerName: a, plugins: {multiPoint: {enabled: [{name: Ghost}]}}}]",
			`profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "Ghost"`},
		{"unknown pluginConfig", "profiles: [{schedulerName: a, pluginConfig: [{name: Ghost, args: {}}]}]",
			`profiles[0].pluginConfig[0].name: unknown plugin "Ghost"`},
		{"args the plugin refuses", "profiles: [{schedulerName: a, pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Bogus}}}]}]",
			`profiles[0].pluginConfig[0].args: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := build(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestRefusedArgsSayWhichField(t *testing.T) {
	_, err := build(t, "profiles: [{schedulerName: a, pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Bogus}}}]}]")
	if err == nil || !strings.Contains(err.Error(), "scoringStrategy.type") {
		t.Fatalf("err = %v, want the guest's field path", err)
	}
}

func TestSelectHostBreaksTiesUniformly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	counts := map[int]int{}
	for i := 0; i < 3000; i++ {
		counts[framework.SelectHostForTest([]int64{5, 9, 1, 9, 9}, rng)]++
	}
	if len(counts) != 3 || counts[0] != 0 || counts[2] != 0 {
		t.Fatalf("picked %v, want only the three nodes scoring 9", counts)
	}
	for _, i := range []int{1, 3, 4} {
		if counts[i] < 800 || counts[i] > 1200 {
			t.Errorf("node %d picked %d times of 3000, want about 1000", i, counts[i])
		}
	}
}

// TestListedModulesEnableNothing: a module's plugins run only in profiles
// that name them. Only the module named "default" (here a stand-in for
// the builtin bundle) supplies the default plugins; another module that
// declares a default plugin's name adds nothing to a profile that does
// not enable it.
func TestListedModulesEnableNothing(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- {name: default, path: in-process}
- {name: extra, path: in-process}
profiles:
- schedulerName: plain
- schedulerName: picky
  plugins:
    filter:
      enabled: [{name: NodePorts}]
`))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := modules.Load(context.Background(), cfg, modules.Options{CacheDir: t.TempDir(), Backends: map[string]guest.Backend{
		"default": native.New(nil, only("NodeName")...),
		"extra":   native.New(nil, only("NodePorts")...),
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(context.Background()) })
	for i, want := range []string{"NodeName", "NodeName,NodePorts"} {
		p, err := framework.BuildProfile(context.Background(), cfg, i, reg, host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close(context.Background()) })
		if got := strings.Join(p.FilterPlugins(), ","); got != want {
			t.Errorf("profile %s: filters %s, want %s", p.Name, got, want)
		}
	}
}

// only picks registrations of the default bundle by name.
func only(names ...string) []plugin.Registration {
	var out []plugin.Registration
	for _, r := range defaults.Plugins() {
		for _, n := range names {
			if r.Name == n {
				out = append(out, r)
			}
		}
	}
	return out
}

// TestProfilesWithoutQueueSortOrBinderAreRefused: kube-scheduler's
// NewFramework refuses a profile without exactly one queue sort or
// without a bind plugin; so does BuildProfile (at start and at a reload),
// in both formats, naming the field and how to enable the plugin again,
// instead of accepting pods it would fail at bind.
func TestProfilesWithoutQueueSortOrBinderAreRefused(t *testing.T) {
	const kube = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
	for _, tc := range []struct{ name, plugins, want string }{
		{"multiPoint disables everything", "multiPoint: {disabled: [{name: '*'}]}",
			`profiles[0].plugins.queueSort: only one queue sort plugin required for profile with scheduler name "a", but got 0 ` +
				`(multiPoint.disabled or queueSort.disabled disables PrioritySort; list it under queueSort.enabled)`},
		{"queueSort disabled", "queueSort: {disabled: [{name: '*'}]}",
			`profiles[0].plugins.queueSort: only one queue sort plugin required for profile with scheduler name "a", but got 0`},
		{"multiPoint disables everything but the queue sort comes back", "multiPoint: {disabled: [{name: '*'}]}, queueSort: {enabled: [{name: PrioritySort}]}",
			`profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name "a" ` +
				`(multiPoint.disabled or bind.disabled disables DefaultBinder; list it under bind.enabled)`},
		{"bind disabled", "bind: {disabled: [{name: DefaultBinder}]}",
			`profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name "a"`},
		{"the binder disabled in multiPoint", "multiPoint: {disabled: [{name: DefaultBinder}]}",
			`profiles[0].plugins.bind: at least one bind plugin is needed`},
	} {
		for _, format := range []struct{ name, header string }{
			{"own", "apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n"}, {"kube", kube},
		} {
			t.Run(tc.name+"/"+format.name, func(t *testing.T) {
				_, err := buildDoc(t, format.header+"profiles: [{schedulerName: a, plugins: {"+tc.plugins+"}}]")
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.want)
				}
			})
		}
	}
	// Everything disabled and the two required plugins enabled again is a
	// profile kube-scheduler runs.
	p, err := buildDoc(t, kube+"profiles: [{schedulerName: a, plugins: {multiPoint: {disabled: [{name: '*'}]}, "+
		"queueSort: {enabled: [{name: PrioritySort}]}, bind: {enabled: [{name: DefaultBinder}]}, filter: {enabled: [{name: NodeName}]}}}]")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.FilterPlugins(), ","); got != "NodeName" {
		t.Errorf("filters %s, want NodeName", got)
	}
}

// TestShadowNeedsNoBinder: a shadow never binds (and sorts no queue), so
// it may disable every default.
func TestShadowNeedsNoBinder(t *testing.T) {
	cfg, err := config.Parse([]byte("apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\n" +
		"profiles: [{schedulerName: a, shadow: {plugins: {multiPoint: {disabled: [{name: '*'}]}, filter: {enabled: [{name: NodeName}]}}}}]"))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := framework.BuildShadow(context.Background(), cfg, 0, registry(t, cfg), host, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close(context.Background())
	if got := strings.Join(sh.FilterPlugins(), ","); got != "NodeName" {
		t.Errorf("shadow filters %s, want NodeName", got)
	}
}

// buildDoc is build for a whole document (either format).
func buildDoc(t *testing.T, doc string) (*framework.Profile, error) {
	t.Helper()
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	p, err := framework.BuildProfile(context.Background(), cfg, 0, registry(t, cfg), host)
	if p != nil {
		t.Cleanup(func() { p.Close(context.Background()) })
	}
	return p, err
}
