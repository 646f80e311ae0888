package wasm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
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
	name     string
	limits   Limits
	runtime  wazero.Runtime
	compiled wazero.CompiledModule
	log      hclog.Logger
}

// exportSig is the signature an ABI export must have.
type exportSig struct {
	params, results []api.ValueType
}

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
	// No WithCloseOnContextDone: deadlines come from the interrupt global
	// (see interrupt.go), which costs a load per loop iteration instead of
	// a trampoline call.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().
		WithCompilationCache(r.cache).
		WithMemoryLimitPages(lim.pages()))
	b := &Backend{name: name, limits: lim, runtime: rt, log: r.log.With("module", name)}
	compiled, err := rt.CompileModule(ctx, instrumented)
	if err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("module %q: compile: %w", name, err)
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
	out := &logWriter{log: b.log, stream: "stdout"}
	errw := &logWriter{log: b.log, stream: "stderr"}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStartFunctions(). // _initialize runs below, under a deadline
		WithStdout(out).
		WithStderr(errw)
	mod, err := b.runtime.InstantiateModule(ctx, b.compiled, cfg)
	if err != nil {
		return nil, b.describe(err, "instantiate")
	}
	flag, ok := mod.ExportedGlobal(InterruptGlobal).(api.MutableGlobal)
	if !ok {
		mod.Close(ctx)
		return nil, fmt.Errorf("module %q: interrupt global missing after instrumentation", b.name)
	}
	inst := &instance{
		backend: b,
		mod:     mod,
		mem:     mod.Memory(),
		version: mod.ExportedFunction(abi.ExportABIVersion),
		input:   mod.ExportedFunction(abi.ExportInput),
		call:    mod.ExportedFunction(abi.ExportCall),
		stack:   make([]uint64, 3),
		guard:   deadline{flag: flag},
	}
	if inst.mem == nil {
		mod.Close(ctx)
		return nil, fmt.Errorf("module %q exports no memory", b.name)
	}
	if initFn := mod.ExportedFunction("_initialize"); initFn != nil {
		if err := inst.invoke(ctx, initFn, "_initialize"); err != nil {
			mod.Close(ctx)
			return nil, err
		}
	}
	return inst, nil
}

// describe turns a wazero error into one that says what happened in words
// a policy author can act on.
func (b *Backend) describe(err error, what string) error {
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return fmt.Errorf("%s: deadline of %s exceeded", what, b.limits.CallTimeout)
		case sys.ExitCodeContextCanceled:
			return fmt.Errorf("%s: cancelled", what)
		}
		return fmt.Errorf("%s: guest exited with code %d (a Go or TinyGo guest exits like this on panic or out of memory; memory cap %d bytes)",
			what, exit.ExitCode(), b.limits.MemoryBytes)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// hostLog implements the wasmsched.log import.
func (b *Backend) hostLog(_ context.Context, mod api.Module, stack []uint64) {
	level, ptr, n := abi.LogLevel(api.DecodeU32(stack[0])), api.DecodeU32(stack[1]), api.DecodeU32(stack[2])
	const maxLine = 4096
	if n > maxLine {
		n = maxLine
	}
	msg, ok := mod.Memory().Read(ptr, n)
	if !ok {
		b.log.Warn("guest log call with out-of-range message", "ptr", ptr, "len", n)
		return
	}
	text := string(msg)
	if i := strings.IndexByte(text, abi.LogPluginSeparator); i > 0 {
		b.log.Log(policy.HclogLevel(level), text[i+1:], "plugin", text[:i])
		return
	}
	b.log.Log(policy.HclogLevel(level), text)
}

// logWriter turns a guest's stdout/stderr into log lines.
type logWriter struct {
	log    hclog.Logger
	stream string
	buf    []byte
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log.Info(string(w.buf[:i]), "stream", w.stream)
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 4096 {
		w.log.Info(string(w.buf), "stream", w.stream)
		w.buf = w.buf[:0]
	}
	return len(p), nil
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
}

// invoke runs one guest function under the call deadline. Its errors are
// marked for the pool's counters: policy.ErrDeadlineExceeded when the
// deadline stopped the guest, policy.ErrGuestTrap for any other failure
// of guest code (a trap, a panic or out-of-memory exit); a cancelled
// context is neither.
func (i *instance) invoke(ctx context.Context, fn api.Function, what string) error {
	i.guard.arm(i.backend.limits.CallTimeout)
	err := fn.CallWithStack(ctx, i.stack)
	if fired := i.guard.disarm(); fired && err != nil {
		return policy.GuestFault(policy.ErrDeadlineExceeded,
			fmt.Errorf("%s: deadline of %s exceeded", what, i.backend.limits.CallTimeout))
	}
	if err == nil {
		return nil
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return policy.GuestFault(policy.ErrDeadlineExceeded, i.backend.describe(err, what))
		case sys.ExitCodeContextCanceled:
			return i.backend.describe(err, what)
		}
	}
	return policy.GuestFault(policy.ErrGuestTrap, i.backend.describe(err, what))
}

// deadline sets an instance's interrupt global when a call runs too long.
// One timer per instance, re-armed per call; the mutex makes sure a timer
// firing just as a call returns cannot leave the flag set for the next
// call.
type deadline struct {
	flag   api.MutableGlobal
	mu     sync.Mutex
	timer  *time.Timer
	active bool
	fired  bool
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
		d.flag.Set(1)
		d.fired = true
	}
}

// disarm stops the timer and reports whether it fired during the call.
func (d *deadline) disarm() bool {
	d.timer.Stop()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active = false
	if d.fired {
		d.flag.Set(0)
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

func (i *instance) Close(ctx context.Context) error { return i.mod.Close(ctx) }
