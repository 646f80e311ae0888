// Command misbehave is a purpose-built guest for the host's sandbox tests:
// its plugins trap, loop forever, or eat memory on demand, next to one that
// behaves, so tests can show the host survives each and keeps serving.
//
// The pod's name picks the behaviour of Filter: "trap", "loop", "hog",
// "grow" (keeps 1 MiB more per call, and passes), anything else passes. Built with TinyGo (committed) and Go (at test time).
package main

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Misbehave does what the pod's name says.
type Misbehave struct{}

// Name implements plugin.Plugin.
func (Misbehave) Name() string { return "Misbehave" }

var sink [][]byte

var spin = 1

// Filter implements plugin.FilterPlugin.
func (Misbehave) Filter(_ *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	switch pod.Name {
	case "trap":
		var nodes []*plugin.NodeInfo
		return plugin.NewStatus(abi.Unschedulable, nodes[len(pod.Name)].Name()) // index out of range
	case "loop":
		for spin != 0 {
			spin = spin*3 + 1
			if spin == 0 {
				spin = 1
			}
		}
	case "hog":
		for {
			sink = append(sink, make([]byte, 1<<20))
		}
	case "grow":
		sink = append(sink, make([]byte, 1<<20))
	case "log":
		plugin.Log(abi.LogWarn, "misbehave says hello from "+node.Name())
	}
	return nil
}

func init() {
	guest.Register(plugin.Registration{
		Name: "Misbehave",
		New:  func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return Misbehave{}, nil },
	})
}

func main() {}
