package framework

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/snapshot"
)

// DryRun gives a PostFilter plugin what-if access to the failed cycle:
// sessions of module instances that have this pod's cycle state, in
// which pods can be removed from and added back to nodes and the filters
// re-run, as preemption's dry runs need (kube-scheduler clones the cycle
// state for each node; here every session is an instance with its own
// state, and push/pop isolates the nodes it evaluates in turn).
type DryRun struct {
	c    *cycle
	pod  *abi.Pod
	skip map[string]bool
	nom  Nominator
}

// Pod is the pod being scheduled.
func (d *DryRun) Pod() *abi.Pod { return d.pod }

// Snapshot is the cycle's snapshot.
func (d *DryRun) Snapshot() *snapshot.Snapshot { return d.c.snap }

// Nominator lists the pods nominated to nodes (may be nil).
func (d *DryRun) Nominator() Nominator { return d.nom }

// Sessions returns up to n sessions: the cycle's own instances first,
// then more from the profile's pools where an instance is free at once
// (synced, started on the pod and past PreFilter like the cycle's). A
// session that cannot be readied is left out; there is always at least
// the first. release gives the extra instances back.
func (d *DryRun) Sessions(ctx context.Context, n int) (sessions []*Session, release func()) {
	first := &Session{prof: d.c.prof, snap: d.c.snap, clients: d.c.clients, skip: d.skip}
	sessions = []*Session{first}
	var extra [][]*policy.Client
	for len(sessions) < n {
		clients, ok := d.extraClients(ctx)
		if !ok {
			break
		}
		extra = append(extra, clients)
		sessions = append(sessions, &Session{prof: d.c.prof, snap: d.c.snap, clients: clients, skip: d.skip})
	}
	return sessions, func() {
		for _, cs := range extra {
			for i, cl := range cs {
				d.c.prof.modules[i].pool.Put(ctx, cl)
			}
		}
	}
}

// extraClients checks out one free instance per module and brings it to
// the state the cycle's instances are in; false if any is busy or fails.
func (d *DryRun) extraClients(ctx context.Context) ([]*policy.Client, bool) {
	clients := make([]*policy.Client, len(d.c.prof.modules))
	ok := true
	for i, pm := range d.c.prof.modules {
		cl := pm.pool.TryGet(ctx)
		if cl == nil {
			ok = false
			break
		}
		clients[i] = cl
		if cl.Sync(ctx, d.c.snap) != nil || cl.StartCycle(ctx, d.pod) != nil {
			ok = false
			break
		}
	}
	if ok {
		for _, p := range d.c.prof.preFilter {
			if d.skip[p.name] {
				continue
			}
			if st, err := clients[p.module].PreFilter(ctx, p.index); err != nil || st.Code != abi.Success {
				ok = false // the cycle's run passed; a differing one is not trusted
				break
			}
		}
	}
	if !ok {
		for i, cl := range clients {
			if cl != nil {
				d.c.prof.modules[i].pool.Put(ctx, cl)
			}
		}
		return nil, false
	}
	return clients, true
}

// Session is one set of instances (one per module of the profile) with
// the pod's cycle state. Not safe for concurrent use; use one goroutine
// per session.
type Session struct {
	prof    *Profile
	snap    *snapshot.Snapshot
	clients []*policy.Client
	skip    map[string]bool
}

// Push saves every module's what-if view; Pop restores it.
func (s *Session) Push(ctx context.Context) error {
	for _, cl := range s.clients {
		if err := cl.PushState(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Pop restores the views saved by the matching Push.
func (s *Session) Pop(ctx context.Context) error {
	var first error
	for _, cl := range s.clients {
		if err := cl.PopState(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// RemovePod takes pod off the node in slot in every module's view.
func (s *Session) RemovePod(ctx context.Context, slot uint32, pod *abi.Pod) error {
	for _, cl := range s.clients {
		if err := cl.RemovePod(ctx, slot, pod); err != nil {
			return err
		}
	}
	return nil
}

// AddPod puts pod on the node in slot in every module's view.
func (s *Session) AddPod(ctx context.Context, slot uint32, pod *abi.Pod) error {
	for _, cl := range s.clients {
		if err := cl.AddPod(ctx, slot, pod); err != nil {
			return err
		}
	}
	return nil
}

// Fits runs the filters for pod on one node of the current view, with
// kube-scheduler's rule for nominated pods: those nominated to the node
// with equal or higher priority are added first, and if any were, the
// filters must pass without them too. It returns the first rejection, or
// nil when the pod fits.
func (s *Session) Fits(ctx context.Context, pod *abi.Pod, slot uint32, nom Nominator) (*Status, error) {
	var add []*abi.Pod
	if nom != nil && nom.HasNominatedPods() {
		for _, np := range nom.NominatedPodsForNode(s.snap.Slot(slot).Info.Node.Name) {
			if np.UID != pod.UID && np.Priority >= pod.Priority {
				add = append(add, np)
			}
		}
	}
	if len(add) > 0 {
		if err := s.Push(ctx); err != nil {
			return nil, err
		}
		st, err := s.withPods(ctx, slot, add)
		if perr := s.Pop(ctx); err == nil && perr != nil {
			err = perr
		}
		if err != nil || st != nil {
			return st, err
		}
	}
	return s.filterOne(ctx, slot)
}

func (s *Session) withPods(ctx context.Context, slot uint32, pods []*abi.Pod) (*Status, error) {
	for _, p := range pods {
		if err := s.AddPod(ctx, slot, p); err != nil {
			return nil, err
		}
	}
	return s.filterOne(ctx, slot)
}

// filterOne runs the profile's filter plugins on one node.
func (s *Session) filterOne(ctx context.Context, slot uint32) (*Status, error) {
	one := []uint32{slot}
	for _, p := range s.prof.filter {
		if s.skip[p.name] {
			continue
		}
		reply, err := s.clients[p.module].Filter(ctx, p.index, one)
		if err != nil {
			if p.ignore {
				continue
			}
			return nil, fmt.Errorf("running Filter plugin %q in a dry run: %w", p.name, err)
		}
		if ix := reply.Indexes[0]; ix != 0 {
			e := reply.Entries[ix-1]
			if e.Code == abi.Error {
				if p.ignore {
					continue
				}
				return nil, fmt.Errorf("running Filter plugin %q in a dry run: %s", p.name, joinReasons(e.Reasons))
			}
			return &Status{Code: e.Code, Reasons: append([]string(nil), e.Reasons...), Plugin: p.name}, nil
		}
	}
	return nil, nil
}

// SelectVictims asks the profile's preemption policy plugin which pods to
// remove on each node.
func (s *Session) SelectVictims(ctx context.Context, policyName string, nodes []abi.NodeCandidates) ([]abi.NodeVictims, error) {
	mi, pi, err := s.prof.preemptionPolicy(policyName)
	if err != nil {
		return nil, err
	}
	return s.clients[mi].SelectVictims(ctx, pi, nodes)
}

// RankCandidates asks the profile's preemption policy plugin to order the
// candidate nodes, best first.
func (s *Session) RankCandidates(ctx context.Context, policyName string, cands []abi.Candidate) ([]int, error) {
	mi, pi, err := s.prof.preemptionPolicy(policyName)
	if err != nil {
		return nil, err
	}
	return s.clients[mi].RankCandidates(ctx, pi, cands)
}
