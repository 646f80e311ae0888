package guest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// Client is one checked-out instance of a module with the typed calls of a
// scheduling cycle. It is not safe for concurrent use; return it with
// Pool.Put when done.
//
// Replies (FilterReply, scores) reuse the Client's buffers: they are valid
// until the next call on the same Client.
type Client struct {
	module *Pool
	inst   Instance
	pods   snapshot.PodsMode // which pods node records carry for this module
	// wantsPDBs: the module has a preemption plugin (ABI v1.1), so syncs
	// carry the PodDisruptionBudget table.
	wantsPDBs bool
	broken    bool
	// firstSize is the instance's memory size when first returned to the
	// pool (0 before; see Pool.Put).
	firstSize uint64
	// returns counts the instance's returns to the pool since firstSize
	// was set (see outgrown).
	returns int
	// memSize is the instance's memory size as the pool last counted it
	// (Pool.noteMemory).
	memSize uint64

	snap   *snapshot.Snapshot // the snapshot the mirror follows
	synced uint64             // its generation the mirror has reached
	// strs is how much of the snapshot's string table the guest has
	// (ABI v1.5 interned records).
	strs snapshot.StringsSent

	// The eviction view (ABI v1.2) the instance follows and the version
	// it has reached; a mirror reset drops it in the guest too.
	obs       *snapshot.Observations
	obsSynced uint64

	// The vpod state (ABI v1.3) this instance was sent: the policies it
	// has registered, by ID, and the topology generation it has.
	vpodPolicies map[uint32]vpodPolicy
	vpodTopo     uint64
	vpodTopoSent bool

	enc     abi.Encoder
	dec     abi.Decoder
	delta   snapshot.Delta
	filter  abi.FilterReply
	scores  []int64
	victims []abi.NodeVictims
	rank    []int
}

// Module is the module this client belongs to.
func (c *Client) Module() *Pool { return c.module }

// Sync brings the guest's mirror up to date with snap, sending only the
// nodes changed since the last sync with the same snapshot (all of them
// the first time, or when the snapshot is a different one).
func (c *Client) Sync(ctx context.Context, snap *snapshot.Snapshot) error {
	since := c.synced
	if c.snap != snap {
		since = 0
	}
	if since != 0 && since == snap.Generation() {
		return nil
	}
	snap.DeltaSince(since, &c.delta)
	if !c.wantsPDBs {
		c.delta.PDBsChanged, c.delta.PDBs = false, nil
	}
	c.enc.Reset()
	snapshot.EncodeSync(&c.enc, &c.delta, snap.NumNodes(), c.pods, &c.strs)
	if c.delta.Reset {
		c.obs, c.obsSynced = nil, 0 // the guest drops its observations with the mirror
	}
	if _, err := c.push(ctx, abi.FuncSync, c.enc.B); err != nil {
		c.snap, c.synced = nil, 0 // the mirror is in an unknown state
		c.obs, c.obsSynced = nil, 0
		c.strs = snapshot.StringsSent{}
		return err
	}
	c.snap, c.synced = snap, snap.Generation()
	return nil
}

// PushTimePerByte is how much time a push (Sync, Observe, VPodTopology)
// may take per byte it carries, on top of the module's call timeout. It
// is generous: the builtin bundles' TinyGo builds absorb a full sync at
// about 50 ns a byte and a first eviction view at up to 350 ns a byte on
// an idle 2-core machine (5000 nodes, 50 000 pods: 4.3 MB of mirror in
// about 200 ms, 0.7 MB of observations in 90 to 240 ms), so a push gets
// several times what it needs on a loaded machine. A guest that never
// returns from a push is still stopped: after the call timeout plus
// 1 s per MB pushed.
const PushTimePerByte = time.Microsecond

// PushAllowance is the time a push of n bytes gets beyond the module's
// call timeout.
func PushAllowance(n int) time.Duration { return time.Duration(n) * PushTimePerByte }

// push runs fn, a module-wide call that hands the guest state the host
// holds, under the call timeout plus PushAllowance of its input (see
// Pushable): the cost of mirroring the cluster into an instance is the
// host's, and must not cost a policy its answer. The policy calls that
// follow run under the call timeout alone.
func (c *Client) push(ctx context.Context, fn abi.Func, input []byte) ([]byte, error) {
	if p, ok := c.inst.(Pushable); ok {
		p.AllowPush(PushAllowance(len(input)))
		defer p.AllowPush(0)
	}
	return c.run(ctx, fn, moduleWide, input)
}

