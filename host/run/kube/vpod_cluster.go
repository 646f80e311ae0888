package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/wasmsched/wasmsched/host/engines/vpod"
)

// VPodScaleTTL is how long VPodCluster trusts a scale it read or wrote
// before reading the scale subresource again. Knative caches the scale
// for 5 minutes (reset when a replica is promoted leader) and so misses
// a scale changed by someone else for that long; serve also drops the
// cached value as soon as the StatefulSet informer sees spec.replicas
// change, so the TTL is only a safety net and can be short.
const VPodScaleTTL = 30 * time.Second

// VPodCluster is the vpod engine's view of a real cluster for one
// scheduler (vpod.Cluster): adapter pods, nodes and the StatefulSet from
// shared informers, the replica count through the StatefulSet's scale
// subresource (cached, see VPodScaleTTL), and the scheduler's vpods from
// its sources.
//
// RBAC: list and watch pods, nodes and statefulsets; get and update
// statefulsets/scale.
type VPodCluster struct {
	namespace, statefulSet string
	pods                   corelisters.PodNamespaceLister
	nodes                  corelisters.NodeLister
	statefulSets           appslisters.StatefulSetNamespaceLister
	scales                 appsclient.StatefulSetInterface
	vpods                  func() ([]vpod.VPod, error)
	ttl                    time.Duration
	now                    func() time.Time

	mu       sync.Mutex
	replicas int32
	readAt   time.Time // zero: nothing cached
	// epoch counts writes and resets, so that a read that raced with
	// one does not cache the older value.
	epoch uint64
}

var _ vpod.Cluster = (*VPodCluster)(nil)

// VPodClusterOptions are NewVPodCluster's inputs.
type VPodClusterOptions struct {
	// Namespace and StatefulSet name the adapter StatefulSet.
	Namespace, StatefulSet string
	// Pods lists the pods of Namespace; Nodes all nodes; StatefulSets the
	// StatefulSets of Namespace (an informer's listers).
	Pods         corelisters.PodNamespaceLister
	Nodes        corelisters.NodeLister
	StatefulSets appslisters.StatefulSetNamespaceLister
	// Scales reads and updates the scale subresource (the StatefulSets
	// client of Namespace).
	Scales appsclient.StatefulSetInterface
	// VPods lists the scheduler's vpods.
	VPods func() ([]vpod.VPod, error)
	// TTL overrides VPodScaleTTL; Now the clock (tests).
	TTL time.Duration
	Now func() time.Time
}

// NewVPodCluster returns the cluster view of one vpod scheduler.
func NewVPodCluster(o VPodClusterOptions) *VPodCluster {
	c := &VPodCluster{namespace: o.Namespace, statefulSet: o.StatefulSet, pods: o.Pods, nodes: o.Nodes,
		statefulSets: o.StatefulSets, scales: o.Scales, vpods: o.VPods, ttl: o.TTL, now: o.Now}
	if c.ttl <= 0 {
		c.ttl = VPodScaleTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Pod implements vpod.Cluster from the pod informer of the namespace.
func (c *VPodCluster) Pod(name string) *corev1.Pod {
	p, err := c.pods.Get(name)
	if err != nil {
		return nil
	}
	return p
}

// Node implements vpod.Cluster from the node informer.
func (c *VPodCluster) Node(name string) *corev1.Node {
	n, err := c.nodes.Get(name)
	if err != nil {
		return nil
	}
	return n
}

// Nodes implements vpod.Cluster from the node informer.
func (c *VPodCluster) Nodes() []*corev1.Node {
	ns, err := c.nodes.List(k8slabels.Everything())
	if err != nil {
		return nil
	}
	return ns
}

// VPods implements vpod.Cluster: the vpods the scheduler's sources hold,
// malformed objects left out.
func (c *VPodCluster) VPods() ([]vpod.VPod, error) { return c.vpods() }

// Replicas implements vpod.Cluster: scale.spec.replicas, from the cache
// when it is fresh, else read through the scale subresource. A
// StatefulSet the informer does not have is an error without a request
// (its creation requeues the scheduler's vpods).
func (c *VPodCluster) Replicas(ctx context.Context) (int32, error) {
	c.mu.Lock()
	if !c.readAt.IsZero() && c.now().Sub(c.readAt) < c.ttl {
		r := c.replicas
		c.mu.Unlock()
		return r, nil
	}
	epoch := c.epoch
	c.mu.Unlock()
	if _, err := c.statefulSets.Get(c.statefulSet); err != nil {
		return 0, fmt.Errorf("adapter statefulset %s/%s: %w", c.namespace, c.statefulSet, err)
	}
	s, err := c.scales.GetScale(ctx, c.statefulSet, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read the scale of statefulset %s/%s: %w", c.namespace, c.statefulSet, err)
	}
	c.mu.Lock()
	if c.epoch == epoch {
		c.replicas, c.readAt = s.Spec.Replicas, c.now()
	}
	c.mu.Unlock()
	return s.Spec.Replicas, nil
}

// Scale implements vpod.Cluster: an unconditional update of the scale
// subresource (as Knative's; the autoscaler alone decides the count),
// remembered as the cached scale.
func (c *VPodCluster) Scale(ctx context.Context, replicas int32) error {
	s := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: c.statefulSet, Namespace: c.namespace},
		Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	got, err := c.scales.UpdateScale(ctx, c.statefulSet, s, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			c.Reset()
		}
		return fmt.Errorf("scale statefulset %s/%s to %d: %w", c.namespace, c.statefulSet, replicas, err)
	}
	c.mu.Lock()
	c.replicas, c.readAt = got.Spec.Replicas, c.now()
	c.epoch++
	c.mu.Unlock()
	return nil
}

// Reset drops the cached scale: the next Replicas reads it again. Serve
// calls it when the StatefulSet's spec.replicas changes and when this
// replica becomes leader.
func (c *VPodCluster) Reset() {
	c.mu.Lock()
	c.readAt = time.Time{}
	c.epoch++
	c.mu.Unlock()
}
