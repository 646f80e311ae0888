package kube

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/internal/testlog"
)

// liveScheduler is a vpod scheduler of the configuration liveConfig
// makes: a Policy scheduler of statefulSet adapters/<sts> placing on
// the lowest ordinal, with more predicates (policy entries) if given.
func liveScheduler(name, sts string, capacity int, predicates ...string) string {
	preds := "{name: PodFitsResources}"
	for _, p := range predicates {
		preds += ", " + p
	}
	return fmt.Sprintf(`  - name: %s
    statefulSet: {namespace: adapters, name: %s}
    podCapacity: %d
    strategy: Policy
    schedulerPolicy:
      predicates: [%s]
      priorities: [{name: LowestOrdinalPriority, weight: 1}]
`, name, sts, capacity, preds)
}

func liveConfig(t *testing.T, schedulers ...string) *config.Configuration {
	t.Helper()
	doc := "apiVersion: wasmsched.io/v1alpha1\nkind: WasmSchedulerConfiguration\nmodules: [{name: faulty, path: in-process}]\nvpod:\n  schedulers:\n" +
		strings.Join(schedulers, "")
	cfg, err := config.Parse([]byte(doc))
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	return cfg
}

// liveFixture is serve's vpod parts, run as the leader, over fake
// clients with StatefulSets adapters/disp, other and third of three pods
// each on three nodes; the VPod CRD is served, kafkasources are not.
type liveFixture struct {
	t     *testing.T
	dyn   *dynamicfake.FakeDynamicClient
	parts *vpodParts
	opts  modules.Options
	logs  *testlog.Buffer
	// lead runs the parts as the leader until the test ends.
	lead func()
}

// startLiveParts makes the parts of cfg and runs them as the leader.
func startLiveParts(t *testing.T, cfg *config.Configuration) *liveFixture {
	t.Helper()
	f := newLiveParts(t, cfg)
	f.lead()
	return f
}

// newLiveParts makes the parts of cfg, standing by (f.lead runs them).
func newLiveParts(t *testing.T, cfg *config.Configuration) *liveFixture {
	t.Helper()
	three := int32(3)
	objs := []runtime.Object{}
	for i := range 3 {
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%d", i)}})
	}
	for _, sts := range []string{"disp", "other", "third"} {
		objs = append(objs, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "adapters", Name: sts}, Spec: appsv1.StatefulSetSpec{Replicas: &three}})
		for i := range 3 {
			objs = append(objs, adapterPod(fmt.Sprintf("%s-%d", sts, i), fmt.Sprintf("n%d", i)))
		}
	}
	client := fake.NewClientset(objs...)
	client.Resources = []*metav1.APIResourceList{
		{GroupVersion: "wasmsched.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "vpods", Namespaced: true, Kind: "VPod"}}},
		{GroupVersion: "sources.example.dev/v1", APIResources: []metav1.APIResource{{Name: "slowsources", Namespaced: true, Kind: "SlowSource"}}},
	}
	// Three replicas each; the autoscaler's writes are refused, so the
	// adapter pods stay as they are.
	client.PrependReactor("get", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		return true, scaleOf(3), nil
	})
	client.PrependReactor("update", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		return true, nil, fmt.Errorf("scaling is off in this test")
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{VPodCRD: "VPodList", kafkaGVR: "KafkaSourceList", slowGVR: "SlowSourceList"})
	// slowsources are served but cannot be listed: their informer never
	// syncs.
	dyn.PrependReactor("list", "slowsources", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("slowsources cannot be listed")
	})
	var armed atomic.Bool
	armed.Store(true)
	opts := modules.Options{CacheDir: t.TempDir(), NativeBuiltin: true, Backends: map[string]guest.Backend{"faulty": native.New(nil,
		plugin.Registration{Name: "Boom", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return trapOnce{&armed}, nil }})}}
	logs := &testlog.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	reg, err := modules.Load(ctx, cfg, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	specs, err := vpodSpecsFrom(cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	parts, err := newVPodPartsWith(ctx, vpodPartsOptions{Client: client, Dynamic: dyn, Specs: specs, Registry: reg,
		Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}), SyncTimeout: 2 * time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		parts.close(context.Background())
	})
	lead := func() {
		go func() {
			defer close(done)
			parts.run(ctx)
		}()
	}
	var once sync.Once
	f := &liveFixture{t: t, dyn: dyn, parts: parts, opts: opts, logs: logs, lead: func() { once.Do(lead) }}
	t.Cleanup(func() { once.Do(func() { close(done) }) })
	return f
}

