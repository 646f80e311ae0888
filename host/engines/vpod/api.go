package vpod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	corev1 "k8s.io/api/core/v1"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/metrics"
)

// Key names a vpod: the namespace and name of the resource (a source, a
// trigger's consumer group, …) whose vreplicas are scheduled.
type Key struct{ Namespace, Name string }

// String is "namespace/name", the form logs and errors use.
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Placement is the number of a vpod's vreplicas one adapter pod runs.
// The JSON form is Knative's duckv1alpha1.Placement, so placements can be
// written straight into a source's status.
type Placement struct {
	PodName   string `json:"podName"`
	VReplicas int32  `json:"vreplicas"`
}

// VPod is one virtual pod: how many vreplicas it wants and where its
// vreplicas run now (its committed placements).
type VPod struct {
	Key       Key
	VReplicas int32
	// Placements are the committed placements (the vpod's status).
	Placements []Placement
	// ResourceVersion is the object's version when it was read; the
	// engine only carries it (serve uses it to write status safely).
	ResourceVersion string
}

// Strategy selects the placement algorithm.
type Strategy string

const (
	// StrategyPolicy places with predicates and priorities (Knative
	// v1.16.0 "policy" mode): a full rebalance of the vpod on scale up,
	// descheduler priorities on scale down.
	StrategyPolicy Strategy = "Policy"
	// StrategyMaxFillUp fills the lowest-ordinal pods first, keeping
	// placements the vpod already has (Knative v1.16.0 MAXFILLUP).
	StrategyMaxFillUp Strategy = "MAXFILLUP"
	// StrategyMaxFillUpSpread is Knative ≥ v1.17 MAXFILLUP: reserved
	// placements are the starting point, vreplicas go round-robin over
	// pods ordered by free capacity, and each vpod spreads over at least
	// MinReplicas pods when it has that many vreplicas.
	StrategyMaxFillUpSpread Strategy = "MAXFILLUP_SPREAD"
)

// PolicyEntry is one predicate or priority of a scheduling policy, as
// Knative's config-scheduler lists it.
type PolicyEntry struct {
	// Name is the plugin's name (e.g. "EvenPodSpread").
	Name string
	// Weight multiplies a priority's score; predicates ignore it.
	Weight int64
	// Args are the raw JSON args, Knative style: a JSON string holding
	// the args object. nil means absent.
	Args json.RawMessage
	// File, Line and Field say where the entry was written (see
	// config.VPodPolicyEntry), for the error refusing it; when Field is
	// empty the error names the entry by its policy and index.
	File  string
	Line  int
	Field string
}

// Policy is a scheduling or descheduling policy.
type Policy struct {
	Predicates, Priorities []PolicyEntry
	// Lenient binds the policy as Knative v1.16.0 does: an entry whose
	// plugin no module serves as that kind is logged and skipped, and an
	// entry whose args its plugin refuses is logged and kept (its
	// predicate then refuses every pod, its priority fails scoring).
	// Otherwise (the default) NewPolicies refuses both, naming each
	// entry, where it was written and the plugins that exist: a typo
	// must not silently change the policy and make the autoscaler grow
	// the StatefulSet for vreplicas no pod will take.
	Lenient bool
}

// Defaults of Settings' periods.
const (
	// DefaultRefreshPeriod is how often the autoscaler runs a scale-down
	// (compaction) pass when Settings.RefreshPeriod is 0. Knative's
	// eventing-kafka uses a 10s autoscaler refresh; 30s matches Knative's
	// own scheduler default.
	DefaultRefreshPeriod = 30 * time.Second
	// DefaultRetryPeriod is how long the autoscaler waits after a failed
	// pass when Settings.RetryPeriod is 0.
	DefaultRetryPeriod = time.Second
	// RequeueAfter is when a vpod with vreplicas left unplaced should be
	// scheduled again (Knative: 5s).
	RequeueAfter = 5 * time.Second
	// DefaultMaxReplicas is the autoscaler's ceiling when
	// Settings.MaxReplicas is 0 (config.DefaultVPodMaxReplicas).
	DefaultMaxReplicas = config.DefaultVPodMaxReplicas
)

