package kube

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unique"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/scheduler"
	"github.com/wasmsched/wasmsched/host/internal/convert"
)

// Watch starts shared informers for pods, nodes and namespaces that feed
// the scheduler, and waits until their caches have synced. An object that
// cannot be converted is logged and skipped, never fatal.
//
// Services, ReplicaSets and StatefulSets, PodDisruptionBudgets and
// PriorityClasses are watched too, and synced first, because a pod is
// converted with what they say: its default spread selector is made of
// the controllers that select it (convert.ControllerSelector), and it
// carries its PriorityClass's disruption guard.
func Watch(ctx context.Context, client kubernetes.Interface, s *scheduler.Scheduler, log hclog.Logger) error {
	return watchCluster(ctx, client, s, log, nil)
}

// watchCluster is Watch, also giving rec (if not nil) the pod informer's
// copies (Recorder.usePods).
func watchCluster(ctx context.Context, client kubernetes.Interface, s *scheduler.Scheduler, log hclog.Logger, rec *Recorder) error {
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(dropUnread))
	skip := func(what string, err error) {
		log.Warn("skipping object the scheduler cannot represent", "object", what, "error", err)
	}
	ctrl := newControllerListers(f)
	if err := watchPolicy(f, s, log); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if err := waitSynced(ctx, f); err != nil {
		return err
	}
	// podOf converts a pod and, for a pending pod of ours, computes the
	// default spread selector from the controllers that select it.
	podOf := func(obj any) (*abi.Pod, error) {
		p, err := convertPod(obj)
		if err == nil && p.NodeName == "" && s.Responsible(p) {
			p.ControllerSelector = ctrl.selector(obj.(*corev1.Pod))
		}
		return p, err
	}

	nodes := f.Core().V1().Nodes().Informer()
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if n, err := nodeOf(obj); err == nil {
				s.OnNodeAdd(n)
			} else {
				skip("node", err)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, err1 := nodeOf(oldObj)
			n, err2 := nodeOf(newObj)
			if err1 == nil && err2 == nil {
				s.OnNodeUpdate(o, n)
			} else if err2 != nil {
				skip("node", err2)
			}
		},
		DeleteFunc: func(obj any) {
			if n, ok := unwrap(obj).(*corev1.Node); ok {
				s.OnNodeDelete(n.Name)
			}
		},
	}); err != nil {
		return fmt.Errorf("node informer: %w", err)
	}

	pods := f.Core().V1().Pods().Informer()
	if rec != nil {
		lister := f.Core().V1().Pods().Lister()
		rec.usePods(func(namespace, name string) *corev1.Pod {
			p, err := lister.Pods(namespace).Get(name)
			if err != nil {
				return nil
			}
			return p
		})
	}
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if gated(obj) {
				return
			}
			if p, err := podOf(obj); err == nil {
				s.OnPodAdd(p)
			} else {
				skip("pod", err)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if gated(newObj) {
				return
			}
			o, err1 := podOf(oldObj)
			if err1 == nil && gated(oldObj) {
				err1 = errors.New("was gated") // its last gate is gone: new to us
			}
			if np, ok := newObj.(*corev1.Pod); ok && convert.Finished(np) {
				if err1 == nil {
					s.OnPodDelete(o) // a finished pod frees its node
				}
				return
			}
			p, err2 := podOf(newObj)
			switch {
			case err2 != nil:
				skip("pod", err2)
			case err1 != nil:
				s.OnPodAdd(p)
			default:
				s.OnPodUpdate(o, p)
			}
		},
		DeleteFunc: func(obj any) {
			if p, err := podOf(unwrap(obj)); err == nil {
				s.OnPodDelete(p)
			}
		},
	}); err != nil {
		return fmt.Errorf("pod informer: %w", err)
	}

	nss := f.Core().V1().Namespaces().Informer()
	onNS := func(obj any) {
		if ns, ok := obj.(*corev1.Namespace); ok {
			s.OnNamespace(ns.Name, labelsOf(ns.Labels))
		}
	}
	if _, err := nss.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onNS,
		UpdateFunc: func(_, newObj any) { onNS(newObj) },
		DeleteFunc: func(obj any) {
			if ns, ok := unwrap(obj).(*corev1.Namespace); ok {
				s.OnNamespaceDelete(ns.Name)
			}
		},
	}); err != nil {
		return fmt.Errorf("namespace informer: %w", err)
	}

	f.Start(ctx.Done())
	return waitSynced(ctx, f)
}

func waitSynced(ctx context.Context, f informers.SharedInformerFactory) error {
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer cache for %v did not sync", typ)
		}
	}
	return nil
}

// controllerListers read the objects that make up a pod's default spread
// selector from the informers' caches.
type controllerListers struct {
	services     corelisters.ServiceLister
	rcs          corelisters.ReplicationControllerLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister
}

