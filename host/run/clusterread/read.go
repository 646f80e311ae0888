// Package clusterread reads, read-only, what a simulation needs from a
// live cluster, so that `wasmsched simulate` can answer "what if" from
// the cluster as it is instead of from manifests.
//
// It lists, page by page and never watching or writing, Nodes, Pods,
// Namespaces, Services, ReplicaSets, StatefulSets, PodDisruptionBudgets
// and PriorityClasses into a sim.Objects. Pods already on a node become
// the simulation's existing placements (sim reports them Bound), pending
// pods are the ones it schedules, and workloads are recorded for their
// selectors only, never expanded into pods: their pods were listed with
// the rest. Client makes a clientset whose transport refuses every
// request but GET, so nothing below Read can write either.
//
// Reading is bounded so that a huge, stalled or dripping API server (or
// something posing as one) ends the read with an error naming the list
// and the limit, instead of exhausting memory or waiting for ever: the
// client's transport counts response bytes, per response and in total
// (Limits), and Read puts deadlines on each request and on itself
// (Options).
package clusterread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-hclog"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/wasmsched/wasmsched/host/internal/convert"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// Defaults of Options.
const (
	// DefaultPageSize is the items asked for per list request, as
	// kube-controller-manager's informers and kubectl ask for 500.
	DefaultPageSize = 500
	// DefaultMaxObjects bounds what Read holds in memory: well above the
	// largest clusters' (5,000 nodes, 150,000 pods) objects together.
	DefaultMaxObjects = 200000
)

// ErrTooManyObjects is returned (wrapped, naming the limit) when a
// cluster has more objects than Options.MaxObjects.
var ErrTooManyObjects = errors.New("too many objects")

// Options of Read.
type Options struct {
	// Namespace limits the namespaced objects read (Pods, Services,
	// ReplicaSets, StatefulSets, PodDisruptionBudgets) and the Namespaces
	// to one namespace; "" reads all. Nodes and PriorityClasses are read
	// whole either way. With a namespace, pods of other namespaces are not
	// seen, so nodes look emptier than they are: meant for narrow what-ifs
	// and for users whose access stops at one namespace.
	Namespace string
	// PageSize is the items per list request; 0 means DefaultPageSize.
	PageSize int64
	// MaxObjects bounds the objects listed, over all kinds (finished pods
	// and others left out count too: they were received); past it Read
	// stops with ErrTooManyObjects. 0 means DefaultMaxObjects.
	MaxObjects int
	// RequestTimeout bounds one list request, from sending it to the
	// last byte of its response (a stalled or dripping server is cut
	// there); 0 means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Timeout bounds the whole Read; 0 means DefaultTimeout.
	Timeout time.Duration
	// Log receives a summary of what was read and a warning for each
	// object left out because the simulation could not use it; nil logs
	// nothing.
	Log hclog.Logger
}

