// Package podremoval is the one way the scheduler removes a pod: through
// the Eviction API, which honours PodDisruptionBudgets, or by deleting it.
// Preemption (host/engines/preemption) and the eviction killer (host/engines/eviction)
// both remove pods through a Remover, so a real cluster (host/run/kube) and
// the in-memory one (host/run/memapi) each implement removal once, and both
// engines tell the answers apart by the same errors.
//
// What each engine does around a removal (Events and their reasons,
// status patches, reading a pod back) stays in that engine's own API.
package podremoval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wasmsched/wasmsched/abi"
)

// Remover removes pods. Both calls carry the pod's UID as a precondition,
// so a pod re-created under the same name is never the one removed.
//
// Errors wrap ErrNotFound when the pod does not exist, ErrConflict when
// the API server answered 409, and ErrTooManyRequests when the Eviction
// API refused; what a conflict means is the caller's to decide.
type Remover interface {
	// EvictPod posts a policy/v1 Eviction for the pod with
	// DeleteOptions.gracePeriodSeconds=grace (nil: the pod's own). A
	// PodDisruptionBudget that allows no disruption now makes it fail
	// with ErrTooManyRequests, a *RefusedError when the answer says more.
	EvictPod(ctx context.Context, pod *abi.Pod, grace *int64) error
	// DeletePod deletes the pod with the grace period (nil: the pod's
	// own), ignoring PodDisruptionBudgets.
	DeletePod(ctx context.Context, pod *abi.Pod, grace *int64) error
}

// DryRunEvictor is a Remover that can also ask the Eviction API whether
// it would evict a pod now without evicting it (DeleteOptions.dryRun:
// All). Preemption uses it, when the API has it, to learn of a refusal
// before it removes anything on a node.
type DryRunEvictor interface {
	// EvictPodDryRun answers as EvictPod would (ErrTooManyRequests,
	// ErrNotFound, ...) but spends no budget and leaves the pod alone.
	EvictPodDryRun(ctx context.Context, pod *abi.Pod) error
}

// Errors a Remover wraps so its callers can tell the answers apart.
var (
	// ErrNotFound is HTTP 404: the pod is gone, which both engines
	// count as removed.
	ErrNotFound = errors.New("not found (404)")
	// ErrConflict is HTTP 409: the UID precondition failed (the name
	// belongs to another pod now), or the Eviction API could not update
	// a budget for conflicts and the pod may still be there.
	ErrConflict = errors.New("conflict (409)")
	// ErrTooManyRequests is HTTP 429: the Eviction API refused because a
	// PodDisruptionBudget allows no disruption now.
	ErrTooManyRequests = errors.New("too many requests (429)")
)

// RefusedError is a 429 from the Eviction API with what the answer says
// about it, so the caller's Event and log can name the budget and wait
// as long as the server asks. It is ErrTooManyRequests for errors.Is.
type RefusedError struct {
	// PDB is the PodDisruptionBudget that refused ("" if the answer did
	// not name one).
	PDB string
	// RetryAfter is the server's Retry-After (0: none given).
	RetryAfter time.Duration
	Err        error
}

// Error says the eviction was refused, by which budget, and when the
// server suggests coming back, in the words a user reads in an Event or a
// simulation's timeline: "blocked by PodDisruptionBudget db: 0
// disruptions allowed". A refusal naming no budget (API Priority and
// Fairness, an older server) is the bare 429.
func (e *RefusedError) Error() string {
	msg := ErrTooManyRequests.Error()
	if e.PDB != "" {
		msg = "blocked by PodDisruptionBudget " + e.PDB
	}
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes a RefusedError an ErrTooManyRequests.
func (e *RefusedError) Is(target error) bool { return target == ErrTooManyRequests }

// Unwrap gives the underlying error.
func (e *RefusedError) Unwrap() error { return e.Err }
