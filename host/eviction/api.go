package eviction

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wasmsched/wasmsched/abi"
)

// API is every call the killer makes, so that the same killer drives the
// Kubernetes API (host/kube) and the in-memory one (host/memapi).
type API interface {
	// EvictPod posts a policy/v1 Eviction for the pod with DeleteOptions
	// gracePeriodSeconds=grace (nil: the pod's own) and the pod's UID as
	// precondition. A PodDisruptionBudget refusal is a
	// *TooManyRequestsError; a pod that is gone wraps ErrNotFound.
	EvictPod(ctx context.Context, pod *abi.Pod, grace *int64) error
	// DeletePod deletes the pod with the grace period and the UID
	// precondition. A pod that is gone wraps ErrNotFound.
	DeletePod(ctx context.Context, pod *abi.Pod, grace *int64) error
	// PodUID returns the UID of the pod now named namespace/name, read
	// from the API (not a cache, which may lag behind a deletion), or an
	// error wrapping ErrNotFound.
	PodUID(ctx context.Context, namespace, name string) (string, error)
	// Event records an Event on the pod (Warning if warning, else Normal).
	Event(pod *abi.Pod, warning bool, reason, message string)
}

// ErrNotFound is what an API error wraps when the pod does not exist
// (HTTP 404): for the killer, a pod that is gone is a pod killed.
var ErrNotFound = errors.New("not found (404)")

// TooManyRequestsError is HTTP 429 from the Eviction API: a
// PodDisruptionBudget allows no disruption now. RetryAfter is the
// server's Retry-After (0: none given).
type TooManyRequestsError struct {
	RetryAfter time.Duration
	// PDB is the PodDisruptionBudget that refused ("" if the answer did
	// not name one), for the Event and log.
	PDB string
	Err error
}

// Error says that the eviction was refused, and when to come back.
func (e *TooManyRequestsError) Error() string {
	msg := "too many requests (429)"
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

// Unwrap gives the underlying error.
func (e *TooManyRequestsError) Unwrap() error { return e.Err }
