// Command sizecheck is the smallest useful module: one Filter and one
// Score plugin, written as the README's "Writing a plugin" shows. Its
// test builds it with TinyGo and fails if it reaches maxModuleSize, so the
// fixed cost of the guest SDK (docs/ABI.md, "What a module pays for")
// cannot creep up unnoticed.
package main

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// poolLabel is the node label PoolFilter checks.
const poolLabel = "example.com/pool"

// Built once: the SDK reports every node failing this way as one entry.
var notInPool = plugin.NewStatus(abi.UnschedulableAndUnresolvable, "node(s) not in the batch pool")

// PoolFilter passes the nodes labelled example.com/pool=batch.
type PoolFilter struct{}

// Name implements plugin.Plugin.
func (PoolFilter) Name() string { return "PoolFilter" }

// Filter implements plugin.FilterPlugin.
func (PoolFilter) Filter(_ *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	if v, ok := node.Label(poolLabel); !ok || v != "batch" {
		return notInPool
	}
	return nil
}

// CPUScore prefers nodes with more allocatable CPU: one point per core,
// up to abi.MaxScore.
type CPUScore struct{}

// Name implements plugin.Plugin.
func (CPUScore) Name() string { return "CPUScore" }

// Score implements plugin.ScorePlugin.
func (CPUScore) Score(_ *plugin.CycleState, _ *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	return min(node.Node.Allocatable.MilliCPU/1000, abi.MaxScore), nil
}

var registrations = []plugin.Registration{
	{Name: "PoolFilter", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return PoolFilter{}, nil }},
	{Name: "CPUScore", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return CPUScore{}, nil }},
}

func init() { guest.Register(registrations...) }

func main() {}
