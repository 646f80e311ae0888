package abi

import (
	"reflect"
	"testing"
)

// The cases follow kube-scheduler v1.35's rules (component-helpers'
// PodRequests with NonMissingContainerRequests, and the scheduler's
// NodeInfo accounting): defaults only for a missing request, pod-level
// requests replacing the container sum for what they name.
func TestPodRequestsZeroIsNotMissing(t *testing.T) {
	const mi = 1 << 20
	cases := []struct {
		name                string
		pod                 Pod
		fit, nonZero, score Resources // CPU and memory only
	}{
		{
			name:    "missing requests get the defaults",
			pod:     Pod{Containers: []Container{{}}},
			nonZero: Resources{MilliCPU: 100, Memory: 200 * mi},
			score:   Resources{MilliCPU: 100, Memory: 200 * mi},
		},
		{
			name: "explicit zeros stay zero",
			pod:  Pod{Containers: []Container{{Given: GivesCPU | GivesMemory}}},
		},
		{
			name:    "explicit zero CPU, missing memory",
			pod:     Pod{Containers: []Container{{Given: GivesCPU}}},
			nonZero: Resources{Memory: 200 * mi},
			score:   Resources{Memory: 200 * mi},
		},
		{
			name: "one container explicit zero, one missing",
			pod: Pod{Containers: []Container{
				{Given: GivesCPU | GivesMemory},
				{Requests: Resources{Memory: 10 * mi}},
			}},
			fit:     Resources{Memory: 10 * mi},
			nonZero: Resources{MilliCPU: 100, Memory: 10 * mi},
			score:   Resources{MilliCPU: 100, Memory: 10 * mi},
		},
		{
			name: "pod-level requests replace the container sum",
			pod: Pod{
				Containers: []Container{{Requests: Resources{MilliCPU: 100, Memory: 10 * mi}}, {Requests: Resources{MilliCPU: 200}}},
				PodLevel:   &PodLevelRequests{Given: GivesCPU | GivesMemory, Requests: Resources{MilliCPU: 1000, Memory: 64 * mi}},
			},
			fit:     Resources{MilliCPU: 1000, Memory: 64 * mi},
			nonZero: Resources{MilliCPU: 1000, Memory: 64 * mi},
			score:   Resources{MilliCPU: 300, Memory: 10*mi + 200*mi}, // upstream's Fit scoring ignores pod-level requests
		},
		{
			// Upstream's NodeInfo counts no defaults once any part of the
			// pod names the resource, while Fit scoring counts them per
			// container and leaves the pod-level requests out.
			name: "pod-level memory only; one container misses CPU",
			pod: Pod{
				Containers: []Container{{Requests: Resources{MilliCPU: 200}}, {}},
				PodLevel:   &PodLevelRequests{Given: GivesMemory, Requests: Resources{Memory: 64 * mi}},
			},
			fit:     Resources{MilliCPU: 200, Memory: 64 * mi},
			nonZero: Resources{MilliCPU: 200, Memory: 64 * mi},
			score:   Resources{MilliCPU: 300, Memory: 400 * mi},
		},
		{
			name: "pod-level memory only; no container names CPU",
			pod: Pod{
				Containers: []Container{{}, {}},
				PodLevel:   &PodLevelRequests{Given: GivesMemory, Requests: Resources{Memory: 64 * mi}},
			},
			fit:     Resources{Memory: 64 * mi},
			nonZero: Resources{MilliCPU: 200, Memory: 64 * mi},
			score:   Resources{MilliCPU: 200, Memory: 400 * mi},
		},
		{
			name: "pod-level explicit zero CPU",
			pod: Pod{
				Containers: []Container{{}},
				PodLevel:   &PodLevelRequests{Given: GivesCPU | GivesMemory},
			},
			score: Resources{MilliCPU: 100, Memory: 200 * mi},
		},
		{
			name: "overhead adds after pod-level",
			pod: Pod{
				Containers: []Container{{}},
				PodLevel:   &PodLevelRequests{Given: GivesCPU, Requests: Resources{MilliCPU: 500}},
				Overhead:   Resources{MilliCPU: 50, Memory: mi},
			},
			fit:     Resources{MilliCPU: 550, Memory: mi},
			nonZero: Resources{MilliCPU: 550, Memory: mi}, // the overhead names memory
			score:   Resources{MilliCPU: 150, Memory: 201 * mi},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := func(r Resources) Resources { return Resources{MilliCPU: r.MilliCPU, Memory: r.Memory} }
			if r := got(PodRequests(&c.pod)); !reflect.DeepEqual(r, c.fit) {
				t.Errorf("PodRequests = %+v, want %+v", r, c.fit)
			}
			if r := got(PodNonZeroRequests(&c.pod)); !reflect.DeepEqual(r, c.nonZero) {
				t.Errorf("PodNonZeroRequests = %+v, want %+v", r, c.nonZero)
			}
			if r := got(PodScoreRequests(&c.pod)); !reflect.DeepEqual(r, c.score) {
				t.Errorf("PodScoreRequests = %+v, want %+v", r, c.score)
			}
		})
	}
}

