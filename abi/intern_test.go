package abi

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// mapInterner is a host table for tests.
type mapInterner struct {
	ids  map[string]StrID
	list []string
}

func (m *mapInterner) ID(s string) StrID {
	if id, ok := m.ids[s]; ok {
		return id
	}
	if m.ids == nil {
		m.ids = map[string]StrID{}
	}
	m.list = append(m.list, s)
	m.ids[s] = StrID(len(m.list))
	return StrID(len(m.list))
}

// table is the reader's copy of everything numbered so far.
func (m *mapInterner) table(t testing.TB) *StringTable {
	var st StringTable
	if err := st.Append(0, m.list); err != nil {
		t.Fatal(err)
	}
	return &st
}

// internedNodeInfo encodes ni as a v1.5 record and decodes it back.
func internedNodeInfo(t *testing.T, ni *NodeInfo) (NodeInfo, *mapInterner) {
	t.Helper()
	var in mapInterner
	var e Encoder
	e.SetInterner(&in)
	e.NodeInfo(ni)
	var got NodeInfo
	d := NewDecoder(e.B)
	d.SetTable(in.table(t))
	d.NodeInfo(&got)
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("decode interned record: err %v, %d bytes left", d.Err(), d.Remaining())
	}
	return got, &in
}

// withoutIDs clears every StrID, so a numbered decoding compares with
// the text it came from.
func withoutIDs(ni *NodeInfo) {
	clearLabels := func(ls Labels) {
		for i := range ls {
			ls[i].KeyID, ls[i].ValueID = 0, 0
		}
	}
	clearLabels(ni.Node.Labels)
	for i := range ni.Node.Taints {
		ni.Node.Taints[i].KeyID, ni.Node.Taints[i].ValueID = 0, 0
	}
	for i := range ni.Node.Images {
		ni.Node.Images[i].NameIDs = nil
	}
	for i := range ni.Pods {
		p := &ni.Pods[i]
		p.NamespaceID = 0
		clearLabels(p.Labels)
		clearLabels(p.NodeSelector)
		if p.ControllerSelector != nil {
			clearLabels(p.ControllerSelector.MatchLabels)
		}
		for _, a := range []*PodAffinity{p.PodAffinity, p.PodAntiAffinity} {
			if a == nil {
				continue
			}
			for j := range a.Required {
				if a.Required[j].LabelSelector != nil {
					clearLabels(a.Required[j].LabelSelector.MatchLabels)
				}
			}
		}
		for j := range p.TopologySpread {
			if p.TopologySpread[j].LabelSelector != nil {
				clearLabels(p.TopologySpread[j].LabelSelector.MatchLabels)
			}
		}
	}
	for i := range ni.PodGroups {
		ni.PodGroups[i].NamespaceID, ni.PodGroups[i].LabelsID = 0, 0
		clearLabels(ni.PodGroups[i].Labels)
	}
}

