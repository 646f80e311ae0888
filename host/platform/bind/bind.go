// Package bind ties the plugins an engine configures to the modules that
// serve them and to instance pools of those modules. The scheduling
// framework (profiles), the eviction coordinator and the vpod engine all
// need the same three steps: find the module serving a plugin, check
// that the plugin implements the extension points the engine calls, and
// load one pool per module initialised with the args of that module's
// plugins. Doing it in one place gives every engine the same error
// wording and the same reuse across reloads: a pool whose compiled
// module, name, init args and size are unchanged passes from the running
// configuration to the next instead of being loaded again, so its
// instances keep what they were sent (node mirrors, observations,
// registered policies).
package bind

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// Need is what an engine asks of a plugin it is configured with.
type Need struct {
	// Plugin is the plugin's name as configured.
	Plugin string
	// Points are the extension points the engine calls: the plugin must
	// implement at least one of them.
	Points abi.Point
	// Role names what such a plugin is, for errors ("an eviction policy").
	Role string
	// Hint, if set, ends the error for a plugin lacking Points (what a
	// plugin of Role implements).
	Hint string
}

// Resolve finds the module serving n.Plugin where scope looks (a
// profile's field path, see modules.Registry.ProfilePluginModule; "" for
// the global modules) and the plugin's index in its manifest. A plugin
// no module serves is an *UnservedError (a nil reg serves none); one
// implementing none of n.Points is a *PointsError.
func Resolve(reg *modules.Registry, scope string, n Need) (*modules.Compiled, int, error) {
	if reg == nil {
		return nil, -1, &UnservedError{Plugin: n.Plugin}
	}
	m := reg.ProfilePluginModule(scope, n.Plugin)
	idx := -1
	if m != nil {
		idx = m.Manifest.Plugin(n.Plugin)
	}
	if idx < 0 {
		return nil, -1, &UnservedError{Plugin: n.Plugin, Served: reg.ProfilePluginNames(scope)}
	}
	if has := m.Manifest.Plugins[idx].Points; has&n.Points == 0 {
		return m, idx, &PointsError{Plugin: n.Plugin, Module: m.Config.Name, Has: has, Role: n.Role, Hint: n.Hint}
	}
	return m, idx, nil
}

// UnservedError is a configured plugin no module serves.
type UnservedError struct {
	Plugin string
	// Served are the plugins the modules in scope serve, sorted.
	Served []string
}

func (e *UnservedError) Error() string {
	return fmt.Sprintf("no module serves plugin %q (modules serve: %s)", e.Plugin, strings.Join(e.Served, ", "))
}

// PointsError is a plugin whose module serves it at none of the
// extension points an engine calls.
type PointsError struct {
	Plugin, Module string
	// Has are the points the plugin implements.
	Has        abi.Point
	Role, Hint string
}

func (e *PointsError) Error() string {
	hint := ""
	if e.Hint != "" {
		hint = "; " + e.Hint
	}
	return fmt.Sprintf("plugin %q of module %q is not %s (it implements %s%s)", e.Plugin, e.Module, e.Role, e.Has, hint)
}

// Options say how a Pools loads its modules.
type Options struct {
	// PoolSize is the instances of each pool; 0 takes each module's own
	// (modules[].poolSize).
	PoolSize int
	// RequireAll makes each pool's load check that the instance still
	// declares every plugin of the module's manifest.
	RequireAll bool
	// Metrics counts the pools' guest failures and instances.
	Metrics *metrics.Metrics
}

// Pools are the instance pools of one engine's configuration: one per
// module it uses, in the order Add first saw them. Add the modules, set
// their args, Load, and Close when the configuration is replaced.
type Pools struct {
	opts    Options
	entries []*Entry
}

// Entry is one module of a Pools.
type Entry struct {
	Module *modules.Compiled
	// Args are handed to the module's init (set them before Load).
	Args []abi.PluginArgs
	// Pool is the loaded pool (after Load).
	Pool *guest.Pool
	// Reused: Pool came from the previous configuration, which has used
	// it already.
	Reused bool

	shared *sharedPool
}

// sharedPool is a pool and the number of Pools holding it.
type sharedPool struct {
	pool *guest.Pool
	key  poolKey
	refs atomic.Int32
}

