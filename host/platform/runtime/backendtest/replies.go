package backendtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// Programming calls of testdata/scripted.wat: wasmsched_call(scriptFn,
// op, n) with the op's payload as input.
const (
	scriptFn      abi.Func = 0xFFFFFFFF
	scriptRawOp            = 64  // + fn: fn returns a raw (pointer, length)
	scriptVersion          = 128 // wasmsched_abi_version's answer
	scriptInput            = 129 // wasmsched_input's buffer
	scriptMaxBody          = 2040
	// scriptedMemory is the scripted guest's memory size (4 pages).
	scriptedMemory = 4 << 16
)

// scripted is a backend of scripted.wasm whose instances are programmed,
// before the pool sees them, to reply to each function as the case says.
type scripted struct {
	guest.Backend
	version uint32
	replies map[abi.Func][]byte    // whole replies, header included
	raw     map[abi.Func][2]uint32 // (pointer, length) returned as is
	made    int                    // instances made
	last    guest.Instance
}

// newScripted wraps the suite's scripted guest, compiled once per Run. By
// default it speaks the host's ABI version and declares one plugin "P"
// with PreFilter, Filter, PreScore, Score and preemption.
func (s *suite) newScripted(t *testing.T) *scripted {
	b, _ := s.sharedCompile(t, "scripted", "scripted", func() []byte { return Guest(t, "scripted") }, wasm.Limits{})
	sc := &scripted{Backend: b, version: abi.PackVersion(abi.VersionMajor, abi.VersionMinor),
		replies: map[abi.Func][]byte{}, raw: map[abi.Func][2]uint32{}}
	sc.replies[abi.FuncManifest] = okReply(func(e *abi.Encoder) {
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor, Plugins: []abi.PluginInfo{
			{Name: "P", Points: abi.PointPreFilter | abi.PointFilter | abi.PointPreScore | abi.PointScore | abi.PointPreemption}}})
	})
	return sc
}

// Close leaves the shared backend open: the suite closes it.
func (sc *scripted) Close(context.Context) error { return nil }

// NewInstance implements guest.Backend.
func (sc *scripted) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := sc.Backend.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	if err := sc.programAll(ctx, inst); err != nil {
		inst.Close(ctx)
		return nil, err
	}
	sc.made++
	sc.last = inst
	return inst, nil
}

func (sc *scripted) programAll(ctx context.Context, inst guest.Instance) error {
	if err := program(ctx, inst, scriptVersion, u32s(sc.version)); err != nil {
		return err
	}
	for fn, r := range sc.replies {
		if len(r) > scriptMaxBody {
			return fmt.Errorf("scripted reply to %s: %d bytes, at most %d", fn, len(r), scriptMaxBody)
		}
		if err := program(ctx, inst, uint32(fn), r); err != nil {
			return err
		}
	}
	for fn, p := range sc.raw {
		if err := program(ctx, inst, scriptRawOp+uint32(fn), u32s(p[0], p[1])); err != nil {
			return err
		}
	}
	return nil
}

// program runs one programming call on inst.
func program(ctx context.Context, inst guest.Instance, op uint32, payload []byte) error {
	buf, err := inst.Input(ctx, len(payload))
	if err != nil {
		return fmt.Errorf("program the scripted guest: %w", err)
	}
	copy(buf, payload)
	if _, err := inst.Call(ctx, scriptFn, op, len(payload)); err != nil {
		return fmt.Errorf("program the scripted guest: %w", err)
	}
	return nil
}