func newControllerListers(f informers.SharedInformerFactory) *controllerListers {
	return &controllerListers{
		services:     f.Core().V1().Services().Lister(),
		rcs:          f.Core().V1().ReplicationControllers().Lister(),
		replicaSets:  f.Apps().V1().ReplicaSets().Lister(),
		statefulSets: f.Apps().V1().StatefulSets().Lister(),
	}
}

// selector lists the pod namespace's Services and controllers and
// combines the Services that select the pod with its controller's
// selector (convert.ControllerSelector). A lister error (never expected
// from a synced cache) means no default selector.
func (c *controllerListers) selector(p *corev1.Pod) *abi.LabelSelector {
	ns := p.Namespace
	var objs convert.Controllers
	var err1, err2, err3, err4 error
	objs.Services, err1 = c.services.Services(ns).List(k8slabels.Everything())
	objs.ReplicationControllers, err2 = c.rcs.ReplicationControllers(ns).List(k8slabels.Everything())
	objs.ReplicaSets, err3 = c.replicaSets.ReplicaSets(ns).List(k8slabels.Everything())
	objs.StatefulSets, err4 = c.statefulSets.StatefulSets(ns).List(k8slabels.Everything())
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
		return nil
	}
	return convert.ControllerSelector(p, objs)
}

// gated reports whether obj is a pending pod that still has scheduling
// gates (spec.schedulingGates). kube-scheduler's SchedulingGates plugin
// keeps such pods out of its active queue; wasmsched does not hand them to
// its queue at all until the last gate is removed (gates can only be
// removed, never added, after creation). So they are not counted in
// pending_pods{queue="gated"}, which counts pods held by PreEnqueue plugins.
func gated(obj any) bool {
	p, ok := obj.(*corev1.Pod)
	return ok && p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) > 0
}

// dropUnread is the informers' transform: it drops, before an object
// enters a cache, the fields nothing in wasmsched reads, so the caches
// hold less. Every object loses metadata.managedFields (the field
// managers' record of who set what: often the largest part of a node or
// pod, and only server-side apply reads it; kube-scheduler drops it from
// its pods the same way). A node also loses status.capacity when it has
// status.allocatable (convert.Node falls back to capacity only when
// allocatable is empty), status.nodeInfo, status.addresses,
// status.daemonEndpoints and status.config, which no plugin reads, and
// shares the strings nodes repeat (compactNode). A pod keeps every field
// but holds less (compactPod). The objects are the
// informers' own decoded copies, so changing them in place is safe; a
// tombstone is left as it is.
func dropUnread(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	if n, ok := obj.(*corev1.Node); ok {
		if len(n.Status.Allocatable) != 0 {
			n.Status.Capacity = nil
		}
		n.Status.NodeInfo = corev1.NodeSystemInfo{}
		n.Status.Addresses = nil
		n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{}
		n.Status.Config = nil
		n.Status.Allocatable, n.Status.Capacity = sharedList(n.Status.Allocatable), sharedList(n.Status.Capacity)
		compactNode(n)
	}
	if p, ok := obj.(*corev1.Pod); ok {
		compactPod(p)
	}
	return obj, nil
}

