// Package snapshot holds the host's view of the cluster that one scheduling
// cycle reads: nodes with their aggregates, each in a stable slot and
// stamped with a generation, and each node's ABI encoding cached at that
// generation.
//
// Generations come from one counter shared by all nodes, so "what changed
// since generation G" is a single number per guest instance: a mirror sync
// sends the nodes whose generation is above what that instance has seen,
// reusing the cached encodings, plus the slots deleted since then.
package snapshot

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/wasmsched/wasmsched/abi"
)

// NodeInfo is a node, its pods and their aggregates, in a slot.
type NodeInfo struct {
	Slot       uint32
	Generation uint64
	Info       abi.NodeInfo

	// Encodings cached, one per PodsMode in use (a snapshot's nodes are
	// encoded in the few modes its modules read, so a short list costs
	// less than a slot for every mode). Guarded by mu:
	// several pool instances may sync from one snapshot at once.
	mu      sync.Mutex
	records []record
}

// record is a node's encoding in one PodsMode (BeforeV17 aside), as of a
// generation.
type record struct {
	mode PodsMode
	gen  uint64
	// strs is the string table an interned record was numbered with: a
	// new table makes it stale whatever the generation.
	strs *Strings
	// v16 is where b ends for a module before ABI v1.7, which reads it
	// without the trailing declared features.
	v16 int
	b   []byte
}

// PodsMode says which pods a node record carries, and in which format.
type PodsMode int

const (
	// NoPods: aggregates only.
	NoPods PodsMode = iota
	// AffinityPods: only pods with pod (anti-)affinity terms.
	AffinityPods
	// AllPods: every pod.
	AllPods

	// PodsBeforeV14 is added to AffinityPods or AllPods for a module
	// built before ABI v1.4, which reads pods without the fields v1.4
	// added (see abi.Encoder.SetPeerMinor).
	PodsBeforeV14 PodsMode = 4
	// Interned is added for a module of ABI v1.5 or later: the record's
	// label keys and values, taint keys and values, image names and
	// namespaces are StrIDs of the snapshot's string table.
	Interned PodsMode = 8
	// BeforeV17 is added for a module built before ABI v1.7, whose
	// records end before the node's declared features. It shares the
	// cached encoding of the mode without it (the older record is a
	// prefix of the newer one).
	BeforeV17 PodsMode = 16
)

// PodsModeFor picks the record mode for a module: the pods its manifest
// flags ask for, in the format of its ABI minor version.
func PodsModeFor(flags uint32, minor uint16) PodsMode {
	mode := NoPods
	switch {
	case flags&abi.ManifestWantsPods != 0:
		mode = AllPods
	case flags&abi.ManifestWantsAffinityPods != 0:
		mode = AffinityPods
	}
	return mode.ForMinor(minor)
}

// ForMinor is the mode with the record format a module of that ABI minor
// version reads: its pods' format, interned strings from v1.5, the
// declared features from v1.7.
func (m PodsMode) ForMinor(minor uint16) PodsMode {
	m &^= PodsBeforeV14 | Interned | BeforeV17
	if minor < 7 {
		m |= BeforeV17
	}
	if m&^BeforeV17 != NoPods && minor < 4 {
		m |= PodsBeforeV14
	}
	if minor >= 5 {
		m |= Interned
	}
	return m
}

