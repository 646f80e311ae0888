// Package cache is the host's single source of truth about nodes and the
// pods placed on them, shared by every profile (KEP-1451: one cache, many
// profiles). Informers (or the simulation) feed it; each scheduling cycle
// copies what changed into its own snapshot (UpdateSnapshot) and reads
// only that.
//
// A pod's life in the cache:
//
//	          AssumePod           AddPod (informer confirms the binding)
//	(none) ─────────────► Assumed ──────────────────────────────► Added
//	   ▲                   │  │ FinishBinding                    │
//	   │     ForgetPod     │  ▼                                  │ RemovePod
//	   └───────────────────┘ Assumed, binding finished ──────────┘
//	   ▲                        │ deadline passes with no AddPod
//	   └──── expired ───────────┘ (Cleanup)
//
// Assume happens in the scheduling cycle at Reserve, so the next cycle
// already sees the pod's resources taken while binding runs in the
// background. A failed bind forgets the pod; a bind nobody ever confirms
// expires after the TTL.
package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// DefaultAssumedTTL is how long an assumed pod whose binding finished may
// wait for the informer's confirmation before the cache drops it.
const DefaultAssumedTTL = 30 * time.Second

// podState is what the cache knows of a pod besides its place on its
// node. An assumed pod keeps the scheduler's pointer and a waiting one the
// informer's; a pod placed on its node for good (added, not assumed) is
// kept only in the node's Pods, so the cache holds one copy of each pod,
// not two, and pod is nil.
type podState struct {
	pod             *abi.Pod
	node            string // where the pod is placed or waits
	assumed         bool
	waiting         bool // bound to a node the cache has not seen yet
	bindingFinished bool
	deadline        time.Time
}

// Cache holds nodes and pods. Safe for concurrent use.
type Cache struct {
	mu   sync.Mutex
	live *snapshot.Snapshot
	pods map[string]*podState // by UID
	// waiting holds bound pods whose node has not arrived yet, by node
	// name: informers deliver pods and nodes independently, so a pod can
	// come first. They join their node when it is added.
	waiting map[string]map[string]*podState
	ttl     time.Duration
	now     func() time.Time
}

// New returns an empty cache; ttl ≤ 0 means DefaultAssumedTTL, now nil
// means time.Now.
func New(ttl time.Duration, now func() time.Time) *Cache {
	if ttl <= 0 {
		ttl = DefaultAssumedTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Cache{live: snapshot.New(), pods: map[string]*podState{}, waiting: map[string]map[string]*podState{}, ttl: ttl, now: now}
}

// AddNode adds a node or updates its spec (its pods stay). Pods that
// were bound to it before it arrived join it now.
func (c *Cache) AddNode(n abi.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live.SetNode(n)
	for uid, ps := range c.waiting[n.Name] {
		if err := c.live.AddPod(ps.pod); err != nil {
			delete(c.pods, uid) // cannot happen: the node is there now
			continue
		}
		ps.waiting = false
		if !ps.assumed {
			ps.pod = nil
		}
	}
	delete(c.waiting, n.Name)
}

// RemoveNode deletes a node. Its pods are forgotten with it; their own
// delete events, when they come, are then no-ops.
func (c *Cache) RemoveNode(name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.live.Get(name)
	if ni == nil {
		return fmt.Errorf("remove node %q: not in cache", name)
	}
	for i := range ni.Info.Pods {
		delete(c.pods, ni.Info.Pods[i].UID)
	}
	return c.live.RemoveNode(name)
}

// SetNamespace adds or relabels a namespace (for namespaceSelector).
func (c *Cache) SetNamespace(name string, labels abi.Labels) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live.SetNamespace(name, labels)
}

// SetPDB adds or replaces a PodDisruptionBudget, for preemption.
func (c *Cache) SetPDB(p *abi.PDB) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live.SetPDB(p)
}

// RemovePDB forgets a PodDisruptionBudget.
func (c *Cache) RemovePDB(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live.RemovePDB(namespace, name)
}

// RemoveNamespace forgets a namespace.
func (c *Cache) RemoveNamespace(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live.RemoveNamespace(name)
}

// AssumePod records a pod (with NodeName set) as placed before its binding
// is confirmed.
func (c *Cache) AssumePod(pod *abi.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod.NodeName == "" {
		return fmt.Errorf("assume pod %s/%s: no node name", pod.Namespace, pod.Name)
	}
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("assume pod %s/%s: already in cache", pod.Namespace, pod.Name)
	}
	if err := c.live.AddPod(pod); err != nil {
		return fmt.Errorf("assume: %w", err)
	}
	c.pods[pod.UID] = &podState{pod: pod, node: pod.NodeName, assumed: true}
	return nil
}

// FinishBinding starts the expiry clock of an assumed pod: the bind call
// returned, now the informer should confirm it.
func (c *Cache) FinishBinding(pod *abi.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok && ps.assumed {
		ps.bindingFinished = true
		ps.deadline = c.now().Add(c.ttl)
	}
}

// ForgetPod drops an assumed pod (its binding failed).
func (c *Cache) ForgetPod(pod *abi.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok || !ps.assumed {
		return fmt.Errorf("forget pod %s/%s: not assumed", pod.Namespace, pod.Name)
	}
	delete(c.pods, pod.UID)
	return c.live.RemovePod(ps.pod)
}

