package queue

import (
	"errors"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"k8s.io/utils/clock"
)

// Errors returned for input the queue refuses. The queue never panics on
// bad input; it reports it and leaves its state untouched.
var (
	// ErrClosed is returned by Pop once Close has been called, so the
	// scheduling loop can tell shutdown from a cancelled wait.
	ErrClosed = errors.New("scheduling queue is closed")
	// ErrInvalidPod is returned for a nil pod or a pod without a UID: pods
	// are keyed by UID, so such a pod could never be found again.
	ErrInvalidPod = errors.New("invalid pod: nil or without UID")
	// ErrAssigned is returned by Add for a pod that already has a node;
	// queueing it would schedule it a second time.
	ErrAssigned = errors.New("pod is already assigned to a node")
	// ErrAlreadyQueued is returned by AddUnschedulableIfNotPresent when the
	// pod is already in one of the queues: the caller's copy is stale and
	// must not overwrite the queued one.
	ErrAlreadyQueued = errors.New("pod is already in the scheduling queue")
)

// PluginSet is a set of plugin names: the plugins that rejected a pod in
// its last scheduling cycle, which decide which events can requeue it.
type PluginSet map[string]struct{}

// NewPluginSet returns a set of the given names, a convenience for callers
// and tests.
func NewPluginSet(names ...string) PluginSet {
	s := make(PluginSet, len(names))
	for _, n := range names {
		s[n] = struct{}{}
	}
	return s
}

// Has reports whether name is in the set (false for a nil set).
func (s PluginSet) Has(name string) bool {
	_, ok := s[name]
	return ok
}

func (s PluginSet) clone() PluginSet {
	c := make(PluginSet, len(s))
	for n := range s {
		c[n] = struct{}{}
	}
	return c
}

// PreEnqueuePlugin is a gate a pod must pass before it may enter activeQ
// (e.g. scheduling gates, or DefaultPreemption holding a preemptor back
// while its victims are still being deleted). It is called with the
// queue's lock held, so it must be quick and must not call the queue.
type PreEnqueuePlugin interface {
	// Name identifies the plugin in GatingPlugin and in PluginEvents.
	Name() string
	// PreEnqueue returns ok=false, with a reason for diagnostics, to keep
	// the pod out of activeQ for now.
	PreEnqueue(pod *abi.Pod) (ok bool, reason string)
}

// QueuedPodInfo is a pod plus the bookkeeping the queue needs to order it,
// back it off and decide which events can requeue it. Pop hands it to the
// scheduling cycle, which owns it until it gives it back through
// AddUnschedulableIfNotPresent (or drops it after Done).
type QueuedPodInfo struct {
	Pod *abi.Pod
	// Timestamp is when the pod last entered the queue (Add or a failed
	// cycle); it orders equal priorities in activeQ and starts backoff.
	Timestamp time.Time
	// InitialAttemptTimestamp is when the pod was first popped, for the
	// end-to-end scheduling latency metric; zero until then.
	InitialAttemptTimestamp time.Time
	// Attempts counts pops.
	Attempts int
	// UnschedulableCount counts cycles that ended with the pod rejected by
	// plugins; it drives backoff.
	UnschedulableCount int
	// ConsecutiveErrorsCount counts cycles in a row that ended in an error
	// (or without a rejecting plugin); while non-zero it drives backoff
	// instead of UnschedulableCount.
	ConsecutiveErrorsCount int
	// UnschedulablePlugins are the plugins that rejected the pod in its
	// last cycle: only events they registered for requeue it.
	UnschedulablePlugins PluginSet
	// GatingPlugin is the PreEnqueue plugin that currently keeps the pod
	// out of activeQ ("" when not gated); it is tried first next time and
	// its events re-run the gates.
	GatingPlugin string
	// GatingReason is the reason GatingPlugin gave, for diagnostics.
	GatingReason string

	seq    uint64    // insertion order, a deterministic last tie-break
	expiry time.Time // backoff expiry, valid while in backoffQ
}

// Gated reports whether a PreEnqueue plugin currently holds the pod back.
func (p *QueuedPodInfo) Gated() bool { return p.GatingPlugin != "" }

// Options configure a PriorityQueue. Zero values take kube-scheduler's
// defaults, so Options{} is a working configuration.
type Options struct {
	// Clock drives timestamps, backoff and the flush loops; tests pass a
	// fake clock. Default: the real clock.
	Clock clock.WithTicker
	// InitialBackoff is the backoff after the first failure (default 1s);
	// it doubles per further failure up to MaxBackoff (default 10s).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxInUnschedulable is how long a pod may stay parked without an
	// interesting event before the leftover flush retries it anyway
	// (default 5m), a safety net for events nobody registered.
	MaxInUnschedulable time.Duration
	// BackoffFlushInterval (default 1s) and UnschedulableFlushInterval
	// (default 30s) are the periods of the two loops Run starts.
	BackoffFlushInterval       time.Duration
	UnschedulableFlushInterval time.Duration
	// PreEnqueue returns the gates of the pod's profile (looked up by its
	// schedulerName); nil means no gates. Called with the queue's lock held.
	PreEnqueue func(pod *abi.Pod) []PreEnqueuePlugin
	// PluginEvents maps a plugin name to the events that may make a pod it
	// rejected (or gated) schedulable. A plugin absent from the map is
	// interested in every event; a plugin mapped to an empty list in none,
	// so its pods wait for Activate or the leftover flush.
	PluginEvents map[string][]ClusterEvent
}