// StartCycle hands the guest the pod to schedule and resets its cycle state.
func (c *Client) StartCycle(ctx context.Context, pod *abi.Pod) error {
	c.enc.Reset()
	c.enc.CycleRequest(pod)
	_, err := c.run(ctx, abi.FuncCycle, moduleWide, c.enc.B)
	return err
}

// PushState saves the cycle's what-if view; PopState restores it.
func (c *Client) PushState(ctx context.Context) error {
	_, err := c.run(ctx, abi.FuncPushState, moduleWide, nil)
	return err
}

// PopState restores the view saved by the last PushState.
func (c *Client) PopState(ctx context.Context) error {
	_, err := c.run(ctx, abi.FuncPopState, moduleWide, nil)
	return err
}

// AddPod puts pod on the node in slot, in this cycle's view only.
func (c *Client) AddPod(ctx context.Context, slot uint32, pod *abi.Pod) error {
	c.enc.Reset()
	c.enc.Pod(pod)
	_, err := c.runArg(ctx, abi.FuncAddPod, slot, c.enc.B)
	return err
}

// RemovePod takes pod off the node in slot, in this cycle's view only.
func (c *Client) RemovePod(ctx context.Context, slot uint32, pod *abi.Pod) error {
	c.enc.Reset()
	c.enc.Pod(pod)
	_, err := c.runArg(ctx, abi.FuncRemovePod, slot, c.enc.B)
	return err
}

// runArg runs a module-wide function whose argument is not a plugin index.
func (c *Client) runArg(ctx context.Context, fn abi.Func, arg uint32, input []byte) ([]byte, error) {
	if c.broken {
		return nil, &CallError{Module: c.module.name, Func: fn, Broken: true, Err: errors.New("instance already lost")}
	}
	if len(input) > 0 {
		buf, err := c.inst.Input(ctx, len(input))
		if err != nil {
			c.broken = true
			c.module.fault(err, moduleWide)
			return nil, &CallError{Module: c.module.name, Func: fn, Broken: true, Err: err}
		}
		copy(buf, input)
	}
	body, err := c.module.call(ctx, c.inst, fn, arg, len(input), moduleWide)
	if err != nil {
		var ce *CallError
		if errors.As(err, &ce) {
			c.broken = c.broken || ce.Broken
		}
		return nil, err
	}
	return body, nil
}

// PreFilter runs a plugin's PreFilter for the current pod.
func (c *Client) PreFilter(ctx context.Context, plugin int) (abi.PluginStatus, error) {
	return c.status(ctx, abi.FuncPreFilter, plugin, nil)
}

// PreScore runs a plugin's PreScore over the feasible nodes.
func (c *Client) PreScore(ctx context.Context, plugin int, slots []uint32) (abi.PluginStatus, error) {
	return c.status(ctx, abi.FuncPreScore, plugin, slots)
}

func (c *Client) status(ctx context.Context, fn abi.Func, plugin int, slots []uint32) (abi.PluginStatus, error) {
	var st abi.PluginStatus
	var body []byte
	var err error
	if fn == abi.FuncPreFilter {
		body, err = c.run(ctx, fn, plugin, nil)
	} else {
		body, err = c.runSlots(ctx, fn, plugin, slots, 0)
	}
	if err != nil {
		return st, err
	}
	c.dec.Reset(body, false)
	c.dec.PluginStatus(&st)
	if err := c.replyErr(fn, plugin); err != nil {
		return st, err
	}
	guestTexts(st.Reasons, noReasonText)
	if err := checkStatusCode(fn, st.Code, st.Reasons); err != nil {
		return st, &CallError{Module: c.module.name, Func: fn, Plugin: c.pluginName(plugin), Err: err}
	}
	if st.Narrowed && (fn != abi.FuncPreFilter || st.Code != abi.Success) {
		err := fmt.Errorf("%w: only a PreFilter Success may name the nodes to filter (%s said %s with %d node names)",
			ErrInvalidReply, fn, st.Code, len(st.Nodes))
		return st, &CallError{Module: c.module.name, Func: fn, Plugin: c.pluginName(plugin), Err: err}
	}
	return st, nil
}