// compactPod makes a decoded pod hold less. It drops what no reader of
// the pod informer reads (convert.Pod, the Recorder, the default spread
// selector, kube-scheduler's node feature inference): each container's
// command, arguments, working directory, environment and probes and
// lifecycle hooks (often most of a pod's spec), and of each container
// status all but its name, readiness, restarts and resources (the state
// and image fields, most of a running pod's status); as the cluster
// reader does for simulations. The pods are never written back whole
// (every write is a patch), so nothing dropped can be lost in the API.
// The rest it keeps as read. Decoding gives every string its own
// allocation, so the
// strings that thousands of pods repeat (namespace, node and scheduler
// names, images, the API's defaults such as the termination message
// path, toleration keys) are replaced by one shared copy each, and so
// are resource lists, which the pods of one workload repeat (a map per
// container, however small, costs over half a kilobyte): a container
// whose limits equal its requests (every container of a Guaranteed pod:
// the API server defaults requests from limits) gets one map for both,
// and equal lists of different pods are one map (sharedList); so are
// equal tolerations. An empty security context becomes nil, which means
// the same. Readers of informer objects never modify them, so the
// sharing is invisible.
func compactPod(p *corev1.Pod) {
	in := intern
	p.Namespace = in(p.Namespace)
	p.GenerateName = in(p.GenerateName)
	internKeysAndValues(p.Labels)
	internKeys(p.Annotations)
	for i := range p.OwnerReferences {
		o := &p.OwnerReferences[i]
		o.APIVersion, o.Kind, o.Name = in(o.APIVersion), in(o.Kind), in(o.Name)
	}
	sp := &p.Spec
	sp.NodeName, sp.SchedulerName, sp.PriorityClassName = in(sp.NodeName), in(sp.SchedulerName), in(sp.PriorityClassName)
	sp.RestartPolicy, sp.DNSPolicy = corev1.RestartPolicy(in(string(sp.RestartPolicy))), corev1.DNSPolicy(in(string(sp.DNSPolicy)))
	sp.ServiceAccountName, sp.DeprecatedServiceAccount = in(sp.ServiceAccountName), in(sp.DeprecatedServiceAccount)
	for _, cs := range [2][]corev1.Container{sp.Containers, sp.InitContainers} {
		for i := range cs {
			compactContainer(&cs[i])
		}
	}
	for i := range sp.EphemeralContainers {
		c := &sp.EphemeralContainers[i].EphemeralContainerCommon
		c.Command, c.Args, c.WorkingDir, c.Env, c.EnvFrom = nil, nil, "", nil, nil
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	}
	if sp.Resources != nil {
		shareRequirements(sp.Resources)
	}
	sp.Overhead = sharedList(sp.Overhead)
	for i := range sp.Tolerations {
		t := &sp.Tolerations[i]
		t.Key, t.Value = in(t.Key), in(t.Value)
		t.Operator, t.Effect = corev1.TolerationOperator(in(string(t.Operator))), corev1.TaintEffect(in(string(t.Effect)))
	}
	sp.Tolerations = sharedTolerations(sp.Tolerations)
	if sp.SecurityContext != nil && reflect.DeepEqual(*sp.SecurityContext, corev1.PodSecurityContext{}) {
		sp.SecurityContext = nil // empty means what nil means
	}
	st := &p.Status
	st.Phase, st.QOSClass = corev1.PodPhase(in(string(st.Phase))), corev1.PodQOSClass(in(string(st.QOSClass)))
	st.NominatedNodeName = in(st.NominatedNodeName)
	for _, css := range [3][]corev1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range css {
			cs := &css[i]
			*cs = corev1.ContainerStatus{Name: in(cs.Name), Ready: cs.Ready, RestartCount: cs.RestartCount, Started: cs.Started,
				Resources: cs.Resources, AllocatedResources: cs.AllocatedResources}
		}
	}
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Status = corev1.PodConditionType(in(string(c.Type))), corev1.ConditionStatus(in(string(c.Status)))
		c.Reason = in(c.Reason)
	}
}

// compactNode shares the strings nodes repeat: label keys and values,
// condition types, reasons and messages, image names.
func compactNode(n *corev1.Node) {
	in := intern
	internKeysAndValues(n.Labels)
	internKeys(n.Annotations)
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		t.Key, t.Value, t.Effect = in(t.Key), in(t.Value), corev1.TaintEffect(in(string(t.Effect)))
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Type, c.Status = corev1.NodeConditionType(in(string(c.Type))), corev1.ConditionStatus(in(string(c.Status)))
		c.Reason, c.Message = in(c.Reason), in(c.Message)
	}
	for i := range n.Status.Images {
		for j, name := range n.Status.Images[i].Names {
			n.Status.Images[i].Names[j] = in(name)
		}
	}
	n.Status.Phase = corev1.NodePhase(in(string(n.Status.Phase)))
}

// internKeysAndValues shares a string map's keys and values (intern).
// Assigning to a key already in a map stores the key given, so this
// swaps both for their shared copies in place.
func internKeysAndValues(m map[string]string) {
	for k, v := range m {
		m[intern(k)] = intern(v)
	}
}

// internKeys shares a string map's keys only: annotation values are
// often large and unique (a last-applied configuration), not worth a
// second copy in the intern table.
func internKeys(m map[string]string) {
	for k, v := range m {
		m[intern(k)] = v
	}
}

// compactContainer drops what nothing reads of a container, and shares
// its repeated strings and, when they are equal, its limits and requests
// maps (compactPod).
func compactContainer(c *corev1.Container) {
	c.Command, c.Args, c.WorkingDir, c.Env, c.EnvFrom = nil, nil, "", nil, nil
	c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
	if c.SecurityContext != nil && reflect.DeepEqual(*c.SecurityContext, corev1.SecurityContext{}) {
		c.SecurityContext = nil // empty means what nil means
	}
	in := intern
	c.Name, c.Image = in(c.Name), in(c.Image)
	c.ImagePullPolicy = corev1.PullPolicy(in(string(c.ImagePullPolicy)))
	c.TerminationMessagePath = in(c.TerminationMessagePath)
	c.TerminationMessagePolicy = corev1.TerminationMessagePolicy(in(string(c.TerminationMessagePolicy)))
	for i := range c.Ports {
		c.Ports[i].Name, c.Ports[i].Protocol = in(c.Ports[i].Name), corev1.Protocol(in(string(c.Ports[i].Protocol)))
	}
	shareRequirements(&c.Resources)
}

