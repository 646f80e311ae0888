// Package nodeports is kube-scheduler's NodePorts plugin as a wasmsched
// policy: a pod fits a node only if none of the host ports it binds is
// already bound there.
package nodeports

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile, the same as kube-scheduler's so
// existing configurations carry over.
const Name = "NodePorts"

// ErrReason is the rejection reason, kube-scheduler's wording, so that
// FailedScheduling events read the same as with the stock scheduler.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

// bindAllIP is what an empty hostIP means: every address of the node.
const bindAllIP = "0.0.0.0"

var (
	// Unschedulable, not unresolvable: evicting the pod holding the port
	// frees it, so preemption can help.
	statusConflict = plugin.NewStatus(abi.Unschedulable, ErrReason)
	statusSkip     = plugin.NewStatus(abi.Skip)
)

// preFilterKey holds the pod's wanted host ports.
var preFilterKey = plugin.NewStateKey()

// NodePorts filters out nodes where a wanted host port is taken.
type NodePorts struct{}

var (
	_ plugin.PreFilterPlugin = (*NodePorts)(nil)
	_ plugin.FilterPlugin    = (*NodePorts)(nil)
)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// New builds the plugin; it takes no args, as upstream.
func New(_ *abi.Value, _ plugin.Handle) (plugin.Plugin, error) { return &NodePorts{}, nil }

// Name implements plugin.Plugin.
func (*NodePorts) Name() string { return Name }

// preFilterState is the pod's host ports; immutable, so Clone shares it.
type preFilterState struct {
	ports []abi.HostPort
}

// Clone implements plugin.StateData.
func (s *preFilterState) Clone() plugin.StateData { return s }

// noPorts is the state of every pod binding no host port.
var noPorts = &preFilterState{}

// PreFilter collects the host ports the pod binds for its whole life: those
// of its app containers and of its sidecars (restartable init containers,
// kubernetes#132040). Plain init containers exit before the app starts, so
// kube-scheduler does not count them. A pod binding no host port skips
// Filter entirely.
func (*NodePorts) PreFilter(state *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	s := newPreFilterState(pod)
	state.Write(preFilterKey, s)
	if len(s.ports) == 0 {
		return statusSkip
	}
	return nil
}

// newPreFilterState collects the pod's host ports with empty IPs read as
// 0.0.0.0; a pod with none gets the shared noPorts.
func newPreFilterState(pod *abi.Pod) *preFilterState {
	var ports []abi.HostPort
	for i := range pod.Containers {
		ports = appendHostPorts(ports, pod.Containers[i].Ports)
	}
	for i := range pod.InitContainers {
		if pod.InitContainers[i].RestartAlways {
			ports = appendHostPorts(ports, pod.InitContainers[i].Ports)
		}
	}
	if len(ports) == 0 {
		return noPorts
	}
	for i := range ports {
		if ports[i].IP == "" {
			ports[i].IP = bindAllIP
		}
	}
	return &preFilterState{ports: ports}
}

// appendHostPorts keeps only real host ports: kube ignores hostPort <= 0.
func appendHostPorts(dst, ports []abi.HostPort) []abi.HostPort {
	for _, p := range ports {
		if p.Port > 0 {
			dst = append(dst, p)
		}
	}
	return dst
}

// Filter rejects the node if any wanted port conflicts with a used one.
func (*NodePorts) Filter(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	s, ok := state.Read(preFilterKey).(*preFilterState)
	if !ok {
		// PreFilter did not run: compute its state once and keep it for
		// the cycle's other nodes.
		s = newPreFilterState(pod)
		state.Write(preFilterKey, s)
	}
	for i := range s.ports {
		if conflicts(node.UsedPorts, &s.ports[i]) {
			return statusConflict
		}
	}
	return nil
}

// conflicts applies kube's HostPortInfo.CheckConflict: the same protocol
// and port clash when either side binds 0.0.0.0 (or "") or both bind the
// same address. want.IP is already normalised.
func conflicts(used []abi.HostPort, want *abi.HostPort) bool {
	for i := range used {
		u := &used[i]
		if u.Port != want.Port || u.Protocol != want.Protocol {
			continue
		}
		if want.IP == bindAllIP || u.IP == "" || u.IP == bindAllIP || u.IP == want.IP {
			return true
		}
	}
	return false
}
