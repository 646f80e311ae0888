package kube

import (
	"context"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/internal/convert"
)

// PreemptionAPI makes preemption's calls against the Kubernetes API.
// Nominations go through the Recorder's status patch queue, beside the
// PodScheduled condition patches: they never block the scheduling cycle,
// and a pod's latest nomination is written.
//
// RBAC: patch pods/status (the DisruptionTarget condition and
// nominatedNodeName), delete pods, create pods/eviction, create events.
type PreemptionAPI struct {
	Client   kubernetes.Interface
	Recorder *Recorder
}

var (
	_ preemption.API            = PreemptionAPI{}
	_ preemption.RelatedEventer = PreemptionAPI{}
	_ podremoval.DryRunEvictor  = PreemptionAPI{}
)

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
	return classify("mark", victim, err)
}

// DeletePod implements podremoval.Remover through PodRemover.
func (a PreemptionAPI) DeletePod(ctx context.Context, victim *abi.Pod, grace *int64) error {
	return PodRemover{Client: a.Client}.DeletePod(ctx, victim, grace)
}

// EvictPod implements podremoval.Remover through PodRemover.
func (a PreemptionAPI) EvictPod(ctx context.Context, victim *abi.Pod, grace *int64) error {
	return PodRemover{Client: a.Client}.EvictPod(ctx, victim, grace)
}

// EvictPodDryRun implements podremoval.DryRunEvictor through PodRemover,
// so a 429 is learned before anything on the candidate node is removed.
func (a PreemptionAPI) EvictPodDryRun(ctx context.Context, victim *abi.Pod) error {
	return PodRemover{Client: a.Client}.EvictPodDryRun(ctx, victim)
}

// SetNomination implements preemption.API.
func (a PreemptionAPI) SetNomination(_ context.Context, pod *abi.Pod, node string) error {
	a.Recorder.Nominated(pod, "", node)
	return nil
}

// Event implements preemption.API.
func (a PreemptionAPI) Event(pod *abi.Pod, warning bool, reason, message string) {
	a.Recorder.event(pod.SchedulerName, a.Recorder.podRef(pod), nil, warning, reason, ActionPreempting, message)
}

// EventRelated implements preemption.RelatedEventer: the Preempted Event
// on a victim names its preemptor as related, as kube-scheduler's does.
func (a PreemptionAPI) EventRelated(pod, related *abi.Pod, warning bool, reason, message string) {
	a.Recorder.event(pod.SchedulerName, a.Recorder.podRef(pod), a.Recorder.podRef(related), warning, reason, ActionPreempting, message)
}
