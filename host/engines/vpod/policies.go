package vpod

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/internal/yamlcheck"
	"github.com/wasmsched/wasmsched/host/platform/bind"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// Policy IDs the engine registers with every module: one per policy kind.
const (
	schedPolicyID   = 1
	deschedPolicyID = 2
)

// Policies are the scheduling and descheduling policies bound to the
// modules serving their plugins: one instance pool per module (placement
// steps run one at a time), each module registered with the entries of
// each policy it serves. A reload builds new Policies (RebindPolicies,
// keeping the pools of unchanged modules) and swaps them in with
// Scheduler.SetPolicies; Close the old ones afterwards.
type Policies struct {
	sched, desched *boundPolicy
	pools          []modulePool
	// loaded holds the pools of the modules of a registry (nil for
	// policies bound to fakes).
	loaded *bind.Pools
	log    hclog.Logger
}

// boundPolicy is one policy resolved against the modules.
type boundPolicy struct {
	name string // "scheduler" or "descheduler", for logs
	src  *Policy
	// preds and prios are the policy's entries a module serves, in
	// policy order (unknown plugins of a lenient policy left out, as
	// Knative skips them).
	preds, prios []boundEntry
	// configuredPrios: the policy lists priorities at all (Knative
	// scores every feasible pod 1 when it lists none).
	configuredPrios bool
	mods            []*moduleShare
}

// boundEntry is one served entry of a policy.
type boundEntry struct {
	name   string
	weight int64
	mod    int // index in boundPolicy.mods
	local  int // index in that module's VPodPolicy.Entries
	// summed: the entry's weighted scores go into the total (Knative
	// keeps one score list per plugin name, so of several priorities
	// with the same plugin only the last one counts; every one of them
	// may still abort scoring).
	summed bool
	// invalid is the module's reason for refusing the entry's args
	// (lenient policies only: a strict one is refused instead).
	invalid string
	// src is the entry as configured, list ("predicates" or
	// "priorities") and index its place in the policy: for errors.
	src   PolicyEntry
	list  string
	index int
}

// moduleShare is the part of a policy one module serves.
type moduleShare struct {
	pool   modulePool
	policy *abi.VPodPolicy
	// global maps a module-local entry index to the index in preds
	// (predicates) or prios (priorities).
	global []int
	kinds  []abi.VPodEntryKind
}

// vpodClient is the vpod part of a checked-out module instance
// (*guest.Client, ABI v1.3).
type vpodClient interface {
	EnsureVPodPolicy(ctx context.Context, p *abi.VPodPolicy) (*abi.VPodPolicyReply, error)
	VPodTopology(ctx context.Context, t *abi.VPodTopology) error
	VPodStep(ctx context.Context, p *abi.VPodPolicy, s *abi.VPodStep) (*abi.VPodStepReply, error)
}

var _ vpodClient = (*guest.Client)(nil)

// modulePool hands out instances of one module.
type modulePool interface {
	name() string
	get(ctx context.Context) (vpodClient, error)
	put(ctx context.Context, c vpodClient)
}

// policyPool is a modulePool over a guest.Pool.
type policyPool struct{ m *guest.Pool }

func (p policyPool) name() string { return p.m.Name() }

