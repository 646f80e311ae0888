package wasmtest

import "testing"

func TestSimulateRunsTheExamples(t *testing.T) {
	rep := Simulate(t, "../../../examples/profiles.yaml", "../../../examples/cluster.yaml")
	if p := rep.Pod("ml", "trainer"); p == nil || p.Node != "gpu-c1" {
		t.Fatalf("ml/trainer placed as %+v, want on gpu-c1 (the example's only GPU node)", p)
	}
	if p := rep.Pod("batch", "pack-me"); p == nil || p.Profile != "bin-packer" {
		t.Fatalf("batch/pack-me went through %+v, want the bin-packer profile", p)
	}
}
