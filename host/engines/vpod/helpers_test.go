package vpod

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	testNS  = "knative-eventing"
	testSTS = "statefulset-name"
)

func pn(o int) string { return podName(testSTS, int32(o)) }

func mkPod(o int, node string, annotations ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: pn(o)}, Spec: corev1.PodSpec{NodeName: node}}
	for i := 0; i+1 < len(annotations); i += 2 {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[annotations[i]] = annotations[i+1]
	}
	return p
}

func mkNode(name, zone string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if zone != "" {
		n.Labels = map[string]string{ZoneLabel: zone}
	}
	return n
}

// zonedCluster has nodes node-0…node-(nodes−1) in zones zone-(i mod
// zones), and pods 0…replicas−1 with pod i on node i mod nodes.
func zonedCluster(replicas, nodes, zones int, vpods ...VPod) *StaticCluster {
	var ns []*corev1.Node
	for i := 0; i < nodes; i++ {
		ns = append(ns, mkNode(fmt.Sprintf("node-%d", i), fmt.Sprintf("zone-%d", i%zones)))
	}
	var ps []*corev1.Pod
	for i := 0; i < replicas; i++ {
		ps = append(ps, mkPod(i, fmt.Sprintf("node-%d", i%nodes)))
	}
	return NewStaticCluster(testNS, testSTS, int32(replicas), ps, ns, vpods)
}

func key(name string) Key { return Key{Namespace: "ns", Name: name} }

func vp(name string, vreplicas int32, ps ...Placement) VPod {
	return VPod{Key: key(name), VReplicas: vreplicas, Placements: ps}
}

func pl(o int, vr int32) Placement { return Placement{PodName: pn(o), VReplicas: vr} }

// seqRand returns the given values in turn (then 0): a deterministic tie
// breaker. Each value must be below the n it is asked for.
func seqRand(t *testing.T, vals ...int64) func(int64) int64 {
	i := 0
	return func(n int64) int64 {
		if i >= len(vals) {
			return 0
		}
		v := vals[i]
		i++
		if v >= n {
			t.Errorf("seqRand: %d not below %d", v, n)
			return 0
		}
		return v
	}
}

// lastRand always picks the newest tied candidate (so a tie goes to the
// last pod in Knative's iteration order); firstRand keeps the first.
func lastRand(int64) int64 { return 0 }
func firstRand(n int64) int64 {
	if n <= 1 {
		return 0
	}
	return n - 1
}

func newSched(t *testing.T, set Settings, c Cluster, p *Policies, o Options) *Scheduler {
	t.Helper()
	if set.Name == "" {
		set.Name = "test"
	}
	set.Namespace, set.StatefulSet = testNS, testSTS
	s, err := New(set, c, p, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var bg = context.Background()

func asRequeue(err error, rq **RequeueError) bool { return errors.As(err, rq) }
