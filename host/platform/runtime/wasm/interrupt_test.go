package wasm

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// suiteGuests holds the conformance suite's test guests
// (host/platform/runtime/backendtest/testdata), which the instrumentation must handle too.
const suiteGuests = "../backendtest/testdata"

func spinModule(t *testing.T) (api.Module, api.MutableGlobal) {
	t.Helper()
	src, err := os.ReadFile("testdata/spin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := Instrument(src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { rt.Close(ctx) })
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	mod, err := rt.Instantiate(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	flag, ok := mod.ExportedGlobal(InterruptGlobal).(api.MutableGlobal)
	if !ok {
		t.Fatal("no mutable interrupt global exported")
	}
	return mod, flag
}

func TestInstrumentedModuleBehavesTheSame(t *testing.T) {
	mod, flag := spinModule(t)
	res, err := mod.ExportedFunction("spin").Call(context.Background(), 1000)
	if err != nil || res[0] != 1007 {
		t.Fatalf("spin(1000) = %v, %v; want 1007 (the module's own global still works)", res, err)
	}
	if flag.Get() != 0 {
		t.Fatal("interrupt flag not 0 initially")
	}
}

func TestInterruptFlagStopsAnInfiniteLoop(t *testing.T) {
	mod, flag := spinModule(t)
	time.AfterFunc(50*time.Millisecond, func() { flag.Set(1) })
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(context.Background(), 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("an endless loop returned without error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("setting the interrupt flag did not stop the loop")
	}
}

func TestInstrumentRefuses(t *testing.T) {
	start, err := os.ReadFile("testdata/start.wasm")
	if err != nil {
		t.Fatal(err)
	}
	for name, bin := range map[string][]byte{
		"start section": start,
		"truncated":     start[:len(start)-2],
		"not wasm":      []byte("hello"),
	} {
		if _, err := Instrument(bin); !errors.Is(err, ErrUnsupportedModule) {
			t.Errorf("%s: err = %v, want ErrUnsupportedModule", name, err)
		}
	}
}

func TestInstrumentIsDeterministic(t *testing.T) {
	src, err := os.ReadFile("testdata/spin.wasm")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Instrument(src)
	b, _ := Instrument(src)
	if !bytes.Equal(a, b) {
		t.Fatal("two instrumentations of one module differ (the compilation cache would miss)")
	}
}

// FuzzInstrument checks both rewrites (Instrument and InlineFills) on
// arbitrary bytes: they never panic, accept the same modules, and
// whatever they accept and wazero could compile before, wazero can
// compile after.
func FuzzInstrument(f *testing.F) {
	// This package's guests and the conformance suite's.
	seeds, err := filepath.Glob("testdata/*.wasm")
	if err != nil {
		f.Fatal(err)
	}
	suite, err := filepath.Glob(filepath.Join(suiteGuests, "*.wasm"))
	if err != nil || len(suite) == 0 {
		f.Fatalf("no conformance guests in %s (%v)", suiteGuests, err)
	}
	for _, name := range append(seeds, suite...) {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(fillModule(fillCases()))
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := Instrument(b)
		inlined, errInline := InlineFills(b)
		if (err == nil) != (errInline == nil) {
			t.Fatalf("Instrument says %v, InlineFills %v", err, errInline)
		}
		if err != nil {
			return
		}
		orig, err := rt.CompileModule(ctx, b)
		if err != nil {
			return
		}
		orig.Close(ctx)
		for name, bin := range map[string][]byte{"instrumented": out, "inlined": inlined} {
			m, err := rt.CompileModule(ctx, bin)
			if err != nil {
				t.Fatalf("%s module no longer compiles: %v", name, err)
			}
			m.Close(ctx)
		}
	})
}

func TestLoopPassesThroughGoSoGarbageCollectionCanStopIt(t *testing.T) {
	mod, flag := spinModule(t)
	// A loop that never returns, and a GC forced while it runs: the GC's
	// stop-the-world must not wait forever for the guest, and the timer
	// that sets the flag must still run.
	done := make(chan error, 1)
	go func() {
		_, err := mod.ExportedFunction("spin").Call(context.Background(), 0)
		done <- err
	}()
	// Give the guest time to enter its loop. Not ordering that can be
	// signalled: spin reports no progress while it runs, and a GC that
	// came first would pass without proving anything, never fail.
	time.Sleep(20 * time.Millisecond)
	gcDone := make(chan struct{})
	go func() { runtime.GC(); close(gcDone) }()
	select {
	case <-gcDone:
	case <-time.After(5 * time.Second):
		t.Fatal("a GC could not stop the world while a guest loop ran")
	}
	flag.Set(1)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the loop returned without error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the interrupt flag did not stop the loop")
	}
}

func TestInstrumentedExitsKeepResultsAndStackBudget(t *testing.T) {
	src, err := os.ReadFile("testdata/exits.wasm")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := Instrument(src)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	mod, err := rt.Instantiate(ctx, bin)
	if err != nil {
		t.Fatal(err)
	}
	// Ten times more calls than the budget has frames: a way out that
	// did not give its frame back would exhaust it.
	n := uint32(10 * StackBudget / 2)
	var want uint32
	for i := uint32(0); i < n; i++ {
		want += 10 + i%4 + i + 7
	}
	res, err := mod.ExportedFunction("run").Call(ctx, uint64(n))
	if err != nil {
		t.Fatalf("run(%d): %v", n, err)
	}
	if got := uint32(res[0]); got != want {
		t.Fatalf("run(%d) = %d, want %d", n, got, want)
	}
}

// TestRewritesRecordMemoryGrow: both rewrites of a module that grows its
// memory export GrowGlobal, holding what its last memory.grow returned
// (-1 once refused); a module that never grows gets no such export, and
// a module may not export the name itself.
func TestRewritesRecordMemoryGrow(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(suiteGuests, "traps.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, rewrite := range map[string]func([]byte) ([]byte, error){"Instrument": Instrument, "InlineFills": InlineFills} {
		bin, err := rewrite(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().WithMemoryLimitPages(16))
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		mod, err := rt.InstantiateWithConfig(ctx, bin, wazero.NewModuleConfig().WithName(""))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		grow := mod.ExportedGlobal(GrowGlobal)
		if grow == nil {
			t.Fatalf("%s: no %s export", name, GrowGlobal)
		}
		last := func() int32 { return api.DecodeI32(grow.Get()) }
		if got := last(); got != 0 {
			t.Errorf("%s: %s = %d before any memory.grow, want 0", name, GrowGlobal, got)
		}
		// traps.wat's 6 grows by 65535 pages (refused); 5 grows a page
		// at a time until refused.
		for _, fn := range []uint64{6, 5} {
			if _, err := mod.ExportedFunction("wasmsched_call").Call(ctx, fn, 0, 0); err != nil {
				t.Fatalf("%s: call %d: %v", name, fn, err)
			}
			if got := last(); got != -1 {
				t.Errorf("%s: after call %d, %s = %d, want -1 (refused)", name, fn, GrowGlobal, got)
			}
		}
	}
	exits, err := os.ReadFile("testdata/exits.wasm")
	if err != nil {
		t.Fatal(err)
	}
	bin, err := Instrument(exits)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bin, []byte(GrowGlobal)) {
		t.Errorf("a module without memory.grow exports %s", GrowGlobal)
	}
	// (memory 1) (global i32 (i32.const 0)) (export "wasmsched_memory_grow" (global 0))
	own := []byte("\x00asm\x01\x00\x00\x00\x05\x03\x01\x00\x01\x06\x06\x01\x7f\x00\x41\x00\x0b\x07\x19\x01\x15" + GrowGlobal + "\x03\x00")
	for name, rewrite := range map[string]func([]byte) ([]byte, error){"Instrument": Instrument, "InlineFills": InlineFills} {
		if _, err := rewrite(own); !errors.Is(err, ErrUnsupportedModule) {
			t.Errorf("%s of a module exporting %s itself: err = %v, want ErrUnsupportedModule", name, GrowGlobal, err)
		}
	}
}
