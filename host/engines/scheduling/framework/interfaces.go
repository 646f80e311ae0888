package framework

import (
	"context"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// Host plugins are written in Go and run in the host, for the extension
// points that act on the cluster (binding, preemption, waiting) rather
// than judge nodes. Each implements Plugin and any of the interfaces
// below; a profile enables them by name like Wasm plugins.

// Plugin is a host plugin.
type Plugin interface {
	Name() string
}

// PostFilterPlugin runs when no node fits; DefaultPreemption is one. It
// may return a node to nominate the pod to (a later cycle retries it
// there once room is made). dr evaluates what-ifs with the cycle's
// modules (preemption's dry runs).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *abi.Pod, fit *FitError, dr *DryRun) (nominatedNode string, st *Status)
}

// SelfNominating is a PostFilter plugin that records its nominations
// itself (in the nominator and on the pod) before returning, so the
// scheduler must not repeat them after the cycle.
type SelfNominating interface {
	NominatesItself() bool
}

// ProfileInfo is what a Configurable host plugin learns of the profile it
// is built for.
type ProfileInfo struct {
	// Name is the profile's schedulerName.
	Name string
}

// Configurable is a host plugin built per profile from its args
// (pluginConfig[].args, nil when the profile gives none), e.g.
// DefaultPreemption with its candidate-search and async settings. The
// error names the bad field of args.
type Configurable interface {
	Plugin
	ForProfile(p ProfileInfo, args []byte) (Plugin, error)
}

// PreemptionPolicyUser is a host plugin that calls a Wasm preemption
// policy plugin (ABI v1.1); the profile loads that plugin's module so
// DryRun sessions can reach it.
type PreemptionPolicyUser interface {
	Plugin
	PreemptionPolicy() string
}

// ReservePlugin claims resources for the pod on the chosen node before
// binding, and releases them if the pod does not bind. Unreserve must be
// idempotent.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *abi.Pod, node string)
}

// PermitPlugin approves, rejects or delays the binding. A Wait status
// (Code Wait) with a timeout holds the pod until Allow or Reject is called
// on its WaitingPod or the timeout passes (then it is rejected).
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, pod *abi.Pod, node string) (*Status, time.Duration)
}

// PreBindPlugin runs before binding (e.g. to provision volumes).
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status
}

// BindPlugin binds the pod to the node. A Skip status passes the pod to
// the next bind plugin.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status
}

// PostBindPlugin is told about a successful binding.
type PostBindPlugin interface {
	Plugin
	PostBind(ctx context.Context, state *CycleState, pod *abi.Pod, node string)
}

// Binder makes the binding real: the pods/binding API, or the simulation's
// in-memory cluster.
type Binder interface {
	Bind(ctx context.Context, pod *abi.Pod, node string) error
}

// AnnotatingBinder is a Binder that can set pod annotations with the
// binding itself (the pods/binding subresource copies a Binding's
// annotations onto the pod), so a decision summary costs no write of its
// own.
type AnnotatingBinder interface {
	Binder
	BindAnnotated(ctx context.Context, pod *abi.Pod, node string, annotations map[string]string) error
}

// Wait is the code of a Permit status that delays binding.
const Wait abi.Code = 4

// CycleState carries data between the host plugins of one cycle.
type CycleState struct {
	data map[string]any
	// recordPluginMetrics: this cycle is in the sample whose plugin calls
	// are timed (see metrics.DefaultPluginSamplePercent).
	recordPluginMetrics bool
	// explain, when set, receives why the cycle decided what it did.
	explain *decision.Scheduling
	// bindAnnotations are set on the pod with its binding, when the
	// Binder can (AnnotatingBinder).
	bindAnnotations map[string]string
}

// SetBindAnnotations asks the bind plugin to set annotations on the pod
// with its binding (DefaultBinder does when its Binder is an
// AnnotatingBinder; otherwise they are not written).
func (c *CycleState) SetBindAnnotations(a map[string]string) { c.bindAnnotations = a }

// SetRecordPluginMetrics puts the cycle in (or out of) the sample whose
// plugin calls are timed; the scheduler decides once per cycle, as
// kube-scheduler does.
func (c *CycleState) SetRecordPluginMetrics(on bool) { c.recordPluginMetrics = on }

// ShouldRecordPluginMetrics reports whether this cycle's plugin calls are
// timed.
func (c *CycleState) ShouldRecordPluginMetrics() bool { return c.recordPluginMetrics }

// NewCycleState returns an empty cycle state.
func NewCycleState() *CycleState { return &CycleState{data: map[string]any{}} }

// Read returns the value stored under key.
func (c *CycleState) Read(key string) (any, bool) { v, ok := c.data[key]; return v, ok }

// Write stores a value under key.
func (c *CycleState) Write(key string, v any) { c.data[key] = v }
