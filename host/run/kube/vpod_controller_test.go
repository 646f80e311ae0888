package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	appslisters "k8s.io/client-go/listers/apps/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testwait"
)

var kafkaGVR = schema.GroupVersionResource{Group: "sources.example.dev", Version: "v1", Resource: "kafkasources"}

// fakeEngine places by a function and records its calls.
type fakeEngine struct {
	mu       sync.Mutex
	place    func(v vpod.VPod, call int) ([]vpod.Placement, error)
	calls    map[vpod.Key][]time.Time
	promoted bool
	running  chan struct{}
}

func newFakeEngine(place func(v vpod.VPod, call int) ([]vpod.Placement, error)) *fakeEngine {
	return &fakeEngine{place: place, calls: map[vpod.Key][]time.Time{}, running: make(chan struct{})}
}

func (e *fakeEngine) Schedule(_ context.Context, v vpod.VPod) ([]vpod.Placement, error) {
	e.mu.Lock()
	e.calls[v.Key] = append(e.calls[v.Key], time.Now())
	n := len(e.calls[v.Key])
	e.mu.Unlock()
	return e.place(v, n)
}

func (e *fakeEngine) Run(ctx context.Context) {
	close(e.running)
	<-ctx.Done()
}

func (e *fakeEngine) Promote(context.Context) error {
	e.mu.Lock()
	e.promoted = true
	e.mu.Unlock()
	return nil
}

func (e *fakeEngine) callTimes(name string) []time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Time(nil), e.calls[vpod.Key{Namespace: "default", Name: name}]...)
}

// placeAll puts every vpod's vreplicas on disp-0.
func placeAll(v vpod.VPod, _ int) ([]vpod.Placement, error) {
	if v.VReplicas == 0 {
		return nil, nil
	}
	return []vpod.Placement{{PodName: "disp-0", VReplicas: v.VReplicas}}, nil
}

func crdVPod(name string, vreplicas any, sts string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wasmsched.io/v1alpha1", "kind": "VPod",
		"metadata": map[string]any{"namespace": "default", "name": name, "generation": int64(1)},
		"spec":     map[string]any{"vreplicas": vreplicas, "statefulSet": sts},
	}}
}

func kafkaSource(name string, consumers any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sources.example.dev/v1", "kind": "KafkaSource",
		"metadata": map[string]any{"namespace": "default", "name": name},
		"spec":     map[string]any{"consumers": consumers},
	}}
}

func adapterPod(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "adapters", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
}

type vpodFixture struct {
	client *fake.Clientset
	dyn    *dynamicfake.FakeDynamicClient
	engine *fakeEngine
	parts  *vpodParts
	logs   *testlog.Buffer
	queue  *doneQueue // the scheduler's queue
	// adapterEvents counts the adapter pod, StatefulSet and node events
	// the scheduler's handlers have handled.
	adapterEvents *atomic.Int32
}

// doneQueue counts, per item, the reconciles the worker finished, so a
// test waits for a queued vpod to be handled instead of sleeping.
type doneQueue struct {
	workqueue.TypedRateLimitingInterface[vpodItem]
	mu   sync.Mutex
	done map[vpodItem]int
}

func (q *doneQueue) Done(it vpodItem) {
	q.TypedRateLimitingInterface.Done(it)
	q.mu.Lock()
	q.done[it]++
	q.mu.Unlock()
}

// dones is how many reconciles of it finished.
func (q *doneQueue) dones(it vpodItem) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.done[it]
}

// handled runs queue, which must queue it, and waits until the worker
// has reconciled it. The scheduler must be settled (it not being
// reconciled already), or the wait may end with the reconcile before.
func (f *vpodFixture) handled(t *testing.T, it vpodItem, queue func()) {
	t.Helper()
	before := f.queue.dones(it)
	queue()
	eventually(t, it.key.String()+" reconciled", func() bool { return f.queue.dones(it) > before })
}

