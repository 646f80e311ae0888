package vpod

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// StaticCluster is an in-memory Cluster: pods, nodes, the StatefulSet's
// scale and the vpods with their committed placements. Library users,
// tests and simulations drive the engine with it. Safe for concurrent
// use. Scale only records the new scale: pods do not appear by
// themselves (add them with SetPod).
type StaticCluster struct {
	mu          sync.Mutex
	namespace   string
	statefulSet string
	replicas    int32
	missing     bool // the StatefulSet does not exist
	pods        map[string]*corev1.Pod
	nodes       map[string]*corev1.Node
	vpods       map[Key]VPod
	keys        []Key // of vpods, ordered
	scaled      []int32
	version     uint64
}

// NewStaticCluster returns a cluster with the adapter StatefulSet
// namespace/statefulSet at replicas, and these pods, nodes and vpods.
// Pods outside namespace are ignored (the engine only reads adapter pods).
func NewStaticCluster(namespace, statefulSet string, replicas int32, pods []*corev1.Pod, nodes []*corev1.Node, vpods []VPod) *StaticCluster {
	c := &StaticCluster{
		namespace:   namespace,
		statefulSet: statefulSet,
		replicas:    replicas,
		pods:        map[string]*corev1.Pod{},
		nodes:       map[string]*corev1.Node{},
		vpods:       map[Key]VPod{},
	}
	for _, p := range pods {
		c.SetPod(p)
	}
	for _, n := range nodes {
		c.SetNode(n)
	}
	for _, v := range vpods {
		c.SetVPod(v)
	}
	return c
}

// Pod implements Cluster.
func (c *StaticCluster) Pod(name string) *corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pods[name]
}

// Node implements Cluster.
func (c *StaticCluster) Node(name string) *corev1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// Nodes implements Cluster; the nodes are ordered by name.
func (c *StaticCluster) Nodes() []*corev1.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Replicas implements Cluster: an error when the StatefulSet was deleted
// (DeleteStatefulSet).
func (c *StaticCluster) Replicas(context.Context) (int32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.missing {
		return 0, fmt.Errorf("statefulset %s/%s not found", c.namespace, c.statefulSet)
	}
	return c.replicas, nil
}

// Scale implements Cluster: it records the new scale (see Scaled).
func (c *StaticCluster) Scale(_ context.Context, replicas int32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.missing {
		return fmt.Errorf("scale statefulset %s/%s: not found", c.namespace, c.statefulSet)
	}
	c.replicas = replicas
	c.scaled = append(c.scaled, replicas)
	return nil
}

// Scaled lists the scales Scale set, in order.
func (c *StaticCluster) Scaled() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int32(nil), c.scaled...)
}

// SetReplicas sets the StatefulSet's scale (and recreates a deleted
// StatefulSet) without recording a Scale call.
func (c *StaticCluster) SetReplicas(replicas int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replicas, c.missing = replicas, false
}

// DeleteStatefulSet makes Replicas and Scale fail, as with a StatefulSet
// that does not exist.
func (c *StaticCluster) DeleteStatefulSet() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.missing = true
}

// VPods implements Cluster; the vpods are ordered by key. Their
// placement slices are the cluster's own (never changed in place, since
// SetVPod and Commit store copies): callers must not modify them.
func (c *StaticCluster) VPods() ([]VPod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]VPod, 0, len(c.keys))
	for _, k := range c.keys {
		out = append(out, c.vpods[k])
	}
	return out, nil
}

// VPod returns the vpod of that key (a copy) and whether it exists.
func (c *StaticCluster) VPod(k Key) (VPod, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vpods[k]
	v.Placements = copyPlacements(v.Placements)
	return v, ok
}

// SetVPod adds or replaces a vpod (commits its placements). Like an API
// server, the cluster gives it a new ResourceVersion.
func (c *StaticCluster) SetVPod(v VPod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v.Placements = copyPlacements(v.Placements)
	v.ResourceVersion = c.nextVersion()
	if _, ok := c.vpods[v.Key]; !ok {
		i := sort.Search(len(c.keys), func(i int) bool { return !keyLess(c.keys[i], v.Key) })
		c.keys = append(c.keys, Key{})
		copy(c.keys[i+1:], c.keys[i:])
		c.keys[i] = v.Key
	}
	c.vpods[v.Key] = v
}

func keyLess(a, b Key) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// nextVersion is a new ResourceVersion; c.mu is held.
func (c *StaticCluster) nextVersion() string {
	c.version++
	return strconv.FormatUint(c.version, 10)
}

// Commit sets the committed placements of vpod k, as a controller writes
// Schedule's answer into the vpod's status. It is false when there is no
// such vpod.
func (c *StaticCluster) Commit(k Key, ps []Placement) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.vpods[k]
	if !ok {
		return false
	}
	v.Placements = copyPlacements(ps)
	v.ResourceVersion = c.nextVersion()
	c.vpods[k] = v
	return true
}

// DeleteVPod removes a vpod.
func (c *StaticCluster) DeleteVPod(k Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.vpods[k]; !ok {
		return
	}
	delete(c.vpods, k)
	i := sort.Search(len(c.keys), func(i int) bool { return !keyLess(c.keys[i], k) })
	c.keys = append(c.keys[:i], c.keys[i+1:]...)
}

// SetPod adds or replaces an adapter pod; pods outside the cluster's
// namespace are ignored.
func (c *StaticCluster) SetPod(p *corev1.Pod) {
	if p == nil || (p.Namespace != "" && p.Namespace != c.namespace) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods[p.Name] = p
}

// DeletePod removes an adapter pod.
func (c *StaticCluster) DeletePod(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, name)
}

// SetNode adds or replaces a node.
func (c *StaticCluster) SetNode(n *corev1.Node) {
	if n == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes[n.Name] = n
}

// DeleteNode removes a node.
func (c *StaticCluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.nodes, name)
}
