package abi

import (
	"reflect"
	"testing"
)

// richNodeInfo has every list NodeLists serves, twice over.
func richNodeInfo(name string) NodeInfo {
	ni := sampleNodeInfo()
	ni.Node.Name = name
	ni.Node.Labels = Labels{{Key: "kubernetes.io/hostname", Value: name}, {Key: "zone", Value: "a"}}
	ni.Node.Taints = append(ni.Node.Taints, Taint{Key: "spot", Effect: EffectNoExecute})
	ni.Node.Images = append(ni.Node.Images, ImageState{Names: []string{"redis:7"}, Size: 30 << 20})
	ni.PodGroups = []PodGroup{
		{Namespace: "default", Labels: Labels{{Key: "app", Value: "web"}}, Count: 2},
		{Namespace: "prod", Labels: Labels{{Key: "app", Value: "db"}, {Key: "tier", Value: "1"}}, Count: 1},
	}
	return ni
}

// Decoding with NodeLists gives what decoding without does — plain and
// interned records, aliased or not — and counts every element it hands
// out.
func TestNodeListsDecodeAsAllocated(t *testing.T) {
	var in mapInterner
	for _, interned := range []bool{false, true} {
		var e Encoder
		if interned {
			e.SetInterner(&in)
		}
		want := []NodeInfo{richNodeInfo("n1"), richNodeInfo("n2"), {Node: Node{Name: "bare"}}}
		for i := range want {
			e.NodeInfo(&want[i])
		}
		var table StringTable
		if err := table.Append(0, in.list); err != nil {
			t.Fatal(err)
		}
		decode := func(lists *NodeLists) []NodeInfo {
			d := NewAliasingDecoder(e.B)
			if lists != nil {
				d.UseNodeLists(lists)
			}
			if interned {
				d.SetTable(&table)
			}
			out := make([]NodeInfo, len(want))
			for i := range out {
				d.NodeInfo(&out[i])
			}
			if d.Err() != nil || d.Remaining() != 0 {
				t.Fatalf("interned=%v: err=%v, %d bytes left", interned, d.Err(), d.Remaining())
			}
			return out
		}
		var lists NodeLists
		plain, listed := decode(nil), decode(&lists)
		// Lists also number interned groups' label sets; the rest agrees.
		for i := range listed {
			for j := range listed[i].PodGroups {
				g := &listed[i].PodGroups[j]
				if interned != (g.LabelsID != 0) {
					t.Errorf("interned=%v: %s group %d numbered %d", interned, listed[i].Node.Name, j, g.LabelsID)
				}
				g.LabelsID = 0
			}
		}
		if !reflect.DeepEqual(listed, plain) {
			t.Fatalf("interned=%v: with NodeLists\n%+v\nwithout\n%+v", interned, listed, plain)
		}
		elems := 0
		for _, ni := range listed {
			elems += len(ni.Node.Labels) + len(ni.Node.Taints) + len(ni.Node.Images) + len(ni.PodGroups)
			for _, im := range ni.Node.Images {
				elems += len(im.Names) + len(im.NameIDs)
			}
			for _, g := range ni.PodGroups {
				elems += len(g.Labels)
			}
		}
		if lists.Taken() != elems {
			t.Errorf("interned=%v: Taken() = %d, the nodes hold %d elements", interned, lists.Taken(), elems)
		}
		lists.Restart()
		if lists.Taken() != 0 {
			t.Errorf("Taken() = %d after Restart", lists.Taken())
		}
	}
}

// Lists cut from one chunk are capped: appending to one node's list
// never writes into the next node's.
func TestNodeListsAreCapped(t *testing.T) {
	var e Encoder
	a, b := richNodeInfo("a"), richNodeInfo("b")
	e.NodeInfo(&a)
	e.NodeInfo(&b)
	var lists NodeLists
	d := NewDecoder(e.B)
	d.UseNodeLists(&lists)
	var got [2]NodeInfo
	d.NodeInfo(&got[0])
	d.NodeInfo(&got[1])
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	before := got[1].Clone()
	before.Node.Labels = append(Labels(nil), got[1].Node.Labels...)
	before.Node.Taints = append([]Taint(nil), got[1].Node.Taints...)
	before.PodGroups[0].Labels = append(Labels(nil), got[1].PodGroups[0].Labels...)
	_ = append(got[0].Node.Labels, Label{Key: "x", Value: "y"})
	_ = append(got[0].Node.Taints, Taint{Key: "x"})
	_ = append(got[0].Node.Images, ImageState{Size: 1})
	_ = append(got[0].PodGroups, PodGroup{Namespace: "x"})
	_ = append(got[0].PodGroups[1].Labels, Label{Key: "x"})
	if !reflect.DeepEqual(got[1].Node.Labels, before.Node.Labels) || !reflect.DeepEqual(got[1].Node.Taints, before.Node.Taints) ||
		!reflect.DeepEqual(got[1].PodGroups[0].Labels, before.PodGroups[0].Labels) || got[1].Node.Images[0].Size != b.Node.Images[0].Size {
		t.Fatalf("appending to node a's lists changed node b's: %+v", got[1])
	}
}
