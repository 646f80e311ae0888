package framework

import (
	"context"

	"github.com/wasmsched/wasmsched/abi"
)

// DefaultBinderName is the default bind plugin's name, as kube-scheduler's.
const DefaultBinderName = "DefaultBinder"

// DefaultBinder binds through the scheduler's Binder (the API's
// pods/binding subresource, or the simulation's cluster).
type DefaultBinder struct{ Binder Binder }

// Name implements Plugin.
func (DefaultBinder) Name() string { return DefaultBinderName }

// Bind implements BindPlugin.
func (b DefaultBinder) Bind(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status {
	var err error
	if ab, ok := b.Binder.(AnnotatingBinder); ok && state != nil && len(state.bindAnnotations) > 0 {
		err = ab.BindAnnotated(ctx, pod, node, state.bindAnnotations)
	} else {
		err = b.Binder.Bind(ctx, pod, node)
	}
	if err != nil {
		return AsStatus(err)
	}
	return nil
}

// PrioritySort is the queue-sort plugin every profile uses: by priority,
// then by time in the queue. The queue implements the order; the plugin
// exists so profiles can name it, as in kube-scheduler.
type PrioritySort struct{}

// Name implements Plugin.
func (PrioritySort) Name() string { return "PrioritySort" }
