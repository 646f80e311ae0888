package kube

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// podPatches are the patches of pod objects (not their subresources)
// the fake clientset got.
func podPatches(client *fake.Clientset) []k8stesting.PatchAction {
	var out []k8stesting.PatchAction
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" && a.GetSubresource() == "" {
			out = append(out, p)
		}
	}
	return out
}

func pendingPod(uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: types.UID(uid)}}
}

// Summaries given for one pod before the writer gets to it become one
// patch, of the latest; it lands on the pod's annotation, with the pod's
// UID as precondition.
func TestDecisionAnnotationsCoalesceToTheLatest(t *testing.T) {
	client := fake.NewSimpleClientset(pendingPod("u1"))
	w := newDecisionWriter(client, hclog.NewNullLogger(), func(*abi.Pod) *corev1.Pod { return nil })
	defer w.queue.ShutDown()
	p := &abi.Pod{Namespace: "ns", Name: "web", UID: "u1"}
	w.add(p, `{"outcome":"Unschedulable","n":1}`)
	w.add(p, `{"outcome":"Unschedulable","n":2}`)
	if n := w.queue.Len(); n != 1 {
		t.Fatalf("%d pods queued, want 1", n)
	}
	w.next(context.Background())
	patches := podPatches(client)
	if len(patches) != 1 || !strings.Contains(string(patches[0].GetPatch()), `"n\":2`) || !strings.Contains(string(patches[0].GetPatch()), `"uid":"u1"`) {
		t.Fatalf("patches: %d, first %s", len(patches), patches[0].GetPatch())
	}
	got, err := client.CoreV1().Pods("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || got.Annotations[decision.AnnotationKey] != `{"outcome":"Unschedulable","n":2}` {
		t.Fatalf("pod annotations %v, %v", got.Annotations, err)
	}
	if len(w.waiting) != 0 || w.queue.Len() != 0 {
		t.Fatalf("left waiting: %v, queued %d", w.waiting, w.queue.Len())
	}
}

// A pod deleted before its summary is written is dropped at once: no
// retry, nothing left waiting.
func TestDecisionAnnotationDroppedWhenPodGone(t *testing.T) {
	client := fake.NewSimpleClientset()
	w := newDecisionWriter(client, hclog.NewNullLogger(), func(*abi.Pod) *corev1.Pod { return nil })
	defer w.queue.ShutDown()
	w.add(&abi.Pod{Namespace: "ns", Name: "web", UID: "u1"}, `{"outcome":"Unschedulable"}`)
	w.next(context.Background())
	if len(podPatches(client)) != 1 {
		t.Fatalf("patches: %v", client.Actions())
	}
	if len(w.waiting) != 0 || w.queue.Len() != 0 || w.queue.NumRequeues("u1") != 0 {
		t.Fatalf("gone pod retried: waiting %v, queued %d, requeues %d", w.waiting, w.queue.Len(), w.queue.NumRequeues("u1"))
	}
}

// A pod bound meanwhile is not patched: not when the scheduler bound it
// (Recorder.Scheduled drops the waiting summary), not when the informer
// shows it bound, and not when it already carries the summary.
func TestDecisionAnnotationSkipsBoundPods(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := eventsV1Clientset()
	if _, err := client.CoreV1().Pods("ns").Create(ctx, pendingPod("u1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := &abi.Pod{Namespace: "ns", Name: "web", UID: "u1"}

	rec := NewRecorder(ctx, RecorderOptions{Client: client, Instance: "r"})
	rec.AnnotateDecision(p, `{"outcome":"Unschedulable"}`)
	rec.Scheduled(p, "default-scheduler", "n1")
	rec.decisions.next(ctx)

	var informer atomic.Pointer[corev1.Pod]
	w := newDecisionWriter(client, hclog.NewNullLogger(), func(*abi.Pod) *corev1.Pod { return informer.Load() })
	defer w.queue.ShutDown()
	bound := pendingPod("u1")
	bound.Spec.NodeName = "n1"
	w.add(p, `{"outcome":"Unschedulable"}`)
	informer.Store(bound)
	w.next(ctx)

	carrying := pendingPod("u1")
	carrying.Annotations = map[string]string{decision.AnnotationKey: `{"outcome":"Unschedulable"}`}
	informer.Store(carrying)
	w.add(p, `{"outcome":"Unschedulable"}`)
	if w.queue.Len() != 0 {
		t.Fatal("a summary the pod carries already was queued")
	}
	if patches := podPatches(client); len(patches) != 0 {
		t.Fatalf("bound pod patched: %s", patches[0].GetPatch())
	}
}

// Another API error is retried after a backoff, and the write then
// lands.
func TestDecisionAnnotationRetriedAfterAnError(t *testing.T) {
	client := fake.NewSimpleClientset(pendingPod("u1"))
	var failed atomic.Bool
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if failed.CompareAndSwap(false, true) {
			return true, nil, apierrors.NewInternalError(errors.New("etcd timed out"))
		}
		return false, nil, nil
	})
	w := newDecisionWriter(client, hclog.NewNullLogger(), func(*abi.Pod) *corev1.Pod { return nil })
	defer w.queue.ShutDown()
	w.add(&abi.Pod{Namespace: "ns", Name: "web", UID: "u1"}, `{"outcome":"Error"}`)
	w.next(context.Background())
	if w.queue.NumRequeues("u1") != 1 {
		t.Fatalf("not retried: requeues %d", w.queue.NumRequeues("u1"))
	}
	w.next(context.Background()) // waits for the backoff
	got, err := client.CoreV1().Pods("ns").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil || got.Annotations[decision.AnnotationKey] != `{"outcome":"Error"}` {
		t.Fatalf("pod annotations %v, %v", got.Annotations, err)
	}
}

// A patch refused because the pod changed after the informer's copy
// (Conflict on its resourceVersion) is tried again; once the informer
// shows the pod bound, the summary is dropped without another write.
func TestDecisionAnnotationConflictRetriedUntilBound(t *testing.T) {
	client := fake.NewSimpleClientset(pendingPod("u1"))
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("the object has been modified"))
	})
	var informer atomic.Pointer[corev1.Pod]
	stale := pendingPod("u1")
	stale.ResourceVersion = "5"
	informer.Store(stale)
	w := newDecisionWriter(client, hclog.NewNullLogger(), func(*abi.Pod) *corev1.Pod { return informer.Load() })
	defer w.queue.ShutDown()
	w.add(&abi.Pod{Namespace: "ns", Name: "web", UID: "u1"}, `{"outcome":"Unschedulable"}`)
	w.next(context.Background())
	patches := podPatches(client)
	if len(patches) != 1 || !strings.Contains(string(patches[0].GetPatch()), `"resourceVersion":"5"`) {
		t.Fatalf("patches %d, want one made from the informer's copy", len(patches))
	}
	if w.queue.NumRequeues("u1") != 1 {
		t.Fatalf("conflict not retried: requeues %d", w.queue.NumRequeues("u1"))
	}
	bound := pendingPod("u1")
	bound.ResourceVersion, bound.Spec.NodeName = "7", "n1"
	informer.Store(bound)
	w.next(context.Background())
	if n := len(podPatches(client)); n != 1 {
		t.Fatalf("%d patches: a pod bound meanwhile was patched again", n)
	}
	if len(w.waiting) != 0 || w.queue.Len() != 0 {
		t.Fatalf("left waiting: %v, queued %d", w.waiting, w.queue.Len())
	}
}
