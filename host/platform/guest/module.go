package guest

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// PoolConfig says how to load one module.
type PoolConfig struct {
	// Name identifies the module in errors, logs and metrics.
	Name string
	// Require lists plugins the module must implement; Load refuses a
	// module missing any of them.
	Require []string
	// Args are the plugins' args, passed to the guest's init.
	Args []abi.PluginArgs
	// PoolSize caps the instances kept; 0 means GOMAXPROCS.
	PoolSize int
	// Metrics counts the module's guest traps, deadlines and live
	// instances under Name; nil counts nothing.
	Metrics *metrics.Metrics
	// Collects says the guest frees its garbage (TinyGo's precise
	// collector, Go's): its memory grows to what its live heap needs, so
	// Put keeps an instance that grew. Leave it false for a guest that may
	// never free (TinyGo's -gc=leaking, as the builtin default bundle):
	// Put replaces such an instance before its last doubling.
	Collects bool
}

// Pool is a loaded, validated module with a pool of initialised
// instances. Safe for concurrent use.
type Pool struct {
	name     string
	manifest abi.Manifest
	backend  Backend
	initReq  []byte
	idle     chan *Client
	slots    chan struct{} // one token per instance that may exist
	lost     atomic.Int64
	recycled atomic.Int64
	memory   atomic.Int64 // linear memory of the live instances (Client.memSize summed)
	metrics  *metrics.ModuleMetrics
	collects bool // Config.Collects: never replaced for growing
}

// Load validates a module and readies its pool: it makes one instance,
// checks its ABI version and manifest against cfg, and initialises it
// with the args. Every problem is an error naming the module.
func Load(ctx context.Context, b Backend, cfg PoolConfig) (*Pool, error) {
	size := cfg.PoolSize
	if size <= 0 {
		size = runtime.GOMAXPROCS(0)
	}
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{Plugins: cfg.Args})
	m := &Pool{
		name:     cfg.Name,
		backend:  b,
		initReq:  e.B,
		idle:     make(chan *Client, size),
		slots:    make(chan struct{}, size),
		metrics:  cfg.Metrics.Module(cfg.Name),
		collects: cfg.Collects,
	}
	inst, err := b.NewInstance(ctx)
	if err != nil {
		m.fault(err, moduleWide)
		return nil, fmt.Errorf("module %q: instantiate: %w", cfg.Name, err)
	}
	if err := m.validate(ctx, inst, cfg.Require); err != nil {
		inst.Close(ctx)
		return nil, err
	}
	c, err := m.initClient(ctx, inst)
	if err != nil {
		inst.Close(ctx)
		return nil, err
	}
	m.slots <- struct{}{}
	m.metrics.InstanceOpened()
	m.noteMemory(c)
	m.idle <- c
	return m, nil
}

func (m *Pool) validate(ctx context.Context, inst Instance, require []string) error {
	v, err := inst.ABIVersion(ctx)
	if err != nil {
		m.fault(err, moduleWide)
		return fmt.Errorf("module %q: read ABI version: %w", m.name, err)
	}
	if err := checkVersion(v); err != nil {
		return fmt.Errorf("module %q: %w", m.name, err)
	}
	reply, err := m.call(ctx, inst, abi.FuncManifest, 0, 0, moduleWide)
	if err != nil {
		return fmt.Errorf("module %q: read manifest: %w", m.name, err)
	}
	d := abi.NewDecoder(reply)
	d.Manifest(&m.manifest)
	if d.Err() != nil {
		return fmt.Errorf("module %q: malformed manifest: %w", m.name, d.Err())
	}
	if mv := abi.PackVersion(m.manifest.VersionMajor, m.manifest.VersionMinor); mv != v {
		major, minor := abi.UnpackVersion(v)
		return fmt.Errorf("module %q: manifest says ABI v%d.%d but the module exports v%d.%d",
			m.name, m.manifest.VersionMajor, m.manifest.VersionMinor, major, minor)
	}
	if err := checkManifest(&m.manifest, require); err != nil {
		return fmt.Errorf("module %q: %w", m.name, err)
	}
	return nil
}

// checkVersion accepts the host's major version at a minor version the
// host knows.
func checkVersion(v uint32) error {
	major, minor := abi.UnpackVersion(v)
	if major != abi.VersionMajor || minor > abi.VersionMinor {
		return fmt.Errorf("built for ABI v%d.%d, but this host speaks ABI v%d.%d (same major, minor up to %d)",
			major, minor, abi.VersionMajor, abi.VersionMinor, abi.VersionMinor)
	}
	return nil
}

// ErrMissingPlugin is wrapped by Load when a module lacks a required plugin.
var ErrMissingPlugin = errors.New("module does not implement a required plugin")

