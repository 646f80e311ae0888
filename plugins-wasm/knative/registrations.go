package knative

import "github.com/wasmsched/wasmsched/guest-sdk/plugin"

// Registrations of the ten plugins.
var (
	PodFitsResourcesRegistration                   = registration(PodFitsResources{PodFitsResourcesName})
	NoMaxResourceCountRegistration                 = registration(NoMaxResourceCount{NoMaxResourceCountName})
	EvenPodSpreadRegistration                      = registration(EvenPodSpread{EvenPodSpreadName})
	AvailabilityNodePriorityRegistration           = registration(AvailabilityNodePriority{AvailabilityNodePriorityName})
	AvailabilityZonePriorityRegistration           = registration(AvailabilityZonePriority{AvailabilityZonePriorityName})
	LowestOrdinalPriorityRegistration              = registration(LowestOrdinalPriority{LowestOrdinalPriorityName})
	RemoveWithEvenPodSpreadPriorityRegistration    = registration(RemoveWithEvenPodSpreadPriority{RemoveWithEvenPodSpreadPriorityName})
	RemoveWithAvailabilityNodePriorityRegistration = registration(RemoveWithAvailabilityNodePriority{RemoveWithAvailabilityNodePriorityName})
	RemoveWithAvailabilityZonePriorityRegistration = registration(RemoveWithAvailabilityZonePriority{RemoveWithAvailabilityZonePriorityName})
	RemoveWithHighestOrdinalPriorityRegistration   = registration(RemoveWithHighestOrdinalPriority{RemoveWithHighestOrdinalPriorityName})
)

// Interfaces each plugin implements, checked at compile time.
var (
	_ plugin.VPodPredicatePlugin = PodFitsResources{}
	_ plugin.VPodPredicatePlugin = NoMaxResourceCount{}
	_ plugin.VPodPredicatePlugin = EvenPodSpread{}
	_ plugin.VPodPriorityPlugin  = EvenPodSpread{}
	_ plugin.VPodPriorityPlugin  = AvailabilityNodePriority{}
	_ plugin.VPodPriorityPlugin  = AvailabilityZonePriority{}
	_ plugin.VPodPriorityPlugin  = LowestOrdinalPriority{}
	_ plugin.VPodPriorityPlugin  = RemoveWithEvenPodSpreadPriority{}
	_ plugin.VPodPriorityPlugin  = RemoveWithAvailabilityNodePriority{}
	_ plugin.VPodPriorityPlugin  = RemoveWithAvailabilityZonePriority{}
	_ plugin.VPodPriorityPlugin  = RemoveWithHighestOrdinalPriority{}
)