var slowGVR = schema.GroupVersionResource{Group: "sources.example.dev", Version: "v1", Resource: "slowsources"}

// reload stages cfg, canaries it and commits it, as a reload does.
func (f *liveFixture) reload(cfg *config.Configuration) error {
	ctx := context.Background()
	st, err := f.parts.Stage(ctx, cfg, f.opts)
	if err != nil {
		return err
	}
	if err := st.Canary(ctx); err != nil {
		st.Discard(ctx)
		return err
	}
	st.Commit(ctx)
	return nil
}

func (f *liveFixture) mustReload(cfg *config.Configuration) {
	f.t.Helper()
	if err := f.reload(cfg); err != nil {
		f.t.Fatalf("reload: %v", err)
	}
}

func (f *liveFixture) create(name string, vreplicas int64, sts string) {
	f.t.Helper()
	if _, err := f.dyn.Resource(VPodCRD).Namespace("default").Create(context.Background(), crdVPod(name, vreplicas, sts), metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// waitPlaced waits until vpod name's placements are want (pod=vreplicas,
// comma separated).
func (f *liveFixture) waitPlaced(name, want string) {
	f.t.Helper()
	var got string
	eventually(f.t, name+" placed as "+want, func() bool {
		u, err := f.dyn.Resource(VPodCRD).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		ps, err := CRDVPodSource().placementsOf(u)
		if err != nil {
			return false
		}
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%s=%d", p.PodName, p.VReplicas))
		}
		got = strings.Join(out, ",")
		return got == want
	})
}

// names are the running schedulers' names, in order.
func (f *liveFixture) names() []string {
	var out []string
	for _, c := range f.parts.ctrls() {
		out = append(out, c.name)
	}
	return out
}

// A reload changes serve's vpod schedulers themselves: a changed
// podCapacity or statefulSet replaces the scheduler (its successor
// starting from the placements in the vpods), a new one starts placing
// its vpods at once, a removed one stops; a policy-only change keeps the
// running scheduler.
func TestVPodReloadAddsChangesAndRemovesSchedulers(t *testing.T) {
	f := startLiveParts(t, liveConfig(t, liveScheduler("disp", "disp", 10)))
	f.create("a", 7, "disp")
	f.waitPlaced("a", "disp-0=7")
	first := f.parts.ctrls()[0]

	// podCapacity 10 → 5: the successor starts from a's placements and
	// moves what overcommits disp-0 to disp-1; b's 6 vreplicas fill
	// disp-1 and go on to disp-2 (at 10, disp-0 would take 3 of them).
	f.mustReload(liveConfig(t, liveScheduler("disp", "disp", 5)))
	if got := f.parts.ctrls()[0]; got == first {
		t.Fatal("the scheduler whose podCapacity changed was not replaced")
	}
	if !first.queue.ShuttingDown() {
		t.Error("the replaced scheduler's queue still runs")
	}
	f.waitPlaced("a", "disp-0=5,disp-1=2")
	f.create("b", 6, "disp")
	f.waitPlaced("b", "disp-1=3,disp-2=3")
	if !strings.Contains(f.logs.String(), "vpod scheduler replaced") {
		t.Errorf("no log line says the scheduler was replaced")
	}

	// A second scheduler, on another StatefulSet.
	f.mustReload(liveConfig(t, liveScheduler("disp", "disp", 5), liveScheduler("other", "other", 4)))
	if got := f.names(); !reflect.DeepEqual(got, []string{"disp", "other"}) {
		t.Fatalf("schedulers after the addition: %v", got)
	}
	f.create("c", 5, "other")
	f.waitPlaced("c", "other-0=4,other-1=1")
	if !strings.Contains(f.logs.String(), "vpod scheduler started: scheduler=other") {
		t.Errorf("no log line says scheduler other started")
	}

	// A policy-only change keeps the scheduler running.
	kept := f.parts.ctrls()[0]
	f.mustReload(liveConfig(t, liveScheduler("disp", "disp", 5, "{name: NoMaxResourceCount, args: {NumPartitions: 100}}"), liveScheduler("other", "other", 4)))
	if f.parts.ctrls()[0] != kept {
		t.Error("a policy-only change replaced the scheduler")
	}

	// other moves to StatefulSet third: its vpods there are placed, the
	// ones naming other are no one's.
	f.mustReload(liveConfig(t, liveScheduler("disp", "disp", 5), liveScheduler("other", "third", 4)))
	f.create("d", 2, "third")
	f.waitPlaced("d", "third-0=2")

	// other is removed.
	other := f.parts.ctrls()[1]
	f.mustReload(liveConfig(t, liveScheduler("disp", "disp", 5)))
	if got := f.names(); !reflect.DeepEqual(got, []string{"disp"}) {
		t.Fatalf("schedulers after the removal: %v", got)
	}
	if !other.queue.ShuttingDown() {
		t.Error("the removed scheduler's queue still runs")
	}
	if !strings.Contains(f.logs.String(), "vpod scheduler stopped: the configuration no longer names it: scheduler=other") {
		t.Errorf("no log line says scheduler other stopped")
	}
	f.create("e", 1, "disp")
	f.waitPlaced("e", "disp-2=1")
}

// A reload whose new or changed scheduler fails (its source not served,
// its informer not syncing within the deadline, its canary step
// trapping) is
// refused with the field named, and the running schedulers keep running
// unchanged.
func TestVPodReloadRefusalLeavesTheRunningSet(t *testing.T) {
	f := startLiveParts(t, liveConfig(t, liveScheduler("disp", "disp", 10)))
	f.create("a", 3, "disp")
	f.waitPlaced("a", "disp-0=3")
	running := f.parts.ctrls()[0]
	kafka := liveScheduler("kafka", "other", 4) + `    sources:
    - {group: sources.example.dev, version: v1, resource: kafkasources, vreplicasPath: spec.consumers, placementsPath: status.placements}
`
	for _, tc := range []struct {
		name string
		cfg  *config.Configuration
		want []string
	}{
		{"unserved source", liveConfig(t, liveScheduler("disp", "disp", 10), kafka),
			[]string{"vpod.schedulers[1].sources[0]", "kafkasources", "does not serve"}},
		{"informer does not sync", liveConfig(t, liveScheduler("disp", "disp", 10), liveScheduler("slow", "other", 4)+`    sources:
    - {group: sources.example.dev, version: v1, resource: slowsources, vreplicasPath: spec.n, placementsPath: status.placements}
`), []string{"vpod.schedulers[1]", "slowsources", "did not sync within 2s"}},
		{"canary of a changed scheduler traps", liveConfig(t, liveScheduler("disp", "disp", 5, "{name: Boom}")),
			[]string{"vpod.schedulers[0]", "canary", "Boom"}},
		{"canary of a new scheduler traps", liveConfig(t, liveScheduler("disp", "disp", 10), liveScheduler("other", "other", 4, "{name: Boom}")),
			[]string{"vpod.schedulers[1]", "canary", "Boom"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := f.reload(tc.cfg)
			if err == nil {
				t.Fatal("the reload was not refused")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if got := f.parts.ctrls(); len(got) != 1 || got[0] != running || running.queue.ShuttingDown() {
				t.Fatalf("a refused reload changed the running schedulers: %v", f.names())
			}
		})
	}
	f.create("b", 2, "disp")
	f.waitPlaced("b", "disp-0=2")
}

// A scheduler a reload adds while this replica stands by syncs its
// informers but schedules nothing; once the replica leads, it runs with
// the others.
func TestVPodReloadWhileStandingBy(t *testing.T) {
	f := newLiveParts(t, liveConfig(t, liveScheduler("disp", "disp", 10)))
	f.mustReload(liveConfig(t, liveScheduler("disp", "disp", 10), liveScheduler("other", "other", 4)))
	running := func() (n int) {
		f.parts.mu.Lock()
		defer f.parts.mu.Unlock()
		for _, u := range f.parts.units {
			if u.cancel != nil {
				n++
			}
		}
		return n
	}
	if n := running(); n != 0 {
		t.Fatalf("%d schedulers run on a replica that does not lead", n)
	}
	f.create("a", 2, "disp")
	f.create("c", 5, "other")
	f.lead()
	f.waitPlaced("a", "disp-0=2")
	f.waitPlaced("c", "other-0=4,other-1=1")
	if n := running(); n != 2 {
		t.Errorf("%d schedulers run on the leader, want 2", n)
	}
}
