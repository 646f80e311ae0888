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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
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
	// Pending is the pod to place.
	Pending *corev1.Pod
}

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
	return append(out, c.Pending)
}

// YAML renders the case as a multi-document manifest, the pending pod
// last: `wasmsched simulate` reads it as is.
func (c *Case) YAML() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# parity case: family %s, seed %d\n", c.Family, c.Seed)
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
	n := len(c.Nodes) + len(c.Bound) + len(c.Services) + len(c.ReplicaSets) + len(c.StatefulSets)
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
