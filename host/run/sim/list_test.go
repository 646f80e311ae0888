package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// kubectlList is what `kubectl get nodes,priorityclasses,pods -o yaml`
// prints for a small cluster: one v1 List, the server's fields included
// (uid, resourceVersion, managedFields, status, defaulted spec fields).
const kubectlList = `apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    creationTimestamp: "2026-01-01T00:00:00Z"
    labels:
      kubernetes.io/hostname: n1
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:labels:
            .: {}
            f:kubernetes.io/hostname: {}
      manager: kubelet
      operation: Update
      time: "2026-01-01T00:00:00Z"
    name: n1
    resourceVersion: "210"
    uid: 0b6c1f4e-7c55-4a39-9a55-3c1f0f8a1d01
  spec: {}
  status:
    allocatable:
      cpu: "4"
      memory: 8Gi
      pods: "110"
    capacity:
      cpu: "4"
      memory: 8Gi
      pods: "110"
    conditions:
    - lastHeartbeatTime: "2026-01-01T00:00:00Z"
      lastTransitionTime: "2026-01-01T00:00:00Z"
      message: kubelet is posting ready status
      reason: KubeletReady
      status: "True"
      type: Ready
    daemonEndpoints:
      kubeletEndpoint:
        Port: 10250
    nodeInfo:
      architecture: amd64
      bootID: ""
      containerRuntimeVersion: containerd://2.0.0
      kernelVersion: 6.1.0
      kubeProxyVersion: ""
      kubeletVersion: v1.35.4
      machineID: ""
      operatingSystem: linux
      osImage: Debian
      systemUUID: ""
- apiVersion: scheduling.k8s.io/v1
  description: Used for system critical pods that must not be moved from their current
    node.
  kind: PriorityClass
  metadata:
    creationTimestamp: "2026-01-01T00:00:00Z"
    generation: 1
    name: system-node-critical
    resourceVersion: "74"
    uid: 5e3c2a8b-5e0f-4a43-8d0e-2d5f1f7c2b02
  preemptionPolicy: PreemptLowerPriority
  value: 2000001000
- apiVersion: v1
  kind: Pod
  metadata:
    creationTimestamp: "2026-01-01T00:00:00Z"
    name: bound
    namespace: default
    resourceVersion: "300"
    uid: 9d1e7b0c-3f3a-4a2e-b7e4-0e9c6a1c4f03
  spec:
    containers:
    - image: pause
      imagePullPolicy: Always
      name: c
      resources:
        requests:
          cpu: "3"
      terminationMessagePath: /dev/termination-log
      terminationMessagePolicy: File
    dnsPolicy: ClusterFirst
    enableServiceLinks: true
    nodeName: n1
    preemptionPolicy: PreemptLowerPriority
    priority: 0
    restartPolicy: Always
    schedulerName: default-scheduler
    securityContext: {}
    terminationGracePeriodSeconds: 30
    tolerations:
    - effect: NoExecute
      key: node.kubernetes.io/not-ready
      operator: Exists
      tolerationSeconds: 300
  status:
    phase: Running
    qosClass: Burstable
    startTime: "2026-01-01T00:00:00Z"
- apiVersion: v1
  kind: Pod
  metadata:
    name: pending
    namespace: default
    uid: 9d1e7b0c-3f3a-4a2e-b7e4-0e9c6a1c4f04
  spec:
    containers:
    - image: pause
      name: c
      resources:
        requests:
          cpu: "2"
    priority: 0
    schedulerName: default-scheduler
  status:
    conditions:
    - lastProbeTime: null
      lastTransitionTime: "2026-01-01T00:00:00Z"
      message: '0/1 nodes are available: 1 Insufficient cpu.'
      reason: Unschedulable
      status: "False"
      type: PodScheduled
    phase: Pending
    qosClass: Burstable
kind: List
metadata:
  resourceVersion: ""
`

