package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// explainCluster is a generated cluster: nodes of mixed sizes in three
// zones, some tainted, some cordoned, and pods of mixed requests, some
// preferring a zone, some tolerating the taint, some too big for any node.
func explainCluster(seed uint64, nodes, pods int) *Objects {
	r := rand.New(rand.NewPCG(seed, seed+1))
	o := &Objects{}
	for i := 0; i < nodes; i++ {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%03d", i), Labels: map[string]string{
				"kubernetes.io/hostname": fmt.Sprintf("n%03d", i), "topology.kubernetes.io/zone": fmt.Sprintf("z%d", i%3)}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(1000+r.IntN(4)*1000), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(2+r.IntN(6))<<30, resource.BinarySI),
				corev1.ResourcePods:   resource.MustParse("110")}},
		}
		if r.IntN(5) == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}
		}
		if r.IntN(10) == 0 {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule})
		}
		n.Spec.Unschedulable = r.IntN(15) == 0
		o.Nodes = append(o.Nodes, n)
	}
	for i := 0; i < pods; i++ {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%03d", i), Namespace: "default"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(100+r.IntN(12)*100), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(int64(128+r.IntN(8)*128)<<20, resource.BinarySI)}}}}},
		}
		if r.IntN(3) == 0 {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: int32(1 + r.IntN(100)), Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("z%d", r.IntN(3))}}}}}}}}
		}
		if r.IntN(4) == 0 {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}
		if i == 0 || r.IntN(25) == 0 {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("64")
		}
		o.Pods = append(o.Pods, p)
	}
	return o
}

