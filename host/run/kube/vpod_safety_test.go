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
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

// Sources refuse counts and placements beyond the engine's bounds, the
// field and the limit named, whether the count is the VPod CRD's or a
// duck-typed resource's.
func TestVPodFromRefusesAbsurdSizes(t *testing.T) {
	kafka, err := NewDuckVPodSource(kafkaGVR, "spec.consumers", "status.placements")
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, vpod.MaxPlacements+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"podName":"d-%d","vreplicas":0}`, i)
	}
	const meta = `"metadata":{"namespace":"ns","name":"k"}`
	for _, tc := range []struct {
		name string
		src  VPodSource
		body string
		err  string
	}{
		{"duck count", kafka, `"spec":{"consumers":2147483647}`, "spec.consumers: 2147483647 exceeds the limit 100000"},
		{"CRD count", CRDVPodSource(), `"spec":{"vreplicas":100001,"statefulSet":"d"}`, "spec.vreplicas: 100001 exceeds the limit 100000"},
		{"placements", kafka, `"spec":{"consumers":1},"status":{"placements":[` + strings.Join(many, ",") + `]}`,
			"status.placements: 65537 placements exceed the limit 65536"},
		{"placed vreplicas", kafka, `"spec":{"consumers":1},"status":{"placements":[{"podName":"d-0","vreplicas":60000},{"podName":"d-1","vreplicas":60000}]}`,
			"status.placements: 120000 vreplicas in all exceed the limit 100000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.src.vpodFrom(obj(t, "{"+meta+","+tc.body+"}"))
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %+v, %v; want an error with %q", got, err, tc.err)
			}
		})
	}
	if v, err := kafka.vpodFrom(obj(t, "{"+meta+`,"spec":{"consumers":100000},"status":{"placements":[{"podName":"d-0","vreplicas":100000}]}}`)); err != nil || v.VReplicas != vpod.MaxVReplicas {
		t.Errorf("at the limit: %+v, %v", v, err)
	}
}

// fakeVPodQueue is the controller's queue with its delays taken out: a
// plain work queue, and the production rate limiter asked for each
// AddRateLimited's delay (recorded, the item not re-added: the test adds
// it back, as the delay's end would), so backoff is checked without a
// clock.
type fakeVPodQueue struct {
	workqueue.TypedInterface[vpodItem]
	limiter workqueue.TypedRateLimiter[vpodItem]
	mu      sync.Mutex
	delays  []time.Duration // AddRateLimited
	after   []time.Duration // AddAfter
	forgets int
}

func newFakeVPodQueue() *fakeVPodQueue {
	return &fakeVPodQueue{TypedInterface: workqueue.NewTyped[vpodItem](),
		limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[vpodItem](50*time.Millisecond, 30*time.Second)}
}

func (q *fakeVPodQueue) AddRateLimited(it vpodItem) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.delays = append(q.delays, q.limiter.When(it))
}

func (q *fakeVPodQueue) AddAfter(_ vpodItem, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.after = append(q.after, d)
}

func (q *fakeVPodQueue) Forget(it vpodItem) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.forgets++
	q.limiter.Forget(it)
}

func (q *fakeVPodQueue) NumRequeues(it vpodItem) int { return q.limiter.NumRequeues(it) }

// trapOnce is a vpod predicate that panics (a guest trap) while armed.
type trapOnce struct{ armed *atomic.Bool }

func (trapOnce) Name() string { return "Boom" }
func (p trapOnce) NewVPodFilter([]byte) (plugin.VPodFilter, error) {
	return func(*plugin.VPodState, []int, []*plugin.Status) {
		if p.armed.Load() {
			panic("boom")
		}
	}, nil
}

// A vpod whose policy module traps, in serve: each reconcile records a
// Warning Event on the vpod naming the module, plugin and reason, counts
// wasmsched_vpod_policy_failures_total, writes nothing, scales nothing,
// and requeues the vpod with exponential backoff (never the fixed
// requeue of vreplicas left over). Once the module behaves, the vpod is
// placed and its backoff forgotten.
func TestVPodControllerPolicyFailureBacksOff(t *testing.T) {
	ctx := context.Background()
	var armed atomic.Bool
	armed.Store(true)
	cfg := config.Default()
	cfg.Modules = []config.ModuleSpec{{Name: "kn"}, {Name: "faulty"}}
	reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: t.TempDir(), NativeBuiltin: true,
		Backends: map[string]guest.Backend{"kn": native.New(nil, knativedefaults.Plugins()...), "faulty": native.New(nil,
			plugin.Registration{Name: "Boom", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return trapOnce{&armed}, nil }})}})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close(ctx)
	pol := &vpod.Policy{Predicates: []vpod.PolicyEntry{{Name: "PodFitsResources"}, {Name: "Boom"}},
		Priorities: []vpod.PolicyEntry{{Name: "LowestOrdinalPriority", Weight: 1}}}
	pols, err := vpod.NewPolicies(ctx, reg, pol, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pols.Close(ctx)
	mreg := prometheus.NewRegistry()
	m, err := metrics.New(mreg)
	if err != nil {
		t.Fatal(err)
	}

	u := crdVPod("bad", int64(6), "disp")
	u.SetUID("uid-bad")
	u.Object["status"] = map[string]any{"placements": []any{map[string]any{"podName": "disp-1", "vreplicas": int64(2)}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{VPodCRD: "VPodList"}, u)
	src := &vpodSourceState{VPodSource: CRDVPodSource(), client: dyn.Resource(VPodCRD), vpods: map[vpod.Key]sourcedVPod{}}
	v, err := src.vpodFrom(u)
	if err != nil {
		t.Fatal(err)
	}
	src.vpods[v.Key] = sourcedVPod{VPod: v, obj: u}
	var pods []*corev1.Pod
	for i := range 3 {
		pods = append(pods, adapterPod(fmt.Sprintf("disp-%d", i), "n1"))
	}
	cluster := vpod.NewStaticCluster("adapters", "disp", 3, pods, []*corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, []vpod.VPod{v})
	logs := &testlog.Buffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})
	engine, err := vpod.New(vpod.Settings{Name: "disp", Namespace: "adapters", StatefulSet: "disp", Capacity: 2, Strategy: vpod.StrategyPolicy, SchedPolicy: pol},
		cluster, pols, vpod.Options{Log: log, Metrics: m.VPod()})
	if err != nil {
		t.Fatal(err)
	}
	q := newFakeVPodQueue()
	er := events.NewFakeRecorder(10)
	c := &vpodController{name: "disp", sources: []*vpodSourceState{src}, engine: engine, queue: q, log: log, events: er}
	item := vpodItem{0, v.Key}

	const retries = 4
	for i := range retries {
		q.Add(item)
		if !c.processNext(ctx) {
			t.Fatal("queue shut down")
		}
		select {
		case e := <-er.Events:
			for _, part := range []string{"Warning " + VPodPolicyFailedReason, "default/bad", `module "faulty"`, `plugin "Boom"`, "trap"} {
				if !strings.Contains(e, part) {
					t.Errorf("retry %d: Event %q lacks %q", i, e, part)
				}
			}
		default:
			t.Fatalf("retry %d: no Event", i)
		}
		if want := 50 * time.Millisecond << i; len(q.delays) != i+1 || q.delays[i] != want {
			t.Fatalf("retry %d: backoff delays %v, want the last %v", i, q.delays, want)
		}
		if len(q.after) != 0 || q.Len() != 0 {
			t.Fatalf("retry %d: requeued without backoff (after %v, %d queued)", i, q.after, q.Len())
		}
	}
	if n := testmetrics.Value(t, mreg, "wasmsched_vpod_policy_failures_total",
		testmetrics.Labels{"scheduler": "disp", "plugin": "Boom", "reason": "trap"}); n != retries {
		t.Errorf("failures counted %v, want %d", n, retries)
	}
	if got := cluster.Scaled(); len(got) != 0 {
		t.Errorf("the StatefulSet was scaled: %v", got)
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("the vpod was written: %s %s", a.GetVerb(), a.GetSubresource())
		}
	}
	if !strings.Contains(logs.String(), "vpod policy module failed") || !strings.Contains(logs.String(), "module=faulty") {
		t.Errorf("no log line names the failure:\n%s", logs)
	}

	// The module behaves: placed, written, backoff forgotten.
	armed.Store(false)
	q.Add(item)
	c.processNext(ctx)
	if q.NumRequeues(item) != 0 || q.forgets != 1 {
		t.Errorf("backoff not forgotten: %d requeues, %d forgets", q.NumRequeues(item), q.forgets)
	}
	got, err := dyn.Resource(VPodCRD).Namespace("default").Get(ctx, "bad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := CRDVPodSource().placementsOf(got)
	if err != nil || vpod.TotalVReplicas(ps) != 6 {
		t.Errorf("placements after healing: %v %v", ps, err)
	}
	if !reflect.DeepEqual(cluster.Scaled(), []int32(nil)) {
		t.Errorf("scaled: %v", cluster.Scaled())
	}
}