// Read lists what a simulation needs from the cluster client talks to and
// returns it as the objects of a simulation:
//
//   - Pods with spec.nodeName set are existing placements: they hold their
//     node's resources and count for affinity and spreading, as in the
//     scheduler's cache. A bound pod being deleted is kept (it holds its
//     node until it is gone, and preemption knows it is terminating).
//   - Pods with no spec.nodeName are the pods to schedule, whatever their
//     schedulerName (the simulation reports those no profile has).
//   - Left out: pods that have finished (phase Succeeded or Failed: they
//     hold nothing); pending pods being deleted; pending pods with
//     scheduling gates (the scheduler does not see them until the last
//     gate goes); bound pods whose node was not listed (gone, or added
//     after the nodes were read); and any object the simulation cannot
//     represent or that sim.Validate refuses, with a warning naming it.
//   - ReplicaSets and StatefulSets are recorded (their selectors give pods
//     the default topology spread constraints), not expanded.
//   - PodDisruptionBudgets keep their status (disruptionsAllowed), which
//     the cluster's disruption controller keeps current.
//
// Objects lose their managedFields (large, and of no use to a
// simulation) and get their apiVersion and kind, so that they print as
// manifests. Lists are paginated (Options.PageSize); a list whose
// continuation expired mid-way is started over. Read sends nothing but
// list requests.
//
// Each request, and Read as a whole, has a deadline (Options.RequestTimeout,
// Options.Timeout); a client made by Client also bounds the bytes it
// receives (Limits). A read cut at one of these limits returns a
// *LimitError, wrapped with the resource whose list it cut.
func Read(ctx context.Context, client kubernetes.Interface, opts Options) (*sim.Objects, error) {
	r := &reader{c: client, opts: opts, log: opts.Log}
	if r.opts.PageSize <= 0 {
		r.opts.PageSize = DefaultPageSize
	}
	if r.opts.MaxObjects <= 0 {
		r.opts.MaxObjects = DefaultMaxObjects
	}
	if r.opts.RequestTimeout <= 0 {
		r.opts.RequestTimeout = DefaultRequestTimeout
	}
	if r.opts.Timeout <= 0 {
		r.opts.Timeout = DefaultTimeout
	}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	r.requestCut = &LimitError{Limit: LimitRequestTime, Value: r.opts.RequestTimeout.String()}
	ctx, cancel := context.WithTimeoutCause(ctx, r.opts.Timeout,
		&LimitError{Limit: LimitTime, Value: r.opts.Timeout.String()})
	defer cancel()
	// client-go logs a body it could not read before returning the error;
	// the error Read returns says it all, once.
	r.ctx = klog.NewContext(ctx, logr.Discard())
	objs := &sim.Objects{}
	if err := r.read(objs); err != nil {
		return nil, err
	}
	r.log.Info("read the cluster", "namespace", opts.Namespace, "nodes", len(objs.Nodes), "pods", len(objs.Pods),
		"bound", r.bound, "pending", len(objs.Pods)-r.bound, "finished_skipped", r.finished, "gated_skipped", r.gated,
		"deleting_skipped", r.deleting, "nodeless_skipped", r.nodeless, "invalid_skipped", r.invalid,
		"namespaces", len(objs.Namespaces), "services", len(objs.Services), "replicasets", len(objs.ReplicaSets),
		"statefulsets", len(objs.StatefulSets), "pdbs", len(objs.PDBs), "priorityclasses", len(objs.PriorityClasses),
		"objects_listed", r.listed)
	return objs, nil
}

// reader is one Read.
type reader struct {
	ctx  context.Context
	c    kubernetes.Interface
	opts Options
	log  hclog.Logger

	// requestCut is the cause of a request's deadline.
	requestCut *LimitError

	listed int // items received, over all lists
	// What was left out, and the bound pods kept.
	finished, gated, deleting, nodeless, invalid, bound int
}

