package abi

import (
	"reflect"
	"testing"
)

func samplePod() Pod {
	return Pod{
		UID: "uid-1", Namespace: "prod", Name: "web-0",
		Labels:   Labels{{Key: "app", Value: "web"}, {Key: "tier", Value: "front"}},
		NodeName: "n1", NominatedNodeName: "n2", SchedulerName: "bin-packer", Priority: -5, PreemptNever: true, Terminating: true, StartTime: 1700000000123,
		Containers: []Container{{Name: "c", Image: "nginx:1.25", Requests: Resources{MilliCPU: 250, Memory: 1 << 30, Scalars: []Scalar{{"nvidia.com/gpu", 1}}},
			Ports: []HostPort{{IP: "10.0.0.1", Protocol: ProtocolUDP, Port: 53}}}},
		InitContainers: []Container{{Name: "side", RestartAlways: true, Requests: Resources{MilliCPU: 10}}},
		Overhead:       Resources{Memory: 64 << 20, EphemeralStorage: 5},
		NodeSelector:   Labels{{Key: "disk", Value: "ssd"}},
		NodeAffinity: &NodeAffinity{
			Required:  &NodeSelector{Terms: []NodeSelectorTerm{{MatchExpressions: []Requirement{{"zone", OpIn, []string{"a", "b"}}}, MatchFields: []Requirement{{"metadata.name", OpNotIn, []string{"n9"}}}}}},
			Preferred: []PreferredSchedulingTerm{{Weight: 7, Term: NodeSelectorTerm{MatchExpressions: []Requirement{{"cpu", OpGt, []string{"8"}}}}}},
		},
		PodAffinity: &PodAffinity{Required: []PodAffinityTerm{{LabelSelector: &LabelSelector{MatchLabels: Labels{{Key: "app", Value: "db"}}}, Namespaces: []string{"a"}, TopologyKey: "zone", MatchLabelKeys: []string{"rev"}}}},
		PodAntiAffinity: &PodAffinity{Preferred: []WeightedPodAffinityTerm{{Weight: 100, Term: PodAffinityTerm{
			LabelSelector: &LabelSelector{MatchExpressions: []Requirement{{"app", OpExists, nil}}}, NamespaceSelector: &LabelSelector{}, TopologyKey: "kubernetes.io/hostname", MismatchLabelKeys: []string{"x"}}}}},
		Tolerations: []Toleration{{Key: "k", Operator: TolerationExists, Effect: EffectNoExecute}, {Key: "a", Value: "b", Effect: EffectPreferNoSchedule}},
		TopologySpread: []TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "zone", WhenUnsatisfiable: ScheduleAnyway,
			LabelSelector: &LabelSelector{MatchLabels: Labels{{Key: "app", Value: "web"}}}, MinDomains: 3, NodeAffinityPolicy: PolicyHonor, NodeTaintsPolicy: PolicyIgnore, MatchLabelKeys: []string{"pod-template-hash"}}},
		Owners:             []OwnerRef{{Kind: "ReplicaSet", Name: "web-abc", UID: "rs-1", Controller: true}},
		ControllerSelector: &LabelSelector{MatchLabels: Labels{{Key: "app", Value: "web"}}},
	}
}

func sampleNodeInfo() NodeInfo {
	return NodeInfo{
		Node: Node{Name: "n1", Labels: Labels{{Key: "zone", Value: "a"}}, Taints: []Taint{{Key: "gpu", Value: "true", Effect: EffectNoSchedule}}, Unschedulable: true,
			Allocatable: Resources{MilliCPU: 4000, Memory: 32 << 30, Scalars: []Scalar{{"nvidia.com/gpu", 4}}}, AllowedPods: 110, DeclaredFeatures: 0b101,
			Images: []ImageState{{Names: []string{"nginx:1.25", "nginx@sha256:abc"}, Size: 50 << 20}}},
		Requested: Resources{MilliCPU: 100}, NonZeroRequested: Resources{MilliCPU: 100, Memory: 200 << 20}, PodCount: 1,
		UsedPorts: []HostPort{{Port: 80}},
		Pods:      []Pod{samplePod()},
	}
}

func TestPodAndNodeInfoRoundTrip(t *testing.T) {
	ni := sampleNodeInfo()
	var e Encoder
	e.NodeInfo(&ni)
	for _, alias := range []bool{false, true} {
		var got NodeInfo
		d := &Decoder{}
		d.Reset(e.B, alias)
		d.NodeInfo(&got)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("alias=%v: err=%v remaining=%d", alias, d.Err(), d.Remaining())
		}
		if !reflect.DeepEqual(got, ni) {
			t.Fatalf("alias=%v: round trip changed the NodeInfo:\n got %+v\nwant %+v", alias, got, ni)
		}
	}
}

