package preemption_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/engines/preemption"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

func TestHighPriorityPodPreemptsTheCheapestNode(t *testing.T) {
	for _, mode := range []string{"{asyncPreemption: false}", ""} {
		t.Run("args "+mode, func(t *testing.T) {
			o := objects(t, nodeYAML("n1", "2"), nodeYAML("n2", "2"),
				podYAML("low-1", "low", "n1", "1500m", "", ""),
				podYAML("low-2", "low", "n2", "1", "", ""), podYAML("low-3", "low", "n2", "900m", "", ""),
				podYAML("big", "high", "", "1500m", "", ""))
			m := &metrics{}
			rep := run(t, profileConfig(t, mode), o, sim.Options{PreemptionMetrics: m})
			if p := rep.Pod("default", "big"); p.Status != sim.StatusScheduled || p.Node != "n1" || p.NominatedNode != "n1" {
				t.Fatalf("big = %+v", p)
			}
			if got := victims(rep); !reflect.DeepEqual(got, []string{"default/low-1@n1/delete"}) {
				t.Fatalf("victims %v (one victim of sum 10 beats two)", got)
			}
			if rep.Preemptions[0].Preemptor != "default/big" {
				t.Fatalf("preemptor %q", rep.Preemptions[0].Preemptor)
			}
			// The victim was marked before it was deleted.
			var ops []string
			for _, e := range rep.Timeline {
				ops = append(ops, string(e.Op)+" "+e.Pod)
			}
			if !strings.Contains(strings.Join(ops, ","), "mark-victim default/low-1,delete default/low-1") {
				t.Fatalf("timeline %v", ops)
			}
			if m.attempts["default-scheduler"] != 1 || !reflect.DeepEqual(m.victims, []int{1}) {
				t.Fatalf("metrics %+v", m)
			}
			wantGoroutines := []string{"success"}
			if mode != "" {
				wantGoroutines = nil
			}
			if !reflect.DeepEqual(m.results, wantGoroutines) {
				t.Fatalf("goroutine results %v, want %v", m.results, wantGoroutines)
			}
		})
	}
}

func TestPreemptNeverIsNotEligible(t *testing.T) {
	o := objects(t, nodeYAML("n1", "1"), podYAML("low", "low", "n1", "1", "", ""),
		podYAML("polite", "high", "", "1", "", "preemptionPolicy: Never"))
	rep := run(t, profileConfig(t, ""), o, sim.Options{})
	p := rep.Pod("default", "polite")
	if p.Status != sim.StatusUnschedulable || !strings.HasSuffix(p.Message, "preemption: not eligible due to preemptionPolicy=Never.") || len(rep.Preemptions) != 0 {
		t.Fatalf("polite = %+v, preemptions %v", p, rep.Preemptions)
	}
}

func TestNoCandidatesSaysWhyPerNode(t *testing.T) {
	// n1: only an equal-priority pod; n2: removing the low pod is not
	// enough; n3: tainted (unresolvable: preemption cannot help).
	o := objects(t, nodeYAML("n1", "1"), nodeYAML("n2", "1"),
		"---\napiVersion: v1\nkind: Node\nmetadata: {name: n3}\nspec: {taints: [{key: k, effect: NoSchedule}]}\nstatus: {allocatable: {cpu: \"8\", pods: \"20\"}}\n",
		podYAML("peer", "high", "n1", "1", "", ""), podYAML("low", "low", "n2", "500m", "", ""),
		podYAML("peer2", "high", "n2", "500m", "", ""), podYAML("huge", "high", "", "1", "", ""))
	rep := run(t, profileConfig(t, ""), o, sim.Options{})
	p := rep.Pod("default", "huge")
	want := "preemption: 0/3 nodes are available: 1 Insufficient cpu, 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
	if p.Status != sim.StatusUnschedulable || !strings.HasSuffix(p.Message, want) || len(rep.Preemptions) != 0 {
		t.Fatalf("huge = %+v\nwant suffix %q", p, want)
	}
}

