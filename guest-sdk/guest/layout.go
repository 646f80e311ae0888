package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// nodeLayout is how the mirror keeps node lists by kind when the module
// asks for it (LayOutNodeLists). It is an interface, and listLayout its
// one implementation, so that a module that does not ask carries none of
// the code: TinyGo links a type's methods only once the type is
// converted to an interface that has them.
type nodeLayout interface {
	// source is where node records take their lists from.
	source() abi.ListSource
	Taken() int
	// keep remembers the record the node of slot was decoded from and
	// the n list elements it took (an empty record and 0: the slot was
	// emptied); reset forgets them all.
	keep(slot uint32, rec nodeRecord, n int)
	reset()
	// due reports whether the lists of replaced nodes now outweigh the
	// live ones, so that a relayout would at least halve the chunks.
	due() bool
	// node returns a zero NodeInfo for a node being decoded.
	node() *plugin.NodeInfo
	// relayout decodes every node again into fresh chunks.
	relayout(m *mirror) error
}

// nodeRecord is the record a mirror node was decoded from; its strings
// alias it anyway.
type nodeRecord struct {
	bytes    []byte
	interned bool // numbered against the string table
}

// listLayout keeps the mirror's node lists in abi.NodeLists and the
// record of every node, to decode them again.
type listLayout struct {
	lists abi.NodeLists
	// infos are NodeInfos handed out by node, in chunks as the lists,
	// so that consecutive slots' nodes lie together too.
	infos   []plugin.NodeInfo
	records []nodeRecord // by slot
	taken   []int        // by slot: the list elements of its node
	live    int          // their sum
}

// relayoutSlack is how many dead list elements may pile up beyond the
// live ones before a relayout is due, so that small mirrors are not laid
// out again for a handful of syncs.
var relayoutSlack = 1 << 14

// LayOutNodeLists makes the mirror keep node labels, taints, images and
// pod groups by kind, each in chunks of its own (abi.NodeLists), and lay
// them out afresh in slot order once replaced nodes have left them
// scattered. Plugins that walk those lists over every node in a cycle
// (affinity, topology spread, image locality) then read memory in
// order: 10–25% less time per node for the default bundle on wasmtime
// (docs/PERFORMANCE.md). It costs about 1 KB of code and keeps every
// node's record. Call it before the first sync; modules call the
// package function LayOutNodeLists from init instead.
func (g *Guest) LayOutNodeLists() {
	if g.mirror.lists == nil && len(g.mirror.nodes) == 0 {
		g.mirror.lists = new(listLayout)
	}
}

func (l *listLayout) source() abi.ListSource { return &l.lists }
func (l *listLayout) Taken() int             { return l.lists.Taken() }

func (l *listLayout) node() *plugin.NodeInfo {
	if len(l.infos) == 0 {
		l.infos = make([]plugin.NodeInfo, nodeInfoChunk)
	}
	ni := &l.infos[0]
	l.infos = l.infos[1:]
	return ni
}

// nodeInfoChunk is the number of NodeInfos allocated at once.
const nodeInfoChunk = 64

func (l *listLayout) keep(slot uint32, rec nodeRecord, n int) {
	for int(slot) >= len(l.records) {
		l.records = append(l.records, nodeRecord{})
		l.taken = append(l.taken, 0)
	}
	l.records[slot] = rec
	l.live += n - l.taken[slot]
	l.taken[slot] = n
}

func (l *listLayout) reset() {
	l.lists.Restart()
	clear(l.records)
	l.records, l.taken, l.live = l.records[:0], l.taken[:0], 0
}

func (l *listLayout) due() bool { return l.Taken() > 2*l.live+relayoutSlack }

// relayout decodes every node again from the record it came in, in slot
// order (the order batches walk), into fresh chunks: the nodes replaced
// since the last layout left their lists scattered among the live ones.
// It is the decoding the syncs did, so the mirror holds the same nodes
// after it.
func (l *listLayout) relayout(m *mirror) error {
	l.lists.Restart() // keep accounts each node again as it is decoded
	l.infos = nil
	for slot, rec := range l.records {
		if rec.bytes == nil { // an empty slot: keep clears a deleted node's record
			continue
		}
		if err := m.decodeNode(uint32(slot), rec); err != nil {
			return err
		}
	}
	return nil
}
