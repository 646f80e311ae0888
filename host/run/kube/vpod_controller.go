package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
)

// vpodItem is a work queue item: a vpod of one of the scheduler's
// sources (two sources may hold objects of the same namespace/name).
type vpodItem struct {
	source int
	key    vpod.Key
}

// vpodEngine is what the controller needs of *vpod.Scheduler (tests
// substitute a fake).
type vpodEngine interface {
	Schedule(ctx context.Context, v vpod.VPod) ([]vpod.Placement, error)
	Run(ctx context.Context)
	Promote(ctx context.Context) error
}

// vpodSourceState is one source of a controller: the well-formed vpods
// of its informer that belong to the scheduler.
type vpodSourceState struct {
	VPodSource
	client dynamic.NamespaceableResourceInterface
	// owns filters the objects of a shared informer (the VPod custom
	// resource: spec.statefulSet); nil takes every object.
	owns  func(*unstructured.Unstructured) bool
	vpods map[vpod.Key]sourcedVPod // guarded by vpodController.mu
}

// sourcedVPod is a vpod and the object it was read from. The reconciler
// schedules exactly what VPods() lists (the engine counts the vpod's
// committed placements from there) and writes on top of that object's
// resourceVersion, so a reconcile never mixes two versions of a vpod.
type sourcedVPod struct {
	vpod.VPod
	obj *unstructured.Unstructured
	// bad: the object's current version is malformed. The last good one
	// stays listed, so the engine still counts the placements its adapter
	// pods run, but is not scheduled until the object is fixed.
	bad bool
}

// vpodController runs one vpod scheduler in serve: a rate-limited work
// queue of vpods whose reconcile asks the engine for placements and
// writes them to the vpod's status; the engine's autoscaler loop; and
// the evictor compaction uses. Informer events keep the vpods and the
// queue current on every replica; the workers and the autoscaler run
// only on the leader (run).
type vpodController struct {
	name    string
	sources []*vpodSourceState
	engine  vpodEngine
	cluster *VPodCluster
	queue   workqueue.TypedRateLimitingInterface[vpodItem]
	log     hclog.Logger
	// events records Events on vpods (a policy module's failure); nil
	// records none.
	events events.EventRecorder

	mu       sync.Mutex
	snapshot []vpod.VPod // sorted; nil when a source changed
	// done holds, per vpod, the resourceVersion its placements were
	// last written on top of (or that a write found outdated): until the
	// informer brings a newer version, scheduling that one again would
	// give the engine placements older than what it reserved, and its
	// answer would only conflict. The newer version's event requeues it.
	done map[vpodItem]string
}

// newVPodQueue is the controller's queue: per-item exponential backoff
// from 50ms to 30s, as Knative's controllers.
func newVPodQueue(name string) workqueue.TypedRateLimitingInterface[vpodItem] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[vpodItem](50*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[vpodItem]{Name: "vpod-" + name})
}

// VPods lists the scheduler's well-formed vpods, sorted by key; a key
// held by two sources goes to the one listed first. The list is the
// caller's; the placements slices are shared and must not be changed.
func (c *vpodController) VPods() ([]vpod.VPod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snapshot == nil {
		seen := map[vpod.Key]bool{}
		out := []vpod.VPod{}
		for _, s := range c.sources {
			for k, v := range s.vpods {
				if !seen[k] {
					seen[k] = true
					out = append(out, v.VPod)
				}
			}
		}
		sort.Slice(out, func(i, j int) bool {
			a, b := out[i].Key, out[j].Key
			return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
		})
		c.snapshot = out
	}
	return append([]vpod.VPod(nil), c.snapshot...), nil
}

// shadowed reports whether key is also held by a source listed before
// source i (which then owns it).
func (c *vpodController) shadowed(i int, key vpod.Key) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sources[:i] {
		if _, ok := s.vpods[key]; ok {
			return true
		}
	}
	return false
}

// sourceHandler keeps source i's vpods current and queues the changed
// ones. A malformed object is logged once per version and not
// scheduled (its last good version, if any, stays listed: see
// sourcedVPod.bad).
func (c *vpodController) sourceHandler(i int) cache.ResourceEventHandler {
	s := c.sources[i]
	upsert := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		key := vpod.Key{Namespace: u.GetNamespace(), Name: u.GetName()}
		if s.owns != nil && !s.owns(u) {
			c.forget(i, key) // spec.statefulSet may have moved it to another scheduler
			return
		}
		v, err := s.vpodFrom(u)
		c.mu.Lock()
		if err == nil {
			s.vpods[key] = sourcedVPod{VPod: v, obj: u}
		} else if prev, ok := s.vpods[key]; ok {
			prev.bad = true
			s.vpods[key] = prev
		}
		c.snapshot = nil
		c.mu.Unlock()
		if err != nil {
			c.log.Warn("skipping malformed vpod: fix the object to have it scheduled", "resource", resourceName(s.Resource),
				"vpod", key.String(), "resource_version", u.GetResourceVersion(), "error", err)
			return
		}
		c.queue.Add(vpodItem{i, key})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    upsert,
		UpdateFunc: func(_, obj any) { upsert(obj) },
		DeleteFunc: func(obj any) {
			if u, ok := unwrap(obj).(*unstructured.Unstructured); ok {
				c.forget(i, vpod.Key{Namespace: u.GetNamespace(), Name: u.GetName()})
			}
		},
	}
}

