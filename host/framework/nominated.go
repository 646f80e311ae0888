package framework

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
)

// checkNominated applies kube-scheduler's rule for nominated pods: a node
// that passed the filters must also pass them with the pods nominated to
// it of equal or higher priority added (they will get there once their
// preemption victims leave). Both runs must pass, because some filters
// only pass with those pods present (affinity) and some only without.
// Lower-priority nominated pods are ignored: this pod may take their room.
func (c *cycle) checkNominated(ctx context.Context, pod *abi.Pod, chunk []uint32, passed []bool, skip map[string]bool, nom Nominator, diag *Diagnosis) error {
	for i, slot := range chunk {
		if !passed[i] {
			continue
		}
		name := c.snap.Slot(slot).Info.Node.Name
		var add []*abi.Pod
		for _, np := range nom.NominatedPodsForNode(name) {
			if np.UID != pod.UID && np.Priority >= pod.Priority {
				add = append(add, np)
			}
		}
		if len(add) == 0 {
			continue
		}
		st, err := c.filterWith(ctx, slot, add, skip)
		if err != nil {
			return err
		}
		if st != nil {
			passed[i] = false
			diag.AddRejection(name, st)
		}
	}
	return nil
}

// filterWith runs the filters on one node with extra pods added in every
// module's view, and restores the views after. It returns the first
// rejection, or nil.
func (c *cycle) filterWith(ctx context.Context, slot uint32, pods []*abi.Pod, skip map[string]bool) (*Status, error) {
	for _, cl := range c.clients {
		if err := cl.PushState(ctx); err != nil {
			return nil, err
		}
		for _, p := range pods {
			if err := cl.AddPod(ctx, slot, p); err != nil {
				return nil, err
			}
		}
	}
	defer func() {
		for _, cl := range c.clients {
			_ = cl.PopState(ctx) // a failure breaks the client; the pool replaces it
		}
	}()
	one := []uint32{slot}
	for _, p := range c.prof.filter {
		if skip[p.name] {
			continue
		}
		t0 := c.start()
		reply, err := c.clients[p.module].Filter(ctx, p.index, one)
		if err != nil {
			c.observe(p.timer, abi.Error, t0)
		} else if c.sample {
			c.observe(p.timer, worstCode(reply.Entries), t0)
		}
		if err != nil {
			if p.ignore {
				continue
			}
			return nil, fmt.Errorf("running Filter plugin %q with nominated pods: %w", p.name, err)
		}
		if ix := reply.Indexes[0]; ix != 0 {
			e := reply.Entries[ix-1]
			if e.Code == abi.Error && p.ignore {
				continue
			}
			return &Status{Code: e.Code, Reasons: append([]string(nil), e.Reasons...), Plugin: p.name}, nil
		}
	}
	return nil, nil
}