func (p policyPool) get(ctx context.Context) (vpodClient, error) {
	c, err := p.m.Get(ctx)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (p policyPool) put(ctx context.Context, c vpodClient) {
	if pc, ok := c.(*guest.Client); ok {
		p.m.Put(ctx, pc)
	}
}

// NewPolicies binds the scheduling and descheduling policies (either may
// be nil) to the modules of reg that serve their plugins, and registers
// each entry with its module, which checks the entry's args. A served
// plugin that is not a vpod predicate or priority is an error naming
// it. Unless the policy is Lenient, so is an entry whose plugin no
// module serves as that kind (a predicate whose plugin is only a
// priority, say) and an entry whose args its module refuses: the error
// is a config.Errors with one *config.Error per entry, each naming where
// the entry was written (file, line, field), why, and the predicates or
// priorities that exist. A Lenient policy logs and skips the unserved
// entries (Knative v1.16.0 skips names missing from its registry) and
// logs and keeps the refused ones.
func NewPolicies(ctx context.Context, reg *modules.Registry, sched, desched *Policy, log hclog.Logger) (*Policies, error) {
	return RebindPolicies(ctx, reg, sched, desched, log, nil)
}

// RebindPolicies is NewPolicies for a reload: where prev (the running
// policies, or nil) has a pool of the same compiled module, the new
// policies share it instead of loading and initialising a new instance
// (registering a changed policy with it replaces the old one under the
// same ID). prev stays usable and must still be closed; it is not
// changed when the new policies are refused.
func RebindPolicies(ctx context.Context, reg *modules.Registry, sched, desched *Policy, log hclog.Logger, prev *Policies) (*Policies, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	need := bind.Need{Points: abi.PointsVPod, Role: "a vpod predicate or priority"}
	p := &Policies{log: log}
	var prevPools *bind.Pools
	if reg != nil {
		p.loaded = bind.New(bind.Options{PoolSize: 1, Metrics: reg.Metrics()})
	}
	if prev != nil {
		prevPools = prev.loaded
	}
	pools := map[*modules.Compiled]modulePool{}
	load := func(m *modules.Compiled) (modulePool, error) {
		if mp, ok := pools[m]; ok {
			return mp, nil
		}
		i := p.loaded.Add(m)
		if err := p.loaded.Load(ctx, prevPools); err != nil {
			return nil, fmt.Errorf("load module %q: %w", m.Config.Name, err)
		}
		mp := policyPool{m: p.loaded.Entry(i).Pool}
		pools[m] = mp
		p.pools = append(p.pools, mp)
		return mp, nil
	}
	r := resolver{
		resolve: func(name string, kind abi.VPodEntryKind) (modulePool, uint32, string, error) {
			need.Plugin = name
			m, idx, err := bind.Resolve(reg, "", need)
			if _, unserved := err.(*bind.UnservedError); unserved {
				return nil, 0, missUnserved, nil
			}
			if err != nil {
				return nil, 0, "", err
			}
			if !m.Manifest.Plugins[idx].Points.Has(entryPoint(kind)) {
				return nil, 0, fmt.Sprintf("module %q serves it as a vpod %s only", m.Config.Name, kindName(otherKind(kind))), nil
			}
			mp, err := load(m)
			if err != nil {
				return nil, 0, "", err
			}
			return mp, uint32(idx), "", nil
		},
		served: func(kind abi.VPodEntryKind) []string {
			if reg == nil {
				return nil
			}
			var out []string
			for _, name := range reg.PluginNames() {
				m := reg.PluginModule(name)
				if idx := m.Manifest.Plugin(name); idx >= 0 && m.Manifest.Plugins[idx].Points.Has(entryPoint(kind)) {
					out = append(out, name)
				}
			}
			return out
		},
		unavailable: func() string { return reg.UnavailableNames("") },
	}
	if err := p.bind(ctx, sched, desched, r); err != nil {
		p.Close(ctx)
		return nil, err
	}
	return p, nil
}

// bind binds and registers both policies; refusals of strict policies
// come back together as a config.Errors.
func (p *Policies) bind(ctx context.Context, sched, desched *Policy, r resolver) error {
	var refused config.Errors
	for _, x := range []struct {
		which string
		pol   *Policy
		dst   **boundPolicy
	}{{"scheduler", sched, &p.sched}, {"descheduler", desched, &p.desched}} {
		if x.pol == nil {
			continue
		}
		bp, errs, err := bindPolicy(x.which, x.pol, p.log, r)
		if err != nil {
			return err
		}
		refused = append(refused, errs...)
		*x.dst = bp
	}
	errs, err := p.register(ctx)
	if err != nil {
		return err
	}
	if refused = append(refused, errs...); len(refused) > 0 {
		return refused
	}
	return nil
}

// entryPoint is the extension point of an entry kind.
func entryPoint(kind abi.VPodEntryKind) abi.Point {
	if kind == abi.VPodPriority {
		return abi.PointVPodPriority
	}
	return abi.PointVPodPredicate
}

// kindPlural is "predicates" or "priorities".
func kindPlural(kind abi.VPodEntryKind) string {
	if kind == abi.VPodPriority {
		return "priorities"
	}
	return "predicates"
}

func otherKind(kind abi.VPodEntryKind) abi.VPodEntryKind {
	if kind == abi.VPodPriority {
		return abi.VPodPredicate
	}
	return abi.VPodPriority
}

// kindName is "predicate" or "priority".
func kindName(kind abi.VPodEntryKind) string {
	if kind == abi.VPodPriority {
		return "priority"
	}
	return "predicate"
}

// resolver finds the module serving a plugin as a predicate or priority.
type resolver struct {
	// resolve binds a plugin name as kind; miss says why it is not
	// bound ("" when it is).
	resolve func(name string, kind abi.VPodEntryKind) (pool modulePool, plugin uint32, miss string, err error)
	// served lists the plugins the modules serve as kind, sorted.
	served func(kind abi.VPodEntryKind) []string
	// unavailable names the FailOpen modules the registry runs without
	// ("" when none, or nil).
	unavailable func() string
}

// missUnserved is resolver.resolve's miss for a plugin no module serves.
const missUnserved = "no module serves it"

// bindPolicy resolves each entry of pol and groups the served ones per
// module. An unserved entry of a strict policy is one of refused; err is
// a failure that is not the policy's (a module that does not load, a
// plugin that is no vpod plugin at all).
func bindPolicy(which string, pol *Policy, log hclog.Logger, r resolver) (bp *boundPolicy, refused config.Errors, err error) {
	bp = &boundPolicy{name: which, src: pol, configuredPrios: len(pol.Priorities) > 0}
	byPool := map[modulePool]int{}
	add := func(e PolicyEntry, kind abi.VPodEntryKind, field string, i int) (boundEntry, bool, error) {
		pool, plugin, miss, err := r.resolve(e.Name, kind)
		var pe *bind.PointsError
		if errors.As(err, &pe) { // refused whatever the compat: no vpod plugin at all
			refused = append(refused, entryError(which, field, i, e, "%v", err))
			return boundEntry{}, false, nil
		}
		if err != nil {
			return boundEntry{}, false, fmt.Errorf("%s policy %s[%d]: %w", which, field, i, err)
		}
		if miss == missUnserved && r.unavailable != nil {
			if gone := r.unavailable(); gone != "" {
				// The plugin may be a FailOpen module's that could not be
				// fetched: run without the entry, loudly, as profiles and
				// eviction policies do.
				log.Error("vpod policy entry left out: no module serves its plugin and a FailOpen module is unavailable",
					"policy", which, "kind", field, "plugin", e.Name, "unavailable", gone)
				return boundEntry{}, false, nil
			}
		}
		if miss != "" {
			if !pol.Lenient {
				served := r.served(kind)
				list := "none"
				if len(served) > 0 {
					list = strings.Join(served, ", ")
				}
				refused = append(refused, entryError(which, field, i, e, "vpod %s %q: %s%s; the vpod %s that exist: %s (knativeCompat: lenient skips it, as Knative does)",
					kindName(kind), e.Name, miss, yamlcheck.Suggest(e.Name, served), kindPlural(kind), list))
				return boundEntry{}, false, nil
			}
			log.Error("vpod policy plugin not found; skipped", "policy", which, "kind", field, "plugin", e.Name, "reason", miss)
			return boundEntry{}, false, nil
		}
		mi, seen := byPool[pool]
		if !seen {
			mi = len(bp.mods)
			byPool[pool] = mi
			bp.mods = append(bp.mods, &moduleShare{pool: pool, policy: &abi.VPodPolicy{ID: policyID(which)}})
		}
		ms := bp.mods[mi]
		var args []byte
		if e.Args != nil {
			args = append([]byte{}, e.Args...)
		}
		ms.policy.Entries = append(ms.policy.Entries, abi.VPodEntry{Plugin: plugin, Kind: kind, Args: args})
		ms.kinds = append(ms.kinds, kind)
		return boundEntry{name: e.Name, weight: e.Weight, mod: mi, local: len(ms.policy.Entries) - 1, src: e, list: field, index: i}, true, nil
	}
	for i, e := range pol.Predicates {
		be, ok, err := add(e, abi.VPodPredicate, "predicates", i)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			bp.mods[be.mod].global = append(bp.mods[be.mod].global, len(bp.preds))
			bp.preds = append(bp.preds, be)
		}
	}
	for i, e := range pol.Priorities {
		be, ok, err := add(e, abi.VPodPriority, "priorities", i)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			bp.mods[be.mod].global = append(bp.mods[be.mod].global, len(bp.prios))
			bp.prios = append(bp.prios, be)
		}
	}
	// Of priorities sharing a plugin name, only the last is summed.
	for i := range bp.prios {
		bp.prios[i].summed = true
		for j := i + 1; j < len(bp.prios); j++ {
			if bp.prios[j].name == bp.prios[i].name {
				bp.prios[i].summed = false
				break
			}
		}
	}
	return bp, refused, nil
}