// ErrInvalidReply marks a reply that decoded but says something the ABI
// does not allow (a status code outside the function's set, a score out of
// range): an Error of the plugin, which its failurePolicy then handles.
var ErrInvalidReply = errors.New("invalid reply")

// ErrPluginError marks a plugin that answered with the Error status code.
var ErrPluginError = errors.New("plugin returned Error")

// validCodes are the status codes each function may return; any other is
// an invalid reply (an Error, never a rejection).
var validCodes = map[abi.Func][]abi.Code{
	abi.FuncPreFilter:     {abi.Success, abi.Error, abi.Unschedulable, abi.UnschedulableAndUnresolvable, abi.Skip},
	abi.FuncFilter:        {abi.Error, abi.Unschedulable, abi.UnschedulableAndUnresolvable},
	abi.FuncPreScore:      {abi.Success, abi.Error, abi.Skip},
	abi.FuncSelectVictims: {abi.Success, abi.Error, abi.Unschedulable, abi.UnschedulableAndUnresolvable},
}

// checkStatusCode refuses a code fn may not return, naming it, and turns
// the Error code into an error carrying the guest's reasons.
func checkStatusCode(fn abi.Func, code abi.Code, reasons []string) error {
	if code == abi.Error {
		if len(reasons) == 0 {
			return fmt.Errorf("%w (no reason given)", ErrPluginError)
		}
		return fmt.Errorf("%w: %s", ErrPluginError, strings.Join(reasons, ", "))
	}
	for _, ok := range validCodes[fn] {
		if code == ok {
			return nil
		}
	}
	return invalidCode(fn, code, reasons)
}

func invalidCode(fn abi.Func, code abi.Code, reasons []string) error {
	valid := make([]string, 0, 5)
	for _, c := range validCodes[fn] {
		valid = append(valid, fmt.Sprintf("%d %s", uint8(c), c))
	}
	msg := fmt.Sprintf("%v: status code %d is not one %s may return (%s)", ErrInvalidReply, uint8(code), fn, strings.Join(valid, ", "))
	if len(reasons) > 0 {
		msg += "; reasons: " + strings.Join(reasons, ", ")
	}
	return &wrapped{msg: msg, err: ErrInvalidReply}
}

// wrapped is an error with its own message that matches err in errors.Is.
type wrapped struct {
	msg string
	err error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.err }

// MaxBatch is the most nodes one Filter or Score call may carry: filter
// replies index their distinct outcomes with u16.
const MaxBatch = 1<<16 - 1

// Filter runs a plugin's Filter over the nodes in slots. Reply.Indexes[i]
// is 0 if slots[i] passed, else a 1-based index into Reply.Entries.
func (c *Client) Filter(ctx context.Context, plugin int, slots []uint32) (*abi.FilterReply, error) {
	body, err := c.runSlots(ctx, abi.FuncFilter, plugin, slots, 0)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	c.dec.FilterReply(&c.filter, len(slots))
	if err := c.replyErr(abi.FuncFilter, plugin); err != nil {
		return nil, err
	}
	if len(c.filter.Indexes) != len(slots) {
		return nil, c.brokenReply(abi.FuncFilter, plugin, fmt.Errorf("%d verdicts for %d nodes", len(c.filter.Indexes), len(slots)))
	}
	for i := range c.filter.Entries {
		e := &c.filter.Entries[i]
		guestTexts(e.Reasons, noReasonText)
		switch e.Code {
		case abi.Error, abi.Unschedulable, abi.UnschedulableAndUnresolvable:
		default:
			return nil, &CallError{Module: c.module.name, Func: abi.FuncFilter, Plugin: c.pluginName(plugin),
				Err: invalidCode(abi.FuncFilter, e.Code, e.Reasons)}
		}
	}
	return &c.filter, nil
}

// Score runs a plugin's Score (and NormalizeScore) over the nodes in slots
// and returns one score per slot, checked to lie in [0, abi.MaxScore].
func (c *Client) Score(ctx context.Context, plugin int, slots []uint32) ([]int64, error) {
	scores, _, err := c.score(ctx, plugin, slots, false)
	return scores, err
}

