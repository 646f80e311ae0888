package plugin

import "github.com/wasmsched/wasmsched/abi"

// NodeInfo is a node as plugins see it: the node, the aggregates of the
// pods on it, and its slot in the mirror. Treat it as read-only.
type NodeInfo struct {
	abi.NodeInfo
	// Slot is the node's index in the host's node table; stable for the
	// node's lifetime, reused after it is deleted.
	Slot uint32
}

// Name is the node's name.
func (n *NodeInfo) Name() string { return n.Node.Name }

// Label returns the value of a node label.
func (n *NodeInfo) Label(key string) (string, bool) { return n.Node.Labels.Get(key) }
