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