// poolKey identifies what a pool was made from.
type poolKey struct {
	compiled modules.CompiledID
	name     string
	args     string // the init request's encoding
	poolSize int
}

// acquire takes a reference unless the pool is closed already.
func (p *sharedPool) acquire() bool {
	for {
		n := p.refs.Load()
		if n <= 0 {
			return false
		}
		if p.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

func (p *sharedPool) release(ctx context.Context) {
	if p.refs.Add(-1) == 0 {
		p.pool.Close(ctx)
	}
}

// New returns empty Pools loading with opts.
func New(opts Options) *Pools { return &Pools{opts: opts} }

// Add returns the index of m's entry, adding one for it if it has none,
// with args appended to its Args.
func (ps *Pools) Add(m *modules.Compiled, args ...abi.PluginArgs) int {
	i := ps.Index(m)
	if i < 0 {
		i = len(ps.entries)
		ps.entries = append(ps.entries, &Entry{Module: m})
	}
	ps.entries[i].Args = append(ps.entries[i].Args, args...)
	return i
}

// Index returns the index of m's entry, or -1.
func (ps *Pools) Index(m *modules.Compiled) int {
	for i, e := range ps.entries {
		if e.Module == m {
			return i
		}
	}
	return -1
}

// Entries lists the modules in the order Add first saw them.
func (ps *Pools) Entries() []*Entry { return ps.entries }

// Entry is entry i.
func (ps *Pools) Entry(i int) *Entry { return ps.entries[i] }

// Load gives each entry without a pool its pool: prev's pool made from
// the same compiled module, name, args and size if prev (the running
// configuration's Pools, or nil) has one, else a new one. A failed load
// is a *LoadError; the pools loaded before it stay held, so Close ps
// whether or not Load succeeds. prev stays usable and must still be
// closed.
func (ps *Pools) Load(ctx context.Context, prev *Pools) error {
	for _, e := range ps.entries {
		if e.shared != nil {
			continue
		}
		size := ps.opts.PoolSize
		if size == 0 {
			size = e.Module.Config.PoolSize
		}
		var enc abi.Encoder
		enc.InitRequest(&abi.InitRequest{Plugins: e.Args})
		key := poolKey{compiled: e.Module.ID(), name: e.Module.Config.Name, args: string(enc.B), poolSize: size}
		if sp := prev.find(key); sp != nil {
			e.Pool, e.shared, e.Reused = sp.pool, sp, true
			continue
		}
		var require []string
		if ps.opts.RequireAll {
			for _, p := range e.Module.Manifest.Plugins {
				require = append(require, p.Name)
			}
		}
		pool, err := guest.Load(ctx, e.Module.Backend, guest.PoolConfig{
			Name:     e.Module.Config.Name,
			Require:  require,
			Args:     e.Args,
			PoolSize: size,
			Metrics:  ps.opts.Metrics,
			Collects: e.Module.Collects(),
		})
		if err != nil {
			return &LoadError{Module: e.Module, Err: err}
		}
		e.Pool, e.shared = pool, &sharedPool{pool: pool, key: key}
		e.shared.refs.Add(1)
	}
	return nil
}

// find takes a reference to prev's pool made from key and returns it, or
// nil (also for a nil or closed prev).
func (prev *Pools) find(key poolKey) *sharedPool {
	if prev == nil {
		return nil
	}
	for _, e := range prev.entries {
		if e.shared != nil && e.shared.key == key && e.shared.acquire() {
			return e.shared
		}
	}
	return nil
}

// Close releases the pools: each is closed once no later Pools holds it.
// Closing twice is harmless.
func (ps *Pools) Close(ctx context.Context) {
	if ps == nil {
		return
	}
	for _, e := range ps.entries {
		if e.shared != nil {
			e.shared.release(ctx)
			e.shared = nil
		}
	}
}

// LoadError is a module whose pool failed to load. Its text is the
// loader's, which names the module already.
type LoadError struct {
	Module *modules.Compiled
	Err    error
}

func (e *LoadError) Error() string { return e.Err.Error() }

func (e *LoadError) Unwrap() error { return e.Err }
