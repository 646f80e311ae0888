package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// Writing the decision summaries of attempts that did not bind (serve
// --record-decisions): a bound pod gets its summary with the Binding, in
// the write that sets its node; a pod left unschedulable, nominated or
// failed gets it through a metadata patch of its own, off the scheduling
// loop.
const (
	// decisionWriters bound the summary patches in flight.
	decisionWriters = 2
	// decisionTries is how many times a summary is written before it is
	// given up (the pod's next attempt brings a new one).
	decisionTries = 5
	// decisionRetryBase and decisionRetryMax bound the backoff between
	// tries, per pod.
	decisionRetryBase = 100 * time.Millisecond
	decisionRetryMax  = 10 * time.Second
)

// errStaleCopy is a patch refused because the pod changed after the
// informer's copy it was made from (its own condition patch, say): it
// is tried again once the informer has caught up.
var errStaleCopy = errors.New("the pod changed since the informer's copy")

// pendingSummary is the latest summary waiting for a pod.
type pendingSummary struct {
	namespace, name, uid string
	summary              string
}

// decisionWriter patches the decision.AnnotationKey annotation onto pods
// that were not bound. A pod has at most one summary waiting, the
// latest: a newer one replaces it, and a binding drops it (the Binding
// carries the bound decision). The workqueue holds each waiting pod's
// UID once and backs a failing pod off; at most decisionWriters patches
// run at once, so a slow API server delays summaries without piling up
// more than one per pod.
type decisionWriter struct {
	client kubernetes.Interface
	log    hclog.Logger
	// cached is the informer's copy of a pod (Recorder.cached).
	cached func(*abi.Pod) *corev1.Pod

	mu      sync.Mutex
	waiting map[string]pendingSummary // by pod UID
	queue   workqueue.TypedRateLimitingInterface[string]
}

func newDecisionWriter(client kubernetes.Interface, log hclog.Logger, cached func(*abi.Pod) *corev1.Pod) *decisionWriter {
	return &decisionWriter{
		client:  client,
		log:     log,
		cached:  cached,
		waiting: map[string]pendingSummary{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](decisionRetryBase, decisionRetryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "decision-annotations"}),
	}
}

// add queues summary for pod unless the pod already carries it.
func (w *decisionWriter) add(pod *abi.Pod, summary string) {
	if c := w.cached(pod); c != nil && c.Annotations[decision.AnnotationKey] == summary {
		w.drop(pod.UID) // what waits, if anything, is older than what the pod shows
		return
	}
	w.mu.Lock()
	w.waiting[pod.UID] = pendingSummary{namespace: pod.Namespace, name: pod.Name, uid: pod.UID, summary: summary}
	w.mu.Unlock()
	w.queue.Add(pod.UID)
}

// drop forgets the summary waiting for the pod with uid, if any.
func (w *decisionWriter) drop(uid string) {
	w.mu.Lock()
	delete(w.waiting, uid)
	w.mu.Unlock()
}

// take removes and returns the summary waiting under uid.
func (w *decisionWriter) take(uid string) (pendingSummary, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.waiting[uid]
	delete(w.waiting, uid)
	return p, ok
}

// putBack queues p again after a failed write, unless a newer summary
// took its place meanwhile (that one is queued already).
func (w *decisionWriter) putBack(p pendingSummary) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, newer := w.waiting[p.uid]; !newer {
		w.waiting[p.uid] = p
	}
}

// run writes the waiting summaries with decisionWriters workers until
// ctx ends.
func (w *decisionWriter) run(ctx context.Context) {
	var wg sync.WaitGroup
	for range decisionWriters {
		wg.Go(func() {
			for w.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
}

// next writes one pod's summary; false once the queue shuts down.
func (w *decisionWriter) next(ctx context.Context) bool {
	uid, shutdown := w.queue.Get()
	if shutdown {
		return false
	}
	defer w.queue.Done(uid)
	p, ok := w.take(uid)
	if !ok { // bound, or already written, meanwhile
		w.queue.Forget(uid)
		return true
	}
	err := w.write(ctx, p)
	switch {
	case err == nil || ctx.Err() != nil:
		w.queue.Forget(uid)
	case w.queue.NumRequeues(uid)+1 >= decisionTries:
		w.queue.Forget(uid)
		w.log.Warn("decision annotation: giving up", "pod", p.namespace+"/"+p.name, "tries", decisionTries, "error", err)
	default:
		if errors.Is(err, errStaleCopy) { // expected now and then: the informer lags the API
			w.log.Debug("decision annotation: will retry", "pod", p.namespace+"/"+p.name, "error", err)
		} else {
			w.log.Warn("decision annotation: will retry", "pod", p.namespace+"/"+p.name, "error", err)
		}
		w.putBack(p)
		w.queue.AddRateLimited(uid)
	}
	return true
}

// write patches p's summary onto its pod. A pod deleted, recreated or
// bound meanwhile is skipped (nil). The patch carries the pod's UID, and
// the resourceVersion of the informer's copy when there is one: the API
// server refuses it (Conflict) if the pod changed since, so a summary
// never lands on a pod bound after the informer's copy (whose Binding
// wrote the bound decision); a Conflict is retried against a fresher
// copy, or dropped once that copy shows the pod bound or gone.
func (w *decisionWriter) write(ctx context.Context, p pendingSummary) error {
	pod := &abi.Pod{Namespace: p.namespace, Name: p.name, UID: p.uid}
	meta := map[string]any{"uid": p.uid, "annotations": map[string]string{decision.AnnotationKey: p.summary}}
	if c := w.cached(pod); c != nil {
		switch {
		case c.Spec.NodeName != "":
			w.log.Debug("decision annotation: pod bound meanwhile; dropped", "pod", p.namespace+"/"+p.name, "node", c.Spec.NodeName)
			return nil
		case c.Annotations[decision.AnnotationKey] == p.summary:
			return nil
		}
		meta["resourceVersion"] = c.ResourceVersion
	}
	body, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return fmt.Errorf("encode the patch: %w", err)
	}
	_, err = w.client.CoreV1().Pods(p.namespace).Patch(ctx, p.name, types.MergePatchType, body, metav1.PatchOptions{})
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		w.log.Debug("decision annotation: pod gone; dropped", "pod", p.namespace+"/"+p.name)
		return nil
	case apierrors.IsConflict(err):
		c := w.cached(pod)
		if c == nil || c.Spec.NodeName != "" || meta["resourceVersion"] == nil {
			w.log.Debug("decision annotation: pod bound, gone or replaced meanwhile; dropped", "pod", p.namespace+"/"+p.name, "error", err.Error())
			return nil
		}
		return fmt.Errorf("patch pod %s/%s: %w (%v)", p.namespace, p.name, errStaleCopy, err)
	}
	return fmt.Errorf("patch pod %s/%s: %w", p.namespace, p.name, err)
}