func TestPodGroupLabelSetsAreNumberedAcrossNodes(t *testing.T) {
	l := func(kv ...string) Labels {
		var ls Labels
		for i := 0; i+1 < len(kv); i += 2 {
			ls = append(ls, Label{Key: kv[i], Value: kv[i+1]})
		}
		return ls
	}
	many := l("a", "1", "b", "2", "c", "3", "d", "4", "e", "5", "f", "6", "g", "7")
	nodeA := NodeInfo{Node: Node{Name: "a"}, PodGroups: []PodGroup{
		{Namespace: "ns1", Labels: l("app", "a"), Count: 2},
		{Namespace: "ns1", Labels: l("app", "b"), Count: 1},
		{Namespace: "ns1", Labels: nil, Count: 1},
	}}
	nodeB := NodeInfo{Node: Node{Name: "b"}, PodGroups: []PodGroup{
		{Namespace: "ns2", Labels: l("app", "a"), Count: 1}, // another namespace, same labels
		{Namespace: "ns1", Labels: l("app", "a", "tier", "x"), Count: 1},
		{Namespace: "ns1", Labels: many, Count: 1},
	}}
	var in mapInterner
	records := make([][]byte, 2)
	for i, ni := range []*NodeInfo{&nodeA, &nodeB} {
		var e Encoder
		e.SetInterner(&in)
		e.NodeInfo(ni)
		records[i] = e.B
	}
	var lists NodeLists
	decode := func(st *StringTable, rec []byte) []uint32 {
		var ni NodeInfo
		d := NewDecoder(rec)
		if st != nil {
			d.SetTable(st)
		}
		d.UseNodeLists(&lists)
		d.NodeInfo(&ni)
		if d.Err() != nil {
			t.Fatal(d.Err())
		}
		ids := make([]uint32, len(ni.PodGroups))
		for i, g := range ni.PodGroups {
			ids[i] = g.LabelsID
		}
		return ids
	}
	st := in.table(t)
	a, b := decode(st, records[0]), decode(st, records[1])
	if a[0] == 0 || a[0] != b[0] {
		t.Errorf("app=a on two nodes (two namespaces) numbered %d and %d, want one nonzero number", a[0], b[0])
	}
	seen := map[uint32]bool{}
	for _, id := range []uint32{a[0], a[1], a[2], b[1]} {
		if id == 0 || seen[id] {
			t.Errorf("label sets numbered %v %v: want distinct nonzero numbers for distinct sets", a, b)
		}
		seen[id] = true
	}
	if b[2] != 0 {
		t.Errorf("a set of %d labels numbered %d, want 0 (over maxSetLabels)", len(many), b[2])
	}
	// The same record decoded again keeps its numbers.
	if again := decode(st, records[1]); !reflect.DeepEqual(again, b) {
		t.Errorf("decoded again: %v, first %v", again, b)
	}
	// Text records are not numbered.
	var e Encoder
	e.NodeInfo(&nodeA)
	if ids := decode(nil, e.B); !reflect.DeepEqual(ids, []uint32{0, 0, 0}) {
		t.Errorf("text record groups numbered %v", ids)
	}
	// Without node lists nothing is numbered (a module that does not lay
	// its mirror out by kind carries none of this).
	plain := NewDecoder(records[0])
	plain.SetTable(st)
	var ni NodeInfo
	plain.NodeInfo(&ni)
	if plain.Err() != nil || ni.PodGroups[0].LabelsID != 0 {
		t.Errorf("decoded without node lists: LabelsID %d (err %v), want 0", ni.PodGroups[0].LabelsID, plain.Err())
	}
	// Restart (a relayout or a mirror reset, after which every node is
	// decoded again) numbers afresh, from 1.
	lists.Restart()
	if ids := decode(st, records[1]); ids[0] != 1 || ids[1] != 2 {
		t.Errorf("after Restart, node b's sets numbered %v, want 1 and 2 first", ids)
	}
}

func TestInternedRecordDecodesToTheSameStrings(t *testing.T) {
	ni := sampleNodeInfo()
	got, in := internedNodeInfo(t, &ni)
	if len(got.Node.Labels) == 0 || got.Node.Labels[0].KeyID == 0 || got.Node.Labels[0].ValueID == 0 {
		t.Fatalf("node labels not numbered: %+v", got.Node.Labels)
	}
	if s := in.list[got.Node.Labels[0].KeyID-1]; s != got.Node.Labels[0].Key {
		t.Fatalf("label key numbered %d is %q in the table, decoded as %q", got.Node.Labels[0].KeyID, s, got.Node.Labels[0].Key)
	}
	if len(got.Node.Images) > 0 && len(got.Node.Images[0].NameIDs) != len(got.Node.Images[0].Names) {
		t.Fatalf("image names not numbered: %+v", got.Node.Images[0])
	}
	if len(got.Pods) > 0 && got.Pods[0].NamespaceID == 0 {
		t.Fatal("pod namespace not numbered")
	}
	withoutIDs(&got)
	// The text decoding of the same node, for comparison.
	var e Encoder
	e.NodeInfo(&ni)
	var plain NodeInfo
	NewDecoder(e.B).NodeInfo(&plain)
	if !reflect.DeepEqual(got, plain) {
		t.Fatalf("interned record decodes to\n%+v\nwant\n%+v", got, plain)
	}
	// Interned records are smaller: repeated strings become one byte or two.
	var ie Encoder
	ie.SetInterner(in)
	ie.NodeInfo(&ni)
	if len(ie.B) >= len(e.B) {
		t.Errorf("interned record %d bytes, text %d", len(ie.B), len(e.B))
	}
}

