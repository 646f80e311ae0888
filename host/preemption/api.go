package preemption

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wasmsched/wasmsched/abi"
)

// API is every call preemption makes on the cluster: the Kubernetes API
// for a real cluster (host/kube), an in-memory one for the simulation and
// tests (host/memapi). Calls may be slow; in async mode they run off the
// scheduling cycle.
type API interface {
	// MarkVictim sets the condition DisruptionTarget=True with reason
	// PreemptionByScheduler and the message on the victim (a no-op if it
	// is already set).
	MarkVictim(ctx context.Context, victim *abi.Pod, message string) error
	// DeletePod deletes the victim (with its UID as a precondition).
	DeletePod(ctx context.Context, victim *abi.Pod) error
	// EvictPod asks the Eviction API to evict the victim, which honours
	// PodDisruptionBudgets: ErrTooManyRequests (HTTP 429) when a budget
	// does not allow it now.
	EvictPod(ctx context.Context, victim *abi.Pod) error
	// SetNomination patches the pod's status.nominatedNodeName ("" clears).
	SetNomination(ctx context.Context, pod *abi.Pod, node string) error
	// Event records an Event on a pod (Normal unless warning).
	Event(pod *abi.Pod, warning bool, reason, message string)
}

// DryRunEvictor is an API that can also ask the Eviction API whether it
// would evict a pod now without evicting it (DeleteOptions.dryRun: All).
// Preemption uses it, when the API has it, to learn of a KEP-3280 refusal
// for any guarded victim of a node before it removes anything there.
type DryRunEvictor interface {
	// EvictPodDryRun answers as EvictPod would (ErrTooManyRequests,
	// ErrNotFound, ...) but spends no budget and leaves the pod alone.
	EvictPodDryRun(ctx context.Context, victim *abi.Pod) error
}

// Errors an API implementation wraps so preemption can tell them apart.
var (
	// ErrTooManyRequests is HTTP 429: the Eviction API refused because a
	// PodDisruptionBudget allows no disruption now.
	ErrTooManyRequests = errors.New("too many requests (429)")
	// ErrNotFound: the pod is already gone, which preemption counts as done.
	ErrNotFound = errors.New("not found (404)")
)

// BlockedError is a 429 from the Eviction API with what the answer says
// about it, so the Event and log on the victim can name the budget. It
// is ErrTooManyRequests for errors.Is.
type BlockedError struct {
	// PDB is the PodDisruptionBudget that refused ("" if the answer did
	// not name one).
	PDB string
	// RetryAfter is the server's Retry-After (0: none given).
	RetryAfter time.Duration
	Err        error
}

// Error says the eviction was refused, by which budget, and when the
// server suggests coming back.
func (e *BlockedError) Error() string {
	msg := ErrTooManyRequests.Error()
	if e.PDB != "" {
		msg += ": PodDisruptionBudget " + e.PDB
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes a BlockedError an ErrTooManyRequests.
func (e *BlockedError) Is(target error) bool { return target == ErrTooManyRequests }

// Unwrap gives the underlying error.
func (e *BlockedError) Unwrap() error { return e.Err }