// entryError is the refusal of entry i of a policy's list ("predicates"
// or "priorities"), at the place the entry was written or, for a policy
// built in code, named by its policy and index.
func entryError(which, list string, i int, e PolicyEntry, format string, a ...any) *config.Error {
	field := e.Field
	if field == "" {
		field = fmt.Sprintf("%s policy %s[%d]", which, list, i)
	}
	return &config.Error{File: e.File, Line: e.Line, Field: field, Msg: fmt.Sprintf(format, a...)}
}

func policyID(which string) uint32 {
	if which == "descheduler" {
		return deschedPolicyID
	}
	return schedPolicyID
}

// register registers every policy share with an instance of its module.
// An entry whose args the module refuses is one of refused when its
// policy is strict; in a lenient one it is logged and stays (its
// predicate refuses every pod and its priority fails scoring, as
// Knative's plugins do when they cannot decode their args).
func (p *Policies) register(ctx context.Context) (refused config.Errors, err error) {
	for _, bp := range []*boundPolicy{p.sched, p.desched} {
		if bp == nil {
			continue
		}
		for _, ms := range bp.mods {
			c, err := ms.pool.get(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s policy: module %q: %w", bp.name, ms.pool.name(), err)
			}
			reply, err := c.EnsureVPodPolicy(ctx, ms.policy)
			ms.pool.put(ctx, c)
			if err != nil {
				return nil, fmt.Errorf("%s policy: register with module %q: %w", bp.name, ms.pool.name(), err)
			}
			refused = append(refused, bp.noteInvalid(ms, reply, p.log)...)
		}
	}
	return refused, nil
}