// The record a cycle writes says what the cycle decided: the node the pod
// was bound to, the score the choice compared, totals that are the sums
// of the weighted plugin scores, the highest total among the scored
// nodes; and recording changes no decision (the same run without it
// places every pod alike). Native twins and the Wasm bundle explain
// alike.
func TestExplanationIsTheCyclesDecision(t *testing.T) {
	ctx := context.Background()
	cacheDir := t.TempDir()
	for _, seed := range []uint64{1, 2, 3} {
		objs := explainCluster(seed, 40+int(seed)*20, 60)
		byBackend := map[string][]*decision.Scheduling{}
		for _, backend := range []string{"native", "wasm"} {
			opts := onBackend(backend, nil, Options{CacheDir: cacheDir, Seed: seed})
			plain, err := Run(ctx, objs, opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Explain = func(string) bool { return true }
			rep, err := Run(ctx, objs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plain.Pods, rep.Pods) {
				t.Fatalf("seed %d %s: recording decisions changed them", seed, backend)
			}
			last := map[string]*decision.Scheduling{}
			for _, r := range rep.Explanations {
				last[r.Pod] = r
				checkRecord(t, fmt.Sprintf("seed %d %s %s", seed, backend, r.Pod), r)
			}
			unschedulable := 0
			for _, p := range rep.Pods {
				r := last[p.Namespace+"/"+p.Name]
				if r == nil {
					t.Fatalf("seed %d %s: no record for %s/%s", seed, backend, p.Namespace, p.Name)
				}
				switch p.Status {
				case StatusScheduled:
					if r.Outcome != decision.OutcomeChosen || r.Node != p.Node {
						t.Errorf("seed %d %s %s: bound to %s, record says %s %s", seed, backend, r.Pod, p.Node, r.Outcome, r.Node)
					}
				case StatusUnschedulable:
					unschedulable++
					if r.Outcome != decision.OutcomeUnschedulable || r.Feasible != 0 || len(r.Reasons) == 0 {
						t.Errorf("seed %d %s %s: unschedulable, record %+v", seed, backend, r.Pod, r)
					}
					if !strings.HasPrefix(p.Message, r.Message[:min(len(r.Message), 30)]) {
						t.Errorf("seed %d %s %s: message %q, record %q", seed, backend, r.Pod, p.Message, r.Message)
					}
				}
			}
			if unschedulable == 0 {
				t.Errorf("seed %d: the generated cluster left no pod unschedulable; the test wants some", seed)
			}
			byBackend[backend] = rep.Explanations
		}
		n, w := byBackend["native"], byBackend["wasm"]
		if len(n) != len(w) {
			t.Fatalf("seed %d: %d records native, %d wasm", seed, len(n), len(w))
		}
		for i := range n {
			a, b := *n[i], *w[i]
			a.Time, a.DurationNanos, b.DurationNanos = b.Time, 0, 0
			if !reflect.DeepEqual(a, b) {
				t.Errorf("seed %d: record %d differs between native and wasm:\n%+v\n%+v", seed, i, a, b)
			}
		}
	}
}

// checkRecord checks that a record adds up: totals are the weighted sums,
// weighted is normalized times weight, the chosen node's total is the
// record's score and no kept node has more, and the counts agree.
func checkRecord(t *testing.T, what string, r *decision.Scheduling) {
	t.Helper()
	if r.Evaluated+r.NotEvaluated != r.NumNodes || r.Feasible+len(r.Rejected)+r.RejectedDropped != r.Evaluated {
		t.Errorf("%s: counts do not add up: %d nodes, %d evaluated, %d not, %d feasible, %d rejected (+%d dropped)",
			what, r.NumNodes, r.Evaluated, r.NotEvaluated, r.Feasible, len(r.Rejected), r.RejectedDropped)
	}
	if r.Outcome != decision.OutcomeChosen || len(r.Scores) == 0 {
		return
	}
	chosen := r.ScoreOf(r.Node)
	if chosen == nil || chosen.Total != r.Score {
		t.Fatalf("%s: chosen %s score %d not among the kept scores %+v", what, r.Node, r.Score, chosen)
	}
	for _, ns := range r.Scores {
		var sum int64
		for i, w := range ns.Weighted {
			if w != ns.Normalized[i]*r.ScorePlugins[i].Weight {
				t.Errorf("%s %s: weighted %d != %d x %d", what, ns.Node, w, ns.Normalized[i], r.ScorePlugins[i].Weight)
			}
			sum += w
		}
		if sum != ns.Total {
			t.Errorf("%s %s: total %d, sum of weighted %d", what, ns.Node, ns.Total, sum)
		}
		if ns.Total > r.Score {
			t.Errorf("%s: %s scored %d above the chosen %s's %d", what, ns.Node, ns.Total, r.Node, r.Score)
		}
		if ns.Total == r.Score && ns.Node != r.Node && !contains(r.Tied, ns.Node) {
			t.Errorf("%s: %s ties with the chosen node but is not listed as tied", what, ns.Node)
		}
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// On a cluster big enough for percentageOfNodesToScore, with many nodes
// rejected, a record stays within its limits, counts what it left out,
// and still adds up.
func TestExplanationBounds(t *testing.T) {
	objs := &Objects{}
	for i := 0; i < 1200; i++ {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("n%04d", i), Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("n%04d", i)}},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}},
		}
		if i%2 == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: strings.Repeat("x", 60), Effect: corev1.TaintEffectNoSchedule}}
		}
		objs.Nodes = append(objs.Nodes, n)
	}
	objs.Pods = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img"}}}}}
	rep, err := Run(context.Background(), objs, Options{CacheDir: t.TempDir(), Seed: 1, Explain: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Explanations) != 1 {
		t.Fatalf("%d records", len(rep.Explanations))
	}
	r := rep.Explanations[0]
	checkRecord(t, "p", r)
	l := decision.DefaultLimits
	if r.NumNodes != 1200 || r.NotEvaluated == 0 || r.Feasible == 0 {
		t.Errorf("nodes %d, not evaluated %d, feasible %d: want the walk cut by percentageOfNodesToScore", r.NumNodes, r.NotEvaluated, r.Feasible)
	}
	if len(r.Rejected) != l.MaxNodes || r.RejectedDropped == 0 || len(r.Scores) > l.MaxScored+1 || r.ScoredDropped != r.Feasible-len(r.Scores) {
		t.Errorf("kept %d verdicts (+%d dropped), %d scores (+%d dropped): want at most %d and %d",
			len(r.Rejected), r.RejectedDropped, len(r.Scores), r.ScoredDropped, l.MaxNodes, l.MaxScored)
	}
	if len(r.Tied) > l.MaxScored || r.TiedCount < len(r.Tied) {
		t.Errorf("%d tied named of %d", len(r.Tied), r.TiedCount)
	}
	if len(r.Reasons) != 1 || r.Reasons[0].Nodes != len(r.Rejected)+r.RejectedDropped {
		t.Errorf("reasons %+v, want one group counting every rejected node", r.Reasons)
	}
}

