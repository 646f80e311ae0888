package abi

import (
	"reflect"
	"testing"
)

// TestCycleRequestCarriesImageVolumesFromV16: a v1.6 reader gets the
// pod's image volumes after the pod; a v1.5 reader gets the pod alone,
// byte for byte as before, and the Pod encoding never carries them.
func TestCycleRequestCarriesImageVolumesFromV16(t *testing.T) {
	p := samplePod()
	p.ImageVolumes = []string{"registry.example/models:v1", "data:latest"}

	var e Encoder
	e.CycleRequest(&p)
	var got Pod
	d := NewDecoder(e.B)
	d.CycleRequest(&got)
	if d.Err() != nil || d.Remaining() != 0 || !reflect.DeepEqual(got.ImageVolumes, p.ImageVolumes) {
		t.Fatalf("v1.6: err %v, %d bytes left, image volumes %q", d.Err(), d.Remaining(), got.ImageVolumes)
	}

	var old, plain Encoder
	old.SetPeerMinor(5)
	old.CycleRequest(&p)
	plain.SetPeerMinor(5)
	plain.Pod(&p)
	if !reflect.DeepEqual(old.B, plain.B) {
		t.Fatal("a v1.5 reader's cycle request is not the plain pod")
	}
	od := NewDecoder(old.B)
	od.SetPeerMinor(5)
	var legacy Pod
	od.CycleRequest(&legacy)
	if od.Err() != nil || od.Remaining() != 0 || legacy.ImageVolumes != nil || legacy.Name != p.Name {
		t.Fatalf("v1.5: err %v, %d bytes left, pod %+v", od.Err(), od.Remaining(), legacy)
	}

	var rec Encoder
	rec.Pod(&p)
	var inRecord Pod
	NewDecoder(rec.B).Pod(&inRecord)
	if inRecord.ImageVolumes != nil {
		t.Fatal("the Pod encoding carried image volumes")
	}
}

// TestCycleRequestCarriesRequiredFeaturesFromV17: a v1.7 reader gets the
// pod's required node features after its image volumes; a v1.6 reader's
// request ends with the image volumes, and decodes with none.
func TestCycleRequestCarriesRequiredFeaturesFromV17(t *testing.T) {
	p := samplePod()
	p.ImageVolumes = []string{"model:v1"}
	p.RequiredFeatures = 1<<6 | 1<<63

	var e Encoder
	e.CycleRequest(&p)
	var got Pod
	d := NewDecoder(e.B)
	d.CycleRequest(&got)
	if d.Err() != nil || d.Remaining() != 0 || got.RequiredFeatures != p.RequiredFeatures || len(got.ImageVolumes) != 1 {
		t.Fatalf("v1.7: err %v, %d bytes left, features %b, image volumes %q", d.Err(), d.Remaining(), got.RequiredFeatures, got.ImageVolumes)
	}

	var old Encoder
	old.SetPeerMinor(6)
	old.CycleRequest(&p)
	if len(old.B) >= len(e.B) || string(e.B[:len(old.B)]) != string(old.B) {
		t.Fatal("a v1.6 reader's cycle request is not the v1.7 one without its end")
	}
	od := NewDecoder(old.B)
	od.SetPeerMinor(6)
	var legacy Pod
	legacy.RequiredFeatures = 1
	od.CycleRequest(&legacy)
	if od.Err() != nil || od.Remaining() != 0 || legacy.RequiredFeatures != 0 || len(legacy.ImageVolumes) != 1 {
		t.Fatalf("v1.6: err %v, %d bytes left, pod %+v", od.Err(), od.Remaining(), legacy)
	}
}

// TestNodeInfoCarriesDeclaredFeaturesFromV17: the node's declared
// features end a v1.7 NodeInfo; NodeInfoBeforeV17 says where the record a
// v1.6 reader gets ends, and that prefix decodes whole for it.
func TestNodeInfoCarriesDeclaredFeaturesFromV17(t *testing.T) {
	ni := NodeInfo{Node: Node{Name: "n", Labels: Labels{{Key: "k", Value: "v"}}, DeclaredFeatures: 1 << 40},
		PodGroups: []PodGroup{{Namespace: "default", Count: 2}}}
	var e Encoder
	end := e.NodeInfoBeforeV17(&ni)
	var got NodeInfo
	d := NewDecoder(e.B)
	d.NodeInfo(&got)
	if d.Err() != nil || d.Remaining() != 0 || got.Node.DeclaredFeatures != 1<<40 {
		t.Fatalf("v1.7: err %v, %d bytes left, features %b", d.Err(), d.Remaining(), got.Node.DeclaredFeatures)
	}
	var old Encoder
	old.SetPeerMinor(6)
	old.NodeInfo(&ni)
	if string(e.B[:end]) != string(old.B) {
		t.Fatalf("the v1.6 prefix (%d bytes) is not what a v1.6 encoder writes (%d)", end, len(old.B))
	}
	od := NewDecoder(e.B[:end])
	od.SetPeerMinor(6)
	var legacy NodeInfo
	od.NodeInfo(&legacy)
	if od.Err() != nil || od.Remaining() != 0 || legacy.Node.DeclaredFeatures != 0 || len(legacy.PodGroups) != 1 {
		t.Fatalf("v1.6: err %v, %d bytes left, %+v", od.Err(), od.Remaining(), legacy)
	}
}
