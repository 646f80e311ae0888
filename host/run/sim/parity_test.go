package sim

import (
	"context"
	"testing"
)

// The rules below are kube-scheduler v1.35's; each case checks one of
// them.

func runYAML(t *testing.T, yaml string) *Report {
	t.Helper()
	o, err := read(t, yaml)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), o, Options{CacheDir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

const twoNodes = `apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "10"}}
`

// Finished pods hold nothing: kube-scheduler's informer never lists them.
func TestFinishedPodsHoldNothing(t *testing.T) {
	rep := runYAML(t, `apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: done}
spec: {nodeName: n1, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
status: {phase: Succeeded}
---
apiVersion: v1
kind: Pod
metadata: {name: failed}
spec: {nodeName: n1, containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
status: {phase: Failed}
---
apiVersion: v1
kind: Pod
metadata: {name: new}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}
`)
	if p := rep.Pod("default", "new"); p == nil || p.Node != "n1" {
		t.Fatalf("new = %+v, want it on n1: the finished pods there hold neither CPU nor pod slots", p)
	}
}

// A pod nominated to a node that passes the filters goes there without
// scoring (evaluateNominatedNode), even where another node scores higher.
func TestNominatedNodeIsTakenWithoutScoring(t *testing.T) {
	rep := runYAML(t, twoNodes+`---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: 100m, memory: 10Mi}}}]}
status: {nominatedNodeName: n1}
`)
	if p := rep.Pod("default", "p"); p == nil || p.Node != "n1" {
		t.Fatalf("p = %+v, want n1 (nominated), not the roomier n2", p)
	}
	// A nominated node that fails the filters: the full walk places it.
	rep = runYAML(t, twoNodes+`---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]}
status: {nominatedNodeName: n1}
`)
	if p := rep.Pod("default", "p"); p == nil || p.Node != "n2" {
		t.Fatalf("p = %+v, want n2", p)
	}
}

// NodeAffinity's PreFilterResult: with every required term pinning
// metadata.name, only the named nodes are filtered; the others are
// reported as not satisfying the plugin.
func TestNodeNamesPinnedByAffinityNarrowTheNodes(t *testing.T) {
	rep := runYAML(t, twoNodes+`---
apiVersion: v1
kind: Node
metadata: {name: n3}
status: {allocatable: {cpu: "4", memory: 4Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}, {matchFields: [{key: metadata.name, operator: In, values: [ghost]}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: conflict}
spec:
  containers: [{name: c, image: i}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}, {key: metadata.name, operator: In, values: [n2]}]}]
`)
	// n1's 1 CPU can never hold 2 (Unresolvable), and the nodes left out
	// are Unresolvable too: no preemption candidate.
	want := "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't satisfy plugin(s) [NodeAffinity]."
	if p := rep.Pod("default", "p"); p == nil || p.Message != want+" preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling." {
		t.Fatalf("p = %+v,\nwant message %q (then preemption's)", p, want)
	}
	// A PreFilter's Unresolvable verdict ends the cycle before upstream's
	// DynamicResources PreFilter runs, so its PostFilter fails on its
	// missing state ("not found", with no period: kube-scheduler adds
	// none after the PostFilter message) and preemption never runs.
	if p := rep.Pod("default", "conflict"); p == nil || p.Message != "0/3 nodes are available: pod affinity terms conflict. not found" {
		t.Fatalf("conflict = %+v", p)
	}
}

// One reason for any untolerated taint, as 1.37 prints it.
func TestUntoleratedTaintsShareOneReason(t *testing.T) {
	rep := runYAML(t, `apiVersion: v1
kind: Node
metadata: {name: n1}
spec: {taints: [{key: a, value: x, effect: NoSchedule}]}
status: {allocatable: {cpu: "1", pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {taints: [{key: b, value: z, effect: NoExecute}]}
status: {allocatable: {cpu: "1", pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec: {containers: [{name: c, image: i}]}
`)
	// DynamicResources (on in v1.37's default profile) has no claims to
	// deallocate and, since v1.37, says nothing before preemption.
	want := "0/2 nodes are available: 2 node(s) had untolerated taint(s). preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
	if p := rep.Pod("default", "p"); p == nil || p.Message != want {
		t.Fatalf("p = %+v,\nwant message %q", p, want)
	}
}

// A nominated node that fails the filters is tried before a PreFilter's
// narrowing is applied, and kube-scheduler records the plugins that
// rejected it among the plugins the nodes left out "didn't satisfy".
func TestNominatedNodeRejectorsJoinTheNarrowersMessage(t *testing.T) {
	o, err := read(t, `apiVersion: v1
kind: Node
metadata: {name: node-small}
status: {allocatable: {cpu: "1", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-big}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
spec: {unschedulable: true}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: pending}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [node-small]}]}]
  containers: [{name: main, image: i, resources: {requests: {cpu: "2", memory: 100Mi}}}]
status: {nominatedNodeName: n2}
`)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), o, Options{NativeBuiltin: true})
	if err != nil {
		t.Fatal(err)
	}
	const want = "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) didn't satisfy plugin(s) [NodeAffinity NodeUnschedulable], 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
	if p := rep.Pod("default", "pending"); p == nil || p.Message != want {
		t.Fatalf("pending = %+v\nwant message %q", p, want)
	}
}
