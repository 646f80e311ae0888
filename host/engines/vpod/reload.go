package vpod

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// Canary runs placement steps of p's policies on the scheduler's cluster
// as it is now, through a scheduler of its own that starts from this
// one's reservations: nothing is reserved, committed, scaled, triggered
// or counted for the running scheduler. A reload runs it before
// SetPolicies, so a policy that fails on the real state is found while
// the running one still serves. It schedules one vpod one vreplica up
// (the scheduling policy) and, with a descheduling policy, one vpod with
// placements one vreplica down; with no vpod, a vpod of one vreplica of
// its own. Only a policy module's failure (a *PolicyError) or the end of
// ctx is an error: vreplicas that do not fit are not.
func (s *Scheduler) Canary(ctx context.Context, p *Policies) error {
	if s.set.Strategy != StrategyPolicy || p == nil || (p.sched == nil && p.desched == nil) {
		return nil
	}
	c, err := New(s.set, s.c, p, Options{Log: hclog.NewNullLogger(), Rand: s.rand, Now: s.now})
	if err != nil {
		return err
	}
	c.reserved = s.Reserved()
	vpods, err := s.c.VPods()
	if err != nil {
		s.log.Warn("vpod canary: cannot list the vpods; the policy runs on a vpod of its own", "error", err)
	}
	var up, down *VPod
	for i := range vpods {
		v := vpods[i]
		if up == nil && v.VReplicas < MaxVReplicas {
			up = &v
		}
		if down == nil && v.VReplicas > 0 && len(v.Placements) > 0 {
			down = &v
		}
	}
	if up == nil {
		up = &VPod{Key: Key{Namespace: s.set.Namespace, Name: "wasmsched-canary"}}
	}
	run := func(v VPod) error {
		_, err := c.Schedule(ctx, v)
		var pe *PolicyError
		switch {
		case errors.As(err, &pe):
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("vpod scheduler %s: canary: %w", s.set.Name, ctx.Err())
		}
		return nil
	}
	if p.sched != nil {
		v := *up
		v.VReplicas++
		if err := run(v); err != nil {
			return err
		}
	}
	if p.desched != nil && down != nil {
		v := *down
		v.VReplicas--
		if err := run(v); err != nil {
			return err
		}
	}
	return nil
}

// Staging is a reload's candidate vpod schedulers and policies, built
// and not yet serving: Canary tries them on the current state, Commit
// swaps them in (it cannot fail), Discard closes them with nothing
// running changed. Group.Stage makes one for a fixed set of schedulers;
// serve's vpod schedulers (host/run/kube) make one that also adds,
// replaces and removes schedulers.
type Staging interface {
	Canary(ctx context.Context) error
	Commit(ctx context.Context)
	Discard(ctx context.Context)
}

// Group is a fixed set of vpod schedulers (an embedding, or tests over
// static clusters), with the policies bound for them and the module
// registry those run on, so that a reload rebinds every scheduler's
// policies at once (Stage), tries them (Staged.Canary) and swaps them in
// together (Staged.Commit) or not at all (Staged.Discard). Only
// policies change live through a Group: the schedulers' other settings
// belong to what made them (their cluster views, controllers and
// autoscalers), so a change to any of them, or a scheduler added or
// removed, is refused with the field named. Serve rebuilds such
// schedulers instead (host/run/kube).
type Group struct {
	log hclog.Logger

	mu      sync.Mutex // guards members, reg and closed
	members []member
	reg     *modules.Registry
	// closed: Close ran; a reload finishing after it closes what it
	// built instead of committing it.
	closed bool
}

type member struct {
	cfg   config.VPodSettings
	sched *Scheduler
	pols  *Policies
}

// NewGroup returns a group whose policies run on reg (which it owns and
// closes; nil for none).
func NewGroup(reg *modules.Registry, log hclog.Logger) *Group {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Group{log: log, reg: reg}
}

// Add adds a running scheduler, as configured, with its policies (which
// the group owns and closes; nil for none).
func (g *Group) Add(cfg config.VPodSettings, s *Scheduler, p *Policies) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members = append(g.members, member{cfg: cfg, sched: s, pols: p})
}

// Len is the number of schedulers.
func (g *Group) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members)
}

// Policies are the policies scheduler i runs now.
func (g *Group) Policies(i int) *Policies {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members[i].pols
}

// Close closes the policies and the registry.
func (g *Group) Close(ctx context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range g.members {
		m.pols.Close(ctx)
	}
	g.members, g.closed = nil, true
	if g.reg != nil {
		g.reg.Close(ctx)
		g.reg = nil
	}
}

// Staged is a candidate configuration's vpod policies for a Group,
// built and not yet serving.
type Staged struct {
	g    *Group
	reg  *modules.Registry
	pols []*Policies // by member; nil where the scheduler has none
	cfgs []config.VPodSettings
}

