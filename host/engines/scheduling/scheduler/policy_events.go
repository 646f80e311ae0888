package scheduler

import (
	"sync"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/queue"
)

// PodDisruptionBudgets and PriorityClasses reach the scheduler through
// these methods, from informers (host/run/kube) or the simulation. Budgets go
// into the cache, whose snapshot hands them to preemption; classes keep
// only their KEP-3280 value (the disruption guard), which pods copy by
// priorityClassName.

// PDBEvent is a PodDisruptionBudget added, changed or deleted.
var PDBEvent = queue.ClusterEvent{Resource: queue.PodDisruptionBudget, Action: queue.All, Label: "PodDisruptionBudgetChange"}

// OnPDB records a PodDisruptionBudget (added or changed). A budget that
// allows disruptions again can make a preemption possible that KEP-3280
// refused, so parked pods interested in budgets are retried.
func (s *Scheduler) OnPDB(p *abi.PDB) {
	s.cache.SetPDB(p)
	s.queue.MoveAllToActiveOrBackoffQueue(PDBEvent, nil)
}

// OnPDBDelete forgets a PodDisruptionBudget.
func (s *Scheduler) OnPDBDelete(namespace, name string) {
	s.cache.RemovePDB(namespace, name)
	s.queue.MoveAllToActiveOrBackoffQueue(PDBEvent, nil)
}

// OnPriorityClass records a PriorityClass's disruption guard (KEP-3280's
// allowDisruptionByPriorityGreaterThanOrEqual, nil when it has none).
// Pods seen from now on copy it by priorityClassName; like the API's
// admission, a change does not rewrite pods already known.
func (s *Scheduler) OnPriorityClass(name string, guard *int32) {
	s.classes.set(name, guard)
}

// OnPriorityClassDelete forgets a PriorityClass.
func (s *Scheduler) OnPriorityClassDelete(name string) { s.classes.remove(name) }

// DisruptionGuard returns the guard of a PriorityClass, or nil.
func (s *Scheduler) DisruptionGuard(class string) *int32 { return s.classes.guard(class) }

// withGuard returns pod with its class's disruption guard copied on, or
// pod itself when there is nothing to copy.
func (s *Scheduler) withGuard(pod *abi.Pod) *abi.Pod {
	if pod.DisruptionGuard != nil || pod.PriorityClassName == "" {
		return pod
	}
	g := s.classes.guard(pod.PriorityClassName)
	if g == nil {
		return pod
	}
	c := *pod
	c.DisruptionGuard = g
	return &c
}

// classStore maps PriorityClass names to their disruption guards.
type classStore struct {
	mu     sync.RWMutex
	guards map[string]int32
}

func (c *classStore) set(name string, guard *int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if guard == nil {
		delete(c.guards, name)
		return
	}
	if c.guards == nil {
		c.guards = map[string]int32{}
	}
	c.guards[name] = *guard
}

func (c *classStore) remove(name string) { c.set(name, nil) }

func (c *classStore) guard(name string) *int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	g, ok := c.guards[name]
	if !ok {
		return nil
	}
	return &g
}