func TestKubectlListIsReadItemByItem(t *testing.T) {
	o, err := read(t, kubectlList)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Nodes) != 1 || o.Nodes[0].Name != "n1" || len(o.PriorityClasses) != 1 || len(o.Pods) != 2 {
		t.Fatalf("read %d nodes, %d priority classes, %d pods", len(o.Nodes), len(o.PriorityClasses), len(o.Pods))
	}
	if o.Pods[0].Name != "bound" || o.Pods[0].Spec.NodeName != "n1" || o.Pods[1].Name != "pending" || o.Pods[0].UID != "9d1e7b0c-3f3a-4a2e-b7e4-0e9c6a1c4f03" {
		t.Fatalf("pods = %s (%s), %s", o.Pods[0].Name, o.Pods[0].Spec.NodeName, o.Pods[1].Name)
	}
	// The snapshot runs: the bound pod stays, the pending one cannot fit
	// next to it (3 + 2 > 4 CPUs).
	rep, err := Run(context.Background(), o, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Pod("default", "bound"); r.Status != StatusBound || r.Node != "n1" {
		t.Errorf("bound pod: %+v", r)
	}
	if r := rep.Pod("default", "pending"); r.Status != StatusUnschedulable {
		t.Errorf("pending pod: %+v", r)
	}
}

