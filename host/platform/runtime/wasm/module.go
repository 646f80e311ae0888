package wasm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/guestout"
	"github.com/wasmsched/wasmsched/host/internal/modshape"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// Backend is one compiled module: a wazero runtime of its own (memory caps
// are per runtime in wazero), the compiled code, and the host functions.
// It implements guest.Backend.
type Backend struct {
	name      string
	limits    Limits
	runtime   wazero.Runtime
	compiled  wazero.CompiledModule
	log       hclog.Logger
	output    guestout.Budget
	instances sync.Map // api.Module -> *instance, for the log import
}

// memoryExport is the name the ABI requires for the guest's linear memory:
// the host reads inputs and replies there.
const memoryExport = modshape.MemoryExport

// Compile compiles a module and checks that it is a wasmsched reactor:
// the ABI exports with the right signatures, no imports beyond WASI and
// the wasmsched host module, and no _start (a command module would exit
// after main). It does not run any guest code; guest.Load does that.
func (r *Runtime) Compile(ctx context.Context, name string, wasm []byte, lim Limits) (*Backend, error) {
	lim = lim.withDefaults()
	instrumented, err := Instrument(wasm)
	if err != nil {
		return nil, fmt.Errorf("module %q: %w", name, err)
	}
	cache, cacheDir, digest, seal := r.compilationCache(name, instrumented)
	// No WithCloseOnContextDone: deadlines come from the interrupt global
	// (see interrupt.go), which costs a load per loop iteration instead of
	// a trampoline call.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(cache).
		WithMemoryLimitPages(lim.pages()))
	b := &Backend{name: name, limits: lim, runtime: rt, log: r.log.With("module", name)}
	compiled, err := rt.CompileModule(ctx, instrumented)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("module %q: compile: %w", name, err)
	}
	if seal {
		r.sealCache(name, cacheDir, digest)
	}
	b.compiled = compiled
	if err := checkShape(compiled); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("module %q: %w", name, err)
	}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("module %q: WASI: %w", name, err)
	}
	if _, err := rt.NewHostModuleBuilder(abi.ImportModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(b.hostLog),
		[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, nil).Export(abi.ImportLog).
		Instantiate(ctx); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("module %q: host functions: %w", name, err)
	}
	return b, nil
}

// ErrNotReactor is wrapped when a module is built as a command.
var ErrNotReactor = modshape.ErrNotReactor

// checkShape describes the compiled module to modshape.Check, which the
// wasmtime backend shares.
func checkShape(m wazero.CompiledModule) error {
	shape := modshape.Shape{Funcs: map[string]modshape.Signature{}, Memories: map[string]bool{}}
	for name, def := range m.ExportedFunctions() {
		shape.Funcs[name] = modshape.Signature{Params: valueTypes(def.ParamTypes()), Results: valueTypes(def.ResultTypes())}
	}
	for name := range m.ExportedMemories() {
		shape.Memories[name] = true
	}
	for _, imp := range m.ImportedFunctions() {
		mod, fn, _ := imp.Import()
		shape.Imports = append(shape.Imports, modshape.Import{Module: mod, Name: fn})
	}
	return modshape.Check(shape)
}

func valueTypes(ts []api.ValueType) []modshape.ValueType {
	out := make([]modshape.ValueType, len(ts))
	for i, t := range ts {
		out[i] = modshape.ValueType(t)
	}
	return out
}

// Close releases the runtime and everything instantiated in it.
func (b *Backend) Close(ctx context.Context) error { return b.runtime.Close(ctx) }

// Limits are the module's effective limits.
func (b *Backend) Limits() Limits { return b.limits }

// NewInstance implements guest.Backend: a fresh instance with its
// _initialize run (Go and TinyGo reactors set up their runtime there),
// under the call deadline like any other call.
func (b *Backend) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst := &instance{backend: b, stack: make([]uint64, 3)}
	inst.out.backend = b
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // _initialize runs below, under a deadline
		WithStdout(streamWriter{inst, streamStdout}).
		WithStderr(streamWriter{inst, streamStderr})
	// Growing the memory is the host's work: the deadline is held while
	// it allocates and copies (growthMemory).
	mod, err := b.runtime.InstantiateModule(experimental.WithMemoryAllocator(ctx, newGrowthAllocator(&inst.guard)), b.compiled, cfg)
	if err != nil {
		return nil, &guestError{msg: firstLine(err.Error()), err: err}
	}
	flag, ok := mod.ExportedGlobal(InterruptGlobal).(api.MutableGlobal)
	if !ok {
		mod.Close(ctx)
		return nil, fmt.Errorf("module %q: interrupt global missing after instrumentation", b.name)
	}
	inst.mod = mod
	inst.mem = mod.ExportedMemory(memoryExport)
	inst.version = mod.ExportedFunction(abi.ExportABIVersion)
	inst.input = mod.ExportedFunction(abi.ExportInput)
	inst.call = mod.ExportedFunction(abi.ExportCall)
	inst.guard.flag = flag
	inst.grow = mod.ExportedGlobal(GrowGlobal) // nil: the module never grows its memory
	if inst.mem == nil {
		mod.Close(ctx)
		return nil, fmt.Errorf("module %q does not export its memory as %q", b.name, memoryExport)
	}
	b.instances.Store(mod, inst)
	if initFn := mod.ExportedFunction("_initialize"); initFn != nil {
		if err := inst.invoke(ctx, initFn, "_initialize"); err != nil {
			inst.Close(ctx)
			return nil, err
		}
	}
	return inst, nil
}