func u32s(vs ...uint32) []byte {
	b := make([]byte, 0, 4*len(vs))
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

// okReply is an OK header and the body fill encodes.
func okReply(fill func(e *abi.Encoder)) []byte {
	var e abi.Encoder
	e.U8(abi.ReplyOK)
	fill(&e)
	return e.B
}

func statusReply(code abi.Code, reasons ...string) []byte {
	return okReply(func(e *abi.Encoder) { e.PluginStatus(&abi.PluginStatus{Code: code, Reasons: reasons}) })
}

func filterReply(r abi.FilterReply) []byte {
	return okReply(func(e *abi.Encoder) { e.FilterReply(&r) })
}

func scoreReply(scores ...int64) []byte {
	return okReply(func(e *abi.Encoder) {
		e.U32(uint32(len(scores)))
		for _, s := range scores {
			e.U64(uint64(s))
		}
	})
}

func errorReply(msg string) []byte {
	var e abi.Encoder
	e.U8(abi.ReplyError)
	e.String(msg)
	return e.B
}

// replyRow is a plugin call whose reply the scripted guest forges.
type replyRow struct {
	name   string
	script func(sc *scripted)
	// after runs once the module is loaded, on its one instance.
	after func(ctx context.Context, inst guest.Instance) error
	call  func(ctx context.Context, c *guest.Client) (any, error)
	want  []string // words of the error; none: the reply is accepted
	is    error    // the error's kind, if any
	// broken: the instance is lost (and replaced); else it stays usable.
	broken bool
	check  func(t *testing.T, result any) // of an accepted reply
}

// The calls of the reply rows, on plugin 0 and one node (slot 0).
func prefilter(ctx context.Context, c *guest.Client) (any, error) { return c.PreFilter(ctx, 0) }

func prescore(ctx context.Context, c *guest.Client) (any, error) {
	return c.PreScore(ctx, 0, []uint32{0})
}

func filter1(ctx context.Context, c *guest.Client) (any, error) {
	return c.Filter(ctx, 0, []uint32{0})
}

func score1(ctx context.Context, c *guest.Client) (any, error) {
	return c.Score(ctx, 0, []uint32{0})
}

// reply scripts fn's reply.
func reply(fn abi.Func, r []byte) func(sc *scripted) {
	return func(sc *scripted) { sc.replies[fn] = r }
}

// rawReply makes fn return (ptr, n) as is.
func rawReply(fn abi.Func, ptr, n uint32) func(sc *scripted) {
	return func(sc *scripted) { sc.raw[fn] = [2]uint32{ptr, n} }
}

// inputAt makes the guest's input buffer start at ptr.
func inputAt(ptr uint32) func(ctx context.Context, inst guest.Instance) error {
	return func(ctx context.Context, inst guest.Instance) error {
		return program(ctx, inst, scriptInput, u32s(ptr))
	}
}

var replyRows = []replyRow{
	// The plugin's errors: the instance stays.
	{name: "status code prefilter may not return", script: reply(abi.FuncPreFilter, statusReply(77)), call: prefilter,
		want: []string{"status code 77 is not one prefilter may return"}, is: guest.ErrInvalidReply},
	{name: "Error status without a reason", script: reply(abi.FuncPreFilter, statusReply(abi.Error)), call: prefilter,
		want: []string{"plugin returned Error (no reason given)"}, is: guest.ErrPluginError},
	{name: "Unschedulable from prefilter is accepted", script: reply(abi.FuncPreFilter, statusReply(abi.Unschedulable, "no")), call: prefilter},
	{name: "Unschedulable from prescore", script: reply(abi.FuncPreScore, statusReply(abi.Unschedulable)), call: prescore,
		want: []string{"status code 2 is not one prescore may return"}, is: guest.ErrInvalidReply},
	{name: "status code 4 from prescore, with its reasons", script: reply(abi.FuncPreScore, statusReply(4, "why")), call: prescore,
		want: []string{"status code 4 is not one prescore may return (0 Success, 1 Error, 5 Skip); reasons: why"}, is: guest.ErrInvalidReply},
	{name: "status code filter may not return", script: reply(abi.FuncFilter, filterReply(abi.FilterReply{Indexes: []uint16{1, 0},
		Entries: []abi.FilterEntry{{Code: 77, Reasons: []string{"forged"}}}})),
		call: func(ctx context.Context, c *guest.Client) (any, error) { return c.Filter(ctx, 0, []uint32{0, 1}) },
		want: []string{"status code 77 is not one filter may return"}, is: guest.ErrInvalidReply},
	{name: "Success entry in a filter reply", script: reply(abi.FuncFilter, filterReply(abi.FilterReply{Indexes: []uint16{1},
		Entries: []abi.FilterEntry{{Code: abi.Success}}})), call: filter1,
		want: []string{"status code 0 is not one filter may return"}, is: guest.ErrInvalidReply},
	{name: "Skip from select_victims", script: reply(abi.FuncSelectVictims, okReply(func(e *abi.Encoder) {
		e.SelectVictimsReply([]abi.NodeVictims{{Code: abi.Skip}})
	})),
		call: func(ctx context.Context, c *guest.Client) (any, error) {
			return c.SelectVictims(ctx, 0, []abi.NodeCandidates{{Slot: 1}})
		},
		want: []string{"node slot 1: invalid reply: status code 5"}, is: guest.ErrInvalidReply},
	{name: "score out of range", script: reply(abi.FuncScore, scoreReply(abi.MaxScore+1)), call: score1,
		want: []string{`score plugin "P": score 101 for slot 0 is outside [0, 100]`}},
	{name: "error reply is the plugin's error, cleaned", script: reply(abi.FuncFilter, errorReply("no\x1b[2J\nway")), call: filter1,
		want: []string{`module "scripted": filter plugin "P": no way`}},
	{name: "reasons are cleaned and bounded", script: reply(abi.FuncPreFilter,
		statusReply(abi.Unschedulable, "a\nb\x1b[2Jc", strings.Repeat("é", 1000))), call: prefilter,
		check: func(t *testing.T, r any) {
			st := r.(abi.PluginStatus)
			if st.Reasons[0] != "a bc" {
				t.Errorf("reason %q, want %q", st.Reasons[0], "a bc")
			}
			if len(st.Reasons[1]) > guest.MaxText || !strings.HasSuffix(st.Reasons[1], "…") {
				t.Errorf("a 2000-byte reason kept %d bytes", len(st.Reasons[1]))
			}
		}},

	// Replies that lose the instance.
	{name: "empty reply", script: rawReply(abi.FuncFilter, 0x100, 0), call: filter1,
		want: []string{`filter plugin "P": instance lost: empty reply`}, broken: true},
	{name: "unknown reply header", script: reply(abi.FuncFilter, []byte{7}), call: filter1,
		want: []string{"reply header 7 is neither OK nor error"}, broken: true},
	{name: "malformed error reply", script: reply(abi.FuncFilter, []byte{abi.ReplyError, 0xFF}), call: filter1,
		want: []string{"malformed error reply"}, broken: true},
	{name: "malformed reply body", script: reply(abi.FuncFilter, []byte{abi.ReplyOK, 0xFF}), call: filter1,
		want: []string{"malformed reply"}, broken: true},
	{name: "more verdicts than nodes", script: reply(abi.FuncFilter, filterReply(abi.FilterReply{Indexes: []uint16{0, 0}})), call: filter1,
		want: []string{"2 verdicts for 1 nodes"}, broken: true},
	{name: "more scores than nodes", script: reply(abi.FuncScore, scoreReply(1, 2, 3)), call: score1,
		want: []string{"3 scores for 1 nodes"}, broken: true},
	{name: "reply running past the end of memory", script: rawReply(abi.FuncFilter, scriptedMemory-4, 16), call: filter1,
		want: []string{"instance lost: ", "outside guest memory"}, broken: true},
	{name: "reply starting past the end of memory", script: rawReply(abi.FuncFilter, 0x00FFFFFF, 16), call: filter1,
		want: []string{"instance lost: ", "outside guest memory"}, broken: true},
	{name: "reply wrapping around 2^32", script: rawReply(abi.FuncFilter, 0xFFFFFFF0, 0x20), call: filter1,
		want: []string{"instance lost: ", "outside guest memory"}, broken: true},
	{name: "reply longer than the memory", script: rawReply(abi.FuncFilter, 0x100, 0xFFFFFF00), call: filter1,
		want: []string{"instance lost: ", "outside guest memory"}, broken: true},
	{name: "input buffer past the end of memory", after: inputAt(0xFFFFFF00), call: filter1,
		want: []string{`filter plugin "P": instance lost: `, "outside guest memory"}, broken: true},
	{name: "input buffer straddling the end of memory", after: inputAt(scriptedMemory - 4), call: filter1,
		want: []string{`filter plugin "P": instance lost: `, "outside guest memory"}, broken: true},
}

// loadRow is a module-wide reply that must make Load fail.
type loadRow struct {
	name   string
	script func(sc *scripted)
	want   []string
}

var loadRows = []loadRow{
	{"manifest outside guest memory", rawReply(abi.FuncManifest, 0x00FFFFFF, 16),
		[]string{"read manifest", "outside guest memory"}},
	{"malformed manifest", reply(abi.FuncManifest, []byte{abi.ReplyOK, 1, 0}), []string{"malformed manifest"}},
	{"manifest claiming 2^40 plugins", reply(abi.FuncManifest, okReply(func(e *abi.Encoder) {
		e.U16(abi.VersionMajor)
		e.U16(abi.VersionMinor)
		e.Uvarint(0)
		e.Uvarint(1 << 40)
	})), []string{"malformed manifest"}},
	{"manifest and export disagree on the version", func(sc *scripted) {
		sc.replies[abi.FuncManifest] = okReply(func(e *abi.Encoder) {
			e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor + 1,
				Plugins: []abi.PluginInfo{{Name: "P", Points: abi.PointFilter}}})
		})
	}, []string{fmt.Sprintf("manifest says ABI v1.%d but the module exports v1.%d", abi.VersionMinor+1, abi.VersionMinor)}},
	{"a newer minor version than the host's", func(sc *scripted) { sc.version = abi.PackVersion(abi.VersionMajor, abi.VersionMinor+1) },
		[]string{fmt.Sprintf("built for ABI v1.%d, but this host speaks ABI v1.%d", abi.VersionMinor+1, abi.VersionMinor)}},
	{"error reply to init", reply(abi.FuncInit, errorReply("bad args\x1b[2J")), []string{`module "scripted": init: bad args`}},
}