func TestTypedListsAndJSON(t *testing.T) {
	// The API server's own list responses leave apiVersion and kind out of
	// the items; kubectl -o json prints JSON.
	o, err := read(t, `apiVersion: v1
kind: NodeList
metadata: {resourceVersion: "5"}
items:
- metadata: {name: a}
- apiVersion: v1
  kind: Node
  metadata: {name: b}
---
{
    "apiVersion": "v1",
    "items": [
        {"metadata": {"name": "p", "namespace": "shop"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    ],
    "kind": "PodList",
    "metadata": {"resourceVersion": ""}
}
---
apiVersion: policy/v1
kind: PodDisruptionBudgetList
items: []
---
apiVersion: v1
kind: List
items: null
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Nodes) != 2 || o.Nodes[0].Name != "a" || o.Nodes[1].Name != "b" {
		t.Fatalf("nodes = %v", o.Nodes)
	}
	if len(o.Pods) != 1 || o.Pods[0].Namespace != "shop" {
		t.Fatalf("pods = %v", o.Pods)
	}
}

func TestListErrorsNameTheItem(t *testing.T) {
	const head = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n1}\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"bad quantity", head + "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: web}\n  spec:\n    containers:\n    - name: c\n      resources: {requests: {cpu: x}}\n",
			`test.yaml:13 (document 0, items[1], Pod web/p): spec.containers[0].resources.requests.cpu: "x" is not a quantity`},
		{"validation", head + "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    containers:\n    - name: c\n      resources:\n        requests:\n          cpu: '-1'\n",
			`test.yaml:15 (document 0, items[1], Pod p): spec.containers[0].resources.requests.cpu: Invalid value: "-1": must be greater than or equal to 0`},
		{"unknown field in an item", head + "- apiVersion: v1\n  kind: Node\n  metadata: {name: n2}\n  spec: {unschedulabel: true}\n",
			`test.yaml:10 (document 0, items[1], Node n2): spec.unschedulabel: unknown field (did you mean "unschedulable"?)`},
		{"unsupported kind", head + "- apiVersion: batch/v1\n  kind: Job\n  metadata: {name: j}\n",
			`test.yaml:7 (document 0, items[1], Job j): unsupported kind batch/v1 "Job"`},
		{"no name", head + "- apiVersion: v1\n  kind: Node\n  metadata: {}\n", `(document 0, items[1], Node): metadata.name: missing`},
		{"not an object", head + "- just text\n", `test.yaml:7 (document 0, items[1]): want an object`},
		{"list in a list", head + "- apiVersion: v1\n  kind: List\n  items: []\n", `test.yaml:7 (document 0, items[1], List): a List inside a List is not supported`},
		{"wrong kind in a typed list", "apiVersion: v1\nkind: PodList\nitems:\n- kind: Node\n  metadata: {name: n}\n",
			`test.yaml:4 (document 0, items[0], Node): v1 Node in a v1 PodList: want v1 Pod`},
		{"unknown field of the list", "apiVersion: v1\nkind: List\nitemz: []\n", `test.yaml:3 (document 0, List): itemz: unknown field (did you mean "items"?)`},
		{"items not a list", "apiVersion: v1\nkind: List\nitems: {a: b}\n", `test.yaml:3 (document 0, List): items: want a list`},
		{"second document", "apiVersion: v1\nkind: Node\nmetadata: {name: x}\n---\n" + head + "- apiVersion: v1\n  kind: Node\n  metadata: {name: Bad_Name}\n",
			`test.yaml:13 (document 1, items[1], Node Bad_Name): metadata.name: Invalid value: "Bad_Name"`},
		{"expansion clash", head + "- apiVersion: apps/v1\n  kind: ReplicaSet\n  metadata: {name: rs}\n  spec:\n    selector: {matchLabels: {a: b}}\n    template:\n      metadata: {labels: {a: c}}\n      spec: {containers: [{name: c, image: i}]}\n",
			`test.yaml:11 (document 0, items[1], ReplicaSet rs): spec.selector: does not match spec.template.metadata.labels`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(t, tc.yaml)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.want)
			}
			var me *ManifestError
			if !errors.As(err, &me) {
				t.Fatalf("err %T is not a *ManifestError", err)
			}
		})
	}
}

// A cluster's pods printed as one List pass the 3 MiB bound on one
// object; each item is still held to it, and other documents too.
func TestListsMayBeLargerThanOneObject(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	n := 0
	for b.Len() <= MaxObjectBytes+1<<20 {
		fmt.Fprintf(&b, "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p%d\n    labels: {app: web, tier: front, team: shop}\n  spec:\n    containers:\n    - name: c\n      image: registry.example.com/shop/web:1.2.3\n      resources: {requests: {cpu: 100m, memory: 64Mi}}\n", n)
		n++
	}
	o, err := read(t, b.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Pods) != n {
		t.Fatalf("read %d pods of %d", len(o.Pods), n)
	}

	big := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata:\n    name: n\n    annotations:\n      a: " + strings.Repeat("x", MaxObjectBytes) + "\n"
	if _, err := read(t, big); err == nil || !strings.Contains(err.Error(), "test.yaml:4 (document 0, items[0]): document is larger than 3 MiB") {
		t.Fatalf("err = %v", err)
	}
	// Not a List: the document bound holds even with an items key further in.
	notList := "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n    a: " + strings.Repeat("x", MaxObjectBytes) + "\nitems: []\n"
	if _, err := read(t, notList); err == nil || !strings.Contains(err.Error(), "document is larger than 3 MiB") {
		t.Fatalf("err = %v", err)
	}
	notList2 := "items: []\napiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  annotations:\n    a: " + strings.Repeat("x", MaxObjectBytes) + "\n"
	if _, err := read(t, notList2); err == nil || !strings.Contains(err.Error(), "test.yaml:1 (document 0): document is larger than 3 MiB") {
		t.Fatalf("err = %v", err)
	}
}

// The API server's own PriorityClasses, as a cluster lists them, are
// accepted; other values for their names are not.
func TestSystemPriorityClasses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value int
		want  string
	}{
		{"system-node-critical", SystemNodeCriticalPriority, ""},
		{"system-cluster-critical", SystemCriticalPriority, ""},
		{"system-node-critical", SystemCriticalPriority, "value: Invalid value: 2000000000: system-node-critical is the API server's own class; its value is 2000001000"},
		{"system-other", SystemNodeCriticalPriority, "must not be greater than 2000000000"},
	} {
		_, err := read(t, fmt.Sprintf("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: %s}\nvalue: %d\n", tc.name, tc.value))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s = %d: err = %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
}