// RawScores are the scores before NormalizeScore a Score reply carried,
// left as the reply's little-endian u64s, one per slot: a cycle that
// records its decision keeps these of only a few nodes, so it decodes
// them for those alone rather than for every node scored.
type RawScores []byte

// Len is the number of scores.
func (r RawScores) Len() int { return len(r) / 8 }

// At is the i-th slot's score (any int64: a raw score has no bounds).
func (r RawScores) At(i int) int64 { return int64(binary.LittleEndian.Uint64(r[8*i : 8*i+8])) }

// ScoreWithRaw is Score for a cycle that records its decision: it also
// returns each slot's score before NormalizeScore, which a module of ABI
// v1.8 or later sends when asked (abi.ScoreRaw). raw is nil for an older
// module, which is never asked. Both are the client's (raw a view of the
// reply), valid until its next call.
func (c *Client) ScoreWithRaw(ctx context.Context, plugin int, slots []uint32) (scores []int64, raw RawScores, err error) {
	return c.score(ctx, plugin, slots, c.module.manifest.VersionMinor >= abi.RawScoresMinor)
}

func (c *Client) score(ctx context.Context, plugin int, slots []uint32, withRaw bool) ([]int64, RawScores, error) {
	var flags uint8
	if withRaw {
		flags = abi.ScoreRaw
	}
	body, err := c.runSlots(ctx, abi.FuncScore, plugin, slots, flags)
	if err != nil {
		return nil, nil, err
	}
	c.dec.Reset(body, false)
	c.scores = c.dec.ScoreReply(c.scores, len(slots))
	var raw RawScores
	if withRaw && c.dec.Err() == nil && len(c.scores) == len(slots) {
		if c.dec.Remaining()/8 < len(slots) {
			c.dec.Fail(&abi.DecodeError{What: "score reply lacks raw scores", Offset: c.dec.Offset()})
		} else {
			raw = c.dec.Raw(8 * len(slots))
		}
	}
	if err := c.replyErr(abi.FuncScore, plugin); err != nil {
		return nil, nil, err
	}
	if len(c.scores) != len(slots) {
		return nil, nil, c.brokenReply(abi.FuncScore, plugin, fmt.Errorf("%d scores for %d nodes", len(c.scores), len(slots)))
	}
	for i, s := range c.scores {
		if s < 0 || s > abi.MaxScore {
			return nil, nil, &CallError{Module: c.module.name, Func: abi.FuncScore, Plugin: c.pluginName(plugin),
				Err: fmt.Errorf("score %d for slot %d is outside [0, %d]", s, slots[i], abi.MaxScore)}
		}
	}
	return c.scores, raw, nil
}

// runSlots writes a slot list straight into the instance's input buffer.
// A non-zero flags is written after the slots (FuncScore's abi.ScoreRaw);
// zero writes nothing, so the request is the plain SlotList.
func (c *Client) runSlots(ctx context.Context, fn abi.Func, plugin int, slots []uint32, flags uint8) ([]byte, error) {
	if len(slots) > MaxBatch {
		return nil, fmt.Errorf("module %q: %s batch of %d nodes exceeds %d", c.module.name, fn, len(slots), MaxBatch)
	}
	n := 4 + 4*len(slots)
	if flags != 0 {
		n++
	}
	buf, err := c.inst.Input(ctx, n)
	if err != nil {
		c.broken = true
		c.module.fault(err, plugin)
		return nil, &CallError{Module: c.module.name, Func: fn, Plugin: c.pluginName(plugin), Broken: true, Err: err}
	}
	putU32(buf, uint32(len(slots)))
	for i, s := range slots {
		putU32(buf[4+4*i:], s)
	}
	if flags != 0 {
		buf[n-1] = flags
	}
	return c.call(ctx, fn, plugin, n)
}