// startVPodParts makes parts for one scheduler (adapters/disp, sources:
// the VPod CRD and kafkasources) over fake clients holding objs, with
// engine, and runs them as the leader until the test ends.
func startVPodParts(t *testing.T, engine *fakeEngine, objs ...runtime.Object) *vpodFixture {
	t.Helper()
	two := int32(2)
	client := fake.NewClientset(
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "adapters", Name: "disp"}, Spec: appsv1.StatefulSetSpec{Replicas: &two}},
		adapterPod("disp-0", "n1"), adapterPod("disp-1", "n1"),
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	client.Resources = []*metav1.APIResourceList{
		{GroupVersion: "wasmsched.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "vpods", Namespaced: true, Kind: "VPod"}}},
		{GroupVersion: "sources.example.dev/v1", APIResources: []metav1.APIResource{{Name: "kafkasources", Namespaced: true, Kind: "KafkaSource"}}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{VPodCRD: "VPodList", kafkaGVR: "KafkaSourceList"}, objs...)
	kafka, err := NewDuckVPodSource(kafkaGVR, "spec.consumers", "status.placements")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testlog.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	var queue *doneQueue
	adapterEvents := &atomic.Int32{}
	spec := vpodSpec{Settings: vpod.Settings{Name: "disp", Namespace: "adapters", StatefulSet: "disp", Capacity: 10},
		Sources: []VPodSource{CRDVPodSource(), kafka}}
	parts, err := newVPodPartsWith(ctx, vpodPartsOptions{Client: client, Dynamic: dyn, Specs: []vpodSpec{spec},
		Log:       hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
		newEngine: func(vpod.Settings, vpod.Cluster, vpod.Evictor) (vpodEngine, error) { return engine, nil },
		wrapQueue: func(q workqueue.TypedRateLimitingInterface[vpodItem]) workqueue.TypedRateLimitingInterface[vpodItem] {
			queue = &doneQueue{TypedRateLimitingInterface: q, done: map[vpodItem]int{}}
			return queue
		},
		adapterEvent: func() { adapterEvents.Add(1) }})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		parts.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		parts.close(context.Background())
	})
	<-engine.running
	return &vpodFixture{client: client, dyn: dyn, engine: engine, parts: parts, logs: logs, queue: queue, adapterEvents: adapterEvents}
}

