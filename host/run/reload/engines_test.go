package reload_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/run/reload"
)

// boomVPod is a vpod predicate that panics at every step: through the
// native runtime, a guest trap.
type boomVPod struct{}

func (boomVPod) Name() string { return "Boom" }
func (boomVPod) NewVPodFilter([]byte) (plugin.VPodFilter, error) {
	return func(*plugin.VPodState, []int, []*plugin.Status) { panic("boom") }, nil
}

// boomEvict is an eviction policy that panics when asked which pods to
// evict.
type boomEvict struct{}

func (boomEvict) Name() string { return "BoomEvict" }
func (boomEvict) GetEvictPods(*plugin.EvictionNode, int) ([]abi.EvictPod, *abi.EvictionCondition) {
	panic("boom")
}

// faulty serves Boom and BoomEvict in-process as module "faulty".
var faulty = map[string]guest.Backend{"faulty": native.New(nil,
	plugin.Registration{Name: "Boom", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return boomVPod{}, nil }},
	plugin.Registration{Name: "BoomEvict", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return boomEvict{}, nil }})}

const faultyModule = "modules: [{name: faulty, path: in-process}]\n"

// vpodSection is one Policy scheduler of capacity podCapacity whose
// scheduling policy is in sched.json.
func vpodSection(podCapacity string) string {
	return `vpod:
  schedulers:
  - name: adapter
    statefulSet: {namespace: eventing, name: adapter}
    podCapacity: ` + podCapacity + `
    strategy: Policy
    schedulerPolicyFile: sched.json
`
}

const (
	lowestOrdinal = `{"predicates": [{"name": "PodFitsResources"}], "priorities": [{"name": "LowestOrdinalPriority", "weight": 1}]}`
	byNode        = `{"predicates": [{"name": "PodFitsResources"}], "priorities": [{"name": "AvailabilityNodePriority", "weight": 1, "args": "{\"MaxSkew\": 1}"}]}`
	withBoom      = `{"predicates": [{"name": "PodFitsResources"}, {"name": "Boom"}], "priorities": [{"name": "LowestOrdinalPriority", "weight": 1}]}`
)

// vpodEnv is an env whose configuration has vpodSection("10") with the
// policy in sched.json, a vpod scheduler of it over three adapter pods
// on three nodes, and a reloader of both (modules "faulty" served
// in-process).
type vpodEnv struct {
	*env
	group   *vpod.Group
	sched   *vpod.Scheduler
	cluster *vpod.StaticCluster
	r       *reload.Reloader
}

func newVPodEnv(t *testing.T, policy string) *vpodEnv {
	t.Helper()
	e := newEnvWith(t, policyConfig("LeastAllocated", vpodSection("10")), func(dir, cfg string) string {
		for name, body := range map[string]string{"sched.json": policy, "config.yaml": cfg} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(dir, "config.yaml")
	}, nil)
	ctx := context.Background()
	mo := e.modOpts
	mo.Backends = faulty
	settings, err := e.cfg.VPod.Defaulted()
	if err != nil {
		t.Fatal(err)
	}
	vo := mo
	vo.Previous = e.modReg
	vreg, err := modules.Load(ctx, e.cfg, vo)
	if err != nil {
		t.Fatal(err)
	}
	g := vpod.NewGroup(vreg, nil)
	t.Cleanup(func() { g.Close(context.Background()) })
	var pods []*corev1.Pod
	var nodes []*corev1.Node
	for i, n := range []string{"n0", "n1", "n2"} {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "eventing", Name: "adapter-" + string(rune('0'+i))},
			Spec: corev1.PodSpec{NodeName: n}})
	}
	cluster := vpod.NewStaticCluster("eventing", "adapter", 3, pods, nodes, nil)
	s := vpod.SettingsFrom(settings[0])
	pol, err := vpod.NewPolicies(ctx, vreg, s.SchedPolicy, s.DeschedPolicy, nil)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := vpod.New(s, cluster, pol, vpod.Options{Rand: func(int64) int64 { return 0 }})
	if err != nil {
		pol.Close(ctx)
		t.Fatal(err)
	}
	g.Add(settings[0], sched, pol)
	r, err := reload.New(reload.Options{ConfigPath: e.cfgPath, Parts: e.parts, Config: e.cfg, Registry: e.modReg,
		Modules: mo, Metrics: e.m, VPod: g})
	if err != nil {
		t.Fatal(err)
	}
	return &vpodEnv{env: e, group: g, sched: sched, cluster: cluster, r: r}
}

