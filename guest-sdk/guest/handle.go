package guest

import (
	"unsafe"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// handle is the plugin.Handle (and plugin.PDBHandle) factories get: the
// runtime behind an unsafe.Pointer. In TinyGo a type stored in an
// interface brings its full reflection metadata into the module, every
// field name and type reachable from it; for *Guest that is the whole
// scheduling view, 6.9 KB of a small module. An unsafe.Pointer brings
// none. Plugins only ever type-assert their Handle to plugin.PDBHandle.
type handle struct{ g unsafe.Pointer }

func (g *Guest) handle() plugin.Handle { return handle{unsafe.Pointer(g)} }

func (h handle) guest() *Guest { return (*Guest)(h.g) }

func (h handle) NumNodes() int                 { return h.guest().NumNodes() }
func (h handle) ImageNumNodes(name string) int { return h.guest().ImageNumNodes(name) }
func (h handle) Nodes() []*plugin.NodeInfo     { return h.guest().Nodes() }
func (h handle) PDBs() []abi.PDB               { return h.guest().PDBs() }
func (h handle) NodesWithAffinityPods() []*plugin.NodeInfo {
	return h.guest().NodesWithAffinityPods()
}
func (h handle) StringID(s string) abi.StrID { return h.guest().mirror.strs.Lookup(s) }
func (h handle) NamespaceLabels(name string) (abi.Labels, bool) {
	return h.guest().NamespaceLabels(name)
}
