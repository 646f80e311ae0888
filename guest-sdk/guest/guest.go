// Package guest is the wasmsched guest runtime: it implements the ABI (see
// package abi and docs/ABI.md) on top of the plugins a module registers.
// It keeps the node mirror, decodes the pod once per cycle, runs a plugin
// over a whole batch of nodes per host call, and encodes the replies.
//
// A Wasm module only registers its plugins:
//
//	func init() { guest.Register(nodeports.Registration, ...) }
//	func main() {}
//
// and this package's exports (built when GOARCH=wasm) do the rest. Natively,
// New returns the same runtime as a Go value: the host drives it through
// Input and Call exactly as it drives a Wasm instance through the exports,
// which is what makes a native twin.
package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Guest is one guest instance: registered plugins and their configured
// instances, and one struct per concern the calls need (the mirror, the
// cycle, the batch cache, the what-if view, the eviction view, the
// codec). The vpod and preemption state only some modules use is made on
// first use. Not safe for concurrent use; the host runs one call at a
// time per instance.
type Guest struct {
	regs    []plugin.Registration
	regErr  error // a registration mistake, reported by every call
	plugins []plugin.Plugin
	exts    []namedExt // the plugins with PreFilter extensions, told of what-if edits
	inited  bool

	mirror mirror // the nodes, namespaces and PDBs as synced (mirror.go)

	cycle cycle      // the pod being scheduled and its CycleState (cycle.go)
	batch batchCache // the nodes a plugin call runs over, and what its reply reuses (batch.go)

	view whatIfView // the cycle's what-if view (whatif.go)

	evict   evictionView // the eviction calls' observations and storage (eviction.go)
	vpod    *vpodRuntime // the vpod calls' state (vpod.go), made on first use
	victims *victimCall  // the preemption calls' storage (preemption.go), made on first use

	codec codec // the input buffer and the reply being encoded (codec.go)
}

// New returns a guest runtime for the given plugins. An empty, duplicate
// or factory-less registration is a bug in the module: every call then
// replies with an error saying so, and the host refuses the module at load.
func New(regs ...plugin.Registration) *Guest {
	g := &Guest{regs: regs}
	for i, r := range regs {
		dup := false
		for _, o := range regs[:i] {
			dup = dup || o.Name == r.Name
		}
		if r.Name == "" || dup || r.New == nil {
			g.regErr = newError("bad plugin registration \"" + r.Name + "\": empty name, duplicate name or no factory")
		}
	}
	return g
}

// Call runs ABI function fn with argument arg on the first n bytes of the
// input buffer and returns the reply. The reply is only valid until the
// next call.
func (g *Guest) Call(fn abi.Func, arg uint32, n int) (reply []byte) {
	g.codec.enc.Reset()
	g.codec.enc.U8(abi.ReplyOK)
	if n < 0 || n > len(g.codec.in) {
		return g.fail(newError("input length out of range"))
	}
	if g.regErr != nil {
		return g.fail(g.regErr)
	}
	in := g.codec.in[:n]
	var err error
	switch fn {
	case abi.FuncManifest:
		err = g.manifest()
	case abi.FuncInit:
		err = g.init(in)
	case abi.FuncSync:
		err = g.sync(in)
	case abi.FuncCycle:
		err = g.startCycle(in)
	case abi.FuncPreFilter, abi.FuncPreScore, abi.FuncFilter, abi.FuncScore:
		err = g.pluginCall(fn, arg, in)
	case abi.FuncPushState:
		err = g.pushState()
	case abi.FuncPopState:
		err = g.popState()
	case abi.FuncAddPod, abi.FuncRemovePod:
		err = g.changePod(arg, in, fn == abi.FuncAddPod)
	case abi.FuncEditView:
		err = g.editView(in)
	case abi.FuncSelectVictims, abi.FuncRankCandidates:
		err = g.preemptionCall(fn, arg, in)
	case abi.FuncObserve:
		err = g.observe(in)
	case abi.FuncEvictPods, abi.FuncThresholdMet, abi.FuncTopEvictionPods:
		err = g.evictionCall(fn, arg, in)
	case abi.FuncVPodPolicy, abi.FuncVPodTopology, abi.FuncVPodStep:
		err = g.vpodCall(fn, in)
	default:
		err = newError("unknown ABI function " + fn.String())
	}
	if err != nil {
		return g.fail(err)
	}
	return g.codec.enc.B
}

// Registered plugins, for the module's exports.
var registered []plugin.Registration