// noteInvalid records the entries whose args the module refused: in a
// strict policy as refusals, in a lenient one logged (the first time).
func (bp *boundPolicy) noteInvalid(ms *moduleShare, reply *abi.VPodPolicyReply, log hclog.Logger) config.Errors {
	if reply == nil {
		return nil
	}
	var refused config.Errors
	for local, msg := range reply.Invalid {
		if msg == "" || local >= len(ms.global) {
			continue
		}
		e := bp.entry(ms, local)
		if ignored, ok := strings.CutPrefix(msg, abi.ArgsIgnored); ok {
			// The plugin takes no args and runs as if it had none.
			if !bp.src.Lenient {
				refused = append(refused, entryError(bp.name, e.list, e.index, e.src, "vpod %s %q: args %s given to a plugin that takes none: %s (knativeCompat: lenient ignores them, as Knative does)",
					kindName(ms.kinds[local]), e.name, argsText(e.src.Args), guest.Text(ignored)))
			} else {
				log.Warn("vpod policy entry's args ignored: the plugin takes none", "policy", bp.name, "plugin", e.name, "module", ms.pool.name())
			}
			continue
		}
		if !bp.src.Lenient {
			refused = append(refused, entryError(bp.name, e.list, e.index, e.src, "vpod %s %q: module %q refuses its args %s: %s (knativeCompat: lenient keeps it, as Knative does)",
				kindName(ms.kinds[local]), e.name, ms.pool.name(), argsText(e.src.Args), guest.Text(msg)))
			continue
		}
		if e.invalid == "" {
			log.Warn("vpod policy entry has invalid arguments", "policy", bp.name, "plugin", e.name, "module", ms.pool.name(), "reason", guest.Text(msg))
		}
		e.invalid = msg
	}
	return refused
}

// argsText shows args as written, bounded, or "(none)".
func argsText(args []byte) string {
	if len(args) == 0 {
		return "(none)"
	}
	const most = 200
	if len(args) > most {
		return guest.Text(string(args[:most])) + "…"
	}
	return guest.Text(string(args))
}

// entry is the bound entry of a module-local index.
func (bp *boundPolicy) entry(ms *moduleShare, local int) *boundEntry {
	if ms.kinds[local] == abi.VPodPredicate {
		return &bp.preds[ms.global[local]]
	}
	return &bp.prios[ms.global[local]]
}

// plugins names the plugins module ms serves in the policy, in policy
// order, each once, comma-separated: a module-wide step failure cannot be
// told apart between them.
func (bp *boundPolicy) plugins(ms *moduleShare) string {
	var names []string
	seen := map[string]bool{}
	for local := range ms.kinds {
		if n := bp.entry(ms, local).name; !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// Sched is the scheduling policy as configured (nil if none).
func (p *Policies) Sched() *Policy {
	if p == nil || p.sched == nil {
		return nil
	}
	return p.sched.src
}

// Desched is the descheduling policy as configured (nil if none).
func (p *Policies) Desched() *Policy {
	if p == nil || p.desched == nil {
		return nil
	}
	return p.desched.src
}

// Close closes the module pools (those later policies share stay open
// until they are closed too).
func (p *Policies) Close(ctx context.Context) {
	if p == nil {
		return
	}
	p.loaded.Close(ctx)
	p.pools = nil
}
