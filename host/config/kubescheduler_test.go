package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const kubeHeader = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

// TestKubeSchedulerConfigurationConverts: each case is a kube-scheduler
// file and what wasmsched must make of it, derived from kube-scheduler's
// v1 rules (defaulting in pkg/scheduler/apis/config/v1, weights in the
// framework runtime).
func TestKubeSchedulerConfigurationConverts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		check func(t *testing.T, c *Configuration)
	}{
		{"empty: one default-scheduler profile with the default set", "", func(t *testing.T, c *Configuration) {
			if len(c.Profiles) != 1 || c.Profiles[0].SchedulerName != DefaultSchedulerName || c.Profiles[0].Plugins != nil {
				t.Fatalf("profiles = %+v, want one default-scheduler with no plugin changes", c.Profiles)
			}
			if !c.FromKubeScheduler() || c.APIVersion != APIVersion {
				t.Errorf("FromKubeScheduler %v, apiVersion %q", c.FromKubeScheduler(), c.APIVersion)
			}
		}},
		{"one profile without a name is default-scheduler", "profiles: [{percentageOfNodesToScore: 30}]", func(t *testing.T, c *Configuration) {
			if p := c.Profiles[0]; p.SchedulerName != DefaultSchedulerName || *p.PercentageOfNodesToScore != 30 {
				t.Fatalf("profile = %+v", p)
			}
		}},
		{"docs: two profiles, scoring disabled in one", `
profiles:
  - schedulerName: default-scheduler
  - schedulerName: no-scoring-scheduler
    plugins:
      preScore:
        disabled:
        - name: '*'
      score:
        disabled:
        - name: '*'
`, func(t *testing.T, c *Configuration) {
			if len(c.Profiles) != 2 || c.Profiles[1].SchedulerName != "no-scoring-scheduler" {
				t.Fatalf("profiles = %+v", c.Profiles)
			}
			pl := c.Profiles[1].Plugins
			star := []Plugin{{Name: "*"}}
			if !reflect.DeepEqual(pl.PreScore.Disabled, star) || !reflect.DeepEqual(pl.Score.Disabled, star) || len(pl.Filter.Disabled) != 0 {
				t.Fatalf("plugins = %+v", pl)
			}
		}},
		{"an unweighted score plugin gets weight 1, as in kube-scheduler", `
profiles:
- plugins:
    multiPoint:
      enabled: [{name: TaintToleration}, {name: NodeName, weight: 7}, {name: ImageLocality, weight: 0}]
    score:
      enabled: [{name: NodeResourcesFit, weight: 5}, {name: InterPodAffinity}]
    filter:
      enabled: [{name: NodePorts, weight: 9}]
`, func(t *testing.T, c *Configuration) {
			pl := c.Profiles[0].Plugins
			// TaintToleration's default is 3, but kube-scheduler replaces the
			// default entry, weight and all; NodeName scores nothing, so its
			// weight means nothing; 0 means 1.
			wantMulti := []Plugin{{Name: "TaintToleration", Weight: 1}, {Name: "NodeName"}, {Name: "ImageLocality", Weight: 1}}
			if !reflect.DeepEqual(pl.MultiPoint.Enabled, wantMulti) {
				t.Errorf("multiPoint = %+v, want %+v", pl.MultiPoint.Enabled, wantMulti)
			}
			if want := []Plugin{{Name: "NodeResourcesFit", Weight: 5}, {Name: "InterPodAffinity", Weight: 1}}; !reflect.DeepEqual(pl.Score.Enabled, want) {
				t.Errorf("score = %+v, want %+v", pl.Score.Enabled, want)
			}
			if want := []Plugin{{Name: "NodePorts"}}; !reflect.DeepEqual(pl.Filter.Enabled, want) {
				t.Errorf("filter = %+v, want %+v (kube-scheduler ignores a filter's weight)", pl.Filter.Enabled, want)
			}
		}},
		{"SchedulingGates is host behaviour: dropped from multiPoint", `
profiles:
- plugins:
    multiPoint:
      enabled: [{name: SchedulingGates}, {name: PrioritySort}, {name: NodeResourcesFit, weight: 4}]
    preEnqueue:
      enabled: [{name: SchedulingGates}, {name: DefaultPreemption}]
`, func(t *testing.T, c *Configuration) {
			want := []Plugin{{Name: "PrioritySort"}, {Name: "NodeResourcesFit", Weight: 4}}
			if got := c.Profiles[0].Plugins.MultiPoint.Enabled; !reflect.DeepEqual(got, want) {
				t.Errorf("multiPoint = %+v, want %+v", got, want)
			}
		}},
		{"disabling the missing defaults is the documented way: no warning", `
profiles:
- plugins:
    multiPoint:
      disabled: [{name: VolumeBinding}, {name: VolumeRestrictions}, {name: VolumeZone}, {name: NodeVolumeLimits}, {name: DynamicResources}, {name: NodeDeclaredFeatures}, {name: ImageLocality}]
`, func(t *testing.T, c *Configuration) {
			if w := c.Warnings(); len(w) != 0 {
				t.Errorf("warnings = %q", w)
			}
			// Only what wasmsched has is handed on (DynamicResources'
			// PostFilter stand-in included).
			if got := c.Profiles[0].Plugins.MultiPoint.Disabled; !reflect.DeepEqual(got, []Plugin{{Name: "DynamicResources"}, {Name: "NodeDeclaredFeatures"}, {Name: "ImageLocality"}}) {
				t.Errorf("disabled = %+v", got)
			}
		}},
		{"pluginConfig: args handed on without apiVersion and kind; missing plugins' args dropped", `
profiles:
- pluginConfig:
  - name: VolumeBinding
    args: {bindTimeoutSeconds: 300}
  - name: NodeResourcesFit
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeResourcesFitArgs
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}]
  - name: DefaultPreemption
    args: {apiVersion: kubescheduler.config.k8s.io/v1, kind: DefaultPreemptionArgs}
  - name: InterPodAffinity
`, func(t *testing.T, c *Configuration) {
			pc := c.Profiles[0].PluginConfig
			if len(pc) != 3 || pc[0].Name != "NodeResourcesFit" || pc[1].Name != "DefaultPreemption" || pc[2].Name != "InterPodAffinity" {
				t.Fatalf("pluginConfig = %+v", pc)
			}
			if got := string(pc[0].Args); got != `{"scoringStrategy":{"resources":[{"name":"cpu","weight":1}],"type":"MostAllocated"}}` {
				t.Errorf("NodeResourcesFit args = %s", got)
			}
			if pc[1].Args != nil || pc[2].Args != nil {
				t.Errorf("args left = %s, %s; want none", pc[1].Args, pc[2].Args)
			}
			if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "profiles[0].pluginConfig[0]: the args of VolumeBinding are ignored") {
				t.Errorf("warnings = %s", w)
			}
		}},
		{"global settings", `
percentageOfNodesToScore: 40
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
parallelism: 16
leaderElection:
  leaderElect: false
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 5s
  resourceLock: leases
  resourceName: my-scheduler
  resourceNamespace: sched
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
  qps: 80
  burst: 160
  contentType: application/vnd.kubernetes.protobuf
  acceptContentTypes: application/vnd.kubernetes.protobuf,application/json
`, func(t *testing.T, c *Configuration) {
			if *c.PercentageOfNodesToScore != 40 || *c.PodInitialBackoffSeconds != 2 || *c.PodMaxBackoffSeconds != 20 {
				t.Errorf("percentage/backoff = %d %d %d", *c.PercentageOfNodesToScore, *c.PodInitialBackoffSeconds, *c.PodMaxBackoffSeconds)
			}
			le := c.LeaderElection
			if le == nil || le.LeaderElect == nil || *le.LeaderElect || le.LeaseDuration.Duration != 30*time.Second || le.RenewDeadline.Duration != 20*time.Second ||
				le.RetryPeriod.Duration != 5*time.Second || le.ResourceName != "my-scheduler" || le.ResourceNamespace != "sched" {
				t.Errorf("leaderElection = %+v", le)
			}
			cc := c.ClientConnection
			if cc == nil || cc.Kubeconfig != "/etc/kubernetes/scheduler.conf" || *cc.QPS != 80 || *cc.Burst != 160 ||
				cc.ContentType != ContentTypeProtobuf || cc.AcceptContentTypes != "application/vnd.kubernetes.protobuf,application/json" {
				t.Errorf("clientConnection = %+v", cc)
			}
		}},
		{"unset connection settings stay unset, so serve's flags apply", "clientConnection: {qps: 0, burst: 0}\nleaderElection: {}\n", func(t *testing.T, c *Configuration) {
			if c.ClientConnection != nil || c.LeaderElection != nil {
				t.Errorf("clientConnection %+v, leaderElection %+v; want nil", c.ClientConnection, c.LeaderElection)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(kubeHeader + tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

// TestKubeSchedulerConfigurationRefusals: what wasmsched cannot honour is
// refused, naming the field (and its line) and, for plugins it lacks,
// the workaround.
func TestKubeSchedulerConfigurationRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"old version", "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
			[]string{`line 1: apiVersion: "kubescheduler.config.k8s.io/v1beta3" is not supported: wasmsched reads kubescheduler.config.k8s.io/v1`}},
		{"wrong kind", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeProxyConfiguration\n",
			[]string{`line 2: kind: must be "KubeSchedulerConfiguration"`}},
		{"unknown field with a suggestion", kubeHeader + "profiles:\n- plugins:\n    scor: {}\n",
			[]string{`line 5: profiles[0].plugins.scor: unknown field (did you mean "score"?)`}},
		{"unknown args field, by the plugin's upstream args type", kubeHeader + `profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        typ: MostAllocated
`, []string{`line 8: profiles[0].pluginConfig[0].args.scoringStrategy.typ: unknown field (did you mean "type"?)`}},
		{"args of another plugin's kind", kubeHeader + "profiles:\n- pluginConfig:\n  - {name: InterPodAffinity, args: {kind: NodeAffinityArgs}}\n",
			[]string{`profiles[0].pluginConfig[0].args.kind: must be "InterPodAffinityArgs" for plugin InterPodAffinity`}},
		{"volume plugin enabled", kubeHeader + "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: VolumeBinding\n",
			[]string{`line 7: profiles[0].plugins.multiPoint.enabled[0].name: wasmsched has no volume plugins`,
				`so VolumeBinding cannot be enabled: remove it from this list`,
				`schedule pods that use PersistentVolumeClaims with kube-scheduler`}},
		{"DRA plugin enabled at a point", kubeHeader + "profiles:\n- plugins:\n    filter:\n      enabled: [{name: NodeName}, {name: DynamicResources}]\n",
			[]string{`profiles[0].plugins.filter.enabled[1].name: wasmsched has no dynamic resource allocation (DynamicResources)`,
				`schedule pods with resourceClaims with kube-scheduler`}},
		{"pod group point", kubeHeader + "profiles:\n- plugins:\n    placementScore:\n      enabled: [{name: NodeResourcesFit, weight: 1}]\n",
			[]string{`line 5: profiles[0].plugins.placementScore: wasmsched has no pod group (workload) scheduling cycle, so it runs no placementScore plugins`}},
		{"empty pod group point", kubeHeader + "profiles:\n- plugins:\n    podGroupPostFilter: {}\n",
			[]string{`line 5: profiles[0].plugins.podGroupPostFilter: wasmsched has no pod group (workload) scheduling cycle`}},
		{"placementGenerate", kubeHeader + "profiles:\n- plugins:\n    placementGenerate:\n      disabled: [{name: '*'}]\n",
			[]string{`profiles[0].plugins.placementGenerate: wasmsched has no pod group (workload) scheduling cycle`}},
		{"a 1.37 gated plugin", kubeHeader + "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: DeferredPodScheduling}]\n",
			[]string{`profiles[0].plugins.multiPoint.enabled[0].name: wasmsched has no plugins behind kube-scheduler feature gates that are off by default`}},
		{"out-of-tree plugin", kubeHeader + "profiles:\n- plugins:\n    score:\n      enabled: [{name: MyCustomPluginA, weight: 2}]\n",
			[]string{`profiles[0].plugins.score.enabled[0].name: "MyCustomPluginA" is not one of kube-scheduler's in-tree plugins`, "wasmsched.io/v1alpha1"}},
		// The entry after a dropped SchedulingGates is still named by its
		// written index.
		{"weight over wasmsched's cap", kubeHeader + "profiles:\n- plugins:\n    multiPoint:\n      enabled: [{name: SchedulingGates}, {name: ImageLocality, weight: 500}]\n",
			[]string{`profiles[0].plugins.multiPoint.enabled[1].weight: 500 is outside 1..100`}},
		{"negative weight", kubeHeader + "profiles:\n- plugins:\n    score:\n      enabled: [{name: ImageLocality, weight: -1}]\n",
			[]string{`profiles[0].plugins.score.enabled[0].weight: -1 is outside 1..100`}},
		{"SchedulingGates at a filter point", kubeHeader + "profiles:\n- plugins:\n    filter:\n      enabled: [{name: SchedulingGates}]\n",
			[]string{`profiles[0].plugins.filter.enabled[0].name: SchedulingGates is a preEnqueue plugin`}},
		{"preEnqueue plugin wasmsched has as a filter only", kubeHeader + "profiles:\n- plugins:\n    preEnqueue:\n      enabled: [{name: NodePorts}]\n",
			[]string{`profiles[0].plugins.preEnqueue.enabled[0].name: NodePorts has no preEnqueue point in wasmsched`}},
		{"extenders", kubeHeader + "extenders:\n- urlPrefix: http://127.0.0.1:8888/\n  filterVerb: filter\n",
			[]string{`line 3: extenders: wasmsched calls no scheduler extenders: write the extender's filter and prioritize logic as a Wasm plugin`}},
		{"lock other than a Lease", kubeHeader + "leaderElection:\n  resourceLock: endpointsleases\n",
			[]string{`line 4: leaderElection.resourceLock: "endpointsleases" is not supported: wasmsched locks a coordination.k8s.io Lease only`}},
		{"timings that do not nest", kubeHeader + "leaderElection: {leaseDuration: 5s, renewDeadline: 10s}\n",
			[]string{`leaderElection.leaseDuration: 5s must be longer than renewDeadline 10s`}},
		{"not a duration", kubeHeader + "leaderElection: {leaseDuration: soon}\n",
			[]string{`line 3: leaderElection.leaseDuration: "soon" is not a duration`}},
		{"content type", kubeHeader + "clientConnection: {contentType: application/yaml}\n",
			[]string{`clientConnection.contentType: "application/yaml" is not supported`}},
		{"parallelism", kubeHeader + "parallelism: 0\n", []string{`line 3: parallelism: 0 must be positive`}},
		{"nameless profile among several", kubeHeader + "profiles: [{schedulerName: a}, {}]\n",
			[]string{`profiles[1].schedulerName: must be set when there is more than one profile`}},
		{"duplicate scheduler name", kubeHeader + "profiles: [{schedulerName: a}, {schedulerName: a}]\n",
			[]string{`line 3: profiles[1].schedulerName: duplicate "a" (also profiles[0])`}},
		{"duplicate pluginConfig", kubeHeader + "profiles:\n- pluginConfig: [{name: NodeResourcesFit}, {name: NodeResourcesFit}]\n",
			[]string{`profiles[0].pluginConfig[1].name: duplicate "NodeResourcesFit" (also pluginConfig[0])`}},
		{"out-of-tree pluginConfig", kubeHeader + "profiles:\n- pluginConfig: [{name: Coscheduling, args: {}}]\n",
			[]string{`profiles[0].pluginConfig[0].name: "Coscheduling" is not one of kube-scheduler's in-tree plugins`}},
		{"backoff kept and checked as our own", kubeHeader + "podInitialBackoffSeconds: 10\npodMaxBackoffSeconds: 5\n",
			[]string{`line 4: podMaxBackoffSeconds: must be at least podInitialBackoffSeconds`}},
		{"profiles must share a queue sort", kubeHeader + "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      disabled: [{name: '*'}]\n",
			[]string{`profiles[1].plugins.queueSort: (none) differs from profiles[0]'s PrioritySort`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestKubeSchedulerConfigurationWarnings: what is left out rather than
// refused is said once, in the configuration's warnings.
func TestKubeSchedulerConfigurationWarnings(t *testing.T) {
	c, err := Parse([]byte(kubeHeader + `parallelism: 32
delayCacheUntilActive: true
enableProfiling: true
leaderElection: {resourceName: kube-scheduler}
profiles:
- schedulerName: a
  plugins:
    queueSort:
      enabled: [{name: PrioritySort}]
- schedulerName: b
  plugins:
    multiPoint:
      disabled: [{name: '*'}]
    # What kube-scheduler requires of a profile without the defaults:
    # one queue sort, the same section in every profile, and a binder.
    queueSort:
      enabled: [{name: PrioritySort}]
    bind:
      enabled: [{name: DefaultBinder}]
    preEnqueue:
      disabled: [{name: SchedulingGates}]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Warnings(), "\n")
	for _, w := range []string{
		"parallelism: 32 is ignored",
		"delayCacheUntilActive: ignored",
		"enableProfiling: serve exposes /debug/pprof/ only with --profiling",
		`leaderElection.resourceName: "kube-scheduler" is kube-scheduler's own Lease`,
		// Profile b disabled every default: only a is named.
		"profiles a: kube-scheduler's default plugins VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone, DynamicResources are left out",
		"profiles[1].plugins.preEnqueue.disabled: ignored",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("warnings:\n%s\nwant one containing %q", got, w)
		}
	}
	if n := strings.Count(got, "are left out"); n != 1 {
		t.Errorf("%d warnings about the left-out defaults, want 1", n)
	}
	own, err := Parse([]byte(header + "profiles: [{schedulerName: a}]\n"))
	if err != nil || own.Warnings() != nil || own.FromKubeScheduler() {
		t.Errorf("own format: warnings %q, kube %v, err %v", own.Warnings(), own.FromKubeScheduler(), err)
	}
}

// TestKubeSchedulerKubeconfigIsRelativeToTheFile: like module paths, a
// relative clientConnection.kubeconfig is read from the configuration
// file's directory.
func TestKubeSchedulerKubeconfigIsRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte(kubeHeader+"clientConnection: {kubeconfig: creds/kubeconfig}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "creds", "kubeconfig"); c.ClientConnection.Kubeconfig != want {
		t.Errorf("kubeconfig = %q, want %q", c.ClientConnection.Kubeconfig, want)
	}
}

// TestOwnFormatTakesServingSettings: wasmsched's format has the same
// leaderElection and clientConnection sections, checked the same way.
func TestOwnFormatTakesServingSettings(t *testing.T) {
	c, err := Parse([]byte(header + "leaderElection: {leaderElect: true, leaseDuration: 6s}\nclientConnection: {qps: -1}\nprofiles: [{schedulerName: a}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !*c.LeaderElection.LeaderElect || c.LeaderElection.LeaseDuration.Duration != 6*time.Second || *c.ClientConnection.QPS != -1 {
		t.Errorf("leaderElection %+v, clientConnection %+v", c.LeaderElection, c.ClientConnection)
	}
	_, err = Parse([]byte(header + "clientConnection: {burst: -2}\nprofiles: [{schedulerName: a}]\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3: clientConnection.burst: -2 must not be negative") {
		t.Errorf("err = %v", err)
	}
}

// NodeDeclaredFeatures is a default plugin wasmsched serves: enabling it
// converts, and keeping it in the default set warns of nothing.
func TestKubeSchedulerNodeDeclaredFeaturesIsServed(t *testing.T) {
	c, err := Parse([]byte(kubeHeader + "profiles:\n- plugins:\n    multiPoint:\n      disabled: [{name: NodeDeclaredFeatures}]\n    filter:\n      enabled: [{name: NodeDeclaredFeatures}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(c.Warnings(), "\n"); strings.Contains(w, "NodeDeclaredFeatures") {
		t.Fatalf("warnings name NodeDeclaredFeatures:\n%s", w)
	}
	if !strings.Contains(strings.Join(KubeSchedulerPlugins(), " "), "NodeDeclaredFeatures") {
		t.Fatal("NodeDeclaredFeatures is not among the plugins a file may enable")
	}
}