// forget drops a vpod of source i (deleted, or no longer ours); its item
// is queued so that a vpod it shadowed in a later source is scheduled.
func (c *vpodController) forget(i int, key vpod.Key) {
	c.mu.Lock()
	_, had := c.sources[i].vpods[key]
	delete(c.sources[i].vpods, key)
	delete(c.done, vpodItem{i, key})
	c.snapshot = nil
	var later []int
	if had {
		for j := i + 1; j < len(c.sources); j++ {
			if _, ok := c.sources[j].vpods[key]; ok {
				later = append(later, j)
			}
		}
	}
	c.mu.Unlock()
	for _, j := range later {
		c.queue.Add(vpodItem{j, key})
	}
}

// enqueueAll queues every vpod of the scheduler: pods, nodes or the
// StatefulSet changed, which may change any vpod's placements.
func (c *vpodController) enqueueAll() {
	c.mu.Lock()
	var items []vpodItem
	for i, s := range c.sources {
		for k := range s.vpods {
			items = append(items, vpodItem{i, k})
		}
	}
	c.mu.Unlock()
	for _, it := range items {
		c.queue.Add(it)
	}
}

// run is the leader's part: the engine's autoscaler loop and one worker
// on the queue, until ctx ends. The cached scale is dropped and the
// engine promoted first (MAXFILLUP_SPREAD rebuilds its reservations),
// then every vpod is queued.
func (c *vpodController) run(ctx context.Context) {
	c.cluster.Reset()
	if err := c.engine.Promote(ctx); err != nil {
		c.log.Error("vpod scheduler promotion failed; scheduling anyway", "error", err)
	}
	c.enqueueAll()
	stop := context.AfterFunc(ctx, c.queue.ShutDown)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { c.engine.Run(ctx) })
	wg.Go(func() {
		for c.processNext(ctx) {
		}
	})
	c.log.Info("vpod scheduler running", "vpods", c.count())
	wg.Wait()
}

func (c *vpodController) count() int {
	vs, _ := c.VPods()
	return len(vs)
}

// processNext reconciles one item; false once the queue is shut down.
func (c *vpodController) processNext(ctx context.Context) bool {
	item, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(item)
	after, err := c.reconcile(ctx, item)
	var pe *vpod.PolicyError
	switch {
	case apierrors.IsConflict(err):
		c.log.Debug("vpod changed while being scheduled; scheduling its newer version", "vpod", item.key.String(), "error", err)
		c.queue.AddRateLimited(item)
	case errors.As(err, &pe):
		// Not the fixed requeue of vreplicas left over: scaling cannot
		// fix a module, so the vpod is retried with backoff.
		c.log.Warn("vpod policy module failed; placements left as they are, nothing scaled; retrying with backoff", "vpod", item.key.String(),
			"policy", pe.Policy, "module", pe.Module, "plugin", pe.Plugin, "reason", pe.Reason, "retries", c.queue.NumRequeues(item), "error", pe.Err)
		c.queue.AddRateLimited(item)
	case err != nil:
		c.log.Warn("vpod not scheduled; retrying", "vpod", item.key.String(),
			"resource", resourceName(c.sources[item.source].Resource), "error", err)
		c.queue.AddRateLimited(item)
	case after > 0:
		c.queue.Forget(item)
		c.queue.AddAfter(item, after)
	default:
		c.queue.Forget(item)
	}
	return true
}

