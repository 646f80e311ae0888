package eviction

import (
	"context"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

// API is every call the killer makes, so that the same killer drives the
// Kubernetes API (host/run/kube) and the in-memory one (host/run/memapi).
//
// The killer removes pods through the embedded podremoval.Remover, with
// the kill's grace period; a pod that is gone (podremoval.ErrNotFound) is
// a pod killed. A 409 that leaves another pod under the name is gone too:
// an implementation that can tell reports it as podremoval.ErrNotFound.
type API interface {
	podremoval.Remover
	// PodUID returns the UID of the pod now named namespace/name, read
	// from the API (not a cache, which may lag behind a deletion), or an
	// error wrapping podremoval.ErrNotFound.
	PodUID(ctx context.Context, namespace, name string) (string, error)
	// Event records an Event on the pod (Warning if warning, else Normal).
	Event(pod *abi.Pod, warning bool, reason, message string)
}
