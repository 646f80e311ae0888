package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/policy"
)

// Backend is one compiled module: a wazero runtime of its own (memory caps
// are per runtime in wazero), the compiled code, and the host functions.
// It implements policy.Backend.
type Backend struct {
	name      string
	limits    Limits
	runtime   wazero.Runtime
	compiled  wazero.CompiledModule
	log       hclog.Logger
	output    outputLimiter
	instances sync.Map // api.Module -> *instance, for the log import
}

// exportSig is the signature an ABI export must have.
type exportSig struct {
	params, results []api.ValueType
}

// memoryExport is the name the ABI requires for the guest's linear memory:
// the host reads inputs and replies there.
const memoryExport = "memory"

var requiredExports = map[string]exportSig{
	abi.ExportABIVersion: {nil, []api.ValueType{api.ValueTypeI32}},
	abi.ExportInput:      {[]api.ValueType{api.ValueTypeI32}, []api.ValueType{api.ValueTypeI32}},
	abi.ExportCall:       {[]api.ValueType{api.ValueTypeI32, api.ValueTypeI32, api.ValueTypeI32}, []api.ValueType{api.ValueTypeI64}},
}

// Compile compiles a module and checks that it is a wasmsched reactor:
// the ABI exports with the right signatures, no imports beyond WASI and
// the wasmsched host module, and no _start (a command module would exit
// after main). It does not run any guest code; policy.Load does that.
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
var ErrNotReactor = errors.New("module is a command (exports _start), not a reactor: build it with -buildmode=c-shared")

func checkShape(m wazero.CompiledModule) error {
	exports := m.ExportedFunctions()
	if _, ok := exports["_start"]; ok {
		if _, ok := exports["_initialize"]; !ok {
			return ErrNotReactor
		}
	}
	var problems []string
	if _, ok := m.ExportedMemories()[memoryExport]; !ok {
		problems = append(problems, fmt.Sprintf("its linear memory is not exported as %q", memoryExport))
	}
	for name, want := range requiredExports {
		def, ok := exports[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("missing export %s", name))
			continue
		}
		if !sameTypes(def.ParamTypes(), want.params) || !sameTypes(def.ResultTypes(), want.results) {
			problems = append(problems, fmt.Sprintf("export %s has signature %s, want %s",
				name, sigString(def.ParamTypes(), def.ResultTypes()), sigString(want.params, want.results)))
		}
	}
	for _, imp := range m.ImportedFunctions() {
		mod, fn, _ := imp.Import()
		if mod == wasi_snapshot_preview1.ModuleName {
			continue
		}
		if mod == abi.ImportModule && fn == abi.ImportLog {
			continue
		}
		problems = append(problems, fmt.Sprintf("imports %s.%s, which the host does not provide", mod, fn))
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return fmt.Errorf("not a wasmsched ABI v%d module: %s", abi.VersionMajor, strings.Join(problems, "; "))
	}
	return nil
}

func sameTypes(a, b []api.ValueType) bool {
	return bytes.Equal(a, b)
}

func sigString(params, results []api.ValueType) string {
	name := func(ts []api.ValueType) string {
		s := make([]string, len(ts))
		for i, t := range ts {
			s[i] = api.ValueTypeName(t)
		}
		return "(" + strings.Join(s, ", ") + ")"
	}
	return name(params) + " -> " + name(results)
}

// Close releases the runtime and everything instantiated in it.
func (b *Backend) Close(ctx context.Context) error { return b.runtime.Close(ctx) }

// Limits are the module's effective limits.
func (b *Backend) Limits() Limits { return b.limits }

// NewInstance implements policy.Backend: a fresh instance with its
// _initialize run (Go and TinyGo reactors set up their runtime there),
// under the call deadline like any other call.
func (b *Backend) NewInstance(ctx context.Context) (policy.Instance, error) {
	inst := &instance{backend: b, stack: make([]uint64, 3)}
	inst.out.backend = b
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // _initialize runs below, under a deadline
		WithStdout(streamWriter{inst, streamStdout}).
		WithStderr(streamWriter{inst, streamStderr})
	mod, err := b.runtime.InstantiateModule(ctx, b.compiled, cfg)
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

// invoke runs one guest function under the call deadline. Its errors are
// marked for the pool's counters: policy.ErrDeadlineExceeded when the
// deadline stopped the guest, policy.ErrGuestTrap for any other failure
// of guest code (a trap, a panic, an exit, the stack budget or
// out-of-memory).
func (i *instance) invoke(ctx context.Context, fn api.Function, what string) error {
	i.out.startCall()
	i.guard.arm(i.backend.limits.CallTimeout)
	err := fn.CallWithStack(ctx, i.stack)
	fired := i.guard.disarm()
	i.out.endCall()
	if err == nil {
		return nil
	}
	if fired {
		return policy.GuestFault(policy.ErrDeadlineExceeded,
			fmt.Errorf("%s: deadline of %s exceeded", what, i.backend.limits.CallTimeout))
	}
	return policy.GuestFault(policy.ErrGuestTrap, &guestError{msg: what + ": " + i.describe(err), err: err})
}

// describe says in one line why guest code failed, with what the guest
// printed on stderr before failing (a Go or TinyGo panic message) instead
// of wazero's stack trace.
func (i *instance) describe(err error) string {
	words, panicked := i.out.lastWords()
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		// Without WithCloseOnContextDone, wazero raises no exit of its
		// own: this is the guest's proc_exit (Go exits 2 on panic).
		switch {
		case panicked:
			return fmt.Sprintf("guest panicked: %s (exit code %d)", strings.TrimPrefix(words, "panic: "), exit.ExitCode())
		case words != "":
			return fmt.Sprintf("guest exited (code %d): %s", exit.ExitCode(), words)
		}
		return fmt.Sprintf("guest exited (code %d); a Go guest exits so on a panic or at its memory cap (%d bytes)",
			exit.ExitCode(), i.backend.limits.MemoryBytes)
	}
	trap := firstLine(err.Error())
	if i.guard.flag.Get() == interruptStack {
		return fmt.Sprintf("call stack exhausted: more than %d MiB of frames (runaway recursion?) (%s)",
			StackBudget*StackUnitBytes>>20, trap)
	}
	switch {
	case panicked:
		return fmt.Sprintf("guest panicked: %s (%s)", strings.TrimPrefix(words, "panic: "), trap)
	case words != "":
		return fmt.Sprintf("%s (guest stderr: %s)", trap, words)
	}
	return trap
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
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// deadline sets an instance's interrupt global when a call runs too long.
// One timer per instance, re-armed per call; the mutex makes sure a timer
// firing just as a call returns cannot leave the flag set for the next
// call. expired tells host functions the deadline has passed.
type deadline struct {
	flag    api.MutableGlobal
	mu      sync.Mutex
	timer   *time.Timer
	active  bool
	fired   bool
	expired atomic.Bool
}

func (d *deadline) arm(timeout time.Duration) {
	d.mu.Lock()
	d.active, d.fired = true, false
	d.mu.Unlock()
	if d.timer == nil {
		d.timer = time.AfterFunc(timeout, d.fire)
	} else {
		d.timer.Reset(timeout)
	}
}

func (d *deadline) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active {
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

func (i *instance) Close(ctx context.Context) error {
	i.backend.instances.Delete(i.mod)
	if i.guard.timer != nil {
		i.guard.timer.Stop()
	}
	return i.mod.Close(ctx)
}