func TestPodLevelHugePagesReplaceTheContainerSum(t *testing.T) {
	p := Pod{
		Containers: []Container{{Requests: Resources{Scalars: []Scalar{{Name: "hugepages-2Mi", Value: 4}, {Name: "example.com/gpu", Value: 1}}}}},
		PodLevel:   &PodLevelRequests{Requests: Resources{Scalars: []Scalar{{Name: "hugepages-2Mi", Value: 10}, {Name: "example.com/gpu", Value: 7}}}},
	}
	r := PodRequests(&p)
	if got := r.Get("hugepages-2Mi"); got != 10 {
		t.Errorf("hugepages-2Mi = %d, want the pod-level 10", got)
	}
	if got := r.Get("example.com/gpu"); got != 1 {
		t.Errorf("example.com/gpu = %d, want the containers' 1 (pod-level resources cannot set it)", got)
	}
}

func TestPodV14FieldsRoundTripAndOlderReadersSkipThem(t *testing.T) {
	p := samplePod()
	p.Containers[0].Given = GivesCPU
	p.PodLevel = &PodLevelRequests{Given: GivesMemory, Requests: Resources{Memory: 5, Scalars: []Scalar{{Name: "hugepages-1Gi", Value: 1}}}}
	var e Encoder
	e.Pod(&p)
	var got Pod
	d := NewDecoder(e.B)
	d.Pod(&got)
	if d.Err() != nil || d.Remaining() != 0 {
		t.Fatalf("decode: err %v, %d bytes left", d.Err(), d.Remaining())
	}
	if !reflect.DeepEqual(got.PodLevel, p.PodLevel) || got.Containers[0].Given != GivesCPU {
		t.Fatalf("v1.4 fields lost: PodLevel %+v, Given %v", got.PodLevel, got.Containers[0].Given)
	}

	// For a v1.3 reader the pod is written as v1.3 wrote it: a node
	// record with two pods decodes with nothing left over.
	var old Encoder
	old.SetPeerMinor(3)
	ni := NodeInfo{Node: Node{Name: "n"}, Pods: []Pod{p, p}}
	old.NodeInfo(&ni)
	var legacy NodeInfo
	od := NewDecoder(old.B)
	od.SetPeerMinor(3)
	od.NodeInfo(&legacy)
	if od.Err() != nil || od.Remaining() != 0 || len(legacy.Pods) != 2 {
		t.Fatalf("v1.3 reading: err %v, %d bytes left, %d pods", od.Err(), od.Remaining(), len(legacy.Pods))
	}
	if legacy.Pods[1].Name != p.Name || legacy.Pods[1].PodLevel != nil {
		t.Fatalf("v1.3 reading of the second pod: %+v", legacy.Pods[1])
	}
	// The same bytes read as v1.4 fail: the two formats differ.
	cd := NewDecoder(old.B)
	var cur NodeInfo
	cd.NodeInfo(&cur)
	if cd.Err() == nil && cd.Remaining() == 0 && reflect.DeepEqual(cur, legacy) {
		t.Fatal("a v1.3 node record decoded as v1.4 unchanged: the v1.4 fields are not being written")
	}
}
