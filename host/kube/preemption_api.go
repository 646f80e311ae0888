package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/convert"
	"github.com/wasmsched/wasmsched/host/preemption"
)

// PreemptionAPI makes preemption's calls against the Kubernetes API.
// Nominations go through the Recorder's status patch queue, so they keep
// their order with the PodScheduled condition patches and never block the
// scheduling cycle.
//
// RBAC: patch pods/status (the DisruptionTarget condition and
// nominatedNodeName), delete pods, create pods/eviction, create events.
type PreemptionAPI struct {
	Client   kubernetes.Interface
	Recorder *Recorder
}

var _ preemption.API = PreemptionAPI{}

func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %v", preemption.ErrNotFound, err)
	case apierrors.IsTooManyRequests(err):
		r := refusalOf(err)
		return &preemption.BlockedError{PDB: r.pdb, RetryAfter: r.retryAfter, Err: fmt.Errorf("%w%s", err, r.suffix())}
	}
	return err
}

// MarkVictim implements preemption.API: a strategic merge patch of the
// pod's status conditions (merged by type).
func (a PreemptionAPI) MarkVictim(ctx context.Context, victim *abi.Pod, message string) error {
	if victim.PreemptedByScheduler {
		return nil
	}
	body, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{
		"type": string(corev1.DisruptionTarget), "status": string(corev1.ConditionTrue),
		"reason": convert.ReasonPreemptionByScheduler, "message": message,
		"lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339),
	}}}})
	if err != nil {
		return err
	}
	_, err = a.Client.CoreV1().Pods(victim.Namespace).Patch(ctx, victim.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return classify(err)
}

// DeletePod implements preemption.API, with the victim's UID as a
// precondition so a re-created pod of the same name is left alone.
func (a PreemptionAPI) DeletePod(ctx context.Context, victim *abi.Pod) error {
	uid := types.UID(victim.UID)
	err := a.Client.CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %v", preemption.ErrNotFound, err) // another pod by that name now
	}
	return classify(err)
}

// EvictPod implements preemption.API through the pods/eviction
// subresource, without client-go's silent retries (evictOnce): a 429 is
// a *preemption.BlockedError at once.
func (a PreemptionAPI) EvictPod(ctx context.Context, victim *abi.Pod) error {
	return a.evict(ctx, victim, nil)
}

// EvictPodDryRun implements preemption.DryRunEvictor: the API server
// checks the victim's budgets and spends none, so a 429 is learned
// before anything on the candidate node is removed.
func (a PreemptionAPI) EvictPodDryRun(ctx context.Context, victim *abi.Pod) error {
	return a.evict(ctx, victim, []string{metav1.DryRunAll})
}

var _ preemption.DryRunEvictor = PreemptionAPI{}

func (a PreemptionAPI) evict(ctx context.Context, victim *abi.Pod, dryRun []string) error {
	uid := types.UID(victim.UID)
	err := evictOnce(ctx, a.Client, &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: victim.Namespace, Name: victim.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, DryRun: dryRun},
	})
	return classify(err)
}

// SetNomination implements preemption.API.
func (a PreemptionAPI) SetNomination(_ context.Context, pod *abi.Pod, node string) error {
	a.Recorder.Nominated(pod, "", node)
	return nil
}

// Event implements preemption.API.
func (a PreemptionAPI) Event(pod *abi.Pod, warning bool, reason, message string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	a.Recorder.recorderFor(pod.SchedulerName).Event(ref(pod), typ, reason, message)
}