// hostLog implements the wasmsched.log import: the message goes through
// the calling instance's output bounds.
func (b *Backend) hostLog(_ context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := abi.LogLevel(api.DecodeU32(stack[0])), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	v, ok := b.instances.Load(mod)
	if !ok {
		return
	}
	inst := v.(*instance)
	inst.abortIfExpired()
	if n > MaxOutputLine+1 {
		n = MaxOutputLine + 1 // one more, so the cut shows
	}
	msg, ok := mod.Memory().Read(ptr, n)
	if !ok {
		inst.out.emit(hclog.Warn, "guest log call with out-of-range message", "ptr", ptr, "len", n)
		return
	}
	inst.out.log(level, msg)
}

// instance is one wazero module instance.
type instance struct {
	backend *Backend
	mod     api.Module
	mem     api.Memory
	version api.Function
	input   api.Function
	call    api.Function
	stack   []uint64
	guard   deadline
	out     output
	// grow is the module's record of its last memory.grow (GrowGlobal);
	// nil when the module has no memory.grow.
	grow api.Global
	// push is the time calls get on top of the call timeout while the
	// host pushes state into the guest (guest.Pushable).
	push time.Duration
}

// AllowPush implements guest.Pushable: the calls that follow, until
// AllowPush(0), run under the call timeout plus extra.
func (i *instance) AllowPush(extra time.Duration) {
	if extra < 0 {
		extra = 0
	}
	i.push = extra
}

// errCallAborted is the panic a host function raises to end a call whose
// deadline has passed; wazero recovers it and fails the call (as it does
// for WASI's proc_exit), and invoke reports the deadline.
var errCallAborted = errors.New("call aborted by the host: deadline passed")

// abortIfExpired ends the current call from inside a host function (a
// guest's write or log) once its deadline has passed, so a guest calling
// the host in a loop is stopped at its next call, not at its next safe
// point.
func (i *instance) abortIfExpired() {
	if i.guard.expired.Load() {
		panic(errCallAborted)
	}
}

// invoke runs one guest function under the call deadline (lengthened
// while the host pushes state, see AllowPush). Its errors are
// marked for the pool's counters: guest.ErrDeadlineExceeded when the
// deadline stopped the guest, guest.ErrGuestTrap for any other failure
// of guest code (a trap, a panic, an exit, the stack budget or
// out-of-memory).
func (i *instance) invoke(ctx context.Context, fn api.Function, what string) error {
	i.out.startCall()
	i.guard.arm(i.backend.limits.CallTimeout + i.push)
	err := fn.CallWithStack(ctx, i.stack)
	fired := i.guard.disarm()
	i.out.endCall()
	if err == nil {
		return nil
	}
	if fired {
		return guest.DeadlineExceeded(what, i.backend.limits.CallTimeout, i.push)
	}
	return guest.Fault(guest.ErrGuestTrap, &guestError{msg: what + ": " + i.describe(err), err: err})
}

// describe says in one line why guest code failed, with what the guest
// printed on stderr before failing (a Go or TinyGo panic message) instead
// of wazero's stack trace.
func (i *instance) describe(err error) string {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		// Without WithCloseOnContextDone, wazero raises no exit of its
		// own: this is the guest's proc_exit (Go exits 2 on panic).
		return i.out.g.DescribeExit(exit.ExitCode(), i.memoryState())
	}
	trap := firstLine(err.Error())
	if i.guard.flag.Get() == interruptStack {
		return fmt.Sprintf("call stack exhausted: more than %d MiB of frames (runaway recursion?) (%s)",
			StackBudget*StackUnitBytes>>20, trap)
	}
	return i.out.g.DescribeTrap(trap, guestout.TrapSite(err.Error()), i.memoryState())
}

// memoryState is the guest's memory after a failed call, for telling one that
// ran out of it (guestout.OutOfMemory).
func (i *instance) memoryState() guestout.Memory {
	size, limit := i.MemoryBytes()
	return guestout.Memory{Size: size, Limit: limit,
		GrowRefused: i.grow != nil && api.DecodeI32(i.grow.Get()) == -1}
}

