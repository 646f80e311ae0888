// Package evictiondefaults lists the plugins of the eviction bundle, the
// Wasm module of the default eviction policies (plugins-wasm/cmd/eviction).
// The list is a package (not the module's main) so the host can build the
// same plugins as a native twin.
package evictiondefaults

import (
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/eviction"
)

// Plugins of the eviction bundle. They share one module, so one node
// mirror and one set of observations serve all three.
func Plugins() []plugin.Registration {
	return []plugin.Registration{
		eviction.ResourceOvercommitRegistration,
		eviction.NodePressureRegistration,
		eviction.UsageThresholdRegistration,
	}
}