// Stage builds the vpod policies of cfg on a registry of their own (opts
// as modules.Load takes them; opts.Previous shares compiled code), each
// scheduler's sharing the running policies' pools where the module is
// unchanged (RebindPolicies). It refuses, naming the field, a change
// that cannot apply live: a scheduler added, removed or renamed, or any
// setting of one other than its policies. Nothing running changes.
func (g *Group) Stage(ctx context.Context, cfg *config.Configuration, opts modules.Options) (Staging, error) {
	settings, err := cfg.VPod.Defaulted()
	if err != nil {
		return nil, fmt.Errorf("vpod: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errors.New("vpod: the schedulers are shut down")
	}
	if err := g.checkLive(settings); err != nil {
		return nil, err
	}
	st := &Staged{g: g, pols: make([]*Policies, len(g.members)), cfgs: settings}
	if len(settings) == 0 {
		return st, nil
	}
	if st.reg, err = modules.Load(ctx, cfg, opts); err != nil {
		return nil, fmt.Errorf("vpod: %w", err)
	}
	for i, m := range g.members {
		s := SettingsFrom(settings[i])
		if s.Strategy != StrategyPolicy {
			continue
		}
		p, err := RebindPolicies(ctx, st.reg, s.SchedPolicy, s.DeschedPolicy, g.log.With("scheduler", s.Name), m.pols)
		if err != nil {
			st.Discard(ctx)
			return nil, fmt.Errorf("%s (vpod scheduler %s): policies: %w", config.VPodSchedulerField(i), s.Name, err)
		}
		st.pols[i] = p
	}
	return st, nil
}

// checkLive refuses what a reload cannot change: the schedulers, and
// their settings other than the policies.
func (g *Group) checkLive(next []config.VPodSettings) error {
	if len(next) != len(g.members) {
		return fmt.Errorf("vpod.schedulers: %d schedulers configured, %d running: this set of vpod schedulers is fixed, only their policies change live (the running configuration keeps serving)",
			len(next), len(g.members))
	}
	for i, m := range g.members {
		a, b := m.cfg, next[i]
		f := config.VPodSchedulerField(i)
		for _, d := range []struct {
			field string
			same  bool
		}{
			{"name", a.Name == b.Name},
			{"statefulSet.namespace", a.Namespace == b.Namespace},
			{"statefulSet.name", a.StatefulSet == b.StatefulSet},
			{"podCapacity", a.Capacity == b.Capacity},
			{"strategy", a.Strategy == b.Strategy},
			{"minReplicas", a.MinReplicas == b.MinReplicas},
			{"maxReplicas", a.MaxReplicas == b.MaxReplicas},
			{"maxScaleUpStep", a.MaxScaleUpStep == b.MaxScaleUpStep},
			{"refreshPeriod", a.RefreshPeriod == b.RefreshPeriod},
			{"retryPeriod", a.RetryPeriod == b.RetryPeriod},
			{"sources", reflect.DeepEqual(a.Sources, b.Sources)},
		} {
			if !d.same {
				return fmt.Errorf("%s.%s: changed; only the policies of this set of vpod schedulers change live (the running configuration keeps serving)", f, d.field)
			}
		}
	}
	return nil
}

// Canary runs each scheduler's Canary with its staged policies; the
// error names the scheduler.
func (st *Staged) Canary(ctx context.Context) error {
	if st == nil {
		return nil
	}
	st.g.mu.Lock()
	defer st.g.mu.Unlock()
	for i, m := range st.g.members {
		if st.pols[i] == nil {
			continue
		}
		if err := m.sched.Canary(ctx, st.pols[i]); err != nil {
			return fmt.Errorf("%s (vpod scheduler %s): canary: %w", config.VPodSchedulerField(i), m.cfg.Name, err)
		}
	}
	return nil
}

// Commit swaps the staged policies into every scheduler (each between
// two of its Schedule calls) and closes the replaced policies and
// registry. It cannot fail; after Close it only closes what Stage built.
func (st *Staged) Commit(ctx context.Context) {
	if st == nil {
		return
	}
	g := st.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		st.Discard(ctx)
		return
	}
	for i := range g.members {
		m := &g.members[i]
		if st.pols[i] != nil || m.pols != nil {
			m.sched.SetPolicies(st.pols[i])
		}
		// SetPolicies waited for a Schedule in progress: nothing runs
		// on the old policies now.
		m.pols.Close(ctx)
		m.pols, m.cfg = st.pols[i], st.cfgs[i]
	}
	if g.reg != nil {
		g.reg.Close(ctx)
	}
	g.reg = st.reg
	st.g, st.pols, st.reg = nil, nil, nil
}

// Discard closes what Stage built; nothing running changes.
func (st *Staged) Discard(ctx context.Context) {
	if st == nil || st.g == nil {
		return
	}
	for _, p := range st.pols {
		p.Close(ctx)
	}
	if st.reg != nil {
		st.reg.Close(ctx)
	}
	st.g, st.pols, st.reg = nil, nil, nil
}