// reconcile schedules one vpod and writes its placements when they
// changed. It returns when to schedule it again (vreplicas were left
// unplaced) or an error for a rate-limited retry (engine failure,
// conflicting write). Deleted, foreign, malformed and shadowed vpods
// are dropped, and so is a version already written on top of (see
// done).
func (c *vpodController) reconcile(ctx context.Context, item vpodItem) (time.Duration, error) {
	s := c.sources[item.source]
	c.mu.Lock()
	sv, ok := s.vpods[item.key]
	c.mu.Unlock()
	if !ok || sv.bad || c.shadowed(item.source, item.key) {
		return 0, nil // gone, foreign or malformed (logged by the informer handler)
	}
	v, u := sv.VPod, sv.obj
	if c.outdated(item, u.GetResourceVersion()) {
		return 0, nil
	}
	ps, err := c.engine.Schedule(ctx, v)
	after, requeue := vpod.IsRequeue(err)
	if err != nil && !requeue {
		var pe *vpod.PolicyError
		if errors.As(err, &pe) && c.events != nil {
			c.events.Eventf(eventRef(u), nil, corev1.EventTypeWarning, VPodPolicyFailedReason, ActionScheduling, "%s", truncate(pe.Error(), noteLimit))
		}
		return 0, fmt.Errorf("schedule: %w", err)
	}
	if requeue {
		c.log.Debug("vpod not placed whole; requeued", "vpod", v.Key.String(), "error", err, "after", after)
		if ps == nil {
			return after, nil // nothing placed: keep what the status says
		}
	}
	if s.upToDate(u, v.Placements, ps) {
		return after, nil
	}
	upd, err := s.withPlacements(u, ps)
	if err != nil {
		return 0, err
	}
	written, err := s.write(ctx, upd)
	switch {
	case apierrors.IsNotFound(err):
		return 0, nil
	case apierrors.IsConflict(err):
		// The object changed: the informer brings the newer version,
		// whose event schedules it again; until then this version is
		// not scheduled again (a retry finds it outdated).
		c.markDone(item, u.GetResourceVersion())
		return 0, err
	case err != nil:
		return 0, err
	}
	c.markDone(item, u.GetResourceVersion())
	c.log.Debug("vpod placements written", "vpod", v.Key.String(), "vreplicas", v.VReplicas, "placements", fmt.Sprint(ps),
		"were", fmt.Sprint(v.Placements), "resource_version", u.GetResourceVersion(), "new_resource_version", written.GetResourceVersion())
	return after, nil
}

// VPodPolicyFailedReason is the reason of the Warning Event on a vpod
// whose placement or removal step failed in a policy module.
const VPodPolicyFailedReason = "VPodPolicyFailed"

// VPodComponent is the source component of the Events on vpods.
const VPodComponent = "wasmsched-vpod"

// eventRef is the Event reference of a vpod object.
func eventRef(u *unstructured.Unstructured) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(),
		UID: u.GetUID(), ResourceVersion: u.GetResourceVersion()}
}

// outdated reports whether rv is the version of item that placements
// were last written on top of.
func (c *vpodController) outdated(item vpodItem, rv string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return rv != "" && c.done[item] == rv
}

func (c *vpodController) markDone(item vpodItem, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = map[vpodItem]string{}
	}
	c.done[item] = rv
}

// write stores obj's placements: through the status subresource when
// they live under status, else with an update of the object. The object
// carries the resourceVersion it was read at, so a concurrent change
// makes it a conflict rather than overwriting.
func (s *vpodSourceState) write(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri := s.client.Namespace(obj.GetNamespace())
	var out *unstructured.Unstructured
	var err error
	if s.status() {
		out, err = ri.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	} else {
		out, err = ri.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("write the placements of %s %s/%s: %w", resourceName(s.Resource), obj.GetNamespace(), obj.GetName(), err)
	}
	return out, nil
}

// evict is the engine's Evictor (compaction): it removes the placement
// on from.PodName from the vpod's status, read fresh from the API server
// and written back with its resourceVersion (re-read on a conflict), as
// eventing-kafka-broker's evictor does with a ConsumerGroup's. The vpod
// is then queued: it gets its vreplicas back on lower ordinals. A vpod
// or placement already gone is not an error.
func (c *vpodController) evict(ctx context.Context, pod *corev1.Pod, v vpod.VPod, from vpod.Placement) error {
	src := -1
	c.mu.Lock()
	for i, s := range c.sources {
		if _, ok := s.vpods[v.Key]; ok {
			src = i
			break
		}
	}
	c.mu.Unlock()
	if src < 0 {
		return nil
	}
	s := c.sources[src]
	removed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := s.client.Namespace(v.Key.Namespace).Get(ctx, v.Key.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		have, err := s.placementsOf(u)
		if err != nil {
			return err
		}
		keep := make([]vpod.Placement, 0, len(have))
		for _, p := range have {
			if p.PodName != from.PodName {
				keep = append(keep, p)
			}
		}
		if removed = len(keep) != len(have); !removed {
			return nil
		}
		upd, err := s.withPlacements(u, keep)
		if err != nil {
			return err
		}
		_, err = s.write(ctx, upd)
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("evict vpod %s from pod %s: %w", v.Key, from.PodName, err)
	}
	if removed {
		c.log.Info("vpod placement evicted for compaction", "vpod", v.Key.String(), "pod", from.PodName, "vreplicas", from.VReplicas)
	}
	c.queue.Add(vpodItem{src, v.Key})
	return nil
}