// placements reads an object's status.placements from the fake API.
func (f *vpodFixture) placements(t *testing.T, gvr schema.GroupVersionResource, name string) []vpod.Placement {
	t.Helper()
	u, err := f.dyn.Resource(gvr).Namespace("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ps, err := CRDVPodSource().placementsOf(u)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Eventually(t, 10*time.Second, cond, "timed out waiting for %s", what)
}

func TestVPodControllerPlacesEveryWellFormedVPodOfItsSources(t *testing.T) {
	e := newFakeEngine(placeAll)
	f := startVPodParts(t, e,
		crdVPod("a", int64(3), "disp"), crdVPod("full", int64(2), "adapters/disp"),
		crdVPod("elsewhere", int64(1), "other"), crdVPod("negative", int64(-1), "disp"), crdVPod("text", "many", "disp"),
		kafkaSource("k", int64(2)), kafkaSource("nocount", nil))
	want := map[string][]vpod.Placement{"a": {pl("disp-0", 3)}, "full": {pl("disp-0", 2)}}
	for name, ps := range want {
		eventually(t, name+"'s placements", func() bool { return reflect.DeepEqual(f.placements(t, VPodCRD, name), ps) })
	}
	eventually(t, "k's placements", func() bool {
		return reflect.DeepEqual(f.placements(t, kafkaGVR, "k"), []vpod.Placement{pl("disp-0", 2)})
	})
	// The CRD's status also carries the sum and the generation placed.
	u, _ := f.dyn.Resource(VPodCRD).Namespace("default").Get(context.Background(), "a", metav1.GetOptions{})
	if st := u.Object["status"].(map[string]any); st["vreplicas"] != int64(3) || st["observedGeneration"] != int64(1) {
		t.Errorf("a's status = %v", st)
	}
	// The duck-typed object gets placements only.
	k, _ := f.dyn.Resource(kafkaGVR).Namespace("default").Get(context.Background(), "k", metav1.GetOptions{})
	if st := k.Object["status"].(map[string]any); len(st) != 1 {
		t.Errorf("k's status = %v, want placements only", st)
	}
	for _, name := range []string{"elsewhere", "negative", "text", "nocount"} {
		if n := len(e.callTimes(name)); n != 0 {
			t.Errorf("%s was scheduled %d times", name, n)
		}
	}
	vs, _ := f.parts.ctrls()[0].VPods()
	var keys []string
	for _, v := range vs {
		keys = append(keys, v.Key.String())
	}
	if got := strings.Join(keys, ","); got != "default/a,default/full,default/k" {
		t.Errorf("VPods() = %s", got)
	}
	logs := f.logs.String()
	for _, want := range []string{
		`VPod ignored: vpod=default/elsewhere`, `no vpod scheduler taking VPods is configured for statefulset`,
		`skipping malformed vpod`, `vpod=default/negative`, `error="spec.vreplicas: -1 is negative"`,
		`vpod=default/text`, `vpod=default/nocount`, `error="spec.consumers is missing"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if !e.promoted {
		t.Error("the engine was not promoted")
	}
}

func TestVPodControllerRequeuesAfterRequeueErrorAndWritesPartialPlacements(t *testing.T) {
	const after = 200 * time.Millisecond
	e := newFakeEngine(func(v vpod.VPod, call int) ([]vpod.Placement, error) {
		left := &vpod.RequeueError{After: after, Left: 2, VPod: v.Key}
		switch call {
		case 1: // nothing placed (Policy mode reverts): nothing to write
			return nil, left
		case 2: // MAXFILLUP keeps what it placed
			return []vpod.Placement{pl("disp-0", 1)}, left
		}
		return []vpod.Placement{pl("disp-0", 1), pl("disp-1", v.VReplicas-1)}, nil
	})
	var mu sync.Mutex
	var written [][]vpod.Placement
	f := startVPodParts(t, e)
	f.dyn.PrependReactor("update", "vpods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			ps, _ := CRDVPodSource().placementsOf(a.(k8stesting.UpdateAction).GetObject().(*unstructured.Unstructured))
			mu.Lock()
			written = append(written, ps)
			mu.Unlock()
		}
		return false, nil, nil
	})
	if _, err := f.dyn.Resource(VPodCRD).Namespace("default").Create(context.Background(), crdVPod("big", int64(3), "disp"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "big placed whole", func() bool {
		return reflect.DeepEqual(f.placements(t, VPodCRD, "big"), []vpod.Placement{pl("disp-0", 1), pl("disp-1", 2)})
	})
	calls := e.callTimes("big")
	if gap := calls[1].Sub(calls[0]); gap < after-20*time.Millisecond {
		t.Errorf("rescheduled %v after a RequeueError of %v", gap, after)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(written) < 2 || !reflect.DeepEqual(written[0], []vpod.Placement{pl("disp-0", 1)}) {
		t.Errorf("writes = %v, want the partial placement first", written)
	}
}

func TestVPodControllerRetriesEngineErrorsAndConflicts(t *testing.T) {
	e := newFakeEngine(func(v vpod.VPod, call int) ([]vpod.Placement, error) {
		if call == 1 {
			return nil, errors.New("module trapped")
		}
		return placeAll(v, call)
	})
	f := startVPodParts(t, e)
	conflicts := 0
	f.dyn.PrependReactor("update", "vpods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" && conflicts < 2 {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "wasmsched.io", Resource: "vpods"}, "v", errors.New("changed"))
		}
		return false, nil, nil
	})
	if _, err := f.dyn.Resource(VPodCRD).Namespace("default").Create(context.Background(), crdVPod("v", int64(4), "disp"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "v placed", func() bool {
		return reflect.DeepEqual(f.placements(t, VPodCRD, "v"), []vpod.Placement{pl("disp-0", 4)})
	})
	if n := len(e.callTimes("v")); n < 4 {
		t.Errorf("scheduled %d times; want the error and two conflicts retried (4)", n)
	}
	if !strings.Contains(f.logs.String(), "module trapped") {
		t.Error("the engine error was not logged")
	}
}

func TestVPodControllerRequeuesOnAdapterChangesOnly(t *testing.T) {
	e := newFakeEngine(placeAll)
	f := startVPodParts(t, e, crdVPod("a", int64(1), "disp"))
	eventually(t, "a placed", func() bool { return len(f.placements(t, VPodCRD, "a")) == 1 })
	// Let the write's own echo be reconciled.
	eventually(t, "a rescheduled after its status write", func() bool { return len(e.callTimes("a")) >= 2 })
	// settle waits until the handlers have handled events adapter events
	// in all, then until the worker has reconciled whatever they queued:
	// a marker item queued behind it is reconciled twice (a vpod being
	// reconciled when the first marker is queued, and queued again
	// meanwhile, runs again after that marker but before the second).
	marker := vpodItem{key: vpod.Key{Namespace: "default", Name: "marker"}}
	settle := func(events int32) int {
		eventually(t, "the adapter events handled", func() bool { return f.adapterEvents.Load() >= events })
		for range 2 {
			f.handled(t, marker, func() { f.queue.Add(marker) })
		}
		return len(e.callTimes("a"))
	}
	ctx := context.Background()
	// The fixture's two adapter pods, its StatefulSet and its node.
	base := settle(4)
	// Not an adapter pod (name), not a relevant change: no requeue.
	seen := f.adapterEvents.Load()
	if _, err := f.client.CoreV1().Pods("adapters").Create(ctx, adapterPod("other-0", "n1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, _ := f.client.CoreV1().Pods("adapters").Get(ctx, "disp-0", metav1.GetOptions{})
	p.Status.Phase = corev1.PodRunning
	if _, err := f.client.CoreV1().Pods("adapters").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := settle(seen + 2); n != base {
		t.Fatalf("irrelevant pod changes rescheduled a: %d → %d calls", base, n)
	}
	for _, change := range []struct {
		what string
		do   func() error
	}{
		{"a new adapter pod", func() error {
			_, err := f.client.CoreV1().Pods("adapters").Create(ctx, adapterPod("disp-2", "n1"), metav1.CreateOptions{})
			return err
		}},
		{"an unschedulable annotation", func() error {
			p, _ := f.client.CoreV1().Pods("adapters").Get(ctx, "disp-1", metav1.GetOptions{})
			p.Annotations = map[string]string{vpodUnschedulableAnnotation: "true"}
			_, err := f.client.CoreV1().Pods("adapters").Update(ctx, p, metav1.UpdateOptions{})
			return err
		}},
		{"a cordoned node", func() error {
			n, _ := f.client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			n.Spec.Unschedulable = true
			_, err := f.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		}},
		{"the StatefulSet scaled", func() error {
			s, _ := f.client.AppsV1().StatefulSets("adapters").Get(ctx, "disp", metav1.GetOptions{})
			three := int32(3)
			s.Spec.Replicas = &three
			_, err := f.client.AppsV1().StatefulSets("adapters").Update(ctx, s, metav1.UpdateOptions{})
			return err
		}},
	} {
		before, seen := len(e.callTimes("a")), f.adapterEvents.Load()
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		eventually(t, change.what+" to reschedule a", func() bool { return len(e.callTimes("a")) > before })
		settle(seen + 1)
	}
}

func TestVPodEvictorRemovesThePlacementAndRequeues(t *testing.T) {
	e := newFakeEngine(func(v vpod.VPod, call int) ([]vpod.Placement, error) {
		return v.Placements, nil // keep whatever the status says
	})
	withStatus := crdVPod("a", int64(3), "disp")
	withStatus.Object["status"] = map[string]any{"placements": []any{
		map[string]any{"podName": "disp-0", "vreplicas": int64(2)}, map[string]any{"podName": "disp-1", "vreplicas": int64(1)}}}
	f := startVPodParts(t, e, withStatus)
	c := f.parts.ctrls()[0]
	// The first reconcile completes the status (sum, generation); the
	// fake API has no resourceVersion checks, so evict only after it and
	// its echo, lest that write undo the eviction.
	eventually(t, "a's status completed", func() bool {
		vs, _ := c.VPods()
		return len(vs) == 1 && len(e.callTimes("a")) >= 2
	})
	// Each reconcile of a schedules it once: the echo's is over when
	// as many have finished as were scheduled.
	itemA := vpodItem{0, vpod.Key{Namespace: "default", Name: "a"}}
	eventually(t, "the echo's reconcile over", func() bool { return f.queue.dones(itemA) >= len(e.callTimes("a")) })
	vs, _ := c.VPods()
	before := len(e.callTimes("a"))
	if err := c.evict(context.Background(), nil, vs[0], vpod.Placement{PodName: "disp-1", VReplicas: 1}); err != nil {
		t.Fatal(err)
	}
	if got := f.placements(t, VPodCRD, "a"); !reflect.DeepEqual(got, []vpod.Placement{pl("disp-0", 2)}) {
		t.Errorf("after the eviction: %v", got)
	}
	eventually(t, "a requeued", func() bool { return len(e.callTimes("a")) > before })
	// Evicting a placement already gone, or from a vpod already gone,
	// is not an error.
	if err := c.evict(context.Background(), nil, vs[0], vpod.Placement{PodName: "disp-1", VReplicas: 1}); err != nil {
		t.Errorf("a second eviction: %v", err)
	}
	if err := f.dyn.Resource(VPodCRD).Namespace("default").Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.evict(context.Background(), nil, vs[0], vpod.Placement{PodName: "disp-0", VReplicas: 2}); err != nil {
		t.Errorf("evicting from a deleted vpod: %v", err)
	}
	eventually(t, "a forgotten", func() bool { vs, _ := c.VPods(); return len(vs) == 0 })
}

func TestVPodSpecChecks(t *testing.T) {
	crd := CRDVPodSource()
	kafka, _ := NewDuckVPodSource(kafkaGVR, "spec.consumers", "status.placements")
	spec := func(name, ns, sts string, srcs ...VPodSource) vpodSpec {
		return vpodSpec{Settings: vpod.Settings{Name: name, Namespace: ns, StatefulSet: sts}, Sources: srcs}
	}
	for _, tc := range []struct {
		specs []vpodSpec
		err   string
	}{
		{[]vpodSpec{spec("a", "ns", "d", crd, kafka), spec("b", "ns", "e", crd)}, ""},
		{[]vpodSpec{spec("a", "ns", "d", crd), spec("b", "ns", "d", crd)}, "both name statefulset ns/d"},
		{[]vpodSpec{spec("a", "ns", "d", kafka), spec("b", "ns", "e", kafka)}, "source of schedulers a and b"},
		{[]vpodSpec{spec("a", "ns", "d", kafka, kafka)}, "source of schedulers a and a"},
		{[]vpodSpec{spec("a", "ns", "d", crd, crd)}, "listed twice"},
	} {
		err := checkVPodSpecs(tc.specs)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%v: %v, want %q", tc.specs, err, tc.err)
		}
	}
	// A source the API server does not serve is an error at start.
	client := fake.NewClientset()
	client.Resources = []*metav1.APIResourceList{{GroupVersion: "sources.example.dev/v1", APIResources: []metav1.APIResource{{Name: "other"}}}}
	err := checkServed(client, []vpodSpec{spec("a", "ns", "d", kafka)})
	if err == nil || !strings.Contains(err.Error(), "kafkasources") || !strings.Contains(err.Error(), "does not serve") {
		t.Errorf("an unserved duck type: %v", err)
	}
	err = checkServed(client, []vpodSpec{spec("a", "ns", "d", crd)})
	if err == nil || !strings.Contains(err.Error(), "deploy/vpod-crd.yaml") {
		t.Errorf("the CRD not installed: %v", err)
	}
}

func TestVPodClusterCachesTheScale(t *testing.T) {
	two := int32(2)
	client := fake.NewClientset(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}, Spec: appsv1.StatefulSetSpec{Replicas: &two}})
	gets, updates := 0, []int32{}
	spec := int32(2)
	client.PrependReactor("get", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		gets++
		return true, scaleOf(spec), nil
	})
	client.PrependReactor("update", "statefulsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		s := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		if s.ResourceVersion != "" || s.Name != "d" || s.Namespace != "ns" {
			return true, nil, fmt.Errorf("unexpected scale %+v", s)
		}
		updates = append(updates, s.Spec.Replicas)
		spec = s.Spec.Replicas
		return true, scaleOf(spec), nil
	})
	now := time.Unix(1000, 0)
	ctx := context.Background()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	if err := idx.Add(&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}}); err != nil {
		t.Fatal(err)
	}
	stsIndexer := appslisters.NewStatefulSetLister(idx).StatefulSets("ns")
	c := NewVPodCluster(VPodClusterOptions{Namespace: "ns", StatefulSet: "d", Scales: client.AppsV1().StatefulSets("ns"),
		StatefulSets: stsIndexer, TTL: 10 * time.Second, Now: func() time.Time { return now }})
	read := func(want int32, wantGets int) {
		t.Helper()
		r, err := c.Replicas(ctx)
		if err != nil || r != want || gets != wantGets {
			t.Fatalf("Replicas = %d, %v after %d GETs; want %d after %d", r, err, gets, want, wantGets)
		}
	}
	read(2, 1)
	read(2, 1) // cached
	spec = 4   // scaled by someone else: unseen until the cache goes
	now = now.Add(9 * time.Second)
	read(2, 1)
	now = now.Add(time.Second)
	read(4, 2) // TTL over
	c.Reset()  // the informer saw spec.replicas change
	read(4, 3)
	if err := c.Scale(ctx, 6); err != nil {
		t.Fatal(err)
	}
	read(6, 3) // what was written is cached
	if !reflect.DeepEqual(updates, []int32{6}) {
		t.Errorf("updates = %v", updates)
	}
	// A StatefulSet the informer lacks is an error without a request.
	missing := NewVPodCluster(VPodClusterOptions{Namespace: "ns", StatefulSet: "gone", Scales: client.AppsV1().StatefulSets("ns"),
		StatefulSets: stsIndexer})
	if _, err := missing.Replicas(ctx); err == nil || !strings.Contains(err.Error(), "adapter statefulset ns/gone") || gets != 3 {
		t.Errorf("missing StatefulSet: %v after %d GETs", err, gets)
	}
}

func scaleOf(replicas int32) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}, Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
}

func TestVPodControllerSkipsVersionsItWroteOnTopOf(t *testing.T) {
	e := newFakeEngine(placeAll)
	first := crdVPod("a", int64(2), "disp")
	first.SetResourceVersion("1")
	f := startVPodParts(t, e)
	// The fake API keeps whatever resourceVersion it is given: number
	// the versions as an API server does.
	var mu sync.Mutex
	next := 1
	bump := func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(interface{ GetObject() runtime.Object }).GetObject().(*unstructured.Unstructured); ok {
			mu.Lock()
			next++
			u.SetResourceVersion(fmt.Sprint(next))
			mu.Unlock()
		}
		return false, nil, nil
	}
	f.dyn.PrependReactor("update", "vpods", bump)
	f.dyn.PrependReactor("create", "vpods", bump)
	ctx := context.Background()
	if _, err := f.dyn.Resource(VPodCRD).Namespace("default").Create(ctx, first, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a placed", func() bool {
		return reflect.DeepEqual(f.placements(t, VPodCRD, "a"), []vpod.Placement{pl("disp-0", 2)})
	})
	c := f.parts.ctrls()[0]
	item := vpodItem{0, vpod.Key{Namespace: "default", Name: "a"}}
	// The write's own echo (version 3) is scheduled, and found up to date.
	eventually(t, "the echo scheduled", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.sources[0].vpods[item.key].ResourceVersion == "3"
	})
	eventually(t, "a scheduled twice", func() bool { return len(e.callTimes("a")) == 2 })
	c.mu.Lock()
	done := c.done[item]
	c.mu.Unlock()
	if done != "2" {
		t.Errorf("written on top of version %q, want 2", done)
	}
	// Pretend version 3 was written on top of too: requeues leave it alone.
	c.markDone(item, "3")
	for range 5 {
		f.handled(t, item, c.enqueueAll)
	}
	if n := len(e.callTimes("a")); n != 2 {
		t.Fatalf("an outdated version was scheduled again (%d calls)", n)
	}
	// A newer version (a user's change) is scheduled.
	u := f.dyn.Resource(VPodCRD).Namespace("default")
	cur, err := u.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(cur.Object, int64(5), "spec", "vreplicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new count placed", func() bool {
		return reflect.DeepEqual(f.placements(t, VPodCRD, "a"), []vpod.Placement{pl("disp-0", 5)})
	})
}

func TestVPodControllerKeepsCountingAVPodThatTurnsMalformed(t *testing.T) {
	e := newFakeEngine(placeAll)
	f := startVPodParts(t, e, crdVPod("a", int64(2), "disp"))
	eventually(t, "a placed", func() bool {
		return reflect.DeepEqual(f.placements(t, VPodCRD, "a"), []vpod.Placement{pl("disp-0", 2)})
	})
	c := f.parts.ctrls()[0]
	eventually(t, "a's status echoed", func() bool {
		vs, _ := c.VPods()
		return len(vs) == 1 && len(vs[0].Placements) == 1 && len(e.callTimes("a")) >= 2
	})
	calls := len(e.callTimes("a"))
	ctx := context.Background()
	u, err := f.dyn.Resource(VPodCRD).Namespace("default").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(u.Object, "lots", "spec", "vreplicas"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.dyn.Resource(VPodCRD).Namespace("default").Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the malformed version logged", func() bool { return strings.Contains(f.logs.String(), "spec.vreplicas: a string (lots)") })
	f.handled(t, vpodItem{0, vpod.Key{Namespace: "default", Name: "a"}}, c.enqueueAll)
	if n := len(e.callTimes("a")); n != calls {
		t.Errorf("a malformed vpod was scheduled (%d calls, were %d)", n, calls)
	}
	// Its adapter pods still run its vreplicas: the engine keeps seeing them.
	if vs, _ := c.VPods(); len(vs) != 1 || vs[0].VReplicas != 2 || !reflect.DeepEqual(vs[0].Placements, []vpod.Placement{pl("disp-0", 2)}) {
		t.Errorf("VPods() = %+v, want a's last good version", vs)
	}
}
