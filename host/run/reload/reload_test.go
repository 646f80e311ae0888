package reload_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/memapi"
	"github.com/wasmsched/wasmsched/host/run/reload"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/internal/testwait"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// A policy the tests can tell apart by where a pod lands: node "busy" has
// half its CPU taken, node "empty" none. LeastAllocated spreads (empty),
// MostAllocated packs (busy).
func policyConfig(strategy string, extra string) string {
	return `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
` + extra + `
profiles:
- schedulerName: default-scheduler
` + strategyBody(strategy, "  ")
}

// strategyBody is the profile body (plugins and pluginConfig) of
// policyConfig, each line indented by indent.
func strategyBody(strategy, indent string) string {
	body := `plugins:
  score:
    disabled:
    - name: NodeResourcesBalancedAllocation
    - name: ImageLocality
    enabled:
    - name: NodeResourcesFit
      weight: 20
pluginConfig:
- name: NodeResourcesFit
  args:
    scoringStrategy:
      type: ` + strategy + "\n"
	return indent + strings.ReplaceAll(strings.TrimSuffix(body, "\n"), "\n", "\n"+indent) + "\n"
}

type env struct {
	t       *testing.T
	dir     string
	cfgPath string
	parts   *scheduler.Parts
	cluster *memapi.Cluster
	r       *reload.Reloader
	reg     *prometheus.Registry
	m       *metrics.Metrics
	n       atomic.Int64
	logs    *testlog.Buffer
	// What the scheduler started with, for tests making their own reloader.
	cfg     *config.Configuration
	modReg  *modules.Registry
	modOpts modules.Options
}

func newEnv(t *testing.T, cfgYAML string) *env {
	return newEnvWith(t, cfgYAML, nil, nil)
}

