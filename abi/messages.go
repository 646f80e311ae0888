package abi

// Messages exchanged through ExportCall. Every reply starts with a header
// byte: ReplyOK followed by the function's reply body, or ReplyError
// followed by a string message.

// Reply header bytes.
const (
	ReplyOK    uint8 = 0
	ReplyError uint8 = 1
)

// PluginInfo describes one plugin a module implements.
type PluginInfo struct {
	Name   string
	Points Point
}

// Manifest flags.
const (
	// ManifestWantsPods: the module reads NodeInfo.Pods, so sync records
	// must carry the pods on each node. Without it the host may send
	// aggregates only.
	ManifestWantsPods uint32 = 1 << 0
	// ManifestWantsAffinityPods: the module reads only the pods that have
	// pod affinity or anti-affinity terms (inter-pod affinity's symmetric
	// checks); the host may send just those. ManifestWantsPods wins.
	ManifestWantsAffinityPods uint32 = 1 << 1
)

// Manifest is a module's self-description, the reply to FuncManifest.
type Manifest struct {
	VersionMajor uint16
	VersionMinor uint16
	Flags        uint32
	Plugins      []PluginInfo
	// AnnotationKeys (ABI v1.2, present from minor version 2) are the pod
	// annotation keys the module's eviction policies read: observation
	// records carry these, and only these, of each pod's annotations.
	AnnotationKeys []string
}

// EncodeManifest appends a manifest.
func (e *Encoder) Manifest(m *Manifest) {
	e.U16(m.VersionMajor)
	e.U16(m.VersionMinor)
	e.Uvarint(uint64(m.Flags))
	e.Uvarint(uint64(len(m.Plugins)))
	for i := range m.Plugins {
		e.String(m.Plugins[i].Name)
		e.Uvarint(uint64(m.Plugins[i].Points))
	}
	if m.VersionMajor == 1 && m.VersionMinor >= 2 {
		e.Strings(m.AnnotationKeys)
	}
}

// Manifest reads a manifest: at most MaxPlugins plugins and
// MaxAnnotationKeys annotation keys (see LimitError).
func (d *Decoder) Manifest(m *Manifest) {
	m.VersionMajor = d.U16()
	m.VersionMinor = d.U16()
	m.Flags = uint32(d.Uvarint())
	m.Plugins = nil
	if n := d.countUpTo(2, top(MaxPlugins, "manifest", "plugins", "allowed (abi.MaxPlugins)")); n > 0 {
		m.Plugins = make([]PluginInfo, n)
		for i := range m.Plugins {
			m.Plugins[i].Name = d.String()
			m.Plugins[i].Points = Point(d.Uvarint())
		}
	}
	m.AnnotationKeys = nil
	if m.VersionMajor == 1 && m.VersionMinor >= 2 {
		m.AnnotationKeys = d.stringsUpTo(top(MaxAnnotationKeys, "manifest", "annotation keys", "allowed (abi.MaxAnnotationKeys)"))
	}
}

// Plugin returns the index of the named plugin, or -1.
func (m *Manifest) Plugin(name string) int {
	for i := range m.Plugins {
		if m.Plugins[i].Name == name {
			return i
		}
	}
	return -1
}

// PluginArgs carries one plugin's configuration (pluginConfig[].args).
type PluginArgs struct {
	Name string
	Args Value
}

// InitRequest is the input of FuncInit: args for the plugins that have
// any. Plugins not listed use their defaults.
type InitRequest struct {
	Plugins []PluginArgs
}

// InitRequest appends an init request.
func (e *Encoder) InitRequest(r *InitRequest) {
	e.Uvarint(uint64(len(r.Plugins)))
	for i := range r.Plugins {
		e.String(r.Plugins[i].Name)
		e.Value(&r.Plugins[i].Args)
	}
}

// InitRequest reads an init request.
func (d *Decoder) InitRequest(r *InitRequest) {
	r.Plugins = nil
	if n := d.Count(2); n > 0 {
		r.Plugins = make([]PluginArgs, n)
		for i := range r.Plugins {
			r.Plugins[i].Name = d.String()
			d.Value(&r.Plugins[i].Args, 0)
		}
	}
}

// Sync request flags.
const (
	// SyncReset drops the whole mirror before applying the records.
	SyncReset uint8 = 1 << 0
	// SyncNamespaces: the request ends with the complete namespace table
	// (list of name and labels), which replaces the guest's.
	SyncNamespaces uint8 = 1 << 1
	// SyncPDBs (ABI v1.1): the request ends, after the namespaces if
	// any, with the complete PodDisruptionBudget table (list of PDB),
	// which replaces the guest's. Sent only to modules with a preemption
	// plugin, and only when a budget changed.
	SyncPDBs uint8 = 1 << 2
	// SyncStrings (ABI v1.5): right after the header, uvarint first and a
	// list of strings: the host's string table entries numbered first+1
	// on, which the node records of this and later syncs refer to by
	// StrID (first 0 starts a new table; it comes with SyncReset). Sent
	// only to modules of v1.5 or later, whose records are interned.
	SyncStrings uint8 = 1 << 3
)

