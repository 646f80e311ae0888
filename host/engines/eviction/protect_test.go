package eviction

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/convert"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// manyKeys are n keys that sort before every protection key the tests
// use ("kubernetes.io/...", "zz.example/...").
func manyKeys(n int, extra map[string]string) map[string]string {
	m := make(map[string]string, n+len(extra))
	for i := 0; i < n; i++ {
		m[fmt.Sprintf("a.example/k%04d", i)] = "v"
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// addCorePod converts a core/v1 pod as the informers do and adds it.
func (e *env) addCorePod(node, name string, annotations, labels map[string]string) {
	e.t.Helper()
	one := int64(1)
	ap, err := convert.Pod(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: annotations, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node, Priority: ptr(int32(1)), TerminationGracePeriodSeconds: &one, Containers: []corev1.Container{{Name: "c"}}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.cache.AddPod(ap); err != nil {
		e.t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// everyCandidate is a policy that wants every pod it is offered gone,
// by EvictPods (force) and by a hard threshold alike.
func everyCandidate(name string) *fakePolicy {
	return &fakePolicy{name: name, points: abi.PointEvictPods | abi.PointEvictionThreshold,
		evictPods: func(v *view) abi.NodeEvictPods {
			var out abi.NodeEvictPods
			for _, i := range v.candidates {
				out.Pods = append(out.Pods, abi.EvictPod{Pod: i, Reason: "all", Force: true})
			}
			return out
		},
		threshold: func(*view) abi.ThresholdResult { return abi.ThresholdResult{Met: abi.HardMet, Scope: "cpu"} },
		top: func(v *view, n *abi.TopEvictionNode) abi.TopEvictionPods {
			return abi.TopEvictionPods{Pods: n.Candidates[:min(len(n.Candidates), int(max(n.TopN, 1)))]}
		},
	}
}

// A protection (skip annotation or label, static or mirror pod) sorted
// after many other keys is never lost. The pods come
// from core/v1 objects through host/internal/convert, as in a cluster, each with
// 200 annotations or labels sorted before the one that protects it; a
// policy wanting every pod it is offered gone evicts only the
// unprotected one, round after round.
func TestProtectionSortedAfterManyKeysIsNeverLost(t *testing.T) {
	const n = 200
	e := newEnv(t, Settings{Burst: 10, SkipAnnotations: []string{"zz.example/keep"}, SkipLabels: []string{"zz.example/keep"}}, nil,
		everyCandidate("All"))
	e.node("n1", 100000)
	e.addCorePod("n1", "skip-annotation", manyKeys(n, map[string]string{"zz.example/keep": ""}), nil)
	e.addCorePod("n1", "skip-label", nil, manyKeys(n, map[string]string{"zz.example/keep": "yes"}))
	e.addCorePod("n1", "mirror", manyKeys(n, map[string]string{convert.ConfigMirrorAnnotation: "x", convert.ConfigSourceAnnotation: "api"}), nil)
	e.addCorePod("n1", "static", manyKeys(n, map[string]string{convert.ConfigSourceAnnotation: "file"}), nil)
	e.addCorePod("n1", "plain", manyKeys(n, nil), manyKeys(n, nil))
	for round := 1; round <= 3; round++ {
		r := e.round()
		if len(r.Failures) > 0 {
			t.Fatalf("round %d: failures %+v", round, r.Failures)
		}
		for _, v := range r.Victims {
			if v.Pod.Name != "plain" {
				t.Fatalf("round %d: protected pod %s evicted (victims %v)", round, v.Pod.Name, names(r.Victims))
			}
		}
	}
	if got := e.killer.names(); len(got) == 0 || slices.ContainsFunc(got, func(n string) bool { return n != "plain" }) {
		t.Fatalf("killed %v, want plain only", got)
	}
}

// The coordinator's own filter does not rest on the policy client's reply
// checks: a pod index that was not offered (protected, or out of range)
// never becomes a candidate (EvictPods and TopEvictionPods answers go
// through the same check).
func TestNamedPodMustHaveBeenOffered(t *testing.T) {
	e := newEnv(t, Settings{SkipAnnotations: []string{"keep"}}, nil, &fakePolicy{name: "P", points: abi.PointEvictPods})
	e.node("n1", 100000)
	e.pod("n1", "plain", 1, 1)
	e.pod("n1", "kept", 1, 1, func(p *abi.Pod) { p.Annotations = abi.Labels{{Key: "keep"}} })
	e.pod("n1", "mirror", 1, 1, func(p *abi.Pod) { p.Mirror = true })
	e.coord.cluster.UpdateSnapshot(e.coord.snap)
	nodes := e.coord.offer(t0)
	nr := nodes[0]
	idx := func(name string) uint32 {
		for i := range nr.ni.Info.Pods {
			if nr.ni.Info.Pods[i].Name == name {
				return uint32(i)
			}
		}
		t.Fatalf("no pod %s", name)
		return 0
	}
	if got := nr.pods[idx("kept")].guard; got != protSkipAnnotation {
		t.Fatalf("kept: protection %v", got)
	}
	if got := nr.pods[idx("mirror")].guard; got != protMirror {
		t.Fatalf("mirror: protection %v", got)
	}
	p := e.coord.policies.Load().policies[0]
	round := &Round{}
	e.coord.takeEvictPods(p, nodes, []abi.NodeEvictPods{{Pods: []abi.EvictPod{
		{Pod: idx("kept"), Force: true}, {Pod: idx("mirror")}, {Pod: 1 << 31, Force: true}, {Pod: idx("plain"), Force: true}}}}, t0, round)
	var got []string
	for _, c := range nr.force {
		got = append(got, c.pod.Name)
	}
	if len(nr.soft) != 0 || !reflect.DeepEqual(got, []string{"plain"}) {
		t.Fatalf("force %v, soft %d; want only plain", got, len(nr.soft))
	}
}

// The victims' last filter reads the candidate's protection, not the pod
// the guests were sent: a protected candidate (which offer never makes)
// is never selected.
func TestSelectVictimsDropsProtectedCandidates(t *testing.T) {
	e := newEnv(t, Settings{Burst: 5}, nil, &fakePolicy{name: "P", points: abi.PointEvictPods})
	ni := &snapshot.NodeInfo{Info: abi.NodeInfo{Node: abi.Node{Name: "n1"}, Pods: []abi.Pod{{UID: "u1", Name: "a"}, {UID: "u2", Name: "b"}}}}
	nr := &nodeRound{ni: ni, force: map[string]*candidate{
		"u1": {pod: &ni.Info.Pods[0], guard: protSkipAnnotation, scope: ScopeForce},
		"u2": {pod: &ni.Info.Pods[1], scope: ScopeForce},
	}, soft: map[string]*candidate{}}
	round := &Round{}
	e.coord.selectVictims([]*nodeRound{nr}, t0, round)
	if got := names(round.Victims); !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("victims %v, want b", got)
	}
}

// Every protection fact comes from the host record, whatever its length
// and order.
func TestProtectionOf(t *testing.T) {
	k := newSkipKeys([]string{"skip/a"}, []string{"skip/l"})
	long := make(abi.Labels, 0, 500)
	for i := 0; i < 500; i++ {
		long = append(long, abi.Label{Key: fmt.Sprintf("z%03d", i)})
	}
	for _, tc := range []struct {
		name string
		pod  abi.Pod
		want protection
	}{
		{"none", abi.Pod{Annotations: long, Labels: long}, 0},
		{"static", abi.Pod{Static: true}, protStatic},
		{"mirror", abi.Pod{Mirror: true}, protMirror},
		{"critical priority", abi.Pod{Priority: abi.SystemCriticalPriority}, protCriticalPriority},
		{"terminating", abi.Pod{Terminating: true}, protTerminating},
		{"skip annotation last of many", abi.Pod{Annotations: append(slices.Clone(long), abi.Label{Key: "skip/a"})}, protSkipAnnotation},
		{"skip annotation out of order", abi.Pod{Annotations: append(abi.Labels{{Key: "zzz"}}, abi.Label{Key: "skip/a"})}, protSkipAnnotation},
		{"skip label last of many", abi.Pod{Labels: append(slices.Clone(long), abi.Label{Key: "skip/l", Value: "x"})}, protSkipLabel},
		{"label key is not an annotation key", abi.Pod{Labels: abi.Labels{{Key: "skip/a"}}}, 0},
	} {
		if got := k.protectionOf(&tc.pod); got != tc.want {
			t.Errorf("%s: protection %v, want %v", tc.name, got, tc.want)
		}
	}
	if s := (protMirror | protSkipLabel).String(); s != "mirror,skip-label" {
		t.Errorf("String() = %q", s)
	}
}

// The guests' copy of a pod's annotations: the manifest's keys (sorted
// and distinct, whatever order the manifest gave), found however many
// annotations the pod has and wherever they sort.
func TestObservationSeesRequestedKeysPastMany(t *testing.T) {
	var seen []abi.Labels
	p := &fakePolicy{name: "A", points: abi.PointEvictPods, evictPods: func(v *view) abi.NodeEvictPods {
		for i := range v.obs.Pods {
			seen = append(seen, v.obs.Pods[i].Annotations)
		}
		return abi.NodeEvictPods{}
	}}
	e := newEnv(t, Settings{}, nil, p)
	e.mod.keys = []string{"zz.example/wanted", "a.example/k0000", "zz.example/wanted"}
	e.coord.SetPolicies(rebuild(t, e))
	e.node("n1", 100000)
	e.addCorePod("n1", "a", manyKeys(200, map[string]string{"zz.example/wanted": "yes"}), nil)
	e.round()
	want := []abi.Labels{{{Key: "a.example/k0000", Value: "v"}, {Key: "zz.example/wanted", Value: "yes"}}}
	if len(seen) != 1 || len(seen[0]) != 2 || seen[0][0].Key != want[0][0].Key || seen[0][1].Key != want[0][1].Key || seen[0][1].Value != "yes" {
		t.Fatalf("the policy saw %+v, want %+v", seen, want)
	}
}

// rebuild builds e's policies again (after a change to the fake module's
// manifest).
func rebuild(t *testing.T, e *env) *PolicySet {
	t.Helper()
	set, err := buildFake(t, e.mod, []PolicySpec{{Plugin: e.mod.policies[0].name}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// The reasons joined for one pod by several hard thresholds stay within
// an Event message's size.
func TestMergedReasonIsBounded(t *testing.T) {
	pod := &abi.Pod{UID: "u"}
	force := map[string]*candidate{}
	long := strings.Repeat("r", guest.MaxText)
	for range 10 {
		mergeForce(force, &candidate{pod: pod, reason: long})
	}
	if n := len(force["u"].reason); n > guest.MaxText {
		t.Fatalf("merged reason of %d bytes, over %d", n, guest.MaxText)
	}
}
