package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// mirror is the guest's copy of the cluster as syncs left it: the nodes
// by slot, the namespaces, the PodDisruptionBudgets and the host's
// string table, with what plugin.Handle derives from them kept as cheap
// to ask again as it is to keep. Every module has one: it is what plugins
// run against. It outlives cycles and changes only in syncs.
type mirror struct {
	nodes    []*plugin.NodeInfo // by slot; nil where no node
	numNodes int
	list     []*plugin.NodeInfo // the non-nil nodes, for Handle.Nodes
	listAt   []int32            // by slot: the node's index in list
	listOK   bool               // list and listAt hold every node (syncs that only replace nodes keep them)
	affList  []*plugin.NodeInfo // nodes with affinity pods, for Handle.NodesWithAffinityPods
	affOK    bool
	nsList   []abi.Namespace       // the namespace table as last synced
	ns       map[string]abi.Labels // nsList by name, made by Handle.NamespaceLabels
	pdbs     []abi.PDB             // PodDisruptionBudgets, for PDBHandle

	// Nodes per image name, for Handle.ImageNumNodes: counted on its first
	// call, then kept up to date by syncs through countImages, a func value
	// so that modules whose plugins never ask do not link the counting.
	images      map[string]int
	countImages func(ni *plugin.NodeInfo, delta int)

	// strs is the host's string table (ABI v1.5) that node records
	// number their labels, taints, images and namespaces with; interned
	// says the records of the sync being applied are numbered (the sync
	// carried SyncStrings).
	strs     abi.StringTable
	interned bool

	// lists, when the module asked for it (LayOutNodeLists), keeps the
	// node lists by kind (layout.go).
	lists nodeLayout
}

// NumNodes implements plugin.Handle.
func (g *Guest) NumNodes() int { return g.mirror.numNodes }

// Nodes implements plugin.Handle: the mirror's nodes by slot. The list is
// rebuilt only after a sync added or removed nodes; a sync that replaces
// a node (the usual one: a pod bound) updates its entry in place, so a
// per-cycle caller does not pay for every node on every cycle.
func (g *Guest) Nodes() []*plugin.NodeInfo { return g.mirror.Nodes() }

// NodesWithAffinityPods implements plugin.Handle. The list is rebuilt
// only after a sync that changed which nodes have affinity pods.
func (g *Guest) NodesWithAffinityPods() []*plugin.NodeInfo { return g.mirror.NodesWithAffinityPods() }

// NamespaceLabels implements plugin.Handle. The table is indexed by the
// first lookup after a sync that changed it.
func (g *Guest) NamespaceLabels(name string) (abi.Labels, bool) {
	return g.mirror.NamespaceLabels(name)
}

// ImageNumNodes implements plugin.Handle.
func (g *Guest) ImageNumNodes(name string) int { return g.mirror.ImageNumNodes(name) }

// PDBs implements plugin.PDBHandle.
func (g *Guest) PDBs() []abi.PDB { return g.mirror.pdbs }

// Nodes is Guest.Nodes.
func (m *mirror) Nodes() []*plugin.NodeInfo {
	if !m.listOK {
		m.rebuildList()
	}
	return m.list
}

// rebuildList fills list and listAt by index, without append: TinyGo's
// append is a runtime call and a copy per element.
func (m *mirror) rebuildList() {
	if cap(m.list) < m.numNodes {
		m.list = make([]*plugin.NodeInfo, m.numNodes)
	}
	m.list = m.list[:m.numNodes]
	if cap(m.listAt) < len(m.nodes) {
		m.listAt = make([]int32, len(m.nodes), 2*len(m.nodes))
	}
	m.listAt = m.listAt[:len(m.nodes)]
	k := 0
	for slot, n := range m.nodes {
		m.listAt[slot] = -1
		if n != nil && k < len(m.list) {
			m.list[k] = n
			m.listAt[slot] = int32(k)
			k++
		}
	}
	m.list = m.list[:k]
	m.listOK = true
}

// NodesWithAffinityPods is Guest.NodesWithAffinityPods.
func (m *mirror) NodesWithAffinityPods() []*plugin.NodeInfo {
	if !m.affOK {
		m.affList = m.affList[:0]
		for _, n := range m.nodes {
			if n != nil && len(n.PodsWithAffinity) > 0 {
				m.affList = append(m.affList, n)
			}
		}
		m.affOK = true
	}
	return m.affList
}

// NamespaceLabels is Guest.NamespaceLabels.
func (m *mirror) NamespaceLabels(name string) (abi.Labels, bool) {
	if m.ns == nil {
		m.ns = make(map[string]abi.Labels, len(m.nsList))
		for _, n := range m.nsList {
			m.ns[n.Name] = n.Labels
		}
	}
	l, ok := m.ns[name]
	return l, ok
}

// ImageNumNodes is Guest.ImageNumNodes.
func (m *mirror) ImageNumNodes(name string) int {
	if m.countImages == nil {
		m.images = map[string]int{}
		m.countImages = m.countNodeImages
		for _, n := range m.nodes {
			if n != nil {
				m.countNodeImages(n, 1)
			}
		}
	}
	return m.images[name]
}