// A pod that preempts: its first attempt's record says Nominated, naming
// the node preemption made room on; the next attempt takes that node
// without scoring, and the record says so.
func TestExplanationOfAPreemptor(t *testing.T) {
	o, err := read(t, `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: only, labels: {kubernetes.io/hostname: only}}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: low}
spec: {nodeName: only, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: high}
spec: {priorityClassName: high, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
`)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), o, Options{NativeBuiltin: true, CacheDir: t.TempDir(), Explain: func(k string) bool { return k == "default/high" }})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Pod("default", "high"); p.Status != StatusScheduled || p.Node != "only" {
		t.Fatalf("high: %+v", p)
	}
	if len(rep.Explanations) < 2 {
		t.Fatalf("%d records, want the nominating attempt and the placing one", len(rep.Explanations))
	}
	first, last := rep.Explanations[0], rep.Explanations[len(rep.Explanations)-1]
	if first.Outcome != decision.OutcomeNominated || first.Node != "only" || len(first.Reasons) == 0 || first.Reasons[0].Reason != "Insufficient cpu" {
		t.Errorf("first attempt: %+v", first)
	}
	if last.Outcome != decision.OutcomeChosen || last.Node != "only" || !last.NominatedNodePassed || last.Evaluated != 1 {
		t.Errorf("last attempt: %+v", last)
	}
}

// A recorded cycle keeps each plugin's scores from before NormalizeScore:
// NodeAffinity's raw score is the weight of the pod's preferred term the
// node matches and TaintToleration's the count of PreferNoSchedule taints
// the pod does not tolerate, what their Score returns before the guest
// normalises within the same call. Native twins and the Wasm bundle
// report them alike (TestExplanationIsTheCyclesDecision compares the
// whole records).
func TestExplanationKeepsRawScores(t *testing.T) {
	ctx := context.Background()
	cacheDir := t.TempDir()
	objs := explainCluster(4, 60, 60)
	nodes, pods := map[string]*corev1.Node{}, map[string]*corev1.Pod{}
	for _, n := range objs.Nodes {
		nodes[n.Name] = n
	}
	for _, p := range objs.Pods {
		pods[p.Namespace+"/"+p.Name] = p
	}
	want := func(plugin string, p *corev1.Pod, n *corev1.Node) (int64, bool) {
		switch plugin {
		case "NodeAffinity":
			var raw int64
			if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
				for _, term := range a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
					if slices.Contains(term.Preference.MatchExpressions[0].Values, n.Labels["topology.kubernetes.io/zone"]) {
						raw += int64(term.Weight)
					}
				}
			}
			return raw, true
		case "TaintToleration":
			var raw int64
			for _, taint := range n.Spec.Taints {
				if taint.Effect == corev1.TaintEffectPreferNoSchedule {
					raw++ // the pods tolerate only "dedicated"
				}
			}
			return raw, true
		}
		return 0, false
	}
	for _, backend := range []string{"native", "wasm"} {
		opts := onBackend(backend, nil, Options{CacheDir: cacheDir, Seed: 4})
		opts.Explain = func(string) bool { return true }
		rep, err := Run(ctx, objs, opts)
		if err != nil {
			t.Fatal(err)
		}
		checked, changed := map[string]int{}, map[string]int{}
		for _, r := range rep.Explanations {
			for i, sp := range r.ScorePlugins {
				if !sp.RawKnown {
					t.Errorf("%s %s: %s's raw scores not known", backend, r.Pod, sp.Name)
				}
				for _, ns := range r.Scores {
					if len(ns.Raw) != len(r.ScorePlugins) {
						t.Fatalf("%s %s %s: %d raw scores for %d plugins", backend, r.Pod, ns.Node, len(ns.Raw), len(r.ScorePlugins))
					}
					if !sp.NormalizeScore && ns.Raw[i] != ns.Normalized[i] {
						t.Errorf("%s %s %s: %s does not normalise, yet raw %d != normalized %d", backend, r.Pod, ns.Node, sp.Name, ns.Raw[i], ns.Normalized[i])
					}
					w, ok := want(sp.Name, pods[r.Pod], nodes[ns.Node])
					if !ok {
						continue
					}
					checked[sp.Name]++
					if ns.Raw[i] != w {
						t.Errorf("%s %s %s: %s raw %d, its Score gives %d", backend, r.Pod, ns.Node, sp.Name, ns.Raw[i], w)
					}
					if ns.Raw[i] != ns.Normalized[i] {
						changed[sp.Name]++
					}
				}
			}
		}
		for _, name := range []string{"NodeAffinity", "TaintToleration"} {
			if checked[name] == 0 || changed[name] == 0 {
				t.Errorf("%s: %s: %d raw scores checked, %d differ from the normalized; the test wants both", backend, name, checked[name], changed[name])
			}
		}
	}
}
