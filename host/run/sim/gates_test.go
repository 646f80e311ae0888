package sim

import (
	"context"
	"testing"
)

// TestGatedPodsStayOutOfTheQueue: a pending pod with schedulingGates is
// never tried (kube-scheduler's SchedulingGates keeps it out of activeQ;
// serve does not hand it to the queue), and is reported as gated.
func TestGatedPodsStayOutOfTheQueue(t *testing.T) {
	o, err := read(t, `apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: example.com/wait}]
  containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Pod
metadata: {name: free}
spec:
  containers: [{name: c, image: i}]
`)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), o, Options{NativeBuiltin: true})
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Pod("default", "gated")
	if g == nil || g.Status != StatusSchedulingGated || g.Node != "" || g.Attempts != 0 {
		t.Errorf("gated pod: %+v, want %s, unbound, never tried", g, StatusSchedulingGated)
	}
	if f := rep.Pod("default", "free"); f == nil || f.Status != StatusScheduled {
		t.Errorf("free pod: %+v, want Scheduled", f)
	}
}