func TestEveryTruncationIsAnErrorNotAPanic(t *testing.T) {
	ni := sampleNodeInfo()
	var e Encoder
	// A record cut right before its v1.7 declared features reads as an
	// older writer's (which a record's length prefix makes unambiguous):
	// every shorter cut must fail.
	end := e.NodeInfoBeforeV17(&ni)
	for n := 0; n < end; n++ {
		var got NodeInfo
		d := NewDecoder(e.B[:n])
		d.NodeInfo(&got)
		if d.Err() == nil {
			t.Fatalf("decoding the first %d of %d bytes succeeded", n, len(e.B))
		}
	}
}

func TestForgedCountDoesNotAllocate(t *testing.T) {
	// A label list claiming 2^40 entries in a 10-byte input.
	var e Encoder
	e.Uvarint(1 << 40)
	e.B = append(e.B, "abcd"...)
	d := NewDecoder(e.B)
	if ls := d.Labels(); ls != nil || d.Err() == nil {
		t.Fatalf("got %d labels, err %v; want an error", len(ls), d.Err())
	}
}

func TestValueRoundTripAndDepthLimit(t *testing.T) {
	v := Value{Kind: KindMap, Map: []Field{
		{"type", Value{Kind: KindString, Str: "MostAllocated"}},
		{"resources", Value{Kind: KindList, List: []Value{{Kind: KindMap, Map: []Field{{"name", Value{Kind: KindString, Str: "cpu"}}, {"weight", Value{Kind: KindInt, Int: 3}}}}}}},
		{"ratio", Value{Kind: KindFloat, Float: 0.25}},
		{"on", Value{Kind: KindBool, Bool: true}},
		{"nothing", Value{}},
	}}
	var e Encoder
	e.Value(&v)
	var got Value
	d := NewDecoder(e.B)
	d.Value(&got, 0)
	if d.Err() != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip: err=%v got %+v", d.Err(), got)
	}
	if w := got.Get("resources").List[0].Get("weight"); w == nil || w.Int != 3 {
		t.Fatalf("Get path failed: %+v", w)
	}

	deep := Value{}
	for i := 0; i < maxValueDepth+5; i++ {
		deep = Value{Kind: KindList, List: []Value{deep}}
	}
	e.Reset()
	e.Value(&deep)
	d = NewDecoder(e.B)
	d.Value(&got, 0)
	if d.Err() == nil {
		t.Fatal("a value nested past the limit decoded")
	}
}

func TestPodRequests(t *testing.T) {
	c := func(cpu, mem int64) Container { return Container{Requests: Resources{MilliCPU: cpu, Memory: mem}} }
	side := func(cpu, mem int64) Container { x := c(cpu, mem); x.RestartAlways = true; return x }
	for _, tc := range []struct {
		name          string
		pod           Pod
		want, nonZero Resources
	}{
		{"sum of app containers", Pod{Containers: []Container{c(100, 10), c(200, 20)}}, Resources{MilliCPU: 300, Memory: 30}, Resources{MilliCPU: 300, Memory: 30}},
		{"init container larger than apps wins", Pod{Containers: []Container{c(100, 10)}, InitContainers: []Container{c(500, 5)}}, Resources{MilliCPU: 500, Memory: 10}, Resources{MilliCPU: 500, Memory: 10}},
		{"overhead added after the max", Pod{Containers: []Container{c(100, 10)}, InitContainers: []Container{c(500, 5)}, Overhead: Resources{MilliCPU: 50, Memory: 1}}, Resources{MilliCPU: 550, Memory: 11}, Resources{MilliCPU: 550, Memory: 11}},
		// Sidecar 100 runs with the apps (200) = 300; the init container
		// after it runs next to it: 100+250 = 350 > 300.
		{"sidecar counts for the pod's life and under later init containers", Pod{Containers: []Container{c(200, 0)}, InitContainers: []Container{side(100, 0), c(250, 0)}}, Resources{MilliCPU: 350}, Resources{MilliCPU: 350, Memory: 2 * DefaultMemoryRequest}},
		{"empty requests get scoring defaults", Pod{Containers: []Container{c(0, 0)}}, Resources{}, Resources{MilliCPU: DefaultMilliCPURequest, Memory: DefaultMemoryRequest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := PodRequests(&tc.pod); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PodRequests = %+v, want %+v", got, tc.want)
			}
			if got := PodNonZeroRequests(&tc.pod); !reflect.DeepEqual(got, tc.nonZero) {
				t.Errorf("PodNonZeroRequests = %+v, want %+v", got, tc.nonZero)
			}
		})
	}
}