// Register adds plugins to the module; call it from an init function of
// the module's main package. Only the Wasm exports use this list; native
// twins call New with the registrations directly.
func Register(regs ...plugin.Registration) { registered = append(registered, regs...) }

// configure holds what the module's main package asked of its guest
// runtime besides plugins, applied when the exports build it. Function
// values, so that what no module asks for is not linked into it.
var configure []func(*Guest)

// LayOutNodeLists asks (*Guest).LayOutNodeLists of the module's guest
// runtime; call it from an init function of the module's main package,
// beside Register. The builtin default bundle does.
func LayOutNodeLists() { configure = append(configure, (*Guest).LayOutNodeLists) }

func (g *Guest) manifest() error {
	m := abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor}
	for _, r := range g.regs {
		p, err := r.New(nil, g.handle())
		if err != nil {
			return newError("plugin " + r.Name + " with default args: " + err.Error())
		}
		if r.WantsPods {
			m.Flags |= abi.ManifestWantsPods
		}
		if r.WantsAffinityPods {
			m.Flags |= abi.ManifestWantsAffinityPods
		}
		if isEvictionPolicy(p) {
			// Policies name pods by their index in the node's pods, and
			// only they get observations, so only their annotation keys
			// count.
			m.Flags |= abi.ManifestWantsPods
			m.AnnotationKeys = addAnnotationKeys(m.AnnotationKeys, r.AnnotationKeys)
		}
		m.Plugins = append(m.Plugins, abi.PluginInfo{Name: r.Name, Points: pointsOf(p)})
	}
	g.codec.enc.Manifest(&m)
	return nil
}

func pointsOf(p plugin.Plugin) abi.Point {
	var pts abi.Point
	if _, ok := p.(plugin.PreFilterPlugin); ok {
		pts |= abi.PointPreFilter
	}
	if _, ok := p.(plugin.FilterPlugin); ok {
		pts |= abi.PointFilter
	}
	if _, ok := p.(plugin.PreScorePlugin); ok {
		pts |= abi.PointPreScore
	}
	if _, ok := p.(plugin.PreemptionPlugin); ok {
		pts |= abi.PointPreemption
	}
	if _, ok := p.(plugin.PreFilterExtensions); ok {
		pts |= abi.PointPreFilterExtensions
	}
	if _, ok := p.(plugin.ThresholdPlugin); ok {
		pts |= abi.PointEvictionThreshold
	}
	if _, ok := p.(plugin.EvictPodsPlugin); ok {
		pts |= abi.PointEvictPods
	}
	if _, ok := p.(plugin.VPodPredicatePlugin); ok {
		pts |= abi.PointVPodPredicate
	}
	if _, ok := p.(plugin.VPodPriorityPlugin); ok {
		pts |= abi.PointVPodPriority
	}
	if _, ok := p.(plugin.ScorePlugin); ok {
		pts |= abi.PointScore
		if _, ok := p.(plugin.ScoreNormalizer); ok {
			pts |= abi.PointNormalizeScore
		}
	}
	return pts
}

func (g *Guest) init(in []byte) error {
	var req abi.InitRequest
	g.codec.dec.Reset(in, false)
	g.codec.dec.InitRequest(&req)
	if err := g.codec.dec.Err(); err != nil {
		return err
	}
	args := make([]*abi.Value, len(g.regs))
	for i := range req.Plugins {
		pa := &req.Plugins[i]
		found := false
		for j, r := range g.regs {
			if r.Name == pa.Name {
				args[j], found = &pa.Args, true
			}
		}
		if !found {
			return newError("args for unknown plugin " + pa.Name)
		}
	}
	plugins := make([]plugin.Plugin, len(g.regs))
	for i, r := range g.regs {
		p, err := r.New(args[i], g.handle())
		if err != nil {
			return newError("plugin " + r.Name + ": " + err.Error())
		}
		plugins[i] = p
	}
	g.plugins, g.inited = plugins, true
	g.exts = g.exts[:0]
	for _, p := range plugins {
		if ext, ok := p.(plugin.PreFilterExtensions); ok {
			g.exts = append(g.exts, namedExt{p.Name(), ext})
		}
	}
	return nil
}

// guestError is the runtime's error type: errors.New's, made by newError
// out of line so that its call sites do not each inline an allocation.
type guestError struct{ msg string }

func (e *guestError) Error() string { return e.msg }

//go:noinline
func newError(msg string) error { return &guestError{msg} }
