// Package knativedefaults lists the plugins of the knative bundle, the
// Wasm module of Knative Eventing v1.16.0's vpod predicates and
// priorities (plugins-wasm/cmd/knative). The list is a package (not the
// module's main) so the host can build the same plugins as a native twin.
package knativedefaults

import (
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/knative"
)

// Plugins of the knative bundle: the ten plugins, EvenPodSpread serving
// as both a predicate and a priority.
func Plugins() []plugin.Registration {
	return []plugin.Registration{
		knative.PodFitsResourcesRegistration,
		knative.NoMaxResourceCountRegistration,
		knative.EvenPodSpreadRegistration,
		knative.AvailabilityNodePriorityRegistration,
		knative.AvailabilityZonePriorityRegistration,
		knative.LowestOrdinalPriorityRegistration,
		knative.RemoveWithEvenPodSpreadPriorityRegistration,
		knative.RemoveWithAvailabilityNodePriorityRegistration,
		knative.RemoveWithAvailabilityZonePriorityRegistration,
		knative.RemoveWithHighestOrdinalPriorityRegistration,
	}
}