func TestInternedRecordWithUnknownIDIsRefused(t *testing.T) {
	ni := sampleNodeInfo()
	var in mapInterner
	var e Encoder
	e.SetInterner(&in)
	e.NodeInfo(&ni)
	short := &StringTable{}
	if err := short.Append(0, in.list[:len(in.list)/2]); err != nil {
		t.Fatal(err)
	}
	var got NodeInfo
	d := NewDecoder(e.B)
	d.SetTable(short)
	d.NodeInfo(&got)
	if d.Err() == nil || !strings.Contains(d.Err().Error(), "not in the string table") {
		t.Fatalf("err = %v, want a string id not in the table", d.Err())
	}
}

func TestStringTableAppendChecksOffsets(t *testing.T) {
	var st StringTable
	if err := st.Append(1, []string{"a"}); err == nil {
		t.Fatal("appending at 1 to an empty table was accepted")
	}
	if err := st.Append(0, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(1, []string{"c"}); err == nil {
		t.Fatal("overlapping append was accepted")
	}
	if err := st.Append(2, []string{"c"}); err != nil {
		t.Fatal(err)
	}
	if id := st.Lookup("c"); id != 3 {
		t.Fatalf("Lookup(c) = %d, want 3", id)
	}
	if id := st.Lookup("zz"); id != StrAbsent {
		t.Fatalf("Lookup(zz) = %d, want StrAbsent", id)
	}
	if s, ok := st.String(2); !ok || s != "b" {
		t.Fatalf("String(2) = %q, %v", s, ok)
	}
	for _, id := range []StrID{0, 4, StrAbsent} {
		if _, ok := st.String(id); ok {
			t.Fatalf("String(%d) found", id)
		}
	}
}

func TestSameStringUsesNumbersOnlyWhenBothSidesHaveThem(t *testing.T) {
	for _, c := range []struct {
		a    string
		aID  StrID
		b    string
		bID  StrID
		want bool
	}{
		{"x", 1, "x", 1, true},
		{"x", 1, "y", 2, false},
		{"x", 0, "x", 2, true},          // unnumbered: strings
		{"x", 0, "y", 2, false},         // unnumbered: strings
		{"x", StrAbsent, "x", 1, false}, // cannot happen with one table; numbers decide
		{"q", StrAbsent, "q", StrAbsent, true},
		{"q", StrAbsent, "r", StrAbsent, false},
		{"q", StrAbsent, "q", 0, true},
	} {
		if got := SameString(c.a, c.aID, c.b, c.bID); got != c.want {
			t.Errorf("SameString(%q/%d, %q/%d) = %v, want %v", c.a, c.aID, c.b, c.bID, got, c.want)
		}
	}
	ls := Labels{{Key: "a", Value: "1", KeyID: 1, ValueID: 2}, {Key: "b", Value: "2", KeyID: 3, ValueID: 4}}
	if i := ls.Find("b", 3); i != 1 {
		t.Fatalf("Find(b, 3) = %d", i)
	}
	if i := ls.Find("b", 0); i != 1 {
		t.Fatalf("Find(b, unnumbered) = %d", i)
	}
	if i := ls.Find("c", StrAbsent); i != -1 {
		t.Fatalf("Find(absent) = %d", i)
	}
}

func FuzzInternedNodeInfo(f *testing.F) {
	ni := sampleNodeInfo()
	var in mapInterner
	var e Encoder
	e.SetInterner(&in)
	e.NodeInfo(&ni)
	f.Add(e.B)
	f.Add([]byte{})
	table := in.table(f)
	var lists NodeLists // shared across inputs, as a guest's are across syncs
	f.Fuzz(func(t *testing.T, b []byte) {
		var got NodeInfo
		d := NewDecoder(b)
		d.SetTable(table)
		d.UseNodeLists(&lists)
		d.NodeInfo(&got)
		if d.Err() != nil {
			return
		}
		// Groups with the same labels carry the same number.
		for i := range got.PodGroups {
			for j := range got.PodGroups {
				gi, gj := &got.PodGroups[i], &got.PodGroups[j]
				if gi.LabelsID != 0 && gi.LabelsID == gj.LabelsID && !reflect.DeepEqual(gi.Labels, gj.Labels) {
					t.Fatalf("groups %d and %d share number %d with labels %v and %v", i, j, gi.LabelsID, gi.Labels, gj.Labels)
				}
			}
		}
		// Whatever decoded names only strings of the table.
		for _, l := range got.Node.Labels {
			if s, ok := table.String(l.KeyID); !ok || s != l.Key {
				t.Fatalf("label key %q numbered %d, table has %q", l.Key, l.KeyID, s)
			}
		}
	})
}

// TestFindAndAnyStringAnswerAsSameString checks the per-call fast paths
// of Labels.Find and AnyString against the per-element definition
// (SameString), over random strings and every kind of StrID — numbered,
// unnumbered (0), absent — including numbers that disagree with the
// text, so the fast paths cannot lean on the table being consistent.
func TestFindAndAnyStringAnswerAsSameString(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	str := func() string { return string(rune('a' + rng.IntN(3))) }
	id := func() StrID {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return StrAbsent
		default:
			return StrID(1 + rng.IntN(3))
		}
	}
	for round := 0; round < 20000; round++ {
		n := rng.IntN(5)
		ls := make(Labels, n)
		vs := make([]string, n)
		ids := make([]StrID, rng.IntN(n+1)) // sometimes short: unnumbered tail
		for i := range ls {
			ls[i] = Label{Key: str(), KeyID: id()}
			vs[i] = str()
		}
		for i := range ids {
			ids[i] = id()
		}
		key, keyID := str(), id()
		want := -1
		for i := range ls {
			if SameString(ls[i].Key, ls[i].KeyID, key, keyID) {
				want = i
				break
			}
		}
		if got := ls.Find(key, keyID); got != want {
			t.Fatalf("%+v.Find(%q, %d) = %d, SameString says %d", ls, key, keyID, got, want)
		}
		wantAny := false
		for i := range vs {
			var vid StrID
			if i < len(ids) {
				vid = ids[i]
			}
			wantAny = wantAny || SameString(vs[i], vid, key, keyID)
		}
		if got := AnyString(vs, ids, key, keyID); got != wantAny {
			t.Fatalf("AnyString(%q, %v, %q, %d) = %v, SameString says %v", vs, ids, key, keyID, got, wantAny)
		}
	}
}

func TestLabelSetNumbersAreBounded(t *testing.T) {
	var st NodeLists
	for i := 0; i < maxLabelSets; i++ {
		if id := st.labelSet(Labels{{KeyID: 1, ValueID: StrID(i + 2)}}); id != uint32(i+1) {
			t.Fatalf("set %d numbered %d", i, id)
		}
	}
	if id := st.labelSet(Labels{{KeyID: 1, ValueID: StrID(maxLabelSets + 2)}}); id != 0 {
		t.Errorf("a set past the bound numbered %d, want 0", id)
	}
	if id := st.labelSet(Labels{{KeyID: 1, ValueID: 2}}); id != 1 {
		t.Errorf("a known set numbered %d past the bound, want its 1", id)
	}
	if id := st.labelSet(Labels{{KeyID: 0, ValueID: 2, Key: "text"}}); id != 0 {
		t.Errorf("a set with a label not numbered got %d, want 0", id)
	}
}
