package e2e

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/wasmsched/wasmsched/deploy/charttest"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/kube"
	"github.com/wasmsched/wasmsched/internal/testlog"
)

// The adapter namespace, the nodes (one per zone) and the duck-typed
// source of the vpod test.
const adapterNS = "adapters"

var (
	vpodZones    = []string{"zone-a", "zone-b", "zone-c"}
	vpodNodes    = []string{"vn-a", "vn-b", "vn-c"}
	vpodsGVR     = schema.GroupVersionResource{Group: "wasmsched.io", Version: "v1alpha1", Resource: "vpods"}
	kafkaSrcGVR  = schema.GroupVersionResource{Group: "sources.example.dev", Version: "v1", Resource: "kafkasources"}
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	vpodSAName   = "system:serviceaccount:kube-system:wasmsched"
	vpodSAConfig = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles: [{schedulerName: wasmsched}]
vpod:
  schedulers:
  # Knative's README policy: spread over zones, then lowest ordinal.
  - name: zonal
    statefulSet: {namespace: adapters, name: zonal}
    podCapacity: 10
    strategy: Policy
    refreshPeriod: 1s
    schedulerPolicy:
      predicates: [{name: PodFitsResources}]
      priorities:
      - {name: AvailabilityZonePriority, weight: 10, args: {MaxSkew: 2}}
      - {name: LowestOrdinalPriority, weight: 2}
    deschedulerPolicy:
      priorities:
      - {name: RemoveWithAvailabilityZonePriority, weight: 10, args: {MaxSkew: 2}}
      - {name: RemoveWithHighestOrdinalPriority, weight: 2}
  # v1.16.0 MAXFILLUP: fill the lowest ordinals, scale to fit.
  - name: fill
    statefulSet: {namespace: adapters, name: fill}
    podCapacity: 5
    strategy: MAXFILLUP
    refreshPeriod: 1s
  # Policy mode without zones: compaction moves vreplicas off the last pod.
  - name: compact
    statefulSet: {namespace: adapters, name: compact}
    podCapacity: 4
    strategy: Policy
    refreshPeriod: 1s
    schedulerPolicy:
      predicates: [{name: PodFitsResources}]
      priorities: [{name: LowestOrdinalPriority, weight: 1}]
    deschedulerPolicy:
      priorities: [{name: RemoveWithHighestOrdinalPriority, weight: 1}]
  # A duck-typed source shaped like Knative's KafkaSource.
  - name: kafka
    statefulSet: {namespace: adapters, name: kafka}
    podCapacity: 10
    strategy: MAXFILLUP
    refreshPeriod: 1s
    sources:
    - {group: sources.example.dev, version: v1, resource: kafkasources, vreplicasPath: spec.consumers, placementsPath: status.placements}
`
)

// TestVPodServe runs serve's vpod schedulers against a real API server,
// as deploy/wasmsched.yaml's ServiceAccount (so its RBAC rules are
// proven enough) and under leader election. No controller manager runs:
// the test is the StatefulSet controller, creating pod <sts>-<i> on node
// i mod 3 for every i < spec.replicas and deleting the others. It checks
// VPods placed by zone, a StatefulSet scaled up through the scale
// subresource for a VPod that does not fit (and down again once it
// shrinks), compaction moving vreplicas off the highest ordinal, and a
// duck-typed KafkaSource placed while malformed and foreign objects are
// skipped. The ServiceAccount may update statefulsets/scale but not
// statefulsets, so every scale change went through the scale
// subresource.
func TestVPodServe(t *testing.T) {
	admin, kubeconfig := controlPlaneWithKubeconfig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(rc)
	installCRD(t, ctx, admin, dyn, "../../deploy/vpod-crd.yaml", vpodsGVR)
	installCRD(t, ctx, admin, dyn, "testdata/kafkasource-crd.yaml", kafkaSrcGVR)
	applyVPodRBAC(t, ctx, admin)

	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: adapterNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, name := range vpodNodes {
		n := node(name, "4")
		n.Labels["topology.kubernetes.io/zone"] = vpodZones[i]
		createNode(t, ctx, admin, n)
	}
	for name, replicas := range map[string]int32{"zonal": 3, "fill": 1, "compact": 2, "kafka": 1} {
		createStatefulSet(t, ctx, admin, name, replicas)
	}
	stsCtx, stopSTS := context.WithCancel(ctx)
	defer stopSTS()
	// compact's third pod never starts: an autoscaler pass that runs
	// while a new vpod is still pending adds a replica (v1.16.0 counts
	// pending vreplicas even on a scale-down tick), and in Policy mode a
	// started, empty last pod would never be removed again, leaving
	// nothing on the last ordinal to compact.
	go statefulSetController(stsCtx, admin, map[string]int32{"compact": 2})

	cfg, err := config.Parse([]byte(vpodSAConfig))
	if err != nil {
		t.Fatal(err)
	}
	asSA := *rc
	asSA.Impersonate.UserName = vpodSAName
	saClient := kubernetes.NewForConfigOrDie(&asSA)
	var logs testlog.Buffer
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("WASMSCHED_E2E_LOGS") == "1" {
			t.Logf("serve's log:\n%s", logs.String())
		}
	})
	le := kube.DefaultLeaderElection()
	le.LeaseDuration, le.RenewDeadline, le.RetryPeriod = 3*time.Second, 2*time.Second, 250*time.Millisecond
	startServe(t, ctx, kube.ServeOptions{Client: saClient, RESTConfig: &asSA, Config: cfg, LeaderElection: &le,
		Log: hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: &logs})})
	t.Logf("control plane, CRDs and serve ready after %v", time.Since(start).Round(time.Millisecond))

	v := &vpodClient{t: t, ctx: ctx, dyn: dyn, admin: admin}

	t.Run("zone spread", func(t *testing.T) {
		v.t = t
		v.create(vpodsGVR, vpodObj("z1", 6, "zonal"))
		// AvailabilityZonePriority (w10) puts each next vreplica in the
		// zone with the fewest; LowestOrdinalPriority (w2) breaks ties:
		// 2 per zone, on pods 0, 1, 2 (one per zone).
		want := []place{{"zonal-0", 2}, {"zonal-1", 2}, {"zonal-2", 2}}
		v.waitPlacements(vpodsGVR, "z1", "placed 2 per zone", func(ps []place) bool { return reflect.DeepEqual(ps, want) })
		u := v.get(vpodsGVR, "z1")
		if got, _, _ := unstructured.NestedInt64(u.Object, "status", "vreplicas"); got != 6 {
			t.Errorf("status.vreplicas = %d, want 6", got)
		}
		if got, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); got != u.GetGeneration() {
			t.Errorf("status.observedGeneration = %d, want %d", got, u.GetGeneration())
		}
	})

	t.Run("scale up through the scale subresource", func(t *testing.T) {
		v.t = t
		// 30 more do not fit in the 24 free: Policy mode places none and
		// requeues, and the autoscaler adds pods in steps of the scale
		// factor (3 zones, AvailabilityZonePriority): pending 30 needs
		// ceil(30/10) = 3 pods, so 3 + 3 = 6 replicas. z2 is placed as soon
		// as the new pods give room (the zone priority prefers, does not
		// require, balance: the first new pod may take more than its zone's
		// share), within capacity and below the replica count.
		v.create(vpodsGVR, vpodObj("z2", 30, "zonal"))
		ps := v.waitPlacements(vpodsGVR, "z2", "30 placed", func(ps []place) bool { return sum(ps) == 30 })
		// 6 unless an autoscaler pass raced with the new pods' creation
		// (one that sees zonal-3 and z2 still pending adds 3 more to it).
		replicas := v.replicas("zonal")
		if replicas < 6 || replicas > 9 {
			t.Errorf("zonal has %d replicas; want 6 (3 + 3 for the 3 zones)", replicas)
		}
		for _, p := range ps {
			if ordinal(t, p.PodName) >= int(replicas) {
				t.Errorf("placement on %s beyond the %d replicas", p.PodName, replicas)
			}
		}
		v.checkCapacity("zonal", 10, "z1", "z2")
		if got := v.placements(vpodsGVR, "z1"); sum(got) != 6 {
			t.Errorf("z1 changed: %v", got)
		}
	})

	t.Run("MAXFILLUP scales up then down", func(t *testing.T) {
		v.t = t
		// 8 vreplicas, capacity 5, one pod: fill-0 takes 5 (written at
		// once), the autoscaler scales to ceil(8/5) = 2, fill-1 takes 3.
		v.create(vpodsGVR, vpodObj("f1", 8, "adapters/fill"))
		v.waitPlacements(vpodsGVR, "f1", "f1 on two pods", func(ps []place) bool {
			return reflect.DeepEqual(ps, []place{{"fill-0", 5}, {"fill-1", 3}})
		})
		if r := v.replicas("fill"); r != 2 {
			t.Errorf("fill has %d replicas, want 2", r)
		}
		// Down to 2: MAXFILLUP removes from the last placement backwards,
		// and the next refresh scales to ceil(2/5) = 1.
		v.setVReplicas(vpodsGVR, "f1", 2, "spec", "vreplicas")
		v.waitPlacements(vpodsGVR, "f1", "f1 shrunk to fill-0", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"fill-0", 2}}) })
		v.waitUntil("fill scaled down to 1", func() bool { return v.replicas("fill") == 1 })
	})

	t.Run("compaction evicts the last ordinal", func(t *testing.T) {
		v.t = t
		// p1 fills compact-0 (capacity 4), p2 goes to compact-1.
		v.create(vpodsGVR, vpodObj("p1", 4, "compact"))
		v.waitPlacements(vpodsGVR, "p1", "p1 on compact-0", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"compact-0", 4}}) })
		v.create(vpodsGVR, vpodObj("p2", 3, "compact"))
		v.waitPlacements(vpodsGVR, "p2", "p2 on compact-1", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"compact-1", 3}}) })
		// p1 shrinks to 1: compact-0 has 3 free, as many as compact-1
		// holds, so a refresh evicts p2 from compact-1 (its status loses
		// the placement) and p2 is placed again on compact-0.
		v.setVReplicas(vpodsGVR, "p1", 1, "spec", "vreplicas")
		v.waitPlacements(vpodsGVR, "p1", "p1 shrunk", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"compact-0", 1}}) })
		v.waitPlacements(vpodsGVR, "p2", "p2 compacted onto compact-0", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"compact-0", 3}}) })
		if !strings.Contains(logs.String(), "vpod placement evicted for compaction: scheduler=compact vpod=default/p2 pod=compact-1") {
			t.Error("no eviction of p2 from compact-1 logged")
		}
		// v1.16.0's Policy mode never scales below the last schedulable
		// ordinal + 1, so compact keeps its 2 pods (compact-1 now empty).
		t.Logf("compact has %d replicas after compaction", v.replicas("compact"))
	})

	t.Run("duck-typed KafkaSource", func(t *testing.T) {
		v.t = t
		bad := kafkaObj("bad", -1)
		v.create(kafkaSrcGVR, bad)
		v.create(vpodsGVR, vpodObj("nowhere", 2, "unknown-adapter"))
		v.create(kafkaSrcGVR, kafkaObj("k1", 3))
		v.waitPlacements(kafkaSrcGVR, "k1", "k1 placed", func(ps []place) bool { return reflect.DeepEqual(ps, []place{{"kafka-0", 3}}) })
		v.waitUntil("the malformed KafkaSource and the foreign VPod logged", func() bool {
			l := logs.String()
			return strings.Contains(l, "skipping malformed vpod: fix the object to have it scheduled: scheduler=kafka resource=kafkasources.sources.example.dev/v1 vpod=default/bad") &&
				strings.Contains(l, "VPod ignored: vpod=default/nowhere")
		})
		for _, o := range []struct {
			gvr  schema.GroupVersionResource
			name string
		}{{kafkaSrcGVR, "bad"}, {vpodsGVR, "nowhere"}} {
			if st, ok := v.get(o.gvr, o.name).Object["status"]; ok {
				t.Errorf("%s got a status: %v", o.name, st)
			}
		}
		// The kafka scheduler did not take VPods (not among its sources).
		v.create(vpodsGVR, vpodObj("not-kafka", 1, "kafka"))
		v.waitUntil("a VPod naming a scheduler without the VPod source ignored", func() bool {
			return strings.Contains(logs.String(), "VPod ignored: vpod=default/not-kafka")
		})
	})
	t.Logf("total %v", time.Since(start).Round(time.Millisecond))
}

// place is a placement as status.placements holds it.
type place struct {
	PodName   string
	VReplicas int32
}

func sum(ps []place) int32 {
	var n int32
	for _, p := range ps {
		n += p.VReplicas
	}
	return n
}

func ordinal(t *testing.T, pod string) int {
	t.Helper()
	n, err := strconv.Atoi(pod[strings.LastIndex(pod, "-")+1:])
	if err != nil {
		t.Fatalf("pod %s has no ordinal", pod)
	}
	return n
}

func vpodObj(name string, vreplicas int64, sts string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "wasmsched.io/v1alpha1", "kind": "VPod",
		"metadata": map[string]any{"namespace": "default", "name": name},
		"spec":     map[string]any{"vreplicas": vreplicas, "statefulSet": sts},
	}}
}

func kafkaObj(name string, consumers int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "sources.example.dev/v1", "kind": "KafkaSource",
		"metadata": map[string]any{"namespace": "default", "name": name},
		"spec":     map[string]any{"consumers": consumers, "topics": []any{"orders"}},
	}}
}

// vpodClient reads and writes the test's vpods as the admin.
type vpodClient struct {
	t     *testing.T
	ctx   context.Context
	dyn   dynamic.Interface
	admin kubernetes.Interface
}

func (v *vpodClient) create(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	v.t.Helper()
	if _, err := v.dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(v.ctx, u, metav1.CreateOptions{}); err != nil {
		v.t.Fatalf("create %s %s: %v", gvr.Resource, u.GetName(), err)
	}
}

func (v *vpodClient) get(gvr schema.GroupVersionResource, name string) *unstructured.Unstructured {
	v.t.Helper()
	u, err := v.dyn.Resource(gvr).Namespace("default").Get(v.ctx, name, metav1.GetOptions{})
	if err != nil {
		v.t.Fatalf("get %s %s: %v", gvr.Resource, name, err)
	}
	return u
}

// setVReplicas changes a vpod's count (re-reading on a conflict with
// serve's status writes).
func (v *vpodClient) setVReplicas(gvr schema.GroupVersionResource, name string, n int64, path ...string) {
	v.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := v.dyn.Resource(gvr).Namespace("default").Get(v.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, n, path...); err != nil {
			return err
		}
		_, err = v.dyn.Resource(gvr).Namespace("default").Update(v.ctx, u, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		v.t.Fatalf("set %s's vreplicas to %d: %v", name, n, err)
	}
}

// placements reads status.placements (nil when unreadable).
func (v *vpodClient) placements(gvr schema.GroupVersionResource, name string) []place {
	u, err := v.dyn.Resource(gvr).Namespace("default").Get(v.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "placements")
	var out []place
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["podName"].(string)
		n, _ := m["vreplicas"].(int64)
		out = append(out, place{name, int32(n)})
	}
	return out
}

// waitPlacements polls a vpod's placements until ok accepts them and
// returns them; on a timeout it fails with the last ones seen.
func (v *vpodClient) waitPlacements(gvr schema.GroupVersionResource, name, what string, ok func([]place) bool) []place {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(v.ctx, vpodWait)
	defer cancel()
	var last []place
	for {
		last = v.placements(gvr, name)
		if ok(last) {
			return last
		}
		select {
		case <-ctx.Done():
			v.t.Fatalf("timed out waiting for %s: %s has %v", what, name, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// vpodWait bounds each wait of the vpod test, so that one failure does
// not use up the time of the others.
const vpodWait = 20 * time.Second

// waitUntil is waitFor bounded by vpodWait.
func (v *vpodClient) waitUntil(what string, cond func() bool) {
	v.t.Helper()
	ctx, cancel := context.WithTimeout(v.ctx, vpodWait)
	defer cancel()
	waitFor(v.t, ctx, what, cond)
}

// replicas reads a StatefulSet's scale through the scale subresource.
func (v *vpodClient) replicas(sts string) int32 {
	v.t.Helper()
	s, err := v.admin.AppsV1().StatefulSets(adapterNS).GetScale(v.ctx, sts, metav1.GetOptions{})
	if err != nil {
		v.t.Fatalf("scale of %s: %v", sts, err)
	}
	return s.Spec.Replicas
}

// checkCapacity checks that no pod of sts holds more than capacity
// vreplicas of the named vpods together.
func (v *vpodClient) checkCapacity(sts string, capacity int32, vpods ...string) {
	v.t.Helper()
	per := map[string]int32{}
	for _, name := range vpods {
		for _, p := range v.placements(vpodsGVR, name) {
			per[p.PodName] += p.VReplicas
		}
	}
	for pod, n := range per {
		if n > capacity {
			v.t.Errorf("%s holds %d vreplicas, more than its capacity %d (%v)", pod, n, capacity, per)
		}
	}
}

// installCRD creates a CustomResourceDefinition from a YAML file and
// waits until the API server serves gvr.
func installCRD(t *testing.T, ctx context.Context, admin kubernetes.Interface, dyn dynamic.Interface, path string, gvr schema.GroupVersionResource) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(js); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("install %s: %v", path, err)
	}
	waitFor(t, ctx, gvr.Resource+" served", func() bool {
		list, err := admin.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return false
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				_, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
				return err == nil
			}
		}
		return false
	})
}

// applyVPodRBAC creates the chart's ServiceAccount and RBAC rules with the
// vpod engine on (the test installs the CRD itself), plus what a user adds
// for a duck-typed source: read kafkasources, write their status.
func applyVPodRBAC(t *testing.T, ctx context.Context, admin kubernetes.Interface) {
	t.Helper()
	applyRBAC(t, ctx, admin, charttest.Objects(t, charttest.Helm(t), "engines.vpod=true", "vpod.installCRD=false"))
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "wasmsched-kafkasources"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{kafkaSrcGVR.Group}, Resources: []string{"kafkasources"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{kafkaSrcGVR.Group}, Resources: []string{"kafkasources/status"}, Verbs: []string{"update"}},
	}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "wasmsched-kafkasources"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "wasmsched", Namespace: "kube-system"}}}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createStatefulSet(t *testing.T, ctx context.Context, client kubernetes.Interface, name string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: adapterNS, Name: name},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "adapter", Image: "pause"}}}}}}
	if _, err := client.AppsV1().StatefulSets(adapterNS).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// statefulSetController does what kube-controller-manager's StatefulSet
// controller would (no controller manager runs here): for each
// StatefulSet of the adapter namespace, pod <name>-<i> exists for every
// i < spec.replicas, already on node i mod 3 (no scheduling), and pods
// of higher ordinals are deleted at once. A StatefulSet listed in
// maxPods never gets more pods than that (the others cannot start). It
// polls every 50ms until ctx ends; errors are retried on the next pass.
func statefulSetController(ctx context.Context, client kubernetes.Interface, maxPods map[string]int32) {
	zero := int64(0)
	for ctx.Err() == nil {
		sets, err := client.AppsV1().StatefulSets(adapterNS).List(ctx, metav1.ListOptions{})
		pods, err2 := client.CoreV1().Pods(adapterNS).List(ctx, metav1.ListOptions{})
		if err == nil && err2 == nil {
			have := map[string]bool{}
			for _, p := range pods.Items {
				have[p.Name] = true
			}
			for _, s := range sets.Items {
				want := int32(1)
				if s.Spec.Replicas != nil {
					want = *s.Spec.Replicas
				}
				var ords []int
				for _, p := range pods.Items {
					if rest, ok := strings.CutPrefix(p.Name, s.Name+"-"); ok {
						if n, err := strconv.Atoi(rest); err == nil {
							ords = append(ords, n)
						}
					}
				}
				start := want
				if m, ok := maxPods[s.Name]; ok && m < start {
					start = m
				}
				for i := int32(0); i < start; i++ {
					name := fmt.Sprintf("%s-%d", s.Name, i)
					if have[name] {
						continue
					}
					p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: adapterNS, Name: name, Labels: s.Spec.Template.Labels},
						Spec: s.Spec.Template.Spec}
					p.Spec.NodeName = vpodNodes[int(i)%len(vpodNodes)]
					p.Spec.TerminationGracePeriodSeconds = &zero
					if _, err := client.CoreV1().Pods(adapterNS).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
						break
					}
				}
				for _, n := range ords {
					if int32(n) >= want {
						_ = client.CoreV1().Pods(adapterNS).Delete(ctx, fmt.Sprintf("%s-%d", s.Name, n), metav1.DeleteOptions{GracePeriodSeconds: &zero})
					}
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}
