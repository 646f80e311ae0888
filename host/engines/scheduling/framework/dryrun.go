package framework

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
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
	for i := range d.c.clients {
		_, _ = d.c.client(ctx, i) // replace instances the cycle's plugins broke
	}
	first := &Session{prof: d.c.prof, snap: d.c.snap, clients: d.c.clients, skip: d.skip, down: d.c.down}
	sessions = []*Session{first}
	var extra [][]*guest.Client
	for len(sessions) < n {
		clients, ok := d.extraClients(ctx)
		if !ok {
			break
		}
		extra = append(extra, clients)
		sessions = append(sessions, &Session{prof: d.c.prof, snap: d.c.snap, clients: clients, skip: d.skip, down: d.c.down})
	}
	return sessions, func() {
		for _, cs := range extra {
			for i, cl := range cs {
				if cl != nil {
					d.c.prof.modules[i].pool.Put(ctx, cl)
				}
			}
		}
	}
}

// extraClients checks out one free instance per module and brings it to
// the state the cycle's instances are in; false if any is busy or fails.
func (d *DryRun) extraClients(ctx context.Context) ([]*guest.Client, bool) {
	clients := make([]*guest.Client, len(d.c.prof.modules))
	ok := true
	for i, pm := range d.c.prof.modules {
		if d.c.down[i] != nil {
			continue // down for the cycle: down in every session
		}
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
			if d.skip[p.name] || clients[p.module] == nil {
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
//
// A module that is down for the cycle has no instance here, and one whose
// instance a call breaks during the session is left out of the what-if
// calls that follow: in both cases its filters count as failed, each per
// its failurePolicy (Ignore: the node passes that plugin).
type Session struct {
	prof    *Profile
	snap    *snapshot.Snapshot
	clients []*guest.Client
	skip    map[string]bool
	down    []error // the cycle's, read-only here
}

// live lists the session's usable instances.
func (s *Session) live(f func(cl *guest.Client) error) error {
	for _, cl := range s.clients {
		if cl == nil || cl.Broken() {
			continue
		}
		if err := f(cl); err != nil {
			return err
		}
	}
	return nil
}

// Push saves every module's what-if view; Pop restores it.
func (s *Session) Push(ctx context.Context) error {
	return s.live(func(cl *guest.Client) error { return cl.PushState(ctx) })
}

// Pop restores the views saved by the matching Push.
func (s *Session) Pop(ctx context.Context) error {
	var first error
	_ = s.live(func(cl *guest.Client) error {
		if err := cl.PopState(ctx); err != nil && first == nil {
			first = err
		}
		return nil
	})
	return first
}

// Edit applies edits, in order, to every module's view: one call per
// module (ABI v1.5's edit_view; one add_pod/remove_pod per edit for older
// modules). A dry run sends each of its steps this way: all removals, a
// reprieve step's restores, the removals after a step.
func (s *Session) Edit(ctx context.Context, edits []guest.ViewEdit) error {
	if len(edits) == 0 {
		return nil
	}
	return s.live(func(cl *guest.Client) error { return cl.EditView(ctx, edits) })
}

// filter runs plugin p's Filter over slots in this session; a module with
// no instance is an error naming why.
func (s *Session) filter(ctx context.Context, p *wasmPlugin, slots []uint32) (*abi.FilterReply, error) {
	cl := s.clients[p.module]
	if cl == nil {
		if err := s.down[p.module]; err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("module %q has no instance in this dry run", s.prof.modules[p.module].mod.Config.Name)
	}
	return cl.Filter(ctx, p.index, slots)
}

// runFilter is a session's guard around one Filter call (the cycle's is
// runPlugin): a call that fails, or cannot be made, is handled by the
// plugin's failurePolicy. A nil reply with a nil error means the nodes
// pass the plugin (Ignore); the error is a Fail plugin's, naming it.
func (s *Session) runFilter(ctx context.Context, p *wasmPlugin, slots []uint32) (*abi.FilterReply, error) {
	reply, err := s.filter(ctx, p, slots)
	if err == nil {
		return reply, nil
	}
	if ferr := s.prof.pluginFailed(p, metrics.Filter, err); ferr != nil {
		return nil, fmt.Errorf("running Filter plugin %q in a dry run: %w", p.name, ferr)
	}
	return nil, nil
}

// Fits runs the filters for pod on one node of the current view, with
// kube-scheduler's rule for nominated pods: the node's nominated peers
// (nominatedPeers) are added first, and if there were any, the filters
// must pass without them too. It returns the first rejection, or nil
// when the pod fits.
func (s *Session) Fits(ctx context.Context, pod *abi.Pod, slot uint32, nom Nominator) (*Status, error) {
	if add := nominatedPeers(pod, nom, s.snap.Slot(slot).Info.Node.Name); len(add) > 0 {
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
	if err := s.Edit(ctx, addEdits(slot, pods)); err != nil {
		return nil, err
	}
	return s.filterOne(ctx, slot)
}

// addEdits are the edits that put pods on the node in slot.
func addEdits(slot uint32, pods []*abi.Pod) []guest.ViewEdit {
	edits := make([]guest.ViewEdit, len(pods))
	for i, p := range pods {
		edits[i] = guest.ViewEdit{Slot: slot, Op: guest.EditAdd, Pod: p}
	}
	return edits
}

// filterOne runs the profile's filter plugins on one node.
func (s *Session) filterOne(ctx context.Context, slot uint32) (*Status, error) {
	one := []uint32{slot}
	for k := range s.prof.filter {
		p := &s.prof.filter[k]
		if s.skip[p.name] {
			continue
		}
		reply, err := s.runFilter(ctx, p, one)
		if reply == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		var rejected *Status
		_, err = s.prof.filterVerdicts(p, reply, one, s.snap, metrics.Filter, nil, func(_ int, st *Status) { rejected = st })
		if err != nil {
			return nil, fmt.Errorf("running Filter plugin %q in a dry run: %w", p.name, err)
		}
		if rejected != nil {
			return rejected, nil
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
	if s.clients[mi] == nil {
		return nil, fmt.Errorf("preemption policy %q: module %q is down for this cycle: %w", policyName, s.prof.modules[mi].mod.Config.Name, s.down[mi])
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
	if s.clients[mi] == nil {
		return nil, fmt.Errorf("preemption policy %q: module %q is down for this cycle: %w", policyName, s.prof.modules[mi].mod.Config.Name, s.down[mi])
	}
	return s.clients[mi].RankCandidates(ctx, pi, cands)
}

// Batchable reports whether what-ifs on different nodes are independent
// for this pod, so several nodes can be evaluated in one view with
// batched filter calls (Session.FitsMany): true unless a PreFilter plugin
// that ran for the pod keeps state that add_pod/remove_pod update
// (abi.PointPreFilterExtensions; a v1.0 module cannot say, so its
// PreFilter plugins count as such).
func (d *DryRun) Batchable() bool {
	for _, p := range d.c.prof.preFilter {
		if d.skip != nil && d.skip[p.name] {
			continue // skipped for this pod: its state is never updated
		}
		if p.points.Has(abi.PointPreFilterExtensions) || d.c.prof.modules[p.module].mod.Manifest.VersionMinor < 1 {
			return false
		}
	}
	return true
}

// FitsMany is Fits for several nodes of the current view at once: nodes
// with nominated pods of equal or higher priority are checked one by one
// (Fits), the others with one filter call per plugin over all of them.
// Only valid when Batchable. sts[i] is slots[i]'s first rejection, nil
// when the pod fits.
func (s *Session) FitsMany(ctx context.Context, pod *abi.Pod, slots []uint32, nom Nominator) ([]*Status, error) {
	sts := make([]*Status, len(slots))
	var plain []uint32
	var at []int
	for i, slot := range slots {
		if len(nominatedPeers(pod, nom, s.snap.Slot(slot).Info.Node.Name)) > 0 {
			st, err := s.Fits(ctx, pod, slot, nom)
			if err != nil {
				return nil, err
			}
			sts[i] = st
			continue
		}
		plain = append(plain, slot)
		at = append(at, i)
	}
	if len(plain) == 0 {
		return sts, nil
	}
	remaining := append([]uint32(nil), plain...)
	pos := append([]int(nil), at...)
	for k := range s.prof.filter {
		p := &s.prof.filter[k]
		if s.skip[p.name] || len(remaining) == 0 {
			continue
		}
		reply, err := s.runFilter(ctx, p, remaining)
		if reply == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		passed, err := s.prof.filterVerdicts(p, reply, remaining, s.snap, metrics.Filter, nil,
			func(i int, st *Status) { sts[pos[i]] = st })
		if err != nil {
			return nil, fmt.Errorf("running Filter plugin %q in a dry run: %w", p.name, err)
		}
		remaining, pos = keepPassed(remaining, passed), keepPassed(pos, passed)
	}
	return sts, nil
}
