package guest

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// The Handle factories get is a wrapper, not the *Guest: it must still
// show the mirror, follow syncs and be a PDBHandle.
func TestHandleGivenToFactoriesFollowsTheMirror(t *testing.T) {
	var h plugin.Handle
	g := New(plugin.Registration{Name: "Watcher", New: func(_ *abi.Value, hh plugin.Handle) (plugin.Plugin, error) {
		h = hh
		return labelFilter{}, nil
	}})
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g, abi.FuncInit, 0, e.B)
	img := []abi.ImageState{{Names: []string{"nginx:1"}}}
	syncNodes(t, g, abi.Node{Name: "a", Images: img}, abi.Node{Name: "b"})
	if h.NumNodes() != 2 || len(h.Nodes()) != 2 || h.ImageNumNodes("nginx:1") != 1 {
		t.Fatalf("handle sees %d nodes, %d listed, image on %d", h.NumNodes(), len(h.Nodes()), h.ImageNumNodes("nginx:1"))
	}

	// A sync after the image index was built keeps it current: b gets
	// the image, then a reset drops both nodes.
	e.Reset()
	e.SyncHeader(abi.SyncNamespaces|abi.SyncPDBs, 2)
	e.Uvarint(1)
	e.NodeRecord(1, &abi.NodeInfo{Node: abi.Node{Name: "b", Images: img}})
	e.Uvarint(0)
	e.Uvarint(1)
	e.String("team")
	e.Labels(abi.Labels{{Key: "tier", Value: "gold"}})
	e.Uvarint(1)
	e.PDB(&abi.PDB{Namespace: "team", Name: "budget"})
	call(t, g, abi.FuncSync, 0, e.B)
	if n := h.ImageNumNodes("nginx:1"); n != 2 {
		t.Fatalf("after b gained the image, count %d, want 2", n)
	}
	if l, ok := h.NamespaceLabels("team"); !ok || len(l) != 1 || l[0].Value != "gold" {
		t.Fatalf("namespace labels %v, %v", l, ok)
	}
	if _, ok := h.NamespaceLabels("other"); ok {
		t.Fatal("an unsynced namespace was found")
	}
	ph, ok := h.(plugin.PDBHandle)
	if !ok || len(ph.PDBs()) != 1 || ph.PDBs()[0].Name != "budget" {
		t.Fatalf("PDB handle %v", ok)
	}
	syncNodes(t, g, abi.Node{Name: "c"})
	if h.NumNodes() != 1 || h.ImageNumNodes("nginx:1") != 0 {
		t.Fatalf("after a reset: %d nodes, image on %d", h.NumNodes(), h.ImageNumNodes("nginx:1"))
	}

	// A new namespace table replaces the old one.
	e.Reset()
	e.SyncHeader(abi.SyncNamespaces, 1)
	e.Uvarint(0)
	e.Uvarint(0)
	e.Uvarint(1)
	e.String("other")
	e.Labels(nil)
	call(t, g, abi.FuncSync, 0, e.B)
	if _, ok := h.NamespaceLabels("team"); ok {
		t.Fatal("a namespace of the old table survived")
	}
	if _, ok := h.NamespaceLabels("other"); !ok {
		t.Fatal("a namespace of the new table is missing")
	}
}
