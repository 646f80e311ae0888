package framework

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// nominatedPeers lists the pods that kube-scheduler's rule for nominated
// pods adds to node before filtering pod there: those nominated to it (by
// nom, which may be nil) with equal or higher priority, other than pod
// itself. They will get there once their preemption victims leave;
// lower-priority ones are left out, as this pod may take their room.
func nominatedPeers(pod *abi.Pod, nom Nominator, node string) []*abi.Pod {
	if nom == nil || !nom.HasNominatedPods() {
		return nil
	}
	var peers []*abi.Pod
	for _, np := range nom.NominatedPodsForNode(node) {
		if np.UID != pod.UID && np.Priority >= pod.Priority {
			peers = append(peers, np)
		}
	}
	return peers
}

// checkNominated applies kube-scheduler's rule for nominated pods
// (nominatedPeers): a node that passed the filters must also pass them
// with its nominated peers added. Both runs must pass, because some
// filters only pass with those pods present (affinity) and some only
// without.
func (c *cycle) checkNominated(ctx context.Context, pod *abi.Pod, chunk []uint32, passed []bool, nom Nominator, diag *Diagnosis) error {
	for i, slot := range chunk {
		if !passed[i] {
			continue
		}
		name := c.snap.Slot(slot).Info.Node.Name
		add := nominatedPeers(pod, nom, name)
		if len(add) == 0 {
			continue
		}
		st, err := c.filterWith(ctx, slot, add)
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
// rejection, or nil. A module whose what-if calls fail is down for the
// cycle (markDown); an instance a plugin breaks is replaced (cycle.client)
// and the pods are added to the fresh one's view before the module's
// next plugin runs.
func (c *cycle) filterWith(ctx context.Context, slot uint32, pods []*abi.Pod) (*Status, error) {
	pushed := map[int]*guest.Client{} // module -> instance whose view has the pods
	adds := addEdits(slot, pods)
	defer func() {
		for _, cl := range pushed {
			_ = cl.PopState(ctx) // a failure breaks the client; the pool replaces it
		}
	}()
	prepare := func(i int) (*guest.Client, error) {
		if cl := pushed[i]; cl != nil && !cl.Broken() {
			return cl, nil
		}
		delete(pushed, i)
		cl, err := c.client(ctx, i)
		if cl == nil {
			return nil, err
		}
		err = cl.PushState(ctx)
		if err == nil {
			err = cl.EditView(ctx, adds)
		}
		if err != nil {
			// Not popped: the instance goes back to the pool, and the
			// next cycle start resets its view.
			if ferr := c.markDown(i, err); ferr != nil {
				return nil, ferr
			}
			return nil, err
		}
		pushed[i] = cl
		return cl, nil
	}
	for i := range c.clients {
		if _, err := prepare(i); c.fatal != nil {
			return nil, err
		}
	}
	one := []uint32{slot}
	at := &pluginPoint{name: metrics.Filter, where: " with nominated pods", skip: c.skip,
		client: func(_ context.Context, i int) (*guest.Client, error) { return prepare(i) }}
	for k := range c.prof.filter {
		p := &c.prof.filter[k]
		var reply *abi.FilterReply
		ran, err := c.runPlugin(ctx, at, p, func(cl *guest.Client) (err error) {
			reply, err = c.timedFilter(ctx, cl, p, one)
			return err
		})
		if err != nil {
			return nil, err
		}
		if !ran {
			c.skip[p.name] = true
			continue
		}
		var rejected *Status
		_, err = c.prof.filterVerdicts(p, reply, one, c.snap, metrics.Filter, nil, func(_ int, st *Status) { rejected = st })
		if err != nil {
			return nil, fmt.Errorf("running Filter plugin %q with nominated pods: %w", p.name, err)
		}
		if rejected != nil {
			return rejected, nil
		}
	}
	return nil, nil
}