func putU32(b []byte, v uint32) {
	_ = b[3]
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

func (c *Client) run(ctx context.Context, fn abi.Func, plugin int, input []byte) ([]byte, error) {
	if len(input) > 0 {
		buf, err := c.inst.Input(ctx, len(input))
		if err != nil {
			c.broken = true
			c.module.fault(err, plugin)
			return nil, &CallError{Module: c.module.name, Func: fn, Plugin: c.pluginName(plugin), Broken: true, Err: err}
		}
		copy(buf, input)
	}
	return c.call(ctx, fn, plugin, len(input))
}

func (c *Client) call(ctx context.Context, fn abi.Func, plugin int, n int) ([]byte, error) {
	if c.broken {
		return nil, &CallError{Module: c.module.name, Func: fn, Plugin: c.pluginName(plugin), Broken: true, Err: errors.New("instance already lost")}
	}
	arg := uint32(0)
	if plugin != moduleWide {
		if plugin < 0 || plugin >= len(c.module.manifest.Plugins) {
			return nil, fmt.Errorf("module %q: %s: plugin index %d out of range", c.module.name, fn, plugin)
		}
		arg = uint32(plugin)
	}
	body, err := c.module.call(ctx, c.inst, fn, arg, n, plugin)
	if err != nil {
		var ce *CallError
		if errors.As(err, &ce) && ce.Broken {
			c.broken = true
		}
		return nil, err
	}
	return body, nil
}

// replyErr is the error for a reply the decoder refused, which loses the
// instance: a list longer than the request allows (an *abi.LimitError)
// is an ErrInvalidReply, anything else a malformed reply.
func (c *Client) replyErr(fn abi.Func, plugin int) error {
	err := c.dec.Err()
	if err == nil {
		return nil
	}
	if le := (*abi.LimitError)(nil); errors.As(err, &le) {
		return c.brokenReply(fn, plugin, fmt.Errorf("%w: %w", ErrInvalidReply, err))
	}
	return c.brokenReply(fn, plugin, fmt.Errorf("malformed reply: %w", err))
}

func (c *Client) brokenReply(fn abi.Func, plugin int, err error) error {
	c.broken = true
	return &CallError{Module: c.module.name, Func: fn, Plugin: c.pluginName(plugin), Broken: true, Err: err}
}

// moduleWide stands for "no plugin" in calls that concern the whole module.
const moduleWide = -1

func (c *Client) pluginName(plugin int) string { return c.module.pluginName(plugin) }

// outgrown tells whether the instance's memory has grown past the point
// where Pool.Put replaces a guest that may never free: more than
// keptGrowth times its mark, the size it had when first returned (after
// the first cycle's full sync, so roughly the mirror and what decoding it
// left behind), or, for an instance that grew within its first
// quickGrowth returns, the size it grew to then. Without a collector
// everything past the mirror is garbage, and the Go heap holds the whole
// memory (twice over while the runtime copies it into a doubled buffer),
// so the pool bounds it by the mirror rather than by the limit. The bound
// is the second doubling past the mark, not the first: replacing costs a
// fresh instance and a full sync on the cycle's path, and at the first
// doubling a 5000-node SchedulingBasic replaced 30 instances in 10 000
// cycles (10% of its CPU per pod on wazero) against 2 at the second
// (docs/PERFORMANCE.md, "Memory"). An instance that doubles within its
// first quickGrowth returns needed the room for its mirror (the sync
// filled the memory it had): its mark moves to the new size, so a mirror
// that just fits is not resynced every few cycles. Past half the limit
// the next doubling would fail, so an instance there is replaced as soon
// as it has grown at all. Put asks on every return; the first time sets
// the size later returns are compared with.
func (c *Client) outgrown() bool {
	lm, ok := c.inst.(LinearMemory)
	if !ok {
		return false
	}
	size, limit := lm.MemoryBytes()
	if c.firstSize == 0 {
		c.firstSize = size
		return false
	}
	c.returns++
	if size <= c.firstSize {
		return false
	}
	if size > limit/2 {
		return true
	}
	if c.returns > quickGrowth {
		return size > c.firstSize*keptGrowth
	}
	// grew with its mirror: mark the new size
	c.firstSize, c.returns = size, 0
	return false
}

// keptGrowth is how many times its mark an instance's memory may reach
// and be kept (see outgrown): one doubling past the mark is kept, the
// second is replaced.
const keptGrowth = 2

// quickGrowth is how many returns after its first one an instance may
// double its memory in and be kept (see outgrown). A scheduling cycle
// leaves a few KiB behind in a guest without a collector, so an instance
// whose mirror left it room grows only after thousands of cycles; one
// that doubles within 64 had its memory filled by the mirror itself.
const quickGrowth = 64

// Broken reports whether the instance was lost; Pool.Put discards it.
func (c *Client) Broken() bool { return c.broken }