// sync applies a sync request to the mirror. Deletions go through
// g.deleteNode, which drops what the guest keeps per node beside it.
func (g *Guest) sync(in []byte) error {
	g.batch.forget() // the nodes may be replaced: hold none of them
	m := &g.mirror
	if len(in) > 0 && in[0]&abi.SyncReset != 0 {
		m.listOK = false
		m.affOK = false
		for i := range m.nodes {
			m.nodes[i] = nil
		}
		m.nodes = m.nodes[:0]
		m.images, m.countImages = nil, nil // recounted by the next ImageNumNodes
		m.numNodes = 0
		g.evict.obs = nil // observations go with their nodes
		if m.lists != nil {
			m.lists.reset()
		}
	}
	if len(in) > 0 && in[0]&abi.SyncNamespaces != 0 {
		m.nsList, m.ns = nil, nil
	}
	if len(in) > 0 && in[0]&abi.SyncPDBs != 0 {
		m.pdbs = nil // a new array: policies may cache what they derived from the old one
	}
	m.interned = len(in) > 0 && in[0]&abi.SyncStrings != 0
	_, _, err := abi.ParseSyncWith(in, abi.SyncHandlers{Strings: m.addStrings,
		Upsert: m.upsertNode, Delete: g.deleteNode, Namespace: m.setNamespace, PDB: m.addPDB})
	if err == nil && m.lists != nil && m.lists.due() {
		err = m.lists.relayout(m)
	}
	return err
}

// addStrings extends the string table; a new table (first 0) may only
// come with a reset mirror, which holds no numbers of the old one.
func (m *mirror) addStrings(first int, ss []string) error {
	if first == 0 && m.strs.Len() > 0 {
		if len(m.nodes) > 0 {
			return newError("a new string table without a mirror reset")
		}
		m.strs.Reset()
	}
	return m.strs.Append(first, ss)
}

func (m *mirror) addPDB(p *abi.PDB) error {
	m.pdbs = append(m.pdbs, *p)
	return nil
}

func (m *mirror) setNamespace(n abi.Namespace) error {
	m.nsList = append(m.nsList, n)
	return nil
}

// maxSlot bounds the mirror so a hostile slot number cannot make the
// guest allocate gigabytes.
const maxSlot = 1 << 22

func (m *mirror) upsertNode(slot uint32, record []byte) error {
	if slot >= maxSlot {
		return newError("node slot out of range")
	}
	// The record is copied once and the node decoded with its strings
	// aliasing the copy: one allocation for all its strings.
	return m.decodeNode(slot, nodeRecord{bytes: append([]byte(nil), record...), interned: m.interned})
}

// decodeNode decodes rec, which the guest owns, into the node of slot.
func (m *mirror) decodeNode(slot uint32, rec nodeRecord) error {
	var ni *plugin.NodeInfo
	if m.lists != nil {
		ni = m.lists.node()
	} else {
		ni = new(plugin.NodeInfo)
	}
	ni.Slot = slot
	d := abi.NewAliasingDecoder(rec.bytes)
	taken := 0
	if m.lists != nil {
		d.UseNodeLists(m.lists.source())
		taken = m.lists.Taken()
	}
	if rec.interned {
		d.SetTable(&m.strs)
	}
	d.NodeInfo(&ni.NodeInfo)
	if d.Err() != nil {
		return d.Err()
	}
	if d.Remaining() != 0 {
		return newError("node record has trailing bytes")
	}
	for int(slot) >= len(m.nodes) {
		m.nodes = append(m.nodes, nil)
	}
	if m.lists != nil {
		m.lists.keep(slot, rec, m.lists.Taken()-taken)
	}
	if old := m.nodes[slot]; old != nil {
		if m.countImages != nil {
			m.countImages(old, -1)
		}
		if len(old.PodsWithAffinity) > 0 {
			m.affOK = false
		}
		if m.listOK && int(slot) < len(m.listAt) && m.listAt[slot] >= 0 {
			m.list[m.listAt[slot]] = ni
		} else {
			m.listOK = false
		}
	} else {
		m.numNodes++
		m.listOK = false
	}
	ni.IndexPods()
	if len(ni.PodsWithAffinity) > 0 {
		m.affOK = false
	}
	m.nodes[slot] = ni
	if m.countImages != nil {
		m.countImages(ni, 1)
	}
	return nil
}

// deleteNode empties a slot, and drops its observation with it (even if
// the slot was empty).
func (g *Guest) deleteNode(slot uint32) error {
	if slot >= maxSlot {
		return newError("node slot out of range")
	}
	g.evict.dropObservation(slot)
	return g.mirror.deleteNode(slot)
}

// deleteNode empties a slot below maxSlot. It is idempotent: a slot reused and deleted
// again while this instance was not syncing is deleted twice.
func (m *mirror) deleteNode(slot uint32) error {
	if int(slot) >= len(m.nodes) || m.nodes[slot] == nil {
		return nil
	}
	if m.countImages != nil {
		m.countImages(m.nodes[slot], -1)
	}
	if len(m.nodes[slot].PodsWithAffinity) > 0 {
		m.affOK = false
	}
	m.nodes[slot] = nil
	if m.lists != nil {
		m.lists.keep(slot, nodeRecord{}, 0)
	}
	m.numNodes--
	m.listOK = false
	return nil
}

func (m *mirror) countNodeImages(ni *plugin.NodeInfo, delta int) {
	for i := range ni.Node.Images {
		for _, name := range ni.Node.Images[i].Names {
			if n := m.images[name] + delta; n > 0 {
				m.images[name] = n
			} else {
				delete(m.images, name)
			}
		}
	}
}

// numberPod gives a pod that came as text (the cycle's pod, a what-if
// pod) the StrIDs node records would give it, where plugins compare it
// with records: labels, namespace, node selector, tolerations. With no
// string table (a host before v1.5 sent none) everything stays 0 and
// plugins compare strings.
func (m *mirror) numberPod(p *abi.Pod) {
	if m.strs.Len() == 0 {
		return
	}
	m.strs.Number(p.Labels)
	m.strs.Number(p.NodeSelector)
	p.NamespaceID = m.strs.Lookup(p.Namespace)
	for i := range p.Tolerations {
		t := &p.Tolerations[i]
		t.KeyID, t.ValueID = m.strs.Lookup(t.Key), m.strs.Lookup(t.Value)
	}
}