// priorities names the running scheduling policy's priorities.
func (v *vpodEnv) priorities() string {
	var out []string
	for _, p := range v.group.Policies(0).Sched().Priorities {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

// place schedules a vpod of n vreplicas with no placements and returns
// its placements as pod=vreplicas.
func (v *vpodEnv) place(n int32) string {
	v.t.Helper()
	ps, err := v.sched.Schedule(context.Background(), vpod.VPod{Key: vpod.Key{Namespace: "shop", Name: "orders"}, VReplicas: n})
	if err != nil {
		v.t.Fatalf("schedule: %v", err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.PodName+"="+string(rune('0'+p.VReplicas)))
	}
	return strings.Join(out, ",")
}

// A change to a vpod policy file alone (the configuration file is the
// same) is a new configuration: the reload swaps the scheduler's
// policies, which the next Schedule runs.
func TestReloadSwapsVPodPolicyFile(t *testing.T) {
	v := newVPodEnv(t, lowestOrdinal)
	ctx := context.Background()
	if got := v.place(3); got != "adapter-0=3" {
		t.Fatalf("LowestOrdinalPriority placed %s, want adapter-0=3", got)
	}
	if !containsPath(v.r.Paths(), filepath.Join(v.dir, "sched.json")) {
		t.Fatalf("the reloader does not watch the policy file: %v", v.r.Paths())
	}
	v.write("sched.json", byNode)
	if res, err := v.r.Reload(ctx); res != reload.Swapped || err != nil {
		t.Fatalf("reload after a policy file change: %v %v", res, err)
	}
	if got := v.priorities(); got != "AvailabilityNodePriority" {
		t.Fatalf("priorities after reload: %s", got)
	}
	// LowestOrdinalPriority would fill adapter-0 again; node spreading
	// (against the first call's reservation there) does not.
	if got := v.place(3); got == "adapter-0=3" {
		t.Fatalf("after the reload the vpod was placed as LowestOrdinalPriority places it: %s", got)
	}
	if res, err := v.r.Reload(ctx); res != reload.Unchanged || err != nil {
		t.Fatalf("reload with nothing changed: %v %v", res, err)
	}
}

func containsPath(ps []string, p string) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// What a fixed set of vpod schedulers (vpod.Group) cannot change live is
// refused with the field named, and the running policies keep serving;
// so is a policy whose module fails the canary's placement step. (Serve
// rebuilds changed schedulers instead: host/run/kube.)
func TestReloadRefusesVPodChanges(t *testing.T) {
	cases := []struct {
		name, cfg, policy string
		want              []string
	}{
		{"capacity", policyConfig("LeastAllocated", vpodSection("20")), lowestOrdinal,
			[]string{"vpod.schedulers[0].podCapacity", "change live"}},
		{"autoscaler step", policyConfig("LeastAllocated", vpodSection("10")+"    maxScaleUpStep: 3\n"), lowestOrdinal,
			[]string{"vpod.schedulers[0].maxScaleUpStep", "change live"}},
		{"scheduler added", policyConfig("LeastAllocated", vpodSection("10")+
			"  - {name: other, statefulSet: {namespace: eventing, name: other}, podCapacity: 1, strategy: MAXFILLUP}\n"), lowestOrdinal,
			[]string{"vpod.schedulers", "2 schedulers configured, 1 running"}},
		{"canary step traps", policyConfig("LeastAllocated", faultyModule+vpodSection("10")), withBoom,
			[]string{"vpod.schedulers[0]", "canary", "Boom"}},
		{"bad policy file", policyConfig("LeastAllocated", vpodSection("10")), "{predicates: [",
			[]string{"schedulerPolicyFile"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := newVPodEnv(t, lowestOrdinal)
			v.write("sched.json", c.policy)
			v.write("config.yaml", c.cfg)
			res, err := v.r.Reload(context.Background())
			if res != reload.Refused || err == nil {
				t.Fatalf("Reload = %v, %v; want refused", res, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if got := v.reloads(metrics.ReloadRefused); got != 1 {
				t.Errorf("reloads_total{refused} = %v, want 1", got)
			}
			if got := v.priorities(); got != "LowestOrdinalPriority" {
				t.Fatalf("priorities after a refused reload: %s", got)
			}
			if got := v.place(3); got != "adapter-0=3" {
				t.Fatalf("after a refused reload the running policy placed %s", got)
			}
		})
	}
}

// A reload applies the eviction section's settings and the killer's
// to the running coordinator and killer.
func TestReloadAppliesEvictionSettings(t *testing.T) {
	e := newEnv(t, policyConfig("LeastAllocated", ""))
	ctx := context.Background()
	coord := eviction.New(eviction.Options{Cluster: cacheCluster{e}, Killer: noKiller{}}, nil)
	t.Cleanup(func() { coord.Close(context.Background()) })
	killer := eviction.NewKiller(nil, eviction.KillerOptions{})
	r, err := reload.New(reload.Options{ConfigPath: e.cfgPath, Parts: e.parts, Config: e.cfg, Registry: e.modReg,
		Modules: e.modOpts, Metrics: e.m, Eviction: coord, Killer: killer})
	if err != nil {
		t.Fatal(err)
	}
	if s := coord.Settings(); s.SyncPeriod != eviction.DefaultSyncPeriod || s.Burst != eviction.DefaultBurst {
		t.Fatalf("settings before: %+v", s)
	}
	e.write("config.yaml", policyConfig("LeastAllocated", `eviction:
  syncPeriod: 7s
  burst: 3
  rate: 2
  killer: delete
  killTimeoutMin: 30s
  skipLabels: [keep]
  policies: [{plugin: ResourceOvercommit}]
`))
	if res, err := r.Reload(ctx); res != reload.Swapped || err != nil {
		t.Fatalf("reload: %v %v", res, err)
	}
	s := coord.Settings()
	if s.SyncPeriod != 7*time.Second || s.Burst != 3 || s.Rate != 2 || s.RateBurst != 3 || len(s.SkipLabels) != 1 {
		t.Fatalf("settings after reload: %+v", s)
	}
	if killer.Mode() != eviction.ModeDelete || killer.TimeoutFloor() != 30*time.Second {
		t.Fatalf("killer after reload: %s, %s", killer.Mode(), killer.TimeoutFloor())
	}
	if got := policyNames(coord); got != "ResourceOvercommit" {
		t.Fatalf("policies after reload: %q", got)
	}
	if round := coord.RunRound(ctx); len(round.Failures) != 0 {
		t.Fatalf("round on the new settings: %+v", round.Failures)
	}
	if s := coord.Settings(); s.SyncPeriod != 7*time.Second {
		t.Fatalf("settings after a round: %+v", s)
	}

	// A configuration whose eviction policy fails the canary round is
	// refused whole: settings, killer and policies stay.
	e.write("config.yaml", policyConfig("LeastAllocated", faultyModule+`eviction:
  syncPeriod: 9s
  killer: eviction
  policies: [{plugin: BoomEvict}]
`))
	mo := e.modOpts
	mo.Backends = faulty
	r2, err := reload.New(reload.Options{ConfigPath: e.cfgPath, Parts: e.parts, Config: e.cfg, Registry: e.modReg,
		Modules: mo, Metrics: e.m, Eviction: coord, Killer: killer})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r2.Reload(ctx)
	if res != reload.Refused || err == nil || !strings.Contains(err.Error(), "canary") || !strings.Contains(err.Error(), "BoomEvict") {
		t.Fatalf("a policy failing the canary round: %v %v", res, err)
	}
	if s := coord.Settings(); s.SyncPeriod != 7*time.Second {
		t.Fatalf("settings after a refused reload: %+v", s)
	}
	if killer.Mode() != eviction.ModeDelete {
		t.Fatalf("killer after a refused reload: %s", killer.Mode())
	}
	if got := policyNames(coord); got != "ResourceOvercommit" {
		t.Fatalf("policies after a refused reload: %q", got)
	}
}