// guestError is a failure of guest code, described in one line; it wraps
// wazero's error (whose text carries a multi-line stack trace).
type guestError struct {
	msg string
	err error
}

func (e *guestError) Error() string { return e.msg }
func (e *guestError) Unwrap() error { return e.err }

// firstLine cuts s at its first newline.
func firstLine(s string) string { return guestout.FirstLine(s) }

// deadline sets an instance's interrupt global when a call runs too long.
// One timer per instance, re-armed per call; the mutex makes sure a timer
// firing just as a call returns cannot leave the flag set for the next
// call. expired tells host functions the deadline has passed.
//
// A deadline can be held while the host works on the guest's behalf
// (growing its memory): the time until it is due stops running, and a
// timer firing meanwhile is ignored; resume starts it again with what
// was left.
type deadline struct {
	flag    api.MutableGlobal
	mu      sync.Mutex
	timer   *time.Timer
	active  bool
	fired   bool
	expired atomic.Bool
	// due is when the armed deadline passes; while held, left is what
	// remained of it when hold was called.
	due  time.Time
	held bool
	left time.Duration
}

func (d *deadline) arm(timeout time.Duration) {
	d.mu.Lock()
	d.active, d.fired, d.held = true, false, false
	d.due = time.Now().Add(timeout)
	d.mu.Unlock()
	if d.timer == nil {
		d.timer = time.AfterFunc(timeout, d.fire)
	} else {
		d.timer.Reset(timeout)
	}
}

// hold stops the armed deadline's clock (nothing to do if none is armed,
// it already fired, or it is held).
func (d *deadline) hold() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.active || d.fired || d.held {
		return
	}
	d.timer.Stop()
	d.held, d.left = true, time.Until(d.due)
}

// resume restarts a held deadline with the time it had left; one whose
// time had already run out when it was held fires at once.
func (d *deadline) resume() {
	d.mu.Lock()
	if !d.held {
		d.mu.Unlock()
		return
	}
	d.held = false
	left := d.left
	d.due = time.Now().Add(left)
	d.mu.Unlock()
	if left <= 0 {
		d.fire()
		return
	}
	d.timer.Reset(left)
}

func (d *deadline) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active && !d.held {
		d.flag.Set(interruptDeadline)
		d.fired = true
		d.expired.Store(true)
	}
}

// disarm stops the timer and reports whether it fired during the call.
func (d *deadline) disarm() bool {
	d.timer.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active = false
	if d.fired {
		d.flag.Set(interruptNone)
		d.expired.Store(false)
	}
	return d.fired
}

func (i *instance) ABIVersion(ctx context.Context) (uint32, error) {
	if err := i.invoke(ctx, i.version, abi.ExportABIVersion); err != nil {
		return 0, err
	}
	return api.DecodeU32(i.stack[0]), nil
}

func (i *instance) Input(ctx context.Context, n int) ([]byte, error) {
	if n < 0 || uint64(n) > uint64(i.backend.limits.MemoryBytes) {
		return nil, fmt.Errorf("input of %d bytes exceeds the module's memory cap", n)
	}
	i.stack[0] = api.EncodeU32(uint32(n))
	if err := i.invoke(ctx, i.input, abi.ExportInput); err != nil {
		return nil, err
	}
	ptr := api.DecodeU32(i.stack[0])
	buf, ok := i.mem.Read(ptr, uint32(n))
	if !ok {
		return nil, fmt.Errorf("%s returned a buffer [%d, +%d) outside guest memory", abi.ExportInput, ptr, n)
	}
	return buf, nil
}

func (i *instance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	i.stack[0], i.stack[1], i.stack[2] = api.EncodeU32(uint32(fn)), api.EncodeU32(arg), api.EncodeU32(uint32(n))
	if err := i.invoke(ctx, i.call, abi.ExportCall); err != nil {
		return nil, err
	}
	packed := i.stack[0]
	ptr, size := uint32(packed>>32), uint32(packed)
	reply, ok := i.mem.Read(ptr, size)
	if !ok {
		return nil, fmt.Errorf("reply [%d, +%d) outside guest memory", ptr, size)
	}
	return reply, nil
}

// MemoryBytes implements guest.LinearMemory: the guest memory's size
// now and the most it may grow to.
func (i *instance) MemoryBytes() (size, limit uint64) {
	return uint64(i.mem.Size()), uint64(i.backend.limits.pages()) * wasmPageSize
}

func (i *instance) Close(ctx context.Context) error {
	i.backend.instances.Delete(i.mod)
	if i.guard.timer != nil {
		i.guard.timer.Stop()
	}
	return i.mod.Close(ctx)
}