func checkManifest(m *abi.Manifest, require []string) error {
	if len(m.Plugins) == 0 {
		return errors.New("manifest declares no plugins")
	}
	seen := map[string]bool{}
	var names []string
	for _, p := range m.Plugins {
		switch {
		case p.Name == "":
			return errors.New("manifest declares a plugin with an empty name")
		case seen[p.Name]:
			return fmt.Errorf("manifest declares plugin %q twice", p.Name)
		case p.Points == 0:
			return fmt.Errorf("manifest: plugin %q implements no extension point", p.Name)
		case p.Points&^abi.PointsKnown != 0:
			return fmt.Errorf("manifest: plugin %q declares extension points this host does not know: %s", p.Name, p.Points)
		case p.Points&abi.PointsEviction != 0 && m.VersionMinor < 2:
			return fmt.Errorf("manifest: plugin %q declares eviction points (%s), which ABI v1.2 introduced, but the module is built for v%d.%d",
				p.Name, p.Points&abi.PointsEviction, m.VersionMajor, m.VersionMinor)
		case p.Points&abi.PointsVPod != 0 && m.VersionMinor < 3:
			return fmt.Errorf("manifest: plugin %q declares vpod points (%s), which ABI v1.3 introduced, but the module is built for v%d.%d",
				p.Name, p.Points&abi.PointsVPod, m.VersionMajor, m.VersionMinor)
		}
		seen[p.Name] = true
		names = append(names, p.Name)
	}
	for _, r := range require {
		if !seen[r] {
			return fmt.Errorf("%w: %q (it implements %s)", ErrMissingPlugin, r, strings.Join(names, ", "))
		}
	}
	return nil
}

func (m *Pool) initClient(ctx context.Context, inst Instance) (*Client, error) {
	buf, err := inst.Input(ctx, len(m.initReq))
	if err != nil {
		m.fault(err, moduleWide)
		return nil, fmt.Errorf("module %q: init: %w", m.name, err)
	}
	copy(buf, m.initReq)
	if _, err := m.call(ctx, inst, abi.FuncInit, 0, len(m.initReq), moduleWide); err != nil {
		return nil, err // a *CallError: it names the module and "init"
	}
	wantsPDBs, eviction := false, false
	for _, p := range m.manifest.Plugins {
		wantsPDBs = wantsPDBs || p.Points.Has(abi.PointPreemption)
		eviction = eviction || p.Points&abi.PointsEviction != 0
	}
	minor := m.manifest.VersionMinor
	pods := snapshot.PodsModeFor(m.manifest.Flags, minor)
	if eviction {
		pods = snapshot.AllPods.ForMinor(minor) // eviction policies name pods by their index in the node's pods
	}
	c := &Client{module: m, inst: inst, pods: pods, wantsPDBs: wantsPDBs}
	c.enc.SetPeerMinor(minor) // pods in cycle, add_pod and remove_pod requests
	return c, nil
}

// Name is the module's name.
func (m *Pool) Name() string { return m.name }

// Manifest is the module's validated manifest.
func (m *Pool) Manifest() *abi.Manifest { return &m.manifest }

// Lost counts instances discarded after a trap, deadline or other failure.
func (m *Pool) Lost() int64 { return m.lost.Load() }

// Recycled counts instances Put replaced because their memory had grown
// past their mirror.
func (m *Pool) Recycled() int64 { return m.recycled.Load() }

// MemoryBytes is the linear memory of the pool's live instances, as of
// each one's last return to the pool (0 for native twins). It is what the
// pool adds to wasmsched_module_memory_bytes.
func (m *Pool) MemoryBytes() int64 { return m.memory.Load() }

// noteMemory brings the count of c's linear memory up to date; the pool
// calls it when c is made and each time it comes back, never while c is
// in use (its guest may be growing the memory).
func (m *Pool) noteMemory(c *Client) {
	lm, ok := c.inst.(LinearMemory)
	if !ok {
		return
	}
	size, _ := lm.MemoryBytes()
	if d := int64(size) - int64(c.memSize); d != 0 {
		c.memSize = size
		m.memory.Add(d)
		m.metrics.MemoryChanged(d)
	}
}

// closeInstance closes c's instance and takes it out of the counts.
func (m *Pool) closeInstance(ctx context.Context, c *Client) {
	c.inst.Close(ctx)
	m.metrics.InstanceClosed()
	if c.memSize != 0 {
		m.memory.Add(-int64(c.memSize))
		m.metrics.MemoryChanged(-int64(c.memSize))
		c.memSize = 0
	}
}

