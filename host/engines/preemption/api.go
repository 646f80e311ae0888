package preemption

import (
	"context"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

// API is every call preemption makes on the cluster: the Kubernetes API
// for a real cluster (host/run/kube), an in-memory one for the simulation and
// tests (host/run/memapi). Calls may be slow; in async mode they run off the
// scheduling cycle. Errors wrap podremoval's: a pod that is gone
// (podremoval.ErrNotFound) counts as done.
//
// Victims are removed through the embedded podremoval.Remover, always
// with the pod's own grace period. If the API is also a
// podremoval.DryRunEvictor, preemption asks it about every guarded victim
// of a node before it removes anything there.
type API interface {
	podremoval.Remover
	// MarkVictim sets the condition DisruptionTarget=True with reason
	// PreemptionByScheduler and the message on the victim (a no-op if it
	// is already set).
	MarkVictim(ctx context.Context, victim *abi.Pod, message string) error
	// SetNomination patches the pod's status.nominatedNodeName ("" clears).
	SetNomination(ctx context.Context, pod *abi.Pod, node string) error
	// Event records an Event on a pod (Normal unless warning).
	Event(pod *abi.Pod, warning bool, reason, message string)
}

// RelatedEventer is an API whose Events can name a second object, as
// kube-scheduler's Preempted Event on a victim names its preemptor
// (events.k8s.io/v1 `related`), so `kubectl get events` shows who took
// the victim's place. Preemption uses it when the API has it and Event
// otherwise.
type RelatedEventer interface {
	// EventRelated records an Event on pod that also names related.
	EventRelated(pod, related *abi.Pod, warning bool, reason, message string)
}
