package framework

import (
	"context"

	"github.com/wasmsched/wasmsched/abi"
)

// The host extension points after filtering and scoring, in cycle order.
// Each stamps the failing plugin's name on the status.

// RunReserve runs the Reserve plugins; on failure the caller must run
// RunUnreserve.
func (prof *Profile) RunReserve(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status {
	for _, p := range prof.reserve {
		if st := p.Reserve(ctx, state, pod, node); !st.IsSuccess() {
			st.Plugin = p.Name()
			return st
		}
	}
	return nil
}

// RunUnreserve runs every Reserve plugin's Unreserve, in reverse order.
func (prof *Profile) RunUnreserve(ctx context.Context, state *CycleState, pod *abi.Pod, node string) {
	for i := len(prof.reserve) - 1; i >= 0; i-- {
		prof.reserve[i].Unreserve(ctx, state, pod, node)
	}
}

// RunPermit runs the Permit plugins. Waiting is not supported yet: a Wait
// status is reported as an error naming the plugin.
func (prof *Profile) RunPermit(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status {
	for _, p := range prof.permit {
		st, _ := p.Permit(ctx, state, pod, node)
		if st.IsSuccess() {
			continue
		}
		if st.Code == Wait {
			st = NewStatus(abi.Error, "Permit Wait is not supported by this host")
		}
		st.Plugin = p.Name()
		return st
	}
	return nil
}

// RunPreBind runs the PreBind plugins.
func (prof *Profile) RunPreBind(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status {
	for _, p := range prof.preBind {
		if st := p.PreBind(ctx, state, pod, node); !st.IsSuccess() {
			st.Plugin = p.Name()
			return st
		}
	}
	return nil
}

// RunBind runs the Bind plugins until one does not Skip.
func (prof *Profile) RunBind(ctx context.Context, state *CycleState, pod *abi.Pod, node string) *Status {
	for _, p := range prof.bind {
		st := p.Bind(ctx, state, pod, node)
		if st != nil && st.Code == abi.Skip {
			continue
		}
		if st != nil {
			st.Plugin = p.Name()
		}
		return st
	}
	return NewStatus(abi.Error, "no bind plugin bound the pod")
}

// RunPostBind tells the PostBind plugins about a binding.
func (prof *Profile) RunPostBind(ctx context.Context, state *CycleState, pod *abi.Pod, node string) {
	for _, p := range prof.postBind {
		p.PostBind(ctx, state, pod, node)
	}
}