var replyCases = func() []wasmCase {
	var cs []wasmCase
	for _, r := range replyRows {
		cs = append(cs, wasmCase{"replies/" + r.name, func(t *testing.T, s *suite) { runReply(t, s, r) }})
	}
	for _, r := range loadRows {
		cs = append(cs, wasmCase{"replies/load fails: " + r.name, func(t *testing.T, s *suite) { runLoadReply(t, s, r) }})
	}
	return cs
}()

func runReply(t *testing.T, s *suite, r replyRow) {
	ctx := context.Background()
	sc := s.newScripted(t)
	if r.script != nil {
		r.script(sc)
	}
	m := load(t, sc, guest.PoolConfig{Name: "scripted", PoolSize: 1})
	c, err := m.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.after != nil {
		if err := r.after(ctx, sc.last); err != nil {
			t.Fatal(err)
		}
	}
	result, err := r.call(ctx, c)
	defer func() {
		if c != nil {
			m.Put(ctx, c)
		}
	}()
	if len(r.want) == 0 {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		if r.check != nil {
			r.check(t, result)
		}
		return
	}
	if err == nil {
		t.Fatalf("accepted %+v; want an error saying %q", result, r.want)
	}
	wantWords(t, err, append([]string{`module "scripted": `}, r.want...)...)
	if r.is != nil && !errors.Is(err, r.is) {
		t.Errorf("err = %q: not %v", err, r.is)
	}
	if broken := errors.Is(err, guest.ErrInstanceBroken); broken != r.broken || c.Broken() != r.broken {
		t.Fatalf("err = %q: instance lost = %v (client says %v), want %v", err, broken, c.Broken(), r.broken)
	}
	if !r.broken {
		return
	}
	// The pool discards the instance and makes a fresh one.
	m.Put(ctx, c)
	if m.Lost() != 1 {
		t.Errorf("%d instances lost, want 1", m.Lost())
	}
	c, err = m.Get(ctx)
	if err != nil {
		t.Fatalf("no fresh instance after the loss: %v", err)
	}
	if sc.made != 2 || c.Broken() {
		t.Errorf("after the loss: %d instances made (want 2), broken = %v", sc.made, c.Broken())
	}
}

func runLoadReply(t *testing.T, s *suite, r loadRow) {
	sc := s.newScripted(t)
	r.script(sc)
	var m *guest.Pool
	var err error
	alloc := allocatedDuring(func() { m, err = guest.Load(context.Background(), sc, guest.PoolConfig{Name: "scripted"}) })
	if err == nil {
		m.Close(context.Background())
		t.Fatalf("loaded; want it refused saying %q", r.want)
	}
	wantWords(t, err, append([]string{`module "scripted": `}, r.want...)...)
	if alloc > 16<<20 {
		t.Errorf("the host allocated %d MiB refusing the module", alloc>>20)
	}
}
