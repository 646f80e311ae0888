package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

// PodRemover removes pods through the Kubernetes API: the one
// podremoval.Remover behind preemption (PreemptionAPI) and the eviction
// killer (EvictionAPI).
//
// RBAC: create pods/eviction, delete pods.
type PodRemover struct {
	Client kubernetes.Interface
}

var (
	_ podremoval.Remover       = PodRemover{}
	_ podremoval.DryRunEvictor = PodRemover{}
)

// EvictPod implements podremoval.Remover: a policy/v1 Eviction with the
// grace period and the pod's UID as precondition, made once, without
// client-go's silent retries (evictOnce), so a 429 comes back at once.
func (r PodRemover) EvictPod(ctx context.Context, pod *abi.Pod, grace *int64) error {
	return r.evict(ctx, "evict", pod, deleteOptions(pod, grace))
}

// EvictPodDryRun implements podremoval.DryRunEvictor: the API server
// checks the pod's budgets and spends none.
func (r PodRemover) EvictPodDryRun(ctx context.Context, pod *abi.Pod) error {
	opts := deleteOptions(pod, nil)
	opts.DryRun = []string{metav1.DryRunAll}
	return r.evict(ctx, "dry-run evict", pod, opts)
}

func (r PodRemover) evict(ctx context.Context, what string, pod *abi.Pod, opts *metav1.DeleteOptions) error {
	err := evictOnce(ctx, r.Client, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: opts,
	})
	return classify(what, pod, err)
}

// DeletePod implements podremoval.Remover with the same options as
// EvictPod, ignoring PodDisruptionBudgets.
func (r PodRemover) DeletePod(ctx context.Context, pod *abi.Pod, grace *int64) error {
	err := r.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, *deleteOptions(pod, grace))
	return classify("delete", pod, err)
}

func deleteOptions(pod *abi.Pod, grace *int64) *metav1.DeleteOptions {
	uid := types.UID(pod.UID)
	return &metav1.DeleteOptions{GracePeriodSeconds: grace, Preconditions: &metav1.Preconditions{UID: &uid}}
}

// classify maps the API server's answer to a call on pod (what: "evict",
// "delete", ...) to podremoval's errors: 404 wraps ErrNotFound, 409
// ErrConflict, and 429 is a *podremoval.RefusedError with the budget and
// Retry-After the answer gives. Every error names the call and the pod.
func classify(what string, pod *abi.Pod, err error) error {
	name := pod.Namespace + "/" + pod.Name
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s pod %s: %w (%v)", what, name, podremoval.ErrNotFound, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%s pod %s: %w (%w)", what, name, podremoval.ErrConflict, err)
	case apierrors.IsTooManyRequests(err):
		r := refusalOf(err)
		return &podremoval.RefusedError{PDB: r.pdb, RetryAfter: r.retryAfter,
			Err: fmt.Errorf("%s pod %s: %w%s", what, name, err, r.suffix())}
	}
	return fmt.Errorf("%s pod %s: %w", what, name, err)
}

// evictOnce posts a policy/v1 Eviction and returns the API server's first
// answer. client-go's REST client silently repeats a request answered 429
// (or 5xx) with a Retry-After header, up to ten times and sleeping
// Retry-After in between; the Eviction API answers a budget its status has
// not caught up with 429 and Retry-After: 10, so the typed Evict would keep
// preemption (whose next step is the next candidate node) or the eviction
// killer (which reports the refusal and reconsiders the pod later) waiting
// about 100 s without a word. Both callers have their own retry policy,
// so the request is made with no retries at all. A clientset without a
// REST client (client-go's fakes) goes through the typed call, which makes
// no retries either.
func evictOnce(ctx context.Context, client kubernetes.Interface, ev *policyv1.Eviction) error {
	rc := client.PolicyV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		return client.PolicyV1().Evictions(ev.Namespace).Evict(ctx, ev)
	}
	return rc.Post().AbsPath("/api/v1").Namespace(ev.Namespace).Resource("pods").Name(ev.Name).
		SubResource("eviction").Body(ev).MaxRetries(0).Do(ctx).Error()
}

// refusal is what a 429 from the Eviction API says: the budget that
// refused, when the answer names it ("" if not: a 429 from API Priority
// and Fairness, or an older server), the server's Retry-After (0: none),
// and the cause as the server worded it ("" if none).
type refusal struct {
	pdb        string
	retryAfter time.Duration
	cause      string
}

// budgetNamePrefix starts every DisruptionBudget cause the Eviction API
// writes ("The disruption budget %s needs ...", "... is still being
// processed by the server.", "... does not allow evicting pods ...").
const budgetNamePrefix = "The disruption budget "

// refusalOf reads a 429's details: Retry-After from the Status (client-go
// copies the header's value there) and the budget from its
// DisruptionBudget cause.
func refusalOf(err error) refusal {
	var r refusal
	if secs, ok := apierrors.SuggestsClientDelay(err); ok && secs > 0 {
		// secs is the Status's int32 RetryAfterSeconds: it cannot
		// overflow a Duration.
		r.retryAfter = time.Duration(secs) * time.Second
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return r
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type != policyv1.DisruptionBudgetCause {
			continue
		}
		r.cause = c.Message
		if tail, ok := strings.CutPrefix(c.Message, budgetNamePrefix); ok {
			r.pdb, _, _ = strings.Cut(tail, " ")
		}
		break
	}
	return r
}

// suffix is the cause for an error message: " (cause)", or "" without
// one (a StatusError's text is its message alone, which names no budget).
func (r refusal) suffix() string {
	if r.cause == "" {
		return ""
	}
	return " (" + r.cause + ")"
}
