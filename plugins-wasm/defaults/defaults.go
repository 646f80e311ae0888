// Package defaults lists the plugins of the default policy bundle, the
// Wasm module the built-in default-scheduler profile runs. The list is a
// package (not the module's main) so the host can build the same plugins
// as a native twin.
package defaults

import (
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaultpreemption"
	"github.com/wasmsched/wasmsched/plugins-wasm/imagelocality"
	"github.com/wasmsched/wasmsched/plugins-wasm/interpodaffinity"
	"github.com/wasmsched/wasmsched/plugins-wasm/nodeaffinity"
	"github.com/wasmsched/wasmsched/plugins-wasm/nodedeclaredfeatures"
	"github.com/wasmsched/wasmsched/plugins-wasm/nodename"
	"github.com/wasmsched/wasmsched/plugins-wasm/nodeports"
	"github.com/wasmsched/wasmsched/plugins-wasm/noderesources"
	"github.com/wasmsched/wasmsched/plugins-wasm/nodeunschedulable"
	"github.com/wasmsched/wasmsched/plugins-wasm/podtopologyspread"
	"github.com/wasmsched/wasmsched/plugins-wasm/tainttoleration"
)

// Plugins of the default bundle, in kube-scheduler's default filter order
// (which decides the reason a node reports when several plugins reject it).
func Plugins() []plugin.Registration {
	return []plugin.Registration{
		nodeunschedulable.Registration,
		nodename.Registration,
		tainttoleration.Registration,
		nodeaffinity.Registration,
		nodeports.Registration,
		noderesources.FitRegistration,
		podtopologyspread.Registration,
		interpodaffinity.Registration,
		noderesources.BalancedAllocationRegistration,
		imagelocality.Registration,
		defaultpreemption.Registration,
		// Last, as kube-scheduler appends it to its default set.
		nodedeclaredfeatures.Registration,
	}
}
