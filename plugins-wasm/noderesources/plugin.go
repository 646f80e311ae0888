// Package noderesources holds kube-scheduler's two resource plugins as
// wasmsched policies: NodeResourcesFit (does the pod fit the node's free
// resources, and how full would the node be) and
// NodeResourcesBalancedAllocation (prefer nodes whose resources would be
// used evenly). They share resource classification and request math, as
// upstream, hence one package with two registrations.
package noderesources

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Plugin names in a profile, the same as kube-scheduler's so existing
// configurations carry over.
const (
	// FitName names the fit filter and its resource scoring.
	FitName = "NodeResourcesFit"
	// BalancedAllocationName names the balance score.
	BalancedAllocationName = "NodeResourcesBalancedAllocation"
)

// Rejection reasons of NodeResourcesFit, kube-scheduler's wording. A scalar
// resource fails with "Insufficient <name>".
const (
	// ReasonTooManyPods: the node already runs its allocatable pods.
	ReasonTooManyPods = "Too many pods"
	// ReasonInsufficientCPU: the pod's CPU request exceeds what is free.
	ReasonInsufficientCPU = "Insufficient cpu"
	// ReasonInsufficientMemory: the memory request exceeds what is free.
	ReasonInsufficientMemory = "Insufficient memory"
	// ReasonInsufficientEphemeral: the ephemeral-storage request exceeds
	// what is free.
	ReasonInsufficientEphemeral = "Insufficient ephemeral-storage"
	// ReasonInsufficientScalarPrefix precedes a scalar resource's name.
	ReasonInsufficientScalarPrefix = "Insufficient "
)

var (
	_ plugin.PreFilterPlugin = (*Fit)(nil)
	_ plugin.FilterPlugin    = (*Fit)(nil)
	_ plugin.PreScorePlugin  = (*Fit)(nil)
	_ plugin.ScorePlugin     = (*Fit)(nil)

	_ plugin.PreScorePlugin = (*BalancedAllocation)(nil)
	_ plugin.ScorePlugin    = (*BalancedAllocation)(nil)
)

// FitRegistration lets a module register NodeResourcesFit.
var FitRegistration = plugin.Registration{Name: FitName, New: NewFit}

// BalancedAllocationRegistration lets a module register
// NodeResourcesBalancedAllocation.
var BalancedAllocationRegistration = plugin.Registration{Name: BalancedAllocationName, New: NewBalancedAllocation}

// statusSkip is shared by both plugins' Skip verdicts.
var statusSkip = plugin.NewStatus(abi.Skip)
