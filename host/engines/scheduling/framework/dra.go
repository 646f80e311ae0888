package framework

import (
	"context"

	"github.com/wasmsched/wasmsched/abi"
)

// DynamicResourcesName is kube-scheduler's DynamicResources plugin, which
// its v1.37 default profile runs (dynamic resource allocation is GA).
const DynamicResourcesName = "DynamicResources"

// DynamicResources stands in for kube-scheduler's DynamicResources plugin
// at PostFilter, its one point that shows for pods without resource
// claims. wasmsched allocates no claims, so it has none to deallocate:
// it says Unschedulable with no reason, as upstream's does since v1.37,
// so preemption's text follows the filter reasons alone ("0/3 nodes are
// available: 3 Insufficient cpu. preemption: ..."). When a PreFilter
// plugin rejected the pod as Unresolvable, upstream's DynamicResources
// PreFilter never ran and its PostFilter fails reading its state ("not
// found"), which ends the point before preemption and leaves the pod
// unschedulable; the stand-in ends it with an Unresolvable "not found",
// so the messages match. Disable it like any plugin to drop the latter.
type DynamicResources struct{}

// Name implements Plugin.
func (DynamicResources) Name() string { return DynamicResourcesName }

// PostFilter implements PostFilterPlugin.
func (DynamicResources) PostFilter(_ context.Context, _ *CycleState, _ *abi.Pod, fit *FitError, _ *DryRun) (string, *Status) {
	if fit.Diagnosis.PreFilterMsg != "" && fit.Diagnosis.preFilterUnresolvable {
		return "", NewStatus(abi.UnschedulableAndUnresolvable, "not found")
	}
	return "", NewStatus(abi.Unschedulable)
}