// Record returns the node's NodeInfo encoding with the pods mode asks
// for, encoding it at most once per generation. An Interned mode numbers
// strings with strs.
func (n *NodeInfo) Record(mode PodsMode, strs *Strings) []byte {
	k := mode &^ BeforeV17
	if mode&Interned == 0 {
		strs = nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var r *record
	for i := range n.records {
		if n.records[i].mode == k {
			r = &n.records[i]
			break
		}
	}
	if r == nil {
		n.records = append(n.records, record{mode: k})
		r = &n.records[len(n.records)-1]
	}
	if r.b == nil || r.gen != n.Generation || r.strs != strs {
		info := n.Info
		switch mode &^ (PodsBeforeV14 | Interned | BeforeV17) {
		case NoPods:
			info.Pods = nil
		case AffinityPods:
			info.Pods = nil
			for i := range n.Info.Pods {
				if p := &n.Info.Pods[i]; p.PodAffinity != nil || p.PodAntiAffinity != nil {
					info.Pods = append(info.Pods, *p)
				}
			}
		}
		e := abi.Encoder{B: make([]byte, 0, len(r.b))}
		if mode&PodsBeforeV14 != 0 {
			e.SetPeerMinor(3)
		}
		if strs != nil {
			e.SetInterner(strs)
		}
		r.v16 = e.NodeInfoBeforeV17(&info)
		r.b, r.gen, r.strs = e.B, n.Generation, strs
	}
	if mode&BeforeV17 != 0 {
		return r.b[:r.v16]
	}
	return r.b
}

// tombstone remembers a deleted node's slot so syncs can tell guests.
type tombstone struct {
	slot uint32
	gen  uint64
}

// maxTombstones bounds the deletions remembered; a guest further behind
// is resynced from scratch.
const maxTombstones = 4096

// Snapshot is a set of nodes in slots. It is not safe for concurrent
// mutation; a cycle reads it while nothing writes it.
type Snapshot struct {
	generation uint64
	slots      []*NodeInfo // by slot; nil where free
	free       []uint32
	byName     map[string]*NodeInfo
	order      []*NodeInfo // the order cycles walk nodes in
	tombs      []tombstone
	// floor is the oldest generation a delta can start from: deletions
	// at or below it have been forgotten.
	floor uint64
	// namespaces and the generation of their last change: guests get the
	// whole (small, rarely changing) table when it changed.
	namespaces map[string]abi.Labels
	nsGen      uint64
	// pdbs (by namespace/name) and the generation of their last change,
	// sent whole to preemption policies when it changed, like namespaces.
	pdbs   map[string]*abi.PDB
	pdbGen uint64
	// changes logs every node change in generation order, so "what
	// changed since G" walks only the changes, not every node (a cycle
	// does this per module instance). A node changed twice has two
	// entries; only the one matching its current generation counts.
	changes []change
	// strs numbers the strings of interned records; shared with the
	// snapshots copied from this one (UpdateFrom).
	strs *Strings
}

// change is one entry of the change log.
type change struct {
	gen uint64
	ni  *NodeInfo
}

// touch stamps a node with a new generation and logs it.
func (s *Snapshot) touch(ni *NodeInfo) {
	s.renewStrings()
	s.generation++
	ni.Generation = s.generation
	s.changes = append(s.changes, change{s.generation, ni})
	if len(s.changes) > 2*len(s.order)+64 {
		s.compactChanges()
	}
}

// compactChanges keeps one entry per live node, in generation order.
func (s *Snapshot) compactChanges() {
	kept := s.changes[:0]
	for _, c := range s.changes {
		if c.ni.Generation == c.gen && s.slots[c.ni.Slot] == c.ni {
			kept = append(kept, c)
		}
	}
	clear(s.changes[len(kept):])
	s.changes = kept
}

// changedSince calls fn for every live node changed after gen, newest
// first, once each.
func (s *Snapshot) changedSince(gen uint64, fn func(*NodeInfo)) {
	for i := len(s.changes) - 1; i >= 0; i-- {
		c := s.changes[i]
		if c.gen <= gen {
			return
		}
		if c.ni.Generation == c.gen && int(c.ni.Slot) < len(s.slots) && s.slots[c.ni.Slot] == c.ni {
			fn(c.ni)
		}
	}
}

// New returns an empty snapshot.
func New() *Snapshot {
	return &Snapshot{byName: map[string]*NodeInfo{}, namespaces: map[string]abi.Labels{}, strs: NewStrings()}
}

// Strings is the string table interned records are numbered with.
func (s *Snapshot) Strings() *Strings { return s.strs }

// renewStrings starts a new string table once the current one is full:
// every mirror then resyncs from scratch (the floor moves up to now), and
// strings no longer in use stop costing guests memory.
func (s *Snapshot) renewStrings() {
	if s.strs.Len() < maxStrings {
		return
	}
	s.strs = NewStrings()
	s.generation++
	s.floor = s.generation
}

// SetNamespace adds or relabels a namespace.
func (s *Snapshot) SetNamespace(name string, labels abi.Labels) {
	s.generation++
	s.namespaces[name] = labels
	s.nsGen = s.generation
}

// RemoveNamespace deletes a namespace.
func (s *Snapshot) RemoveNamespace(name string) {
	if _, ok := s.namespaces[name]; !ok {
		return
	}
	s.generation++
	delete(s.namespaces, name)
	s.nsGen = s.generation
}

// SetPDB adds or replaces a PodDisruptionBudget.
func (s *Snapshot) SetPDB(p *abi.PDB) {
	if s.pdbs == nil {
		s.pdbs = map[string]*abi.PDB{}
	}
	s.generation++
	s.pdbs[p.Namespace+"/"+p.Name] = p
	s.pdbGen = s.generation
}

// RemovePDB deletes a PodDisruptionBudget.
func (s *Snapshot) RemovePDB(namespace, name string) {
	key := namespace + "/" + name
	if _, ok := s.pdbs[key]; !ok {
		return
	}
	s.generation++
	delete(s.pdbs, key)
	s.pdbGen = s.generation
}

// PDBs returns the budget table sorted by namespace and name. The
// budgets are shared: do not modify them.
func (s *Snapshot) PDBs() []*abi.PDB {
	out := make([]*abi.PDB, 0, len(s.pdbs))
	for _, p := range s.pdbs {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *abi.PDB) int {
		if c := cmp.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// Namespaces returns the namespace table sorted by name.
func (s *Snapshot) Namespaces() []abi.Namespace {
	out := make([]abi.Namespace, 0, len(s.namespaces))
	for n, l := range s.namespaces {
		out = append(out, abi.Namespace{Name: n, Labels: l})
	}
	slices.SortFunc(out, func(a, b abi.Namespace) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Generation is the newest generation stamped on any change.
func (s *Snapshot) Generation() uint64 { return s.generation }

// NumNodes is the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.order) }

// Nodes lists the nodes in walking order. Do not modify the slice.
func (s *Snapshot) Nodes() []*NodeInfo { return s.order }

// Get returns the node with this name, or nil.
func (s *Snapshot) Get(name string) *NodeInfo { return s.byName[name] }

// Slot returns the node in a slot, or nil.
func (s *Snapshot) Slot(slot uint32) *NodeInfo {
	if int(slot) < len(s.slots) {
		return s.slots[slot]
	}
	return nil
}

// SetNode adds a node or replaces its spec, keeping its pods.
func (s *Snapshot) SetNode(n abi.Node) *NodeInfo {
	if ni := s.byName[n.Name]; ni != nil {
		ni.Info.Node = n
		s.touch(ni)
		return ni
	}
	ni := &NodeInfo{Info: abi.NodeInfo{Node: n}}
	if k := len(s.free); k > 0 {
		ni.Slot = s.free[k-1]
		s.free = s.free[:k-1]
		s.slots[ni.Slot] = ni
	} else {
		ni.Slot = uint32(len(s.slots))
		s.slots = append(s.slots, ni)
	}
	s.byName[n.Name] = ni
	s.order = append(s.order, ni)
	s.touch(ni)
	return ni
}

// RemoveNode deletes a node and its pods.
func (s *Snapshot) RemoveNode(name string) error {
	ni := s.byName[name]
	if ni == nil {
		return fmt.Errorf("remove node %q: not in snapshot", name)
	}
	s.generation++
	delete(s.byName, name)
	s.slots[ni.Slot] = nil
	s.free = append(s.free, ni.Slot)
	for i, o := range s.order {
		if o == ni {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
	s.tombs = append(s.tombs, tombstone{slot: ni.Slot, gen: s.generation})
	if len(s.tombs) > maxTombstones {
		s.floor = s.tombs[0].gen
		s.tombs = s.tombs[1:]
	}
	return nil
}

// AddPod puts a pod on its node (pod.NodeName) and updates the aggregates.
func (s *Snapshot) AddPod(pod *abi.Pod) error {
	ni := s.byName[pod.NodeName]
	if ni == nil {
		return fmt.Errorf("add pod %s/%s: node %q not in snapshot", pod.Namespace, pod.Name, pod.NodeName)
	}
	ni.Info.AddPod(pod)
	s.touch(ni)
	return nil
}

// RemovePod takes a pod (by UID) off its node and updates the aggregates.
func (s *Snapshot) RemovePod(pod *abi.Pod) error {
	ni := s.byName[pod.NodeName]
	if ni == nil || !removePodByUID(&ni.Info, pod.UID) {
		return fmt.Errorf("remove pod %s/%s: not on node %q", pod.Namespace, pod.Name, pod.NodeName)
	}
	s.touch(ni)
	return nil
}

// removePodByUID removes the pod with this UID, and its share of the
// aggregates; it reports whether the pod was there.
func removePodByUID(ni *abi.NodeInfo, uid string) bool {
	for i := range ni.Pods {
		if ni.Pods[i].UID == uid {
			p := ni.Pods[i]
			ni.RemovePod(&p)
			return true
		}
	}
	return false
}

// Delta is what a guest at generation `since` lacks: the changed nodes
// and the deleted slots. Reset means the guest must drop its mirror first
// (it is too far behind, or new).
type Delta struct {
	Reset   bool
	Changed []*NodeInfo
	Deleted []uint32
	// Namespaces is the whole namespace table when it changed since, else nil.
	Namespaces []abi.Namespace
	// PDBsChanged says the budget table changed since; PDBs is then all of it.
	PDBsChanged bool
	PDBs        []*abi.PDB
	// Strings numbers the strings of interned records (Interned modes).
	Strings *Strings
}

// StringsSent is how much of a string table one guest has received: a
// client keeps one per instance, and zeroes it when the instance's mirror
// is lost.
type StringsSent struct {
	table *Strings
	n     int
}

// DeltaSince collects the changes after generation since into d (reusing
// its slices). A guest that has seen nothing passes 0.
func (s *Snapshot) DeltaSince(since uint64, d *Delta) {
	d.Changed, d.Deleted, d.Namespaces = d.Changed[:0], d.Deleted[:0], nil
	d.PDBsChanged, d.PDBs = false, nil
	d.Strings = s.strs
	d.Reset = since == 0 || since < s.floor
	if s.nsGen > 0 && (d.Reset || s.nsGen > since) {
		d.Namespaces = s.Namespaces()
	}
	if s.pdbGen > 0 && (d.Reset || s.pdbGen > since) {
		d.PDBsChanged, d.PDBs = true, s.PDBs()
	}
	if d.Reset {
		d.Changed = append(d.Changed, s.order...)
		return
	}
	s.changedSince(since, func(ni *NodeInfo) { d.Changed = append(d.Changed, ni) })
	for _, t := range s.tombs {
		// A slot taken again by a newer node is sent as an upsert, which
		// replaces whatever the guest had there.
		if t.gen > since && s.slots[t.slot] == nil {
			d.Deleted = append(d.Deleted, t.slot)
		}
	}
}

// EncodeSync appends the sync request for a delta to e. For an Interned
// mode it also sends the string table entries the guest lacks (sent says
// which it has; the caller keeps it, and zeroes it if the call fails).
// A delta that is not a Reset must come from the snapshot lineage sent
// was used with: a new table needs a full resync.
func EncodeSync(e *abi.Encoder, d *Delta, numNodes int, mode PodsMode, sent *StringsSent) {
	var flags uint8
	if d.Reset {
		flags |= abi.SyncReset
	}
	var strs []string
	first := 0
	if mode&Interned != 0 {
		if d.Reset || sent.table != d.Strings {
			sent.table, sent.n = d.Strings, 0
		}
		// Encode the records first: they number strings the guest must
		// receive before it reads them.
		for _, ni := range d.Changed {
			ni.Record(mode, d.Strings)
		}
		first = sent.n
		strs = d.Strings.Since(sent.n, nil)
		sent.n += len(strs)
		flags |= abi.SyncStrings
	}
	if d.Namespaces != nil {
		flags |= abi.SyncNamespaces
	}
	if d.PDBsChanged {
		flags |= abi.SyncPDBs
	}
	e.SyncHeader(flags, numNodes)
	if flags&abi.SyncStrings != 0 {
		e.Uvarint(uint64(first))
		e.Strings(strs)
	}
	e.Uvarint(uint64(len(d.Changed)))
	for _, ni := range d.Changed {
		rec := ni.Record(mode, d.Strings)
		e.U32(ni.Slot)
		e.Bytes(rec)
	}
	e.Uvarint(uint64(len(d.Deleted)))
	for _, s := range d.Deleted {
		e.U32(s)
	}
	if d.Namespaces != nil {
		e.Uvarint(uint64(len(d.Namespaces)))
		for _, n := range d.Namespaces {
			e.String(n.Name)
			e.Labels(n.Labels)
		}
	}
	if d.PDBsChanged {
		e.Uvarint(uint64(len(d.PDBs)))
		for _, p := range d.PDBs {
			e.PDB(p)
		}
	}
}

// UpdateFrom brings s up to date with src, the live snapshot a cache
// mutates: nodes changed since s's generation are copied, deleted ones
// dropped. Slots and generations are kept as in src, so guest mirrors can
// follow either. A cycle reads s while the cache goes on changing src.
func (s *Snapshot) UpdateFrom(src *Snapshot) {
	if s.generation == src.generation && s.generation != 0 && s.strs == src.strs {
		return
	}
	full := s.generation == 0 || s.generation < src.floor || s.strs != src.strs
	s.strs = src.strs
	for len(s.slots) < len(src.slots) {
		s.slots = append(s.slots, nil)
	}
	s.slots = s.slots[:len(src.slots)]
	if full {
		for i := range s.slots {
			s.slots[i] = nil
		}
	} else {
		for _, t := range src.tombs {
			if t.gen > s.generation && src.slots[t.slot] == nil {
				s.slots[t.slot] = nil
			}
		}
	}
	changedSet := full
	copyNode := func(sn *NodeInfo) {
		dn := s.slots[sn.Slot]
		if dn == nil || dn.Info.Node.Name != sn.Info.Node.Name {
			dn = &NodeInfo{Slot: sn.Slot}
			s.slots[sn.Slot] = dn
			changedSet = true
		}
		dn.Generation = sn.Generation
		dn.Info = copyInfo(&sn.Info) // later live changes must not show through
		s.changes = append(s.changes, change{dn.Generation, dn})
	}
	if full {
		s.changes = s.changes[:0]
		for _, sn := range src.order {
			copyNode(sn)
		}
		sortChanges(s.changes)
	} else {
		start := len(s.changes)
		src.changedSince(s.generation, copyNode)
		// changedSince walks newest first; the log wants oldest first.
		slices.Reverse(s.changes[start:])
	}
	if changedSet || len(s.order) != len(src.order) {
		s.order = s.order[:0]
		clear(s.byName)
		if s.byName == nil {
			s.byName = map[string]*NodeInfo{}
		}
		for _, sn := range src.order {
			dn := s.slots[sn.Slot]
			s.order = append(s.order, dn)
			s.byName[dn.Info.Node.Name] = dn
		}
	}
	s.tombs = append(s.tombs[:0], src.tombs...)
	s.floor = src.floor
	if full || src.nsGen > s.generation {
		if s.namespaces == nil {
			s.namespaces = map[string]abi.Labels{}
		}
		clear(s.namespaces)
		for n, l := range src.namespaces {
			s.namespaces[n] = l
		}
		s.nsGen = src.nsGen
	}
	if full || src.pdbGen > s.generation {
		s.pdbs = make(map[string]*abi.PDB, len(src.pdbs))
		for k, p := range src.pdbs {
			s.pdbs[k] = p // budgets are replaced, never modified in place
		}
		s.pdbGen = src.pdbGen
	}
	s.generation = src.generation
	if len(s.changes) > 2*len(s.order)+64 {
		s.compactChanges()
	}
}

// copyInfo copies a node's NodeInfo for a snapshot that reads it while
// the live one goes on changing. The aggregates' scalars and the pod
// groups are copied, since AddPod and RemovePod change their elements in
// place. The pods and used ports are shared, which spares a copy of every
// pod per snapshot: on the live side AddPod only appends past the
// copy's length and RemovePod never writes an array it shrinks (it
// shrinks into a new one), so the copy, capped at its length, keeps
// seeing exactly its own elements, and cannot append into the live
// array's spare capacity either.
func copyInfo(src *abi.NodeInfo) abi.NodeInfo {
	c := *src
	c.Requested.Scalars = slices.Clone(src.Requested.Scalars)
	c.NonZeroRequested.Scalars = slices.Clone(src.NonZeroRequested.Scalars)
	c.PodGroups = slices.Clone(src.PodGroups)
	c.Pods = slices.Clip(src.Pods)
	c.UsedPorts = slices.Clip(src.UsedPorts)
	return c
}

// sortChanges orders a log by generation.
func sortChanges(cs []change) {
	slices.SortFunc(cs, func(a, b change) int { return cmp.Compare(a.gen, b.gen) })
}