func TestToleratesTaint(t *testing.T) {
	taint := Taint{Key: "dedicated", Value: "gpu", Effect: EffectNoSchedule}
	for _, tc := range []struct {
		name string
		tol  Toleration
		want bool
	}{
		{"equal key and value", Toleration{Key: "dedicated", Value: "gpu", Effect: EffectNoSchedule}, true},
		{"equal, other value", Toleration{Key: "dedicated", Value: "cpu", Effect: EffectNoSchedule}, false},
		{"exists ignores value", Toleration{Key: "dedicated", Operator: TolerationExists}, true},
		{"empty effect matches all", Toleration{Key: "dedicated", Value: "gpu"}, true},
		{"other effect", Toleration{Key: "dedicated", Value: "gpu", Effect: EffectNoExecute}, false},
		{"empty key with exists tolerates everything", Toleration{Operator: TolerationExists}, true},
		{"empty key with equal compares the value only", Toleration{Value: "gpu"}, true},
		{"other key", Toleration{Key: "x", Operator: TolerationExists}, false},
	} {
		if got := tc.tol.ToleratesTaint(&taint); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPodHostPortsSkipsPlainInitContainers(t *testing.T) {
	p := Pod{
		InitContainers: []Container{{Ports: []HostPort{{Port: 1}}}, {RestartAlways: true, Ports: []HostPort{{Port: 2}}}},
		Containers:     []Container{{Ports: []HostPort{{Port: 3}}}},
	}
	got := PodHostPorts(&p)
	if len(got) != 2 || got[0].Port != 2 || got[1].Port != 3 {
		t.Fatalf("ports = %+v, want 2 and 3", got)
	}
}

func TestMinPodSizeIsTheEmptyPodEncoding(t *testing.T) {
	var e Encoder
	e.SetPeerMinor(3)
	e.Pod(&Pod{})
	if len(e.B) != minPodSize {
		t.Fatalf("an empty pod encodes to %d bytes for a v1.3 reader; minPodSize says %d", len(e.B), minPodSize)
	}
	var cur Encoder
	cur.Pod(&Pod{})
	if len(cur.B) != minPodSize+1 {
		t.Fatalf("an empty pod encodes to %d bytes; want minPodSize+1 = %d", len(cur.B), minPodSize+1)
	}
}

func TestNodeInfoAddRemovePodRoundTrips(t *testing.T) {
	base := NodeInfo{Node: Node{Name: "n"}}
	a := samplePod()
	b := samplePod()
	b.UID = "uid-2"
	ni := base.Clone()
	ni.AddPod(&a)
	ni.AddPod(&b)
	if ni.PodCount != 2 || ni.Requested.MilliCPU != 2*PodRequests(&a).MilliCPU || len(ni.UsedPorts) != 2 {
		t.Fatalf("after two adds: %+v", ni)
	}
	snapshot := ni.Clone()
	ni.RemovePod(&a)
	if snapshot.PodCount != 2 || len(snapshot.Pods) != 2 {
		t.Fatal("RemovePod on the original changed the clone")
	}
	if ni.PodCount != 1 || len(ni.Pods) != 1 || ni.Pods[0].UID != "uid-2" || len(ni.UsedPorts) != 1 ||
		ni.Requested.MilliCPU != PodRequests(&b).MilliCPU || ni.Requested.Get("nvidia.com/gpu") != 1 {
		t.Fatalf("after removing a: %+v", ni)
	}
	ni.RemovePod(&b)
	if ni.PodCount != 0 || ni.Requested.MilliCPU != 0 || ni.NonZeroRequested.Memory != 0 || len(ni.UsedPorts) != 0 || ni.Requested.Get("nvidia.com/gpu") != 0 {
		t.Fatalf("after removing both: %+v", ni)
	}
}

func TestPodGroupsCountPodsByNamespaceAndLabels(t *testing.T) {
	web := Labels{{Key: "app", Value: "web"}}
	db := Labels{{Key: "app", Value: "db"}}
	var ni NodeInfo
	add := func(uid, ns string, l Labels) Pod {
		p := Pod{UID: uid, Namespace: ns, Labels: l}
		ni.AddPod(&p)
		return p
	}
	w1 := add("1", "prod", web)
	add("2", "prod", web)
	d1 := add("3", "prod", db)
	add("4", "dev", web)
	want := []PodGroup{{Namespace: "dev", Labels: web, Count: 1}, {Namespace: "prod", Labels: db, Count: 1}, {Namespace: "prod", Labels: web, Count: 2}}
	if !reflect.DeepEqual(ni.PodGroups, want) {
		t.Fatalf("groups = %+v, want %+v", ni.PodGroups, want)
	}
	ni.RemovePod(&w1)
	ni.RemovePod(&d1)
	want = []PodGroup{{Namespace: "dev", Labels: web, Count: 1}, {Namespace: "prod", Labels: web, Count: 1}}
	if !reflect.DeepEqual(ni.PodGroups, want) {
		t.Fatalf("after removals groups = %+v, want %+v", ni.PodGroups, want)
	}
	var e Encoder
	e.NodeInfo(&ni)
	var got NodeInfo
	d := NewDecoder(e.B)
	d.NodeInfo(&got)
	if d.Err() != nil || !reflect.DeepEqual(got.PodGroups, ni.PodGroups) {
		t.Fatalf("groups round trip: %v %+v", d.Err(), got.PodGroups)
	}
}
