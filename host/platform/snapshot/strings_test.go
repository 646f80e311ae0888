package snapshot

import (
	"fmt"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// internedGuest applies v1.5 syncs as a guest does: the string table
// first, then records decoded through it.
type internedGuest struct {
	table  abi.StringTable
	nodes  map[uint32]abi.NodeInfo
	sent   StringsSent
	synced uint64
	// got is how many strings the last sync carried.
	got int
}

func (g *internedGuest) sync(t *testing.T, s *Snapshot) {
	t.Helper()
	var d Delta
	s.DeltaSince(g.synced, &d)
	var e abi.Encoder
	EncodeSync(&e, &d, s.NumNodes(), AllPods.ForMinor(abi.VersionMinor), &g.sent)
	if e.B[0]&abi.SyncStrings == 0 {
		t.Fatal("a v1.5 sync without its strings section")
	}
	if e.B[0]&abi.SyncReset != 0 {
		g.nodes = map[uint32]abi.NodeInfo{}
	}
	_, _, err := abi.ParseSyncWith(e.B, abi.SyncHandlers{
		Strings: func(first int, ss []string) error {
			if first == 0 {
				if e.B[0]&abi.SyncReset == 0 && g.table.Len() > 0 {
					t.Fatal("a new string table without a reset")
				}
				g.table.Reset()
			}
			g.got = len(ss)
			return g.table.Append(first, ss)
		},
		Upsert: func(slot uint32, rec []byte) error {
			var ni abi.NodeInfo
			d := abi.NewDecoder(rec)
			d.SetTable(&g.table)
			d.NodeInfo(&ni)
			g.nodes[slot] = ni
			return d.Err()
		},
		Delete: func(slot uint32) error { delete(g.nodes, slot); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	g.synced = s.Generation()
}

func zonedNode(name, zone string) abi.Node {
	return abi.Node{Name: name, AllowedPods: 10, Labels: abi.Labels{{Key: "zone", Value: zone}},
		Images: []abi.ImageState{{Names: []string{"nginx:1"}, Size: 1}}}
}

func TestInternedSyncsSendEachStringOnce(t *testing.T) {
	s := New()
	for i := 0; i < 4; i++ {
		s.SetNode(zonedNode(fmt.Sprintf("n%d", i), "a"))
	}
	g := &internedGuest{}
	g.sync(t, s)
	if g.got != 3 { // zone, a, nginx:1
		t.Fatalf("first sync sent %d strings, want 3", g.got)
	}
	n1 := g.nodes[s.Get("n1").Slot]
	if l := n1.Node.Labels[0]; l.Key != "zone" || l.Value != "a" || l.KeyID == 0 || l.ValueID == 0 {
		t.Fatalf("n1 label decoded as %+v", l)
	}
	if err := s.AddPod(&abi.Pod{UID: "p", Namespace: "web", Name: "p", NodeName: "n1", Labels: abi.Labels{{Key: "zone", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	g.sync(t, s)
	if g.got != 2 { // web, b
		t.Fatalf("second sync sent %d strings, want the 2 new ones", g.got)
	}
	p := g.nodes[s.Get("n1").Slot].Pods[0]
	if p.Namespace != "web" || p.NamespaceID == 0 || p.Labels[0].Value != "b" {
		t.Fatalf("pod decoded as %+v", p)
	}
	// A second guest starts from nothing and gets the whole table.
	g2 := &internedGuest{}
	g2.sync(t, s)
	if g2.got != 5 {
		t.Fatalf("a new guest got %d strings, want all 5", g2.got)
	}
}

func TestCopiesShareTheTableAndAFullTableStartsAnew(t *testing.T) {
	defer func(old int) { maxStrings = old }(maxStrings)
	maxStrings = 6
	live := New()
	live.SetNode(zonedNode("n0", "a"))
	cyc := New()
	cyc.UpdateFrom(live)
	if cyc.Strings() != live.Strings() {
		t.Fatal("a copy numbers strings with a table of its own")
	}
	g := &internedGuest{}
	g.sync(t, cyc)
	first := live.Strings()
	for i := 1; i < 8; i++ {
		live.SetNode(zonedNode(fmt.Sprintf("n%d", i), fmt.Sprintf("zone-%d", i)))
		cyc.UpdateFrom(live)
		g.sync(t, cyc)
		for slot, ni := range g.nodes {
			want := cyc.Slot(slot).Info.Node.Labels[0].Value
			if got := ni.Node.Labels[0].Value; got != want {
				t.Fatalf("after node %d: slot %d zone %q, want %q", i, slot, got, want)
			}
		}
	}
	if live.Strings() == first {
		t.Fatalf("the table grew to %d strings, past its bound of %d, and was not renewed", live.Strings().Len(), maxStrings)
	}
	if len(g.nodes) != 8 {
		t.Fatalf("guest has %d nodes, want 8", len(g.nodes))
	}
}