// Get checks out a client, making a new instance if the pool has room and
// none is idle, else waiting for one.
func (m *Pool) Get(ctx context.Context) (*Client, error) {
	select {
	case c := <-m.idle:
		return c, nil
	default:
	}
	select {
	case c := <-m.idle:
		return c, nil
	case m.slots <- struct{}{}:
		c, err := m.newClient(ctx)
		if err != nil {
			<-m.slots
			return nil, err
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (m *Pool) newClient(ctx context.Context) (*Client, error) {
	inst, err := m.backend.NewInstance(ctx)
	if err != nil {
		m.fault(err, moduleWide)
		return nil, fmt.Errorf("module %q: instantiate: %w", m.name, err)
	}
	v, err := inst.ABIVersion(ctx)
	if err != nil {
		m.fault(err, moduleWide)
	} else {
		err = checkVersion(v)
	}
	if err != nil {
		inst.Close(ctx)
		return nil, fmt.Errorf("module %q: %w", m.name, err)
	}
	c, err := m.initClient(ctx, inst)
	if err != nil {
		inst.Close(ctx)
		return nil, err
	}
	m.metrics.InstanceOpened()
	m.noteMemory(c)
	return c, nil
}

// Put returns a client to the pool; a broken one is closed and its place
// freed for a fresh instance.
//
// Put also replaces an instance whose memory has grown past its mirror:
// a guest that never collects garbage (the builtin default bundle is
// built with TinyGo's leaking allocator, which saves the per-call cost of
// a collector's bookkeeping) grows its memory by doubling it, and all it
// adds after its first full sync is garbage the Go heap holds (a Wasm
// memory is a Go byte slice) until the instance is closed, or the next
// doubling past the limit traps. So Put replaces it at its second doubling
// after the size it had when first returned (Client.outgrown says when).
// Replacing it between cycles costs one instantiation and one full sync,
// and loses nothing: the host holds the state a fresh instance mirrors. A
// guest known to collect its garbage (Config.Collects) is left alone:
// TinyGo's collector grows the heap when less than a third of it is free
// after a collection, so a guest whose first sync filled its memory to
// past two thirds doubles it once more, later, and replacing it then
// would only make its replacement sync and double again, round after
// round. A guest not known to collect that still grows is replaced like
// the leaking kind.
func (m *Pool) Put(ctx context.Context, c *Client) {
	if !c.broken {
		m.noteMemory(c)
	}
	switch {
	case c.broken:
		m.lost.Add(1)
	case !m.collects && c.outgrown():
		m.recycled.Add(1)
		m.metrics.InstanceRecycled()
	default:
		m.idle <- c
		return
	}
	m.closeInstance(ctx, c)
	<-m.slots
}

// Close closes the idle instances. The backend stays open: several
// modules (one per profile, each with its own args) share one compiled
// backend, and its owner closes it. Clients still checked out must not be
// used afterwards.
func (m *Pool) Close(ctx context.Context) {
	for {
		select {
		case c := <-m.idle:
			m.closeInstance(ctx, c)
		default:
			return
		}
	}
}

// fault counts a failed instance call that was a guest trap or a
// deadline (other failures are the host's refusals and are not counted);
// plugin is the plugin index, or moduleWide.
func (m *Pool) fault(err error, plugin int) {
	switch {
	case errors.Is(err, ErrDeadlineExceeded):
		m.metrics.DeadlineExceeded(m.pluginName(plugin))
	case errors.Is(err, ErrGuestTrap):
		m.metrics.Trap(m.pluginName(plugin))
	}
}

// pluginName names plugin index i, or "" for moduleWide.
func (m *Pool) pluginName(i int) string {
	if i >= 0 && i < len(m.manifest.Plugins) {
		return m.manifest.Plugins[i].Name
	}
	return ""
}

// call runs one ABI function and splits the reply header off. A guest
// error reply becomes a plain error; anything else that fails (the call
// itself, a malformed reply) is a broken-instance error. Every error is a
// *CallError naming the module and the plugin (an index, or moduleWide).
func (m *Pool) call(ctx context.Context, inst Instance, fn abi.Func, arg uint32, n int, plugin int) ([]byte, error) {
	reply, err := inst.Call(ctx, fn, arg, n)
	if err != nil {
		m.fault(err, plugin)
		return nil, &CallError{Module: m.name, Func: fn, Plugin: m.pluginName(plugin), Broken: true, Err: err}
	}
	if len(reply) == 0 {
		return nil, &CallError{Module: m.name, Func: fn, Plugin: m.pluginName(plugin), Broken: true, Err: errors.New("empty reply")}
	}
	switch reply[0] {
	case abi.ReplyOK:
		return reply[1:], nil
	case abi.ReplyError:
		d := abi.NewDecoder(reply[1:])
		msg := d.String()
		if d.Err() != nil {
			return nil, &CallError{Module: m.name, Func: fn, Plugin: m.pluginName(plugin), Broken: true, Err: errors.New("malformed error reply")}
		}
		return nil, &CallError{Module: m.name, Func: fn, Plugin: m.pluginName(plugin), Err: errors.New(errorReplyText(msg))}
	}
	return nil, &CallError{Module: m.name, Func: fn, Plugin: m.pluginName(plugin), Broken: true, Err: fmt.Errorf("reply header %d is neither OK nor error", reply[0])}
}

// TryGet checks out a client only if one is idle or the pool has room for
// a new instance; otherwise it returns nil at once. Preemption uses it to
// fan dry runs out over spare instances without waiting for busy ones.
func (m *Pool) TryGet(ctx context.Context) *Client {
	select {
	case c := <-m.idle:
		return c
	default:
	}
	select {
	case c := <-m.idle:
		return c
	case m.slots <- struct{}{}:
		c, err := m.newClient(ctx)
		if err != nil {
			<-m.slots
			return nil
		}
		return c
	default:
		return nil
	}
}

// errorReplyText is the message of an error reply, cleaned: the reply's
// header is what makes it an error, so one without printable text (none
// at all, or only control characters) still reads as one.
func errorReplyText(msg string) string {
	if t := Text(msg); t != "" {
		return t
	}
	return noErrorText
}