// Namespace is a namespace's name and labels, for namespaceSelector.
type Namespace struct {
	Name   string
	Labels Labels
}

// Sync request layout (FuncSync input), see docs/ABI.md:
//
//	u8 flags, uvarint numNodes (cluster size after the sync),
//	with SyncStrings: uvarint first, uvarint count, count × string,
//	uvarint count, count × NodeRecord, uvarint count, count × u32 deleted slot,
//	then with SyncNamespaces: uvarint count, count × (string name, Labels)
//
// A NodeRecord is u32 slot, uvarint length, then length bytes holding a
// NodeInfo. The length prefix lets the host splice records it encoded once
// into the requests of many instances, and lets a guest keep a record's
// bytes as the backing store of the decoded node.

// NodeRecord appends one node record: slot and the NodeInfo, length-prefixed.
func (e *Encoder) NodeRecord(slot uint32, ni *NodeInfo) {
	e.U32(slot)
	e.lengthPrefixed(func() { e.NodeInfo(ni) })
}

// lengthPrefixed appends what body encodes, preceded by its length as a
// uvarint. The length is reserved as a fixed 5-byte uvarint (non-minimal
// encodings are valid) and patched after, so body encodes straight into
// place.
func (e *Encoder) lengthPrefixed(body func()) {
	at := len(e.B)
	e.B = append(e.B, 0, 0, 0, 0, 0)
	body()
	n := uint32(len(e.B) - at - 5)
	for i := 0; i < 4; i++ {
		e.B[at+i] = byte(n>>(7*i)) | 0x80
	}
	e.B[at+4] = byte(n >> 28)
}

// SlotList is the input of FuncFilter, FuncPreScore and FuncScore: u32
// count, then count × u32 slot, all little endian. Fixed width so both
// sides read and write it with no decoding loop to speak of.

// AppendSlots appends a slot list.
func (e *Encoder) AppendSlots(slots []uint32) {
	e.U32(uint32(len(slots)))
	for _, s := range slots {
		e.U32(s)
	}
}

// FilterEntry is one distinct outcome in a FilterReply: a code and the
// reasons kube-scheduler would print for it.
type FilterEntry struct {
	Code    Code
	Reasons []string
}

// Filter reply layout (after the header):
//
//	u32 count, count × u16 entry index (0: the node passed; i>0: entries[i-1]),
//	uvarint numEntries, numEntries × (u8 code, list of string reasons)
//
// Nodes failing for the same reason share one entry, so the reply stays
// small even when thousands of nodes fail.

// Score reply layout (after the header): u32 count, count × i64 (as u64) scores.

// PluginStatus is the reply body of FuncPreFilter and FuncPreScore:
//
//	u8 code, list of string reasons,
//	(ABI v1.4) bool narrowed, then with narrowed: list of string node names
//
// A reply from a module built before v1.4 ends after the reasons, which
// reads as not narrowed.
type PluginStatus struct {
	Code    Code
	Reasons []string
	// Narrowed (ABI v1.4, PreFilter only) says the plugin named the only
	// nodes its Filter can pass, kube-scheduler's PreFilterResult: the
	// host filters just those (Nodes, which may name nodes that do not
	// exist) and reports the others as not satisfying the plugin. An
	// empty Nodes with Narrowed set means no node can.
	Narrowed bool
	Nodes    []string
}

// PluginStatus appends a plugin status.
func (e *Encoder) PluginStatus(s *PluginStatus) {
	e.U8(uint8(s.Code))
	e.Strings(s.Reasons)
	e.Bool(s.Narrowed)
	if s.Narrowed {
		e.Strings(s.Nodes)
	}
}

// PluginStatus reads a plugin status, from a module of any v1 minor
// version: at most MaxReasons reasons and MaxNarrowedNodes node names
// (see LimitError).
func (d *Decoder) PluginStatus(s *PluginStatus) {
	s.Code = Code(d.U8())
	s.Reasons = d.reasons("plugin status", "", -1)
	s.Narrowed, s.Nodes = false, nil
	if d.Remaining() > 0 {
		if s.Narrowed = d.Bool(); s.Narrowed {
			s.Nodes = d.stringsUpTo(top(MaxNarrowedNodes, "plugin status", "node names", "allowed (abi.MaxNarrowedNodes)"))
		}
	}
}