// Bounds of what the engine attempts (the configuration's, so a vpod
// refused at load and one refused by Schedule read the same).
const (
	// MaxVReplicas is the most vreplicas one vpod may want; Schedule
	// refuses more, and the autoscaler counts no demand for such a vpod.
	MaxVReplicas = config.MaxVPodVReplicas
	// MaxPlacements is the most placements a vpod may list.
	MaxPlacements = config.MaxVPodPlacements
	// MaxMaxReplicas is the highest Settings.MaxReplicas: the engine
	// keeps free capacity for ordinals 0..65535 only.
	MaxMaxReplicas = config.MaxVPodMaxReplicas
)

// Settings configure one scheduler: one adapter StatefulSet, its pod
// capacity and the placement strategy.
type Settings struct {
	// Name is the scheduler's name, used in logs and metrics.
	Name string
	// Namespace and StatefulSet name the adapter StatefulSet, whose pods
	// are named StatefulSet-<ordinal>.
	Namespace, StatefulSet string
	// Capacity is the number of vreplicas one adapter pod holds (≥ 1).
	Capacity int32
	Strategy Strategy
	// MinReplicas is the number of pods a vpod spreads over at least
	// (MAXFILLUP_SPREAD only).
	MinReplicas int32
	// MaxReplicas is the most replicas the autoscaler scales the
	// StatefulSet to (1..MaxMaxReplicas, at least MinReplicas);
	// 0 → DefaultMaxReplicas, or MinReplicas if higher. A StatefulSet
	// already above it is not grown further. Vreplicas that do not fit
	// stay pending, and the autoscaler says so (AutoscaleResult.Capped).
	MaxReplicas int32
	// MaxScaleUpStep bounds each autoscaler pass: it adds at most this
	// many replicas, and never takes the StatefulSet above the vpods'
	// need (⌈Σ vreplicas / Capacity⌉, rounded up to the scale factor,
	// at least MinReplicas) plus this many. 0 → the need itself (at
	// least the scale factor, at least 1), so whatever the policy does
	// the autoscaler never scales past about twice what the vpods need.
	// At most MaxMaxReplicas.
	MaxScaleUpStep int32
	// SchedPolicy and DeschedPolicy are the configured policies (Policy
	// strategy); the engine reads their priorities to pick the
	// autoscaler's scale factor. The modules serving them are bound in
	// Policies.
	SchedPolicy, DeschedPolicy *Policy
	// RefreshPeriod is the autoscaler's scale-down period;
	// 0 → DefaultRefreshPeriod.
	RefreshPeriod time.Duration
	// RetryPeriod is the autoscaler's wait after a failure;
	// 0 → DefaultRetryPeriod.
	RetryPeriod time.Duration
}

// Cluster is what the engine reads and changes. Serve implements it over
// informers and the StatefulSet's scale subresource; StaticCluster is an
// in-memory one for tests, library users and simulations.
type Cluster interface {
	// Pod returns the adapter pod of that name in Settings.Namespace, or
	// nil if there is none.
	Pod(name string) *corev1.Pod
	// Node returns the node of that name, or nil.
	Node(name string) *corev1.Node
	// Nodes lists every node.
	Nodes() []*corev1.Node
	// Replicas is the StatefulSet's scale.spec.replicas; an error when it
	// cannot be read (e.g. the StatefulSet is missing).
	Replicas(ctx context.Context) (int32, error)
	// Scale sets the StatefulSet's scale.spec.replicas.
	Scale(ctx context.Context, replicas int32) error
	// VPods lists every vpod this scheduler handles, with their committed
	// placements.
	VPods() ([]VPod, error)
}

// Evictor removes one placement of a vpod, so that the vpod gets
// rescheduled elsewhere (autoscaler compaction). pod is nil when the pod
// is gone.
type Evictor func(ctx context.Context, pod *corev1.Pod, vpod VPod, from Placement) error

