//go:build wasmtime

package wasmtime

import (
	"context"
	"fmt"
	"sync"
	"time"

	wt "github.com/bytecodealliance/wasmtime-go/v44"
	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/guestout"
	"github.com/wasmsched/wasmsched/host/internal/modshape"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// Backend is one compiled module on a Runtime's engine. It implements
// guest.Backend.
type Backend struct {
	name    string
	limits  wasm.Limits
	runtime *Runtime
	module  *wt.Module
	log     hclog.Logger
	output  guestout.Budget
	epochs  uint64 // epoch deadline of a call, in ticks past the current one
	fuel    uint64 // fuel of a call under InterruptFuel
	cached  bool

	mu     sync.Mutex
	closed bool
}

// Compile compiles a module (or takes its compiled code from the caches)
// and checks that it is a wasmsched reactor, with the same refusals and
// words as package wasm: the ABI exports with the right signatures, the
// memory exported, no imports beyond WASI and the wasmsched host module,
// no _start without _initialize, and what wasm.Instrument refuses. It
// runs no guest code; guest.Load does that.
func (r *Runtime) Compile(ctx context.Context, name string, bin []byte, lim wasm.Limits) (*Backend, error) {
	lim = withDefaults(lim)
	if err := r.acquire(); err != nil {
		return nil, fmt.Errorf("module %q: %w", name, err)
	}
	m, cached, err := r.compiledModule(name, bin)
	if err != nil {
		r.releaseBackend()
		return nil, fmt.Errorf("module %q: %w", name, err)
	}
	if err := checkShape(m); err != nil {
		r.releaseBackend()
		return nil, fmt.Errorf("module %q: %w", name, err)
	}
	b := &Backend{
		name:    name,
		limits:  lim,
		runtime: r,
		module:  m,
		log:     r.log.With("module", name),
		cached:  cached,
	}
	b.epochs, b.fuel = budget(lim.CallTimeout)
	return b, nil
}

// budget is how a call of the given timeout is bounded: the epochs it
// may run past the current one, and its fuel under InterruptFuel.
func budget(timeout time.Duration) (epochs, fuel uint64) {
	fuel = uint64(timeout.Seconds() * FuelPerSecond)
	if fuel == 0 {
		fuel = 1
	}
	return epochsFor(timeout), fuel
}

// withDefaults fills wasm.Limits' zero fields as package wasm does.
func withDefaults(l wasm.Limits) wasm.Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = wasm.DefaultMemoryBytes
	}
	if l.CallTimeout <= 0 {
		l.CallTimeout = wasm.DefaultCallTimeout
	}
	return l
}

// memoryCap is the memory limit in whole 64 KiB pages, as wazero counts it.
func memoryCap(l wasm.Limits) int64 {
	const page = 64 << 10
	p := (l.MemoryBytes + page - 1) / page
	if p > 65536 {
		p = 65536
	}
	return int64(p * page)
}

// checkShape describes the module to modshape.Check, which package wasm
// shares.
func checkShape(m *wt.Module) error {
	shape := modshape.Shape{Funcs: map[string]modshape.Signature{}, Memories: map[string]bool{}}
	for _, e := range m.Exports() {
		t := e.Type()
		if ft := t.FuncType(); ft != nil {
			shape.Funcs[e.Name()] = modshape.Signature{Params: valueTypes(ft.Params()), Results: valueTypes(ft.Results())}
		} else if t.MemoryType() != nil {
			shape.Memories[e.Name()] = true
		}
	}
	for _, imp := range m.Imports() {
		if imp.Type().FuncType() == nil {
			continue
		}
		name := ""
		if n := imp.Name(); n != nil {
			name = *n
		}
		shape.Imports = append(shape.Imports, modshape.Import{Module: imp.Module(), Name: name})
	}
	return modshape.Check(shape)
}

// valueTypes maps Wasmtime's value kinds (wasm.h's wasm_valkind_t) to
// their binary encodings.
func valueTypes(ts []*wt.ValType) []modshape.ValueType {
	out := make([]modshape.ValueType, len(ts))
	for i, t := range ts {
		switch k := t.Kind(); k {
		case wt.KindI32:
			out[i] = modshape.I32
		case wt.KindI64:
			out[i] = modshape.I64
		case wt.KindF32:
			out[i] = modshape.F32
		case wt.KindF64:
			out[i] = modshape.F64
		case wt.KindFuncref:
			out[i] = modshape.FuncRef
		case wt.KindExternref:
			out[i] = modshape.ExternRef
		case 4: // WASM_V128
			out[i] = modshape.V128
		}
	}
	return out
}

// Close releases the backend; its runtime's engine is freed with the last
// of them once the runtime is closed. Instances still open stay usable
// until closed.
func (b *Backend) Close(ctx context.Context) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.runtime.releaseBackend()
	return nil
}

// Limits are the module's effective limits.
func (b *Backend) Limits() wasm.Limits { return b.limits }

// FromCache tells whether the module's code came from a cache (memory or
// disk) rather than being compiled by this Compile.
func (b *Backend) FromCache() bool { return b.cached }

// NewInstance implements guest.Backend: a fresh instance in a store of
// its own (memory, tables and instances capped), with its _initialize run
// under the call deadline like any other call.
func (b *Backend) NewInstance(ctx context.Context) (guest.Instance, error) {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("module %q: backend closed", b.name)
	}
	inst := newInstance(b)
	store := wt.NewStoreWithData(b.runtime.engine, inst)
	inst.store = store
	// One memory of at most the cap, tables of at most MaxTableElements
	// (package wasm lowers tables' maxima to it), one instance.
	store.Limiter(memoryCap(b.limits), wasm.MaxTableElements, 1, wasm.MaxTables, 1)
	// Instantiation runs no guest code (start sections are refused), but
	// an epoch deadline of zero would stop the first call at once.
	store.SetEpochDeadline(b.epochs)
	wi, err := b.runtime.linker.Instantiate(store, b.module)
	if err != nil {
		inst.Close(ctx)
		return nil, &guestError{msg: guestout.FirstLine(err.Error()), err: err}
	}
	var mem *wt.Memory
	if ext := wi.GetExport(store, modshape.MemoryExport); ext != nil {
		mem = ext.Memory()
	}
	if mem == nil {
		inst.Close(ctx)
		return nil, fmt.Errorf("module %q does not export its memory as %q", b.name, modshape.MemoryExport)
	}
	var fns [4]*wt.Func
	for i, name := range [3]string{abi.ExportABIVersion, abi.ExportInput, abi.ExportCall} {
		if fns[i] = wi.GetFunc(store, name); fns[i] == nil {
			inst.Close(ctx)
			return nil, fmt.Errorf("module %q: export %s missing after instantiation", b.name, name)
		}
	}
	fns[fnInitialize] = wi.GetFunc(store, modshape.Initialize.Name)
	inst.mem, inst.fns = mem, fns
	if ext := wi.GetExport(store, wasm.GrowGlobal); ext != nil {
		inst.grow = ext.Global() // nil: the module never grows its memory
	}
	if err := inst.calls.bind(store, fns, mem); err != nil {
		inst.Close(ctx)
		return nil, fmt.Errorf("module %q: %w", b.name, err)
	}
	inst.epochs, inst.fuel = b.epochs, b.fuel
	inst.calls.arm(b.runtime.interrupt, b.epochs, b.fuel)
	if fns[fnInitialize] != nil {
		if err := inst.invoke(fnInitialize, modshape.Initialize.Name); err != nil {
			inst.Close(ctx)
			return nil, err
		}
	}
	return inst, nil
}