func (r *reader) read(objs *sim.Objects) error {
	ns := r.opts.Namespace
	core, apps := r.c.CoreV1(), r.c.AppsV1()

	pcs, err := listAll(r, "priorityclasses", r.c.SchedulingV1().PriorityClasses().List,
		func(l *schedulingv1.PriorityClassList) ([]schedulingv1.PriorityClass, string) {
			return l.Items, l.Continue
		})
	if err != nil {
		return err
	}
	for i := range pcs {
		pc := &pcs[i]
		prepare(&pc.TypeMeta, &pc.ObjectMeta, "scheduling.k8s.io/v1", "PriorityClass")
		_, gerr := convert.DisruptionGuard(pc)
		if r.usable("PriorityClass", pc, sim.Validate(pc), gerr) {
			objs.PriorityClasses = append(objs.PriorityClasses, pc)
		}
	}

	nsList := core.Namespaces().List
	if ns != "" {
		all := nsList
		nsList = func(ctx context.Context, o metav1.ListOptions) (*corev1.NamespaceList, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ns).String()
			return all(ctx, o)
		}
	}
	nss, err := listAll(r, "namespaces", nsList, func(l *corev1.NamespaceList) ([]corev1.Namespace, string) { return l.Items, l.Continue })
	if err != nil {
		return err
	}
	for i := range nss {
		n := &nss[i]
		if ns != "" && n.Name != ns {
			continue
		}
		prepare(&n.TypeMeta, &n.ObjectMeta, "v1", "Namespace")
		if r.usable("Namespace", n, sim.Validate(n)) {
			objs.Namespaces = append(objs.Namespaces, n)
		}
	}

	nodes, err := listAll(r, "nodes", core.Nodes().List, func(l *corev1.NodeList) ([]corev1.Node, string) { return l.Items, l.Continue })
	if err != nil {
		return err
	}
	nodeNames := make(map[string]bool, len(nodes))
	for i := range nodes {
		n := &nodes[i]
		prepare(&n.TypeMeta, &n.ObjectMeta, "v1", "Node")
		_, cerr := convert.Node(n)
		if r.usable("Node", n, sim.Validate(n), cerr) {
			objs.Nodes = append(objs.Nodes, n)
			nodeNames[n.Name] = true
		}
	}

	svcs, err := listAll(r, "services", core.Services(ns).List, func(l *corev1.ServiceList) ([]corev1.Service, string) { return l.Items, l.Continue })
	if err != nil {
		return err
	}
	for i := range svcs {
		s := &svcs[i]
		prepare(&s.TypeMeta, &s.ObjectMeta, "v1", "Service")
		if r.usable("Service", s, sim.Validate(s)) {
			objs.Services = append(objs.Services, s)
		}
	}

	// Workloads are appended to the record, not added with
	// AddReplicaSet/AddStatefulSet: that would create their pods again.
	rss, err := listAll(r, "replicasets", apps.ReplicaSets(ns).List, func(l *appsv1.ReplicaSetList) ([]appsv1.ReplicaSet, string) { return l.Items, l.Continue })
	if err != nil {
		return err
	}
	for i := range rss {
		rs := &rss[i]
		prepare(&rs.TypeMeta, &rs.ObjectMeta, "apps/v1", "ReplicaSet")
		if r.usable("ReplicaSet", rs, sim.Validate(rs)) {
			objs.ReplicaSets = append(objs.ReplicaSets, rs)
		}
	}
	stss, err := listAll(r, "statefulsets", apps.StatefulSets(ns).List, func(l *appsv1.StatefulSetList) ([]appsv1.StatefulSet, string) { return l.Items, l.Continue })
	if err != nil {
		return err
	}
	for i := range stss {
		sts := &stss[i]
		prepare(&sts.TypeMeta, &sts.ObjectMeta, "apps/v1", "StatefulSet")
		if r.usable("StatefulSet", sts, sim.Validate(sts)) {
			objs.StatefulSets = append(objs.StatefulSets, sts)
		}
	}

	pdbs, err := listAll(r, "poddisruptionbudgets", r.c.PolicyV1().PodDisruptionBudgets(ns).List,
		func(l *policyv1.PodDisruptionBudgetList) ([]policyv1.PodDisruptionBudget, string) {
			return l.Items, l.Continue
		})
	if err != nil {
		return err
	}
	for i := range pdbs {
		b := &pdbs[i]
		prepare(&b.TypeMeta, &b.ObjectMeta, "policy/v1", "PodDisruptionBudget")
		_, cerr := convert.PDB(b)
		if r.usable("PodDisruptionBudget", b, sim.Validate(b), cerr) {
			objs.PDBs = append(objs.PDBs, b)
		}
	}

	// Pods last: the nodes they are bound to were listed before them.
	pods, err := listAll(r, "pods", core.Pods(ns).List, func(l *corev1.PodList) ([]corev1.Pod, string) { return l.Items, l.Continue })
	if err != nil {
		return err
	}
	for i := range pods {
		p := &pods[i]
		if r.keepPod(p, nodeNames) {
			objs.Pods = append(objs.Pods, p)
			if p.Spec.NodeName != "" {
				r.bound++
			}
		}
	}
	return nil
}

// keepPod decides whether a pod takes part in the simulation (see Read)
// and prepares it if so.
func (r *reader) keepPod(p *corev1.Pod, nodes map[string]bool) bool {
	switch {
	case convert.Finished(p):
		r.finished++
		return false
	case p.Spec.NodeName == "" && p.DeletionTimestamp != nil:
		r.deleting++
		return false
	case p.Spec.NodeName == "" && len(p.Spec.SchedulingGates) > 0:
		r.gated++
		return false
	case p.Spec.NodeName != "" && !nodes[p.Spec.NodeName]:
		r.nodeless++
		r.log.Warn("leaving out a pod bound to a node that was not read (gone, added since, or left out)",
			"pod", p.Namespace+"/"+p.Name, "node", p.Spec.NodeName)
		return false
	}
	prepare(&p.TypeMeta, &p.ObjectMeta, "v1", "Pod")
	// Container statuses can be most of a running pod's size; the
	// scheduler reads only their resources (what an in-place resize
	// actuated and allocated), so only those are kept. The rest of
	// status (phase, conditions, nominatedNodeName, startTime) it reads.
	p.Status.ContainerStatuses = resourcesOnly(p.Status.ContainerStatuses)
	p.Status.InitContainerStatuses = resourcesOnly(p.Status.InitContainerStatuses)
	p.Status.EphemeralContainerStatuses = nil
	_, cerr := convert.Pod(p)
	return r.usable("Pod", p, sim.Validate(p), cerr)
}