func TestArgsValidation(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{`{"minCandidateNodesPercentage": 101}`, "minCandidateNodesPercentage: 101 is outside 0..100"},
		{`{"minCandidateNodesAbsolute": -1}`, "minCandidateNodesAbsolute: -1 must not be negative"},
		{`{"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}`, "must not both be 0"},
		{`{"victimPolicy": ""}`, "victimPolicy: must not be empty"},
		{`{"asyncPreemptoin": true}`, `unknown field "asyncPreemptoin"`},
	} {
		if _, err := preemption.ParseArgs([]byte(tc.args)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	a, err := preemption.ParseArgs(nil)
	if err != nil || a != preemption.DefaultArgs() || !a.AsyncPreemption {
		t.Fatalf("defaults %+v %v", a, err)
	}
	for _, tc := range []struct {
		pct, abs int32
		n, want  int
	}{{10, 100, 5000, 500}, {10, 100, 300, 100}, {10, 100, 50, 50}, {0, 3, 10, 3}, {50, 0, 9, 4}} {
		a := preemption.Args{MinCandidateNodesPercentage: tc.pct, MinCandidateNodesAbsolute: tc.abs}
		if got := a.NumCandidates(tc.n); got != tc.want {
			t.Errorf("NumCandidates(%d) with %d%%/%d = %d, want %d", tc.n, tc.pct, tc.abs, got, tc.want)
		}
	}
}

func TestBadVictimPolicyInAProfileIsAClearError(t *testing.T) {
	o := objects(t, nodeYAML("n1", "1"))
	for _, tc := range []struct{ args, want string }{
		{`{victimPolicy: Nope}`, `profiles[0]: plugin "DefaultPreemption": preemption policy "Nope": no module serves it`},
		{`{victimPolicy: NodeResourcesFit}`, `preemption policy "NodeResourcesFit" does not implement the Preemption point`},
		{`{minCandidateNodesAbsolute: -2}`, `profiles[0].pluginConfig[0].args: plugin "DefaultPreemption": minCandidateNodesAbsolute`},
	} {
		_, err := sim.Run(t.Context(), o, sim.Options{Config: profileConfig(t, tc.args), NativeBuiltin: true, CacheDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestNominatedNodeWithATerminatingVictimIsNotPreemptedAgain(t *testing.T) {
	o := objects(t, nodeYAML("n1", "1"), nodeYAML("n2", "1"), `---
apiVersion: v1
kind: Pod
metadata: {name: leaving, deletionTimestamp: "2026-01-01T00:00:00Z"}
spec: {nodeName: n1, priorityClassName: low, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
status:
  conditions: [{type: DisruptionTarget, status: "True", reason: PreemptionByScheduler}]
`, podYAML("other", "low", "n2", "1", "", ""), `---
apiVersion: v1
kind: Pod
metadata: {name: waiting}
spec: {priorityClassName: high, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
status: {nominatedNodeName: n1}
`)
	rep := run(t, profileConfig(t, ""), o, sim.Options{})
	p := rep.Pod("default", "waiting")
	if p.Status != sim.StatusUnschedulable || !strings.HasSuffix(p.Message, "preemption: not eligible due to a terminating pod on the nominated node.") || len(rep.Preemptions) != 0 {
		t.Fatalf("waiting = %+v, preemptions %v", p, rep.Preemptions)
	}
}

// The dry runs batch nodes in one view when what-ifs on different nodes
// are independent, and go node by node when a plugin with PreFilter
// extensions runs for the pod (here PodTopologySpread, for a spread
// constraint): both must choose the same victims.
func TestBatchedAndPerNodeDryRunsAgree(t *testing.T) {
	docs := []string{nodeYAML("n1", "2"), nodeYAML("n2", "2"), nodeYAML("n3", "2")}
	for i, n := range []string{"n1", "n2", "n3"} {
		docs = append(docs, podYAML("a-"+n, "low", n, "900m", "", ""), podYAML("b-"+n, "mid", n, fmt.Sprintf("%dm", 500+100*i), "", ""))
	}
	plain := podYAML("big", "high", "", "1500m", "app: big", "")
	spread := podYAML("big", "high", "", "1500m", "app: big",
		"topologySpreadConstraints: [{maxSkew: 5, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: big}}}]")
	var got [][]string
	var paths []bool
	preemption.SetDebugBatch(func(b bool) { paths = append(paths, b) })
	defer preemption.SetDebugBatch(nil)
	for _, p := range []string{plain, spread} {
		paths = nil
		rep := run(t, profileConfig(t, ""), objects(t, append(append([]string{}, docs...), p)...), sim.Options{})
		got = append(got, victims(rep))
		if want := p == plain; len(paths) == 0 || paths[0] != want {
			t.Fatalf("dry-run paths %v, want batched=%v", paths, want)
		}
	}
	// n1 (0.9 + 0.5 used) fits the 1.5-CPU pod once its low pod goes, the
	// mid pod reprieved; n2 and n3 would lose both pods.
	want := []string{"default/a-n1@n1/delete"}
	if !reflect.DeepEqual(got[0], want) || !reflect.DeepEqual(got[1], want) {
		t.Fatalf("batched %v, per node %v, want %v", got[0], got[1], want)
	}
}
