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

// Guest is one guest instance: registered plugins, their configured
// instances, the mirror and the current cycle. Not safe for concurrent
// use; the host runs one call at a time per instance.
type Guest struct {
	regs    []plugin.Registration
	regErr  error // a registration mistake, reported by every call
	plugins []plugin.Plugin
	exts    []namedExt // the plugins with PreFilter extensions, told of what-if edits
	inited  bool

	mirror mirror // the nodes, namespaces and PDBs as synced (mirror.go)

	pod     abi.Pod
	havePod bool
	state   plugin.CycleState
	batch   []*plugin.NodeInfo
	// The last slot list resolved against the mirror alone (no what-if
	// view), and its nodes: the host sends the very same list to every
	// plugin of a stage (all Score plugins get the feasible nodes), so a
	// repeat is compared, eight bytes at a time, instead of resolved
	// again. A sync drops it.
	lastSlots []byte
	lastNodes []*plugin.NodeInfo
	slots     []uint32
	scores    []int64
	byStatus  map[*plugin.Status]uint16
	byText    map[string]uint16
	entries   []*plugin.Status

	current string // the plugin being run, for log lines

	overlay map[uint32]*viewNode // the cycle's what-if view (whatif.go)
	saved   []savedView
	level   uint64                 // the current view level's id
	levels  uint64                 // ids handed out so far
	views   []*viewNode            // free copies, reused
	maps    []map[uint32]*viewNode // free overlay maps, reused
	slab    abi.Slab               // the pods edits carried, until the cycle ends
	scratch abi.Pod                // a pod being added or removed

	// The eviction view (eviction.go): one observation per slot, dropped
	// with its node; and what an eviction call reuses per node.
	obs    []*abi.NodeObservation
	evNode plugin.EvictionNode
	noObs  abi.NodeObservation
	cutObs abi.NodeObservation
	picked []uint32

	vpod    *vpodRuntime // the vpod calls' state (vpod.go), made on first use
	victims *victimCall  // the preemption calls' storage (preemption.go), made on first use

	in  []byte
	enc abi.Encoder
	dec abi.Decoder
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

// Input returns a buffer of size bytes for the next call's input.
func (g *Guest) Input(size int) []byte {
	if cap(g.in) < size {
		g.in = make([]byte, size)
	}
	return g.in[:size]
}

// Call runs ABI function fn with argument arg on the first n bytes of the
// input buffer and returns the reply. The reply is only valid until the
// next call.
func (g *Guest) Call(fn abi.Func, arg uint32, n int) (reply []byte) {
	g.enc.Reset()
	g.enc.U8(abi.ReplyOK)
	if n < 0 || n > len(g.in) {
		return g.fail(newError("input length out of range"))
	}
	if g.regErr != nil {
		return g.fail(g.regErr)
	}
	in := g.in[:n]
	var err error
	switch fn {
	case abi.FuncManifest:
		err = g.manifest()
	case abi.FuncInit:
		err = g.init(in)
	case abi.FuncSync:
		err = g.sync(in)
	case abi.FuncCycle:
		err = g.cycle(in)
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
	return g.enc.B
}

func (g *Guest) fail(err error) []byte {
	g.enc.Reset()
	g.enc.U8(abi.ReplyError)
	g.enc.String(err.Error())
	return g.enc.B
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
	g.enc.Manifest(&m)
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
	g.dec.Reset(in, false)
	g.dec.InitRequest(&req)
	if err := g.dec.Err(); err != nil {
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

func (g *Guest) cycle(in []byte) error {
	g.dec.Reset(in, false)
	g.dec.Pod(&g.pod)
	if err := g.dec.Err(); err != nil {
		g.havePod = false
		return err
	}
	g.havePod = true
	g.mirror.numberPod(&g.pod)
	g.state.Reset()
	g.resetView()
	return nil
}

// cyclePlugin checks that a per-plugin call fn may run now (after init,
// inside a cycle) and returns the plugin it addresses.
func (g *Guest) cyclePlugin(fn abi.Func, arg uint32) (plugin.Plugin, error) {
	return g.pluginAt(fn, arg, true)
}

// pluginAt checks that a per-plugin call fn may run now (after init, and
// inside a cycle if inCycle) and returns the plugin it addresses.
func (g *Guest) pluginAt(fn abi.Func, arg uint32, inCycle bool) (plugin.Plugin, error) {
	if !g.inited {
		return nil, newError(fn.String() + " before init")
	}
	if inCycle && !g.havePod {
		return nil, newError(fn.String() + " outside a cycle")
	}
	if int(arg) >= len(g.plugins) {
		return nil, newError("plugin index out of range")
	}
	return g.plugins[arg], nil
}

func (g *Guest) pluginCall(fn abi.Func, arg uint32, in []byte) error {
	p, err := g.cyclePlugin(fn, arg)
	if err != nil {
		return err
	}
	g.current = p.Name()
	defer func() { g.current = "" }()
	var st *plugin.Status
	switch fn {
	case abi.FuncPreFilter:
		pf, ok := p.(plugin.PreFilterPlugin)
		if !ok {
			return newError(p.Name() + " is not a PreFilter plugin")
		}
		st = pf.PreFilter(&g.state, &g.pod)
	case abi.FuncPreScore:
		ps, ok := p.(plugin.PreScorePlugin)
		if !ok {
			return newError(p.Name() + " is not a PreScore plugin")
		}
		if err := g.loadBatch(in); err != nil {
			return err
		}
		st = ps.PreScore(&g.state, &g.pod, g.batch)
	case abi.FuncFilter:
		f, ok := p.(plugin.FilterPlugin)
		if !ok {
			return newError(p.Name() + " is not a Filter plugin")
		}
		if err := g.loadBatch(in); err != nil {
			return err
		}
		return g.filter(f)
	case abi.FuncScore:
		s, ok := p.(plugin.ScorePlugin)
		if !ok {
			return newError(p.Name() + " is not a Score plugin")
		}
		if err := g.loadBatch(in); err != nil {
			return err
		}
		return g.score(s)
	}
	reply := abi.PluginStatus{Code: st.Code(), Reasons: st.Reasons()}
	if fn == abi.FuncPreFilter {
		reply.Nodes, reply.Narrowed = st.Narrowed()
	}
	g.enc.PluginStatus(&reply)
	return nil
}

// loadBatch resolves a SlotList into mirror nodes, reading the fixed-width
// slots directly: this runs once per plugin call over thousands of nodes,
// so it must not allocate (beyond growing the batch once), and a list the
// same as the last one resolved outside a what-if view is copied from it.
func (g *Guest) loadBatch(in []byte) error {
	if len(in) < 4 {
		return errSlotList
	}
	n := int(le32(in))
	if n < 0 || n > (len(in)-4)/4 {
		return errSlotList
	}
	if cap(g.batch) < n {
		g.batch = make([]*plugin.NodeInfo, n)
	}
	g.batch = g.batch[:n]
	slots := in[4 : 4+4*n]
	if len(g.overlay) == 0 {
		if n > 0 && len(g.lastNodes) == n && sameBytes(slots, g.lastSlots) {
			copy(g.batch, g.lastNodes) // a copy: plugins may reorder the batch
			return nil
		}
	}
	if !resolveSlots(g.batch, g.mirror.nodes, slots) {
		g.batch = g.batch[:0]
		return errUnknownSlot
	}
	if len(g.overlay) == 0 {
		g.lastSlots = append(g.lastSlots[:0], slots...)
		g.lastNodes = append(g.lastNodes[:0], g.batch...)
		return nil
	}
	// Nodes changed in the what-if view replace their mirror copies.
	for i := range g.batch {
		if ov, ok := g.overlay[le32(slots[4*i:])]; ok {
			g.batch[i] = &ov.ni
		}
	}
	return nil
}

// resolveSlots fills batch with the nodes of the little-endian u32 slots,
// reporting false if one names no node. It is kept out of line and free of
// allocations, so that TinyGo's GC bookkeeping (a shadow-stack store for
// every pointer a function that may allocate loads) stays out of its loop.
//
//go:noinline
func resolveSlots(batch, nodes []*plugin.NodeInfo, slots []byte) bool {
	slots = slots[:4*len(batch)]
	for i := range batch {
		b := slots[4*i : 4*i+4]
		s := uint(b[0]) | uint(b[1])<<8 | uint(b[2])<<16 | uint(b[3])<<24
		if s >= uint(len(nodes)) {
			return false
		}
		ni := nodes[s]
		if ni == nil {
			return false
		}
		batch[i] = ni
	}
	return true
}

// sameBytes reports whether a and b hold the same bytes, comparing eight
// at a time (TinyGo's string compare goes byte by byte).
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	i := 0
	for ; i+8 <= len(a); i += 8 {
		if le64(a[i:i+8]) != le64(b[i:i+8]) {
			return false
		}
	}
	for ; i < len(a); i++ {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(le32(b)) | uint64(le32(b[4:]))<<32
}

func le32(b []byte) uint32 {
	_ = b[3]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

var (
	errSlotList    error = &guestError{"slot list truncated"}
	errUnknownSlot error = &guestError{"batch names unknown node slot"}
)

// guestError is the runtime's error type: errors.New's, made by newError
// out of line so that its call sites do not each inline an allocation.
type guestError struct{ msg string }

func (e *guestError) Error() string { return e.msg }

//go:noinline
func newError(msg string) error { return &guestError{msg} }

// maxEntries is the most distinct filter outcomes one reply can carry
// (u16 indexes, 0 meaning pass).
const maxEntries = 1<<16 - 1

func (g *Guest) filter(f plugin.FilterPlugin) error {
	if g.byStatus == nil {
		g.byStatus = map[*plugin.Status]uint16{}
		g.byText = map[string]uint16{}
	}
	clear(g.byStatus)
	clear(g.byText)
	g.entries = g.entries[:0]

	batch := g.batch
	g.enc.U32(uint32(len(batch)))
	at := len(g.enc.B)
	g.enc.B = grow(g.enc.B, 2*len(batch))
	out := g.enc.B[at : at+2*len(batch)]
	state, pod := &g.state, &g.pod
	// Plugins return shared statuses, so consecutive failing nodes mostly
	// return the very same one: remember the last to skip the maps.
	var last *plugin.Status
	var lastIx uint16
	for i, n := range batch {
		st := f.Filter(state, pod, n)
		if st == nil {
			continue // index 0, already zero
		}
		if st != last {
			ix, err := g.entryIndex(st)
			if err != nil {
				return err
			}
			last, lastIx = st, ix
		}
		if lastIx != 0 {
			o := out[2*i : 2*i+2]
			o[0] = byte(lastIx)
			o[1] = byte(lastIx >> 8)
		}
	}
	g.enc.Uvarint(uint64(len(g.entries)))
	for _, st := range g.entries {
		g.enc.U8(uint8(st.Code()))
		g.enc.Strings(st.Reasons())
	}
	return nil
}

// entryIndex returns the reply entry of a filter status: 0 for success,
// else the index of the entry with the same code and message, added if
// new.
func (g *Guest) entryIndex(st *plugin.Status) (uint16, error) {
	if st.IsSuccess() {
		return 0, nil
	}
	ix, ok := g.byStatus[st]
	if ok {
		return ix, nil
	}
	key := string(rune('0'+st.Code())) + "\x00" + st.Message()
	if ix, ok = g.byText[key]; !ok {
		if len(g.entries) == maxEntries {
			return 0, newError("more distinct filter reasons than one reply can carry")
		}
		g.entries = append(g.entries, st)
		ix = uint16(len(g.entries))
		g.byText[key] = ix
	}
	g.byStatus[st] = ix
	return ix, nil
}

// grow extends b by n zero bytes, reusing its capacity.
func grow(b []byte, n int) []byte {
	b = extend(b, n)
	clear(b[len(b)-n:])
	return b
}

// extend extends b by n bytes, reusing its capacity; the new bytes are
// left as they were.
func extend(b []byte, n int) []byte {
	l := len(b)
	if cap(b)-l < n {
		nb := make([]byte, l, 2*(l+n))
		copy(nb, b)
		b = nb
	}
	return b[:l+n]
}

func (g *Guest) score(s plugin.ScorePlugin) error {
	batch := g.batch
	if cap(g.scores) < len(batch) {
		g.scores = make([]int64, len(batch))
	}
	scores := g.scores[:len(batch)]
	g.scores = scores
	state, pod := &g.state, &g.pod
	for i, n := range batch {
		v, st := s.Score(state, pod, n)
		if st != nil && !st.IsSuccess() {
			return newError("score node " + n.Name() + ": " + st.Message())
		}
		scores[i] = v
	}
	if norm, ok := s.(plugin.ScoreNormalizer); ok {
		if st := norm.NormalizeScore(state, pod, scores); !st.IsSuccess() {
			return newError("normalize: " + st.Message())
		}
	}
	g.enc.U32(uint32(len(scores)))
	at := len(g.enc.B)
	g.enc.B = extend(g.enc.B, 8*len(scores))
	putScores(g.enc.B[at:], scores)
	return nil
}

// putScores writes scores as little-endian u64s into out, which holds
// exactly 8 bytes per score. Out of line and allocation-free, like
// resolveSlots.
//
//go:noinline
func putScores(out []byte, scores []int64) {
	out = out[:8*len(scores)]
	for i, v := range scores {
		o := out[8*i : 8*i+8]
		o[0] = byte(v)
		o[1] = byte(v >> 8)
		o[2] = byte(v >> 16)
		o[3] = byte(v >> 24)
		o[4] = byte(v >> 32)
		o[5] = byte(v >> 40)
		o[6] = byte(v >> 48)
		o[7] = byte(v >> 56)
	}
}