// shareRequirements makes r's limits the very map of its requests when
// both are the same list, and each a shared one (sharedList).
func shareRequirements(r *corev1.ResourceRequirements) {
	same := len(r.Limits) > 0 && sameList(r.Limits, r.Requests)
	r.Requests = sharedList(r.Requests)
	if same {
		r.Limits = r.Requests
	} else {
		r.Limits = sharedList(r.Limits)
	}
}

// sameList reports whether two resource lists hold the same quantities,
// written the same way (1 and 1000m are equal quantities but not the
// same value of resource.Quantity, so they are not the same).
func sameList(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 || !reflect.DeepEqual(qa, qb) {
			return false
		}
	}
	return true
}

// shareTable holds one value per content seen, so that equal values of
// different objects can be one (sharedList, sharedTolerations). It starts
// over when full: values already shared stay with their objects, and a
// cluster has a few shapes per workload, not thousands.
type shareTable[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

const maxShared = 1024

// share returns the value kept under key when same says it equals v,
// else v, which it keeps under key if the key is new.
func (t *shareTable[T]) share(key string, v T, same func(a, b T) bool) T {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.m[key]; ok {
		if same(s, v) {
			return s
		}
		return v
	}
	if t.m == nil || len(t.m) >= maxShared {
		t.m = map[string]T{}
	}
	t.m[key] = v
	return v
}

var (
	lists       shareTable[corev1.ResourceList]
	tolerations shareTable[[]corev1.Toleration]
)

// sharedList returns a map the same as rl (sameList) that other objects
// may already hold, or rl itself, which later equal lists then share.
func sharedList(rl corev1.ResourceList) corev1.ResourceList {
	if len(rl) == 0 || len(rl) > 8 {
		return rl
	}
	names := make([]string, 0, len(rl))
	for name := range rl {
		names = append(names, string(name))
	}
	slices.Sort(names)
	var key strings.Builder
	for _, name := range names {
		q := rl[corev1.ResourceName(name)]
		key.WriteString(name)
		key.WriteByte('=')
		key.WriteString(q.String())
		key.WriteByte(';')
	}
	return lists.share(key.String(), rl, sameList)
}

// sharedTolerations returns a slice equal to ts that other pods may
// already hold (every pod the API server admits carries the same two
// tolerations of not-ready and unreachable nodes), or ts itself.
func sharedTolerations(ts []corev1.Toleration) []corev1.Toleration {
	if len(ts) == 0 || len(ts) > 8 {
		return ts
	}
	var key strings.Builder
	for _, t := range ts {
		// Lengths first, so no field's text can be read as another's.
		for _, f := range [4]string{t.Key, string(t.Operator), t.Value, string(t.Effect)} {
			key.WriteString(strconv.Itoa(len(f)))
			key.WriteByte(':')
			key.WriteString(f)
		}
		if t.TolerationSeconds != nil {
			key.WriteString(strconv.FormatInt(*t.TolerationSeconds, 10))
		}
		key.WriteByte(';')
	}
	return tolerations.share(key.String(), ts, sameTolerations)
}

// sameTolerations reports whether two toleration lists are equal, field
// by field (reflect.DeepEqual's answer, for a fraction of its cost).
func sameTolerations(a, b []corev1.Toleration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Key != y.Key || x.Operator != y.Operator || x.Value != y.Value || x.Effect != y.Effect ||
			(x.TolerationSeconds == nil) != (y.TolerationSeconds == nil) ||
			x.TolerationSeconds != nil && *x.TolerationSeconds != *y.TolerationSeconds {
			return false
		}
	}
	return true
}

// intern returns one shared copy of s: the garbage collector frees it
// once no object holds it (package unique).
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// unwrap returns the object inside a delete tombstone.
func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func nodeOf(obj any) (*abi.Node, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil, fmt.Errorf("not a node: %T", obj)
	}
	an, err := convert.Node(n)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", n.Name, err)
	}
	return an, nil
}

func convertPod(obj any) (*abi.Pod, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("not a pod: %T", obj)
	}
	if convert.Finished(p) {
		// Finished pods hold no resources; treat them as gone.
		return nil, fmt.Errorf("pod %s/%s has finished", p.Namespace, p.Name)
	}
	ap, err := convert.Pod(p)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return ap, nil
}

func labelsOf(m map[string]string) abi.Labels {
	ls := make(abi.Labels, 0, len(m))
	for k, v := range m {
		ls = append(ls, abi.Label{Key: k, Value: v})
	}
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Key < ls[j-1].Key; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
	return ls
}
