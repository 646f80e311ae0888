package clusterread

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/host/run/sim"
)

func node(name, cpu string) *corev1.Node {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: ktypes.UID("uid-" + name), Labels: map[string]string{"kubernetes.io/hostname": name}},
		Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl}}
}

func pod(ns, name, nodeName, cpu string) *corev1.Pod {
	prio := int32(0)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: ktypes.UID("uid-" + ns + "-" + name), Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: nodeName, SchedulerName: "default-scheduler", Priority: &prio,
			Containers: []corev1.Container{{Name: "c", Image: "pause",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func with(p *corev1.Pod, f func(*corev1.Pod)) *corev1.Pod { f(p); return p }

func names[T metav1.Object](objs []T) []string {
	var out []string
	for _, o := range objs {
		n := o.GetName()
		if o.GetNamespace() != "" {
			n = o.GetNamespace() + "/" + n
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// A cluster's objects become a simulation's: bound pods are placements,
// pending ones are scheduled, finished, gated and deleted-while-pending
// pods are left out, workloads are recorded but not expanded, and
// nothing but lists is asked.
func TestReadTurnsAClusterIntoObjects(t *testing.T) {
	now := metav1.Now()
	running := func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }
	badNode := node("bad", "4")
	badNode.Spec.Taints = []corev1.Taint{{Key: "k"}} // no effect: the API server would not have it
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-abc", UID: "uid-rs"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}},
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "uid-sts"},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}},
	}
	webPod := with(pod("shop", "web-abc-x1", "n1", "1"), func(p *corev1.Pod) {
		running(p)
		p.Labels = map[string]string{"app": "web"}
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", Ready: true}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	})
	objects := []runtime.Object{
		node("n1", "4"), node("n2", "2"), badNode,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "web"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}},
		rs, sts,
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-node-critical"}, Value: sim.SystemNodeCriticalPriority},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		webPod,
		with(pod("default", "pending", "", "2"), func(*corev1.Pod) {}),
		with(pod("default", "not-ours", "", "1"), func(p *corev1.Pod) { p.Spec.SchedulerName = "other" }),
		with(pod("default", "done", "n1", "4"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		with(pod("default", "crashed", "", "1"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		with(pod("default", "going", "", "1"), func(p *corev1.Pod) { p.DeletionTimestamp = &now; p.Finalizers = []string{"x"} }),
		with(pod("default", "stopping", "n2", "1"), func(p *corev1.Pod) { running(p); p.DeletionTimestamp = &now; p.Finalizers = []string{"x"} }),
		with(pod("default", "gated", "", "1"), func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "wait"}} }),
		with(pod("default", "orphan", "gone", "1"), running),
		with(pod("default", "on-bad", "bad", "1"), running),
		with(pod("default", "weird", "", "1"), func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Maybe"}}
		}),
	}
	client := fake.NewClientset(objects...)
	objs, err := Read(context.Background(), client, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(objs.Pods), []string{"default/not-ours", "default/pending", "default/stopping", "shop/web-abc-x1"}; !slices.Equal(got, want) {
		t.Errorf("pods = %v, want %v", got, want)
	}
	if got, want := names(objs.Nodes), []string{"n1", "n2"}; !slices.Equal(got, want) {
		t.Errorf("nodes = %v, want %v", got, want)
	}
	if len(objs.ReplicaSets) != 1 || len(objs.StatefulSets) != 1 || len(objs.Deployments) != 0 {
		t.Errorf("workloads: %d ReplicaSets, %d StatefulSets, %d Deployments", len(objs.ReplicaSets), len(objs.StatefulSets), len(objs.Deployments))
	}
	if len(objs.Services) != 1 || len(objs.Namespaces) != 1 || len(objs.PDBs) != 1 || len(objs.PriorityClasses) != 2 {
		t.Errorf("%d services, %d namespaces, %d budgets, %d priority classes", len(objs.Services), len(objs.Namespaces), len(objs.PDBs), len(objs.PriorityClasses))
	}
	if objs.PDBs[0].Status.DisruptionsAllowed != 1 {
		t.Errorf("a budget's status was lost: %+v", objs.PDBs[0].Status)
	}
	for _, p := range objs.Pods {
		if p.APIVersion != "v1" || p.Kind != "Pod" || p.ManagedFields != nil || p.Status.ContainerStatuses != nil {
			t.Errorf("pod %s not prepared: %+v %v %v", p.Name, p.TypeMeta, p.ManagedFields, p.Status.ContainerStatuses)
		}
		if p.Name == "web-abc-x1" && len(p.Status.Conditions) != 1 {
			t.Errorf("pod conditions were dropped")
		}
	}
	if rs := objs.ReplicaSets[0]; rs.APIVersion != "apps/v1" || rs.Kind != "ReplicaSet" {
		t.Errorf("ReplicaSet TypeMeta = %+v", rs.TypeMeta)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("Read made a %s %s request", a.GetVerb(), a.GetResource().Resource)
		}
	}

	// The result runs as a simulation: pods already placed stay and take
	// their room (n1 has 3 CPUs left, n2 1), the pending pod goes where it
	// fits, the one of another scheduler is left alone; the ReplicaSet's
	// three replicas are not conjured up.
	rep, err := sim.Run(context.Background(), objs, sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pods) != 4 {
		t.Errorf("report has %d pods: %+v", len(rep.Pods), rep.Pods)
	}
	for _, want := range []sim.PodResult{
		{Namespace: "shop", Name: "web-abc-x1", Status: sim.StatusBound, Node: "n1"},
		{Namespace: "default", Name: "stopping", Status: sim.StatusBound, Node: "n2"},
		{Namespace: "default", Name: "pending", Status: sim.StatusScheduled, Node: "n1"},
		{Namespace: "default", Name: "not-ours", Status: sim.StatusNotOurs},
	} {
		got := rep.Pod(want.Namespace, want.Name)
		if got == nil || got.Status != want.Status || got.Node != want.Node {
			t.Errorf("%s/%s: %+v, want %s on %q", want.Namespace, want.Name, got, want.Status, want.Node)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// pager answers pod lists from a fixed set of pods, page by page as the
// API server does: Limit items at a time, the continuation being the
// offset. expireAt makes the continuation at that offset expire once.
type pager struct {
	pods     []corev1.Pod
	calls    []metav1.ListOptions
	expireAt int
}

func (p *pager) install(c *fake.Clientset) {
	c.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		o := a.(k8stesting.ListActionImpl).ListOptions
		p.calls = append(p.calls, o)
		from := 0
		if o.Continue != "" {
			from, _ = strconv.Atoi(o.Continue)
			if from == p.expireAt {
				p.expireAt = -1
				return true, nil, apierrors.NewResourceExpired("continue token too old")
			}
		}
		to := len(p.pods)
		if o.Limit > 0 && from+int(o.Limit) < to {
			to = from + int(o.Limit)
		}
		l := &corev1.PodList{Items: p.pods[from:to]}
		if to < len(p.pods) {
			l.Continue = strconv.Itoa(to)
		}
		return true, l, nil
	})
}

func pendingPods(n int) []corev1.Pod {
	var out []corev1.Pod
	for i := range n {
		out = append(out, *pod("default", fmt.Sprintf("p%03d", i), "", "1"))
	}
	return out
}

func TestReadPaginates(t *testing.T) {
	p := &pager{pods: pendingPods(25), expireAt: -1}
	c := fake.NewClientset()
	p.install(c)
	objs, err := Read(context.Background(), c, Options{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Pods) != 25 || objs.Pods[0].Name != "p000" || objs.Pods[24].Name != "p024" {
		t.Fatalf("read %d pods", len(objs.Pods))
	}
	if len(p.calls) != 3 {
		t.Fatalf("%d list calls, want 3 pages", len(p.calls))
	}
	for i, o := range p.calls {
		if o.Limit != 10 || (i == 0) != (o.Continue == "") {
			t.Errorf("call %d: %+v", i, o)
		}
	}
}

func TestReadStartsAListOverWhenItsContinuationExpires(t *testing.T) {
	p := &pager{pods: pendingPods(25), expireAt: 20}
	c := fake.NewClientset()
	p.install(c)
	objs, err := Read(context.Background(), c, Options{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs.Pods); len(got) != 25 || len(slices.Compact(got)) != 25 {
		t.Fatalf("read %d pods (%d distinct), want each of 25 once", len(objs.Pods), len(slices.Compact(got)))
	}
	// 0, 10, 20 (expired), then 0, 10, 20 again.
	if len(p.calls) != 6 {
		t.Fatalf("%d list calls, want 6", len(p.calls))
	}
}

func TestReadStopsAtMaxObjects(t *testing.T) {
	p := &pager{pods: pendingPods(100), expireAt: -1}
	c := fake.NewClientset(node("n1", "4"))
	p.install(c)
	_, err := Read(context.Background(), c, Options{PageSize: 10, MaxObjects: 25})
	if !errors.Is(err, ErrTooManyObjects) || !strings.Contains(err.Error(), "list pods: too many objects: the cluster has more than 25 objects") {
		t.Fatalf("err = %v", err)
	}
	// 1 node, then pages of 10 pods: the third page passes 25.
	if len(p.calls) != 3 {
		t.Fatalf("%d pod pages asked for after passing the limit, want 3", len(p.calls))
	}
}

func TestReadGivesUpOnAServerThatNeverEnds(t *testing.T) {
	c := fake.NewClientset()
	calls := 0
	c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		return true, &corev1.PodList{ListMeta: metav1.ListMeta{Continue: "more"}}, nil
	})
	_, err := Read(context.Background(), c, Options{PageSize: 100, MaxObjects: 1000})
	if err == nil || !strings.Contains(err.Error(), "list pods: more than 1010 pages") || calls != 1010 {
		t.Fatalf("err = %v after %d calls", err, calls)
	}
}

func TestReadErrorsNameTheResource(t *testing.T) {
	c := fake.NewClientset()
	c.PrependReactor("list", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "", errors.New("RBAC: no"))
	})
	_, err := Read(context.Background(), c, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "list statefulsets: ") || !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Read(ctx, fake.NewClientset(), Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

func TestReadOneNamespace(t *testing.T) {
	c := fake.NewClientset(
		node("n1", "4"),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
		pod("shop", "a", "", "1"), pod("other", "b", "", "1"),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "b"}},
	)
	objs, err := Read(context.Background(), c, Options{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(objs.Pods); !slices.Equal(got, []string{"shop/a"}) {
		t.Errorf("pods = %v", got)
	}
	if got := names(objs.Namespaces); !slices.Equal(got, []string{"shop"}) {
		t.Errorf("namespaces = %v", got)
	}
	if len(objs.PDBs) != 0 || len(objs.Nodes) != 1 {
		t.Errorf("%d budgets, %d nodes", len(objs.PDBs), len(objs.Nodes))
	}
	for _, a := range c.Actions() {
		if a.GetResource().Resource == "namespaces" {
			if fs := a.(k8stesting.ListActionImpl).ListOptions.FieldSelector; fs != "metadata.name=shop" {
				t.Errorf("namespaces listed with field selector %q", fs)
			}
		}
	}
}
