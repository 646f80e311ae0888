package abi

import (
	"reflect"
	"testing"
)

// A pod decoded with a slab equals the plain decoding; after Reset the
// slab hands the same storage out again, so a warm slab allocates nothing
// for pods with labels and containers.
func TestSlabDecodesPodsAndReusesItsStorage(t *testing.T) {
	p := samplePod()
	var e Encoder
	e.Pod(&p)
	var want Pod
	NewDecoder(e.B).Pod(&want)
	var s Slab
	decode := func() *Pod {
		var got Pod
		var d Decoder
		d.Reset(s.KeepBytes(e.B), true)
		d.UseSlab(&s)
		d.Pod(&got)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("err %v, %d bytes left", d.Err(), d.Remaining())
		}
		return &got
	}
	first := decode()
	second := decode()
	if !reflect.DeepEqual(first, &want) || !reflect.DeepEqual(second, &want) {
		t.Fatalf("slab decoding differs from the plain one:\n%+v\n%+v", first, &want)
	}
	if &first.Labels[0] == &second.Labels[0] || &first.Containers[0] == &second.Containers[0] {
		t.Fatal("two pods of one cycle share storage")
	}
	s.Reset()
	if again := decode(); &again.Labels[0] != &first.Labels[0] || &again.Containers[0] != &first.Containers[0] {
		t.Fatal("the slab did not reuse its storage after Reset")
	}
	plain := Pod{UID: "u", Namespace: "ns", Name: "n", Labels: Labels{{Key: "app", Value: "x"}, {Key: "tier", Value: "y"}},
		Containers: []Container{{Name: "c", Image: "i", Requests: Resources{MilliCPU: 100}}, {Name: "d"}}}
	e.Reset()
	e.Pod(&plain)
	var got Pod
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset()
		for i := 0; i < 50; i++ {
			var d Decoder
			d.Reset(s.KeepBytes(e.B), true)
			d.UseSlab(&s)
			d.Pod(&got)
		}
	})
	if allocs != 0 || !reflect.DeepEqual(got, plain) {
		t.Fatalf("%.1f allocations per 50 pods from a warm slab, want 0 (pod %+v)", allocs, got)
	}
}