// AddPod records a bound pod. For an assumed pod it confirms the
// assumption, moving the pod if the binding went to another node. A pod
// whose node the cache has not seen yet waits for it (AddNode).
func (c *Cache) AddPod(pod *abi.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pod.NodeName == "" {
		return fmt.Errorf("add pod %s/%s: not bound to a node", pod.Namespace, pod.Name)
	}
	if ps, ok := c.pods[pod.UID]; ok {
		if !ps.assumed {
			return fmt.Errorf("add pod %s/%s: already in cache", pod.Namespace, pod.Name)
		}
		if err := c.live.RemovePod(ps.pod); err != nil {
			return fmt.Errorf("confirm pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if c.live.Get(pod.NodeName) == nil {
		ps := &podState{pod: pod, node: pod.NodeName, waiting: true}
		c.pods[pod.UID] = ps
		if c.waiting[pod.NodeName] == nil {
			c.waiting[pod.NodeName] = map[string]*podState{}
		}
		c.waiting[pod.NodeName][pod.UID] = ps
		return nil
	}
	if err := c.live.AddPod(pod); err != nil {
		delete(c.pods, pod.UID)
		return fmt.Errorf("add: %w", err)
	}
	c.pods[pod.UID] = &podState{node: pod.NodeName}
	return nil
}

// UpdatePod replaces a bound pod's view (labels, say).
func (c *Cache) UpdatePod(pod *abi.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok {
		return fmt.Errorf("update pod %s/%s: not in cache", pod.Namespace, pod.Name)
	}
	if ps.waiting {
		ps.pod = pod
		return nil
	}
	old := c.placed(pod.UID, ps)
	if old == nil {
		return fmt.Errorf("update pod %s/%s: not on node %q", pod.Namespace, pod.Name, ps.node)
	}
	if err := c.live.RemovePod(old); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if err := c.live.AddPod(pod); err != nil {
		delete(c.pods, pod.UID)
		return fmt.Errorf("update: %w", err)
	}
	ps.node = pod.NodeName
	if ps.assumed {
		ps.pod = pod
	}
	return nil
}

// RemovePod deletes a pod; a pod the cache no longer has (its node went
// first) is not an error.
func (c *Cache) RemovePod(pod *abi.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok {
		return nil
	}
	delete(c.pods, pod.UID)
	if ps.waiting {
		delete(c.waiting[ps.node], pod.UID)
		if len(c.waiting[ps.node]) == 0 {
			delete(c.waiting, ps.node)
		}
		return nil
	}
	old := c.placed(pod.UID, ps)
	if old == nil {
		return fmt.Errorf("remove pod %s/%s: not on node %q", pod.Namespace, pod.Name, ps.node)
	}
	return c.live.RemovePod(old)
}

// placed returns the cache's view of a pod it holds: the pointer it
// keeps, or for a pod kept only in its node's Pods, a copy from there;
// nil if, against the cache's own bookkeeping, it is not there.
func (c *Cache) placed(uid string, ps *podState) *abi.Pod {
	if ps.pod != nil {
		return ps.pod
	}
	if ni := c.live.Get(ps.node); ni != nil {
		for i := range ni.Info.Pods {
			if ni.Info.Pods[i].UID == uid {
				p := ni.Info.Pods[i]
				return &p
			}
		}
	}
	return nil
}

// IsAssumed reports whether the pod is assumed and not yet confirmed.
func (c *Cache) IsAssumed(uid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[uid]
	return ok && ps.assumed
}

// GetPod returns the cache's view of a pod, or nil.
func (c *Cache) GetPod(uid string) *abi.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[uid]; ok {
		return c.placed(uid, ps)
	}
	return nil
}

// Node returns a copy of a node's spec as the cache has it, and whether
// the cache has the node: for callers that change one node (the
// eviction coordinator's taints) without copying a whole snapshot.
func (c *Cache) Node(name string) (abi.Node, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ni := c.live.Get(name)
	if ni == nil {
		return abi.Node{}, false
	}
	return ni.Info.Node, true
}

// NumNodes is the number of nodes.
func (c *Cache) NumNodes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live.NumNodes()
}

// UpdateSnapshot brings a cycle's snapshot up to date with the cache.
func (c *Cache) UpdateSnapshot(s *snapshot.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.UpdateFrom(c.live)
}

// Cleanup drops assumed pods whose binding finished more than the TTL ago
// without confirmation, and returns them.
func (c *Cache) Cleanup() []*abi.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	var expired []*abi.Pod
	for uid, ps := range c.pods {
		if ps.assumed && ps.bindingFinished && now.After(ps.deadline) {
			delete(c.pods, uid)
			if err := c.live.RemovePod(ps.pod); err == nil {
				expired = append(expired, ps.pod)
			}
		}
	}
	return expired
}

// Run calls Cleanup every period until ctx is done, passing what expired
// to onExpire (which may be nil).
func (c *Cache) Run(ctx context.Context, period time.Duration, onExpire func([]*abi.Pod)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if exp := c.Cleanup(); len(exp) > 0 && onExpire != nil {
				onExpire(exp)
			}
		}
	}
}