// Options are the engine's collaborators; all are optional.
type Options struct {
	// Log receives structured logs; nil → hclog.NewNullLogger().
	Log hclog.Logger
	// Evictor compacts placements; nil → compaction only logs.
	Evictor Evictor
	// Rand returns a uniform integer in [0, n); it breaks score ties.
	// nil → crypto/rand. Tests pass a deterministic one.
	Rand func(n int64) int64
	// Now is the clock of the compaction period; nil → time.Now.
	Now func() time.Time
	// Metrics counts policy module failures
	// (wasmsched_vpod_policy_failures_total); nil records nothing.
	Metrics *metrics.VPod
	// Decisions, if set, receives a decision.VPod for every Schedule
	// call it wants (key decision.VPodKey of the vpod) and a
	// decision.VPodAutoscale for every autoscaler pass it wants (key
	// decision.AutoscaleKey of the scheduler); nil records none and costs
	// nothing.
	Decisions decision.Sink
}

// RequeueError says a vpod could not be placed whole: Left vreplicas
// stayed unplaced (the autoscaler was triggered); schedule it again After.
type RequeueError struct {
	After time.Duration
	// Left is the number of vreplicas not placed.
	Left int32
	// VPod is the vpod concerned.
	VPod Key
	// StatefulSet is the adapter StatefulSet, "namespace/name".
	StatefulSet string
}

func (e *RequeueError) Error() string {
	return fmt.Sprintf("vpod %s: insufficient running pods replicas for StatefulSet %s to schedule resource replicas (left: %d): retry after %s",
		e.VPod, e.StatefulSet, e.Left, e.After)
}

// IsRequeue reports whether err is (or wraps) a RequeueError and when to
// retry.
func IsRequeue(err error) (time.Duration, bool) {
	var r *RequeueError
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}

// PolicyError says a placement or removal step of a vpod failed in a
// policy module: the module trapped, ran past its call deadline, or
// answered what the ABI does not allow. A module failure is not a lack of
// pods, so nothing about the vpod changed: Schedule returns no
// placements (keep the committed ones; write nothing), its reservations
// are as before the call, the autoscaler is not triggered and does not
// count the vpod's pending vreplicas as demand until a Schedule of it
// gets past the module again. Callers test for it with errors.As and
// retry the vpod with backoff.
type PolicyError struct {
	// Scheduler is the vpod scheduler's name.
	Scheduler string
	// VPod is the vpod being placed.
	VPod Key
	// Policy is "scheduler" (placement) or "descheduler" (removal).
	Policy string
	// Module is the module that failed.
	Module string
	// Plugin names the plugins the module serves in that policy
	// (comma-separated), or the one entry a bad reply was about.
	Plugin string
	// Reason is metrics.PolicyFailureTrap, PolicyFailureTimeout,
	// PolicyFailureInvalidReply, PolicyFailureMalformedReply or
	// PolicyFailureError.
	Reason string
	// Err is the module's error.
	Err error
}

func (e *PolicyError) Error() string {
	return fmt.Sprintf("vpod %s: %s policy: module %q (plugin %q) failed: %s: %v; placements left as they are, nothing scaled",
		e.VPod, e.Policy, e.Module, e.Plugin, e.Reason, e.Err)
}

// Unwrap is the module's error.
func (e *PolicyError) Unwrap() error { return e.Err }

// AutoscaleResult says what one autoscaler pass did.
type AutoscaleResult struct {
	// Replicas is the StatefulSet's scale when the pass started.
	Replicas int32
	// Target is the replicas the pass computed, capped at
	// Settings.MaxReplicas.
	Target int32
	// Capped: the pass wanted Wanted replicas, more than
	// Settings.MaxReplicas allows; the vreplicas that do not fit stay
	// pending.
	Capped bool
	Wanted int32
	// Bounded: the pass wanted Wanted replicas, more than the scale-up
	// bound allows (Bound: replicas + step, and need + step; see
	// Settings.MaxScaleUpStep); Need is the vpods' need in replicas.
	Bounded     bool
	Bound, Need int32
	// ScaleFactor is the step replicas move by (zones, nodes or 1).
	ScaleFactor int32
	// Scaled: the pass changed the StatefulSet's scale to Target.
	Scaled bool
	// Compacted: the pass ran a compaction (evicting Evictions).
	Compacted bool
	// Evictions are the placements the compaction asked the Evictor to
	// remove.
	Evictions []Eviction
}

// Eviction is one placement the autoscaler's compaction evicted.
type Eviction struct {
	VPod      Key
	Pod       string
	VReplicas int32
}
