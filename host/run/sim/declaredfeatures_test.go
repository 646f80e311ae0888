package sim

import (
	"context"
	"strings"
	"testing"
)

// Pods whose spec needs node features land only on nodes declaring them,
// kube-scheduler v1.37's NodeDeclaredFeatures, in the Wasm bundle and in
// its native twin alike.
func TestPodsNeedingNodeFeaturesGoWhereTheyAreDeclared(t *testing.T) {
	const yaml = `apiVersion: v1
kind: Node
metadata: {name: big}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: small}
status:
  allocatable: {cpu: "1", memory: 1Gi, pods: "10"}
  declaredFeatures: [RestartAllContainersOnContainerExits, VendorExample/other]
---
apiVersion: v1
kind: Pod
metadata: {name: restarts-all}
spec:
  containers:
  - name: c
    image: i
    restartPolicy: Never
    restartPolicyRules: [{action: RestartAllContainers, exitCodes: {operator: In, values: [42]}}]
---
apiVersion: v1
kind: Pod
metadata: {name: bind-options}
spec:
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: c
    image: i
    volumeMounts: [{name: data, mountPath: /data, bindMountOptions: [nosuid]}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec: {containers: [{name: c, image: i}]}
`
	for _, native := range []bool{false, true} {
		o, err := read(t, yaml)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), o, Options{NativeBuiltin: native, CacheDir: t.TempDir(), Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if p := rep.Pod("default", "restarts-all"); p == nil || p.Node != "small" {
			t.Errorf("native=%v: restarts-all = %+v, want it on small, the node declaring RestartAllContainersOnContainerExits", native, p)
		}
		if p := rep.Pod("default", "plain"); p == nil || p.Node != "big" {
			t.Errorf("native=%v: plain = %+v, want it on big (more room)", native, p)
		}
		p := rep.Pod("default", "bind-options")
		if p == nil || p.Status != StatusUnschedulable || !strings.Contains(p.Message, "0/2 nodes are available: 2 node(s) didn't match Pod's required features.") {
			t.Errorf("native=%v: bind-options = %+v, want it unschedulable: no node declares VolumeBindMountOptions", native, p)
		}
	}
}
