// Package parity compares wasmsched's default profile with kube-scheduler
// v1.37's own framework and plugins on generated clusters: for one
// pending pod, wasmsched's node must be among the nodes upstream scores
// highest (kube-scheduler breaks ties at random), and when no node fits,
// both must print the same message. It is its own Go module so that the
// main module never depends on k8s.io/kubernetes; docs/PARITY.md says how
// to run it and what it leaves out.
package parity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Case is one generated cluster and the pod to place on it. The objects
// are what a user would write in manifests (no API defaulting): the
// upstream side defaults copies as the API server would, wasmsched reads
// the YAML as `wasmsched simulate` does.
type Case struct {
	Seed   uint64
	Family string
	// Namespaces hold the labels namespaceSelectors match.
	Namespaces []*corev1.Namespace
	// PriorityClasses give pods their priority and preemption policy.
	PriorityClasses []*schedulingv1.PriorityClass
	Nodes           []*corev1.Node
	// Bound pods have spec.nodeName; some may have finished
	// (status.phase Succeeded or Failed).
	Bound []*corev1.Pod
	// Services, ReplicaSets and StatefulSets feed default topology
	// spreading; the controllers have no replicas so that simulate
	// creates no pods.
	Services     []*corev1.Service
	ReplicaSets  []*appsv1.ReplicaSet
	StatefulSets []*appsv1.StatefulSet
	// PDBs are PodDisruptionBudgets with their status as the disruption
	// controller would have written it (status.disruptionsAllowed is what
	// preemption reads).
	PDBs []*policyv1.PodDisruptionBudget
	// Pending is the pod to place (the first pending pod to arrive).
	Pending *corev1.Pod
	// More are further pending pods, in the order they arrive after
	// Pending (the queue kind).
	More []*corev1.Pod
	// Config, when set, is a KubeSchedulerConfiguration v1 document both
	// sides read instead of their default profile (the profiles kind).
	Config []byte
}

// pendings is every pending pod in arrival order.
func (c *Case) pendings() []*corev1.Pod { return append([]*corev1.Pod{c.Pending}, c.More...) }

// objects lists the case's objects in the order they are written: what
// a pod refers to comes before it.
func (c *Case) objects() []runtime.Object {
	var out []runtime.Object
	for _, o := range c.PriorityClasses {
		out = append(out, o)
	}
	for _, o := range c.Namespaces {
		out = append(out, o)
	}
	for _, o := range c.PDBs {
		out = append(out, o)
	}
	for _, o := range c.Nodes {
		out = append(out, o)
	}
	for _, o := range c.Services {
		out = append(out, o)
	}
	for _, o := range c.ReplicaSets {
		out = append(out, o)
	}
	for _, o := range c.StatefulSets {
		out = append(out, o)
	}
	for _, o := range c.Bound {
		out = append(out, o)
	}
	out = append(out, c.Pending)
	for _, o := range c.More {
		out = append(out, o)
	}
	return out
}

// YAML renders the case as a multi-document manifest, the pending pod
// last: `wasmsched simulate` reads it as is.
func (c *Case) YAML() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# parity case: family %s, seed %d\n", c.Family, c.Seed)
	if len(c.Config) > 0 {
		fmt.Fprintf(&b, "# scheduler configuration (--config):\n")
		for _, l := range strings.Split(strings.TrimRight(string(c.Config), "\n"), "\n") {
			fmt.Fprintf(&b, "#   %s\n", l)
		}
	}
	for i, o := range c.objects() {
		y, err := render(o)
		if err != nil {
			return nil, fmt.Errorf("render object %d of case %d: %w", i, c.Seed, err)
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}

// size is how many objects the case has: the smallest failing case of a
// family is the one reported as its example.
func (c *Case) size() int {
	n := len(c.Nodes) + len(c.Bound) + len(c.Services) + len(c.ReplicaSets) + len(c.StatefulSets) + len(c.More) + len(c.PDBs)
	p := c.Pending.Spec
	n += len(p.Tolerations) + len(p.TopologySpreadConstraints) + len(p.InitContainers) + len(p.Containers)
	return n
}

// render writes o as YAML without the empty fields core/v1's structs
// always marshal (a null creationTimestamp, a node's daemonEndpoints and
// nodeInfo, an empty status), so the manifests read as a user would
// write them. Only what means the same as absent is left out: an empty
// selector ({}) is not.
func render(o runtime.Object) ([]byte, error) {
	j, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	dropNulls(m)
	if st, ok := m["status"].(map[string]any); ok {
		delete(st, "daemonEndpoints")
		delete(st, "nodeInfo")
	}
	for _, k := range []string{"metadata", "spec", "status"} {
		if v, ok := m[k].(map[string]any); ok && len(v) == 0 {
			delete(m, k)
		}
	}
	return yaml.Marshal(m)
}

// dropNulls removes, recursively, the keys whose values are null: for
// the API's optional fields null and absent are the same.
func dropNulls(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if e == nil {
				delete(t, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range t {
			dropNulls(e)
		}
	}
}
