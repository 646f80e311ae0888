package guest

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// randomNode is a node record with every kind of list NodeLists keeps,
// of random lengths.
func randomNode(rng *rand.Rand, name string) *abi.NodeInfo {
	ni := &abi.NodeInfo{Node: abi.Node{Name: name}}
	for i := rng.IntN(4); i > 0; i-- {
		ni.Node.Labels = append(ni.Node.Labels, abi.Label{Key: fmt.Sprintf("k%d", i), Value: fmt.Sprint(rng.IntN(3))})
	}
	for i := rng.IntN(3); i > 0; i-- {
		ni.Node.Taints = append(ni.Node.Taints, abi.Taint{Key: fmt.Sprintf("t%d", i), Effect: abi.EffectNoSchedule})
	}
	for i := rng.IntN(3); i > 0; i-- {
		ni.Node.Images = append(ni.Node.Images, abi.ImageState{Names: []string{fmt.Sprintf("img%d:%d", i, rng.IntN(2))}, Size: int64(i) << 20})
	}
	for i := rng.IntN(3); i > 0; i-- {
		ni.PodGroups = append(ni.PodGroups, abi.PodGroup{Namespace: "ns", Count: int32(i),
			Labels: abi.Labels{{Key: "app", Value: fmt.Sprintf("a%d", i)}}})
	}
	return ni
}

// A guest that keeps node lists by kind holds the very nodes a guest that
// does not holds, through upserts, deletions, resets and the relayouts
// they set off (made frequent here by a small slack).
func TestLayOutNodeListsKeepsTheMirror(t *testing.T) {
	defer func(s int) { relayoutSlack = s }(relayoutSlack)
	relayoutSlack = 8
	plain, laid := New(reg), New(reg)
	laid.LayOutNodeLists()
	layout := laid.mirror.lists.(*listLayout)
	rng := rand.New(rand.NewPCG(3, 4))
	var e abi.Encoder
	relayouts := 0
	for step := 0; step < 300; step++ {
		e.Reset()
		flags := uint8(0)
		if rng.IntN(60) == 0 {
			flags = abi.SyncReset
		}
		e.SyncHeader(flags, 0)
		n := rng.IntN(5)
		e.Uvarint(uint64(n))
		for i := 0; i < n; i++ {
			slot := uint32(rng.IntN(16))
			e.NodeRecord(slot, randomNode(rng, fmt.Sprintf("n%d-%d", slot, step)))
		}
		dels := rng.IntN(2)
		e.Uvarint(uint64(dels))
		for i := 0; i < dels; i++ {
			e.U32(uint32(rng.IntN(16)))
		}
		before := layout.Taken()
		call(t, plain, abi.FuncSync, 0, e.B)
		call(t, laid, abi.FuncSync, 0, e.B)
		if layout.Taken() < before && flags == 0 {
			relayouts++
		}
		if len(plain.mirror.nodes) != len(laid.mirror.nodes) {
			t.Fatalf("step %d: %d slots against %d", step, len(laid.mirror.nodes), len(plain.mirror.nodes))
		}
		live := 0
		for slot := range plain.mirror.nodes {
			p, l := plain.mirror.nodes[slot], laid.mirror.nodes[slot]
			if (p == nil) != (l == nil) || p != nil && !reflect.DeepEqual(p.NodeInfo, l.NodeInfo) {
				t.Fatalf("step %d, slot %d: laid out %+v, plain %+v", step, slot, l, p)
			}
			if l != nil {
				live += layout.taken[slot]
			}
		}
		if live != layout.live || layout.Taken() < live {
			t.Fatalf("step %d: live count %d, the nodes hold %d, %d taken", step, layout.live, live, layout.Taken())
		}
		if layout.Taken() > 2*layout.live+relayoutSlack {
			t.Fatalf("step %d: %d elements taken for %d live, no relayout", step, layout.Taken(), layout.live)
		}
	}
	if relayouts < 10 {
		t.Fatalf("only %d relayouts in 300 syncs: the test does not exercise them", relayouts)
	}
}

// LayOutNodeLists after the first sync does nothing: nodes already
// decoded have no records to decode again from.
func TestLayOutNodeListsOnlyBeforeTheFirstNode(t *testing.T) {
	g := New(reg)
	var e abi.Encoder
	e.SyncHeader(abi.SyncReset, 0)
	e.Uvarint(1)
	e.NodeRecord(0, &abi.NodeInfo{Node: abi.Node{Name: "n0"}})
	e.Uvarint(0)
	call(t, g, abi.FuncSync, 0, e.B)
	g.LayOutNodeLists()
	if g.mirror.lists != nil {
		t.Fatal("LayOutNodeLists took effect with nodes already in the mirror")
	}
}
