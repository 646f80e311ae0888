// Command zonepicker is a test guest with one Score plugin, ZonePicker,
// that gives 100 to nodes in one zone and 0 to the others. The zone is
// fixed at build time (-ldflags "-X main.zone=zone-b"), so two builds are
// two modules with the same plugin and opposite policies: what the hot
// reload tests swap in a running scheduler.
package main

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// zone is the zone this build prefers.
var zone = "zone-a"

// ZonePicker scores nodes by zone.
type ZonePicker struct{}

// Name implements plugin.Plugin.
func (ZonePicker) Name() string { return "ZonePicker" }

// Score implements plugin.ScorePlugin.
func (ZonePicker) Score(_ *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	if v, _ := node.Label("topology.kubernetes.io/zone"); v == zone {
		return abi.MaxScore, nil
	}
	return 0, nil
}

func init() {
	guest.Register(plugin.Registration{
		Name: "ZonePicker",
		New:  func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return ZonePicker{}, nil },
	})
}

func main() {}