// usable reports whether no check found a problem with obj, warning
// about it and counting it otherwise.
func (r *reader) usable(kind string, obj metav1.Object, errs ...error) bool {
	err := errors.Join(errs...)
	if err == nil {
		return true
	}
	r.invalid++
	name := obj.GetName()
	if obj.GetNamespace() != "" {
		name = obj.GetNamespace() + "/" + name
	}
	r.log.Warn("leaving out an object the simulation cannot use", "kind", kind, "name", name, "error", err)
	return false
}

// prepare gives a listed object the apiVersion and kind list items lack,
// and drops its managedFields.
func prepare(tm *metav1.TypeMeta, om *metav1.ObjectMeta, apiVersion, kind string) {
	tm.APIVersion, tm.Kind = apiVersion, kind
	om.ManagedFields = nil
}

// maxRestarts bounds how often one list starts over after its
// continuation expired (the API server keeps a list's snapshot for a few
// minutes; a list that needs longer than that twice will not finish).
const maxRestarts = 2

// listAll lists every item of one resource, page by page. A page of
// items counts towards MaxObjects as soon as it arrives.
func listAll[L any, T any](r *reader, what string, list func(context.Context, metav1.ListOptions) (L, error), items func(L) ([]T, string)) ([]T, error) {
	var out []T
	opts := metav1.ListOptions{Limit: r.opts.PageSize}
	restarts, pages := 0, 0
	// A server that keeps answering with continuations cannot keep Read
	// busy for ever: a full page per request gives at most this many.
	maxPages := r.opts.MaxObjects/int(r.opts.PageSize) + 1000
	for {
		if err := r.ctx.Err(); err != nil {
			if le := cut(r.ctx, err); le != nil {
				return nil, fmt.Errorf("list %s: %w", what, le)
			}
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		if pages++; pages > maxPages {
			return nil, fmt.Errorf("list %s: more than %d pages of at most %d items: the server keeps continuing", what, maxPages, r.opts.PageSize)
		}
		l, err := listPage(r, list, opts)
		if err != nil {
			if le := cut(r.ctx, err); le != nil {
				// Not client-go's "please retry": the limit, and
				// which list it cut.
				return nil, fmt.Errorf("list %s: %w", what, le)
			}
			if apierrors.IsResourceExpired(err) && opts.Continue != "" && restarts < maxRestarts {
				restarts++
				r.listed -= len(out)
				out, opts.Continue = nil, ""
				r.log.Debug("list continuation expired; starting over", "resource", what, "restart", restarts)
				continue
			}
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		page, next := items(l)
		r.listed += len(page)
		if r.listed > r.opts.MaxObjects {
			return nil, fmt.Errorf("list %s: %w: the cluster has more than %d objects of the kinds a simulation reads", what, ErrTooManyObjects, r.opts.MaxObjects)
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		opts.Continue = next
	}
}

// listPage makes one list request under the per-request deadline.
func listPage[L any](r *reader, list func(context.Context, metav1.ListOptions) (L, error), opts metav1.ListOptions) (L, error) {
	ctx, cancel := context.WithTimeoutCause(r.ctx, r.opts.RequestTimeout, r.requestCut)
	defer cancel()
	l, err := list(ctx, opts)
	if err != nil {
		if le := cut(ctx, err); le != nil {
			return l, le
		}
	}
	return l, err
}

// resourcesOnly trims container statuses to what scheduling reads: the
// name, the resources and the allocated resources; statuses without
// either are dropped.
func resourcesOnly(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for i := range in {
		if in[i].Resources == nil && len(in[i].AllocatedResources) == 0 {
			continue
		}
		out = append(out, corev1.ContainerStatus{Name: in[i].Name, Resources: in[i].Resources, AllocatedResources: in[i].AllocatedResources})
	}
	return out
}