// newEnvWith is newEnv with the config file written by place (nil: a
// plain config.yaml), which returns its path, and an OnSwap hook.
func newEnvWith(t *testing.T, cfgYAML string, place func(dir, cfg string) string, onSwap func(*config.Configuration)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), reg: prometheus.NewRegistry(), logs: &testlog.Buffer{}}
	if place == nil {
		e.cfgPath = filepath.Join(e.dir, "config.yaml")
		e.write("config.yaml", cfgYAML)
	} else {
		e.cfgPath = place(e.dir, cfgYAML)
	}
	var err error
	if e.m, err = metrics.New(e.reg); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log := hclog.New(&hclog.LoggerOptions{Output: e.logs, Level: hclog.Info})
	mo := modules.Options{CacheDir: filepath.Join(e.dir, "cache"), Log: log, Metrics: e.m, Fetcher: envFetcher}
	reg, err := modules.Load(ctx, cfg, mo)
	if err != nil {
		t.Fatal(err)
	}
	e.cluster = memapi.New(nil)
	e.parts, err = scheduler.Assemble(ctx, scheduler.AssembleOptions{Config: cfg, Registry: reg, Binder: e.cluster,
		Log: log, Metrics: e.m, OwnRegistry: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.parts.Close(context.Background()) })
	e.cluster.SetWatcher(e.parts.Scheduler)
	for _, n := range []struct {
		name string
	}{{"busy"}, {"empty"}} {
		e.parts.Scheduler.OnNodeAdd(&abi.Node{Name: n.name, AllowedPods: 110,
			Labels:      abi.Labels{{Key: "kubernetes.io/hostname", Value: n.name}},
			Allocatable: abi.Resources{MilliCPU: 4000, Memory: 16 << 30}})
	}
	filler := pod("filler", 2000)
	filler.NodeName = "busy"
	e.parts.Scheduler.OnPodAdd(filler)
	e.cfg, e.modReg, e.modOpts = cfg, reg, mo
	e.r, err = reload.New(reload.Options{ConfigPath: e.cfgPath, Parts: e.parts, Config: cfg, Registry: reg,
		Modules: mo, Metrics: e.m, Log: log, Debounce: 50 * time.Millisecond, OnSwap: onSwap})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) write(name, content string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(content), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func pod(name string, milliCPU int64) *abi.Pod {
	return &abi.Pod{UID: "uid-" + name, Namespace: "default", Name: name, SchedulerName: config.DefaultSchedulerName,
		Containers: []abi.Container{{Name: "c", Requests: abi.Resources{MilliCPU: milliCPU, Memory: 64 << 20}}}}
}

// schedule creates a pod (named name, or with a fresh name) and returns
// the node it was bound to.
func (e *env) schedule(name string) string {
	e.t.Helper()
	if name == "" {
		name = fmt.Sprintf("p%d", e.n.Add(1))
	}
	p := pod(name, 100)
	e.cluster.AddPod(p)
	e.parts.Scheduler.OnPodAdd(p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.parts.Scheduler.ScheduleOne(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.parts.Scheduler.WaitBindings()
	bound := e.cluster.Pod(p.UID)
	if bound == nil || bound.NodeName == "" {
		e.t.Fatalf("pod %s was not bound", name)
	}
	return bound.NodeName
}

func (e *env) reloads(result string) float64 {
	return sample(e.t, e.reg, "wasmsched_config_reloads_total", "result", result)
}

// sample reads the value of the series of metric name whose label has
// value (summed over its other labels; 0 when there is none).
func sample(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	return testmetrics.Value(t, reg, name, testmetrics.Labels{label: value})
}

func TestReloadSwapsPolicyBetweenCycles(t *testing.T) {
	e := newEnv(t, policyConfig("LeastAllocated", ""))
	if got := e.schedule(""); got != "empty" {
		t.Fatalf("LeastAllocated placed a pod on %s, want empty", got)
	}
	e.write("config.yaml", policyConfig("MostAllocated", ""))
	res, err := e.r.Reload(context.Background())
	if err != nil || res != reload.Swapped {
		t.Fatalf("Reload = %v, %v; want swapped", res, err)
	}
	if got := e.schedule(""); got != "busy" {
		t.Fatalf("after the reload to MostAllocated a pod went to %s, want busy", got)
	}
	if res, err := e.r.Reload(context.Background()); err != nil || res != reload.Unchanged {
		t.Fatalf("a reload with nothing changed = %v, %v; want unchanged", res, err)
	}
	if got := e.reloads(metrics.ReloadSuccess); got != 2 { // the first load counts
		t.Errorf("reloads_total{success} = %v, want 2", got)
	}
	if got := e.reloads(metrics.ReloadUnchanged); got != 1 {
		t.Errorf("reloads_total{unchanged} = %v, want 1", got)
	}
}

func TestReloadReusesUnchangedModules(t *testing.T) {
	e := newEnv(t, policyConfig("LeastAllocated", ""))
	e.schedule("")
	loads := func() float64 {
		return sample(t, e.reg, "wasmsched_module_loads_total", "module", "default")
	}
	before := loads()
	// Only a weight changes: the builtin bundle is neither compiled nor
	// loaded again.
	e.write("config.yaml", strings.Replace(policyConfig("LeastAllocated", ""), "weight: 20", "weight: 19", 1))
	if res, err := e.r.Reload(context.Background()); err != nil || res != reload.Swapped {
		t.Fatalf("Reload = %v, %v", res, err)
	}
	if after := loads(); after != before {
		t.Errorf("module_loads_total{module=default} went from %v to %v: an unchanged module was loaded again", before, after)
	}
	if got := e.schedule(""); got != "empty" {
		t.Errorf("pod went to %s after a weight-only reload, want empty", got)
	}
}

// TestRefusedReloadKeepsServing: every way a candidate can be bad leaves
// the running policy (LeastAllocated) in place, with an error naming the
// problem, counted as refused.
func TestRefusedReloadKeepsServing(t *testing.T) {
	abiV2 := readTestdata(t, "abi_v2.wasm")
	badReply, err := os.ReadFile(filepath.Join("testdata", "bad_reply.wasm")) // wat2wasm testdata/bad_reply.wat
	if err != nil {
		t.Fatal(err)
	}
	misbehave := testwasm.TinyGoBytes(t, testwasm.Misbehave)
	moduleEntry := func(name, path, sum string) string {
		s := "modules:\n- name: " + name + "\n  path: " + path + "\n"
		if sum != "" {
			s += "  sha256: " + sum + "\n"
		}
		return s
	}
	withFilter := func(cfg, plugin string) string {
		return strings.Replace(cfg, "  plugins:\n", "  plugins:\n    filter:\n      enabled:\n      - name: "+plugin+"\n", 1)
	}
	cases := []struct {
		name  string
		files map[string][]byte
		cfg   string
		want  []string // in the error
	}{
		{"unparseable YAML", nil, "profiles: [\n", []string{"config.yaml"}},
		{"unknown field", nil, strings.Replace(policyConfig("MostAllocated", ""), "schedulerName:", "schedulerNam:", 1),
			[]string{"config.yaml:", "schedulerNam"}},
		{"missing module", nil, policyConfig("MostAllocated", moduleEntry("gone", "gone.wasm", "")),
			[]string{"modules[0].path", "gone.wasm"}},
		{"sha256 mismatch", map[string][]byte{"m.wasm": misbehave},
			policyConfig("MostAllocated", moduleEntry("misbehave", "m.wasm", strings.Repeat("ab", 32))),
			[]string{"modules[0].sha256"}},
		{"ABI mismatch", map[string][]byte{"v2.wasm": abiV2}, policyConfig("MostAllocated", moduleEntry("v2", "v2.wasm", "")),
			[]string{"modules[0]", "ABI"}},
		{"invalid reply at load", map[string][]byte{"bad.wasm": badReply},
			policyConfig("MostAllocated", moduleEntry("bad", "bad.wasm", "")), []string{"modules[0]"}},
		{"args the guest refuses at init", nil, policyConfig("Bogus", ""), []string{"pluginConfig", "NodeResourcesFit"}},
		{"unknown plugin", nil, withFilter(policyConfig("MostAllocated", ""), "NoSuchPlugin"),
			[]string{"NoSuchPlugin", "unknown plugin"}},
		// kube-scheduler's refusals of plugin sets: at load (config) and
		// when profiles are built, in both formats.
		{"plugin enabled twice at one point", nil, strings.Replace(policyConfig("MostAllocated", ""),
			"        weight: 20\n", "        weight: 20\n      - name: NodeResourcesFit\n        weight: 3\n", 1),
			[]string{"config.yaml:", `profiles[0].plugins.score.enabled[1]: plugin "NodeResourcesFit" already registered as "Score" with weight 20 by enabled[0]`}},
		{"no bind plugin", nil, strings.Replace(policyConfig("MostAllocated", ""), "  plugins:\n",
			"  plugins:\n    multiPoint: {disabled: [{name: '*'}]}\n    queueSort: {enabled: [{name: PrioritySort}]}\n", 1),
			[]string{`profiles[0].plugins.bind: at least one bind plugin is needed for profile with scheduler name "default-scheduler"`}},
		{"no queue sort, kube-scheduler's format", nil, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" +
			"profiles:\n- plugins:\n    multiPoint: {disabled: [{name: '*'}]}\n    bind: {enabled: [{name: DefaultBinder}]}\n",
			[]string{`profiles[0].plugins.queueSort: only one queue sort plugin required for profile with scheduler name "default-scheduler", but got 0`}},
		{"trap in the canary", map[string][]byte{"m.wasm": misbehave},
			withFilter(policyConfig("MostAllocated", moduleEntry("misbehave", "m.wasm", "")), "Misbehave"),
			[]string{"canary", "Misbehave", "Filter"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, policyConfig("LeastAllocated", ""))
			// The last pod scheduled is the canary's: named "trap", it
			// makes the Misbehave filter trap.
			if got := e.schedule("trap"); got != "empty" {
				t.Fatalf("first pod went to %s", got)
			}
			for name, b := range c.files {
				e.write(name, string(b))
			}
			e.write("config.yaml", c.cfg)
			res, err := e.r.Reload(context.Background())
			if res != reload.Refused || err == nil {
				t.Fatalf("Reload = %v, %v; want refused", res, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if got := e.reloads(metrics.ReloadRefused); got != 1 {
				t.Errorf("reloads_total{refused} = %v, want 1", got)
			}
			if !strings.Contains(e.logs.String(), "configuration refused") {
				t.Errorf("the refusal was not logged:\n%s", e.logs.String())
			}
			// The old policy still serves.
			for i := 0; i < 3; i++ {
				if got := e.schedule(""); got != "empty" {
					t.Fatalf("after a refused reload a pod went to %s, want empty (LeastAllocated still serving)", got)
				}
			}
		})
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	root, err := testwasm.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "host", "platform", "runtime", "backendtest", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// configMapUpdate does what the kubelet does to a ConfigMap volume: the
// files live in a timestamped directory, ..data points at it, and an
// update writes a new directory and renames a new symlink over ..data.
func configMapUpdate(t *testing.T, dir, version string, files map[string]string) {
	t.Helper()
	ts := filepath.Join(dir, "..2026_11_24_"+version)
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(ts, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

func TestConfigMapSymlinkSwapReloads(t *testing.T) {
	swapped := make(chan *config.Configuration, 4)
	e := newEnvWith(t, policyConfig("LeastAllocated", ""), func(dir, cfg string) string {
		configMapUpdate(t, dir, "1", map[string]string{"config.yaml": cfg})
		return filepath.Join(dir, "config.yaml")
	}, func(c *config.Configuration) { swapped <- c })
	watching := make(chan struct{})
	reload.SetWatching(e.r, func() { close(watching) })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.r.Run(ctx, true, false) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	if got := e.schedule(""); got != "empty" {
		t.Fatalf("pod went to %s, want empty", got)
	}
	<-watching // a swap before the watcher's first look would go unseen
	configMapUpdate(t, e.dir, "2", map[string]string{"config.yaml": policyConfig("MostAllocated", "")})
	select {
	case <-swapped:
	case <-time.After(10 * time.Second):
		t.Fatalf("no reload after the ..data swap; log:\n%s", e.logs.String())
	}
	if got := e.schedule(""); got != "busy" {
		t.Fatalf("after the ConfigMap update a pod went to %s, want busy", got)
	}
	// A broken update is refused; the last good one keeps serving.
	configMapUpdate(t, e.dir, "3", map[string]string{"config.yaml": "profiles: [\n"})
	testwait.Within(10*time.Second, func() bool { return e.reloads(metrics.ReloadRefused) >= 1 })
	if got := e.reloads(metrics.ReloadRefused); got != 1 {
		t.Fatalf("reloads_total{refused} = %v after a broken ConfigMap update, want 1", got)
	}
	if got := e.schedule(""); got != "busy" {
		t.Fatalf("after a refused update a pod went to %s, want busy", got)
	}
}

func TestSIGHUPReloads(t *testing.T) {
	swapped := make(chan *config.Configuration, 4)
	e := newEnvWith(t, policyConfig("LeastAllocated", ""), nil, func(c *config.Configuration) { swapped <- c })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.r.Run(ctx, false, true) }()
	defer func() { cancel(); <-done }()
	// Our own subscription keeps a SIGHUP sent before Run subscribes from
	// killing the test binary; keep sending until Run reloads.
	mine := make(chan os.Signal, 16)
	signal.Notify(mine, syscall.SIGHUP)
	defer signal.Stop(mine)
	e.write("config.yaml", policyConfig("MostAllocated", ""))
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-swapped:
			break wait
		case <-tick.C:
		case <-deadline:
			t.Fatal("no reload after SIGHUP")
		}
	}
	if got := e.schedule(""); got != "busy" {
		t.Fatalf("after SIGHUP a pod went to %s, want busy", got)
	}
}

// shadowConfig is policyConfig(live) with a shadow profile using the
// other strategy.
func shadowConfig(live, shadow string) string {
	return policyConfig(live, "") + "  shadow:\n" + strategyBody(shadow, "    ")
}

// waitShadowIdle waits until the default profile's shadow has finished
// with its pod (and rested), so it takes the next one.
func (e *env) waitShadowIdle() {
	e.t.Helper()
	testwait.Eventually(e.t, 10*time.Second, func() bool { return e.parts.Scheduler.ShadowIdle(config.DefaultSchedulerName) },
		"the shadow stayed busy")
}

func TestShadowProfileReportsDifferencesAndNeverBinds(t *testing.T) {
	e := newEnv(t, shadowConfig("LeastAllocated", "MostAllocated"))
	const pods = 5
	for i := 0; i < pods; i++ {
		if got := e.schedule(""); got != "empty" {
			t.Fatalf("pod %d went to %s: the live profile (LeastAllocated) must place, not the shadow", i, got)
		}
		// One pod at a time: the shadow takes a pod only when idle.
		e.waitShadowIdle()
	}
	diffs := e.parts.Scheduler.ShadowDiffs()
	if len(diffs) != pods {
		t.Fatalf("%d differing shadow decisions recorded, want %d: %+v", len(diffs), pods, diffs)
	}
	for _, d := range diffs {
		if d.Result != metrics.ShadowDifferentNode || d.LiveNode != "empty" || d.ShadowNode != "busy" {
			t.Errorf("shadow diff %+v, want live empty vs shadow busy", d)
		}
		if len(d.Plugins) == 0 || d.Plugins[0].Plugin != "NodeResourcesFit" || d.Plugins[0].ShadowNode <= d.Plugins[0].LiveNode {
			t.Errorf("shadow diff %+v: want NodeResourcesFit first, scoring busy above empty", d)
		}
	}
	if got := sample(t, e.reg, "wasmsched_shadow_decisions_total", "result", metrics.ShadowDifferentNode); got != pods {
		t.Errorf("shadow_decisions_total{different_node} = %v, want %d", got, pods)
	}
	// Never binds: every binding the API saw is a live one, to "empty".
	for _, entry := range e.cluster.Timeline() {
		if entry.Node == "busy" {
			t.Errorf("the API saw %s of %s to busy: the shadow must never bind", entry.Op, entry.Pod)
		}
	}
}

func TestShadowSameDecisionsAreCountedNotListed(t *testing.T) {
	e := newEnv(t, shadowConfig("LeastAllocated", "LeastAllocated"))
	for i := 0; i < 3; i++ {
		e.schedule("")
		e.waitShadowIdle()
	}
	if got := sample(t, e.reg, "wasmsched_shadow_decisions_total", "result", metrics.ShadowSame); got != 3 {
		t.Errorf("shadow_decisions_total{same} = %v, want 3", got)
	}
	if d := e.parts.Scheduler.ShadowDiffs(); len(d) != 0 {
		t.Errorf("identical shadow listed differences: %+v", d)
	}
}

func TestRequireSHA256RefusesUnpinnedModules(t *testing.T) {
	cfg := policyConfig("LeastAllocated", "")
	if err := reload.CheckPinned(mustParse(t, cfg)); err != nil {
		t.Fatalf("a config without module files needs no pin: %v", err)
	}
	unpinned := policyConfig("LeastAllocated", "modules:\n- name: m\n  path: m.wasm\n")
	err := reload.CheckPinned(mustParse(t, unpinned))
	if err == nil || !strings.Contains(err.Error(), "modules[0]") || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("CheckPinned = %v, want modules[0] refused for having no sha256", err)
	}
	perProfile := mustParse(t, `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  modules:
  - name: mine
    path: mine.wasm
`)
	err = reload.CheckPinned(perProfile)
	if err == nil || !strings.Contains(err.Error(), "profiles[0].modules[0]") {
		t.Fatalf("CheckPinned = %v, want the profile's own module refused for having no sha256", err)
	}
	byDigest := policyConfig("LeastAllocated", "modules:\n- name: m\n  image: registry.example/m@sha256:"+strings.Repeat("a", 64)+"\n")
	if err := reload.CheckPinned(mustParse(t, byDigest)); err != nil {
		t.Fatalf("an image by digest is pinned by it: %v", err)
	}
	floating := policyConfig("LeastAllocated", "modules:\n- name: m\n  image: registry.example/m:latest\n  pullPolicy: Always\n")
	if err := reload.CheckPinned(mustParse(t, floating)); err == nil || !strings.Contains(err.Error(), "modules[0]") || !strings.Contains(err.Error(), "tag without a sha256 pin") {
		t.Fatalf("CheckPinned = %v, want an unpinned tag refused", err)
	}
}

func mustParse(t *testing.T, yaml string) *config.Configuration {
	t.Helper()
	c, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
