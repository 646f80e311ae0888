package framework

import (
	"context"
	"errors"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// nominating is a PostFilter plugin that nominates a node and says so.
type nominating struct{}

func (nominating) Name() string { return "Nominating" }

func (nominating) PostFilter(context.Context, *CycleState, *abi.Pod, *FitError, *DryRun) (string, *Status) {
	return "n1", NewStatus(abi.Success, "preemption: found a potential placement for pod on node n1, preempting 1 victims")
}

// TestNominatingPostFilterMessageEndsTheFitError: kube-scheduler v1.37's
// FailedScheduling text for a pod whose preemption found room ends with
// what the PostFilter plugin said.
func TestNominatingPostFilterMessageEndsTheFitError(t *testing.T) {
	prof := &Profile{postFilter: []PostFilterPlugin{DynamicResources{}, nominating{}}}
	fit := &FitError{NumAllNodes: 1}
	fit.Diagnosis.AddRejection("n1", NewStatus(abi.Unschedulable, "Insufficient cpu"))
	err := prof.runPostFilter(context.Background(), nil, &abi.Pod{}, fit, nil)
	var nom *NominatedError
	if !errors.As(err, &nom) || nom.Node != "n1" {
		t.Fatalf("runPostFilter = %v, want a nomination of n1", err)
	}
	const want = "0/1 nodes are available: 1 Insufficient cpu. preemption: found a potential placement for pod on node n1, preempting 1 victims"
	if got := fit.Error(); got != want {
		t.Errorf("message = %q\nwant      %q", got, want)
	}
}
