package wasm_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/wasm"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// The hostile guest's misbehaviours (see testdata/hostile.wat).
const (
	hostileFib       abi.Func = 1
	hostileDeep      abi.Func = 2
	hostileBigFrames abi.Func = 3
	hostileFill      abi.Func = 4
	hostileCopy      abi.Func = 5
	hostileWrite     abi.Func = 6
	hostileLog       abi.Func = 7
	hostileTable     abi.Func = 8
	hostileExit      abi.Func = 9
	hostilePanic     abi.Func = 10
	hostileLongLine  abi.Func = 11
	hostileManyLines abi.Func = 12
)

// The call-graph guest's misbehaviours (see testdata/callgraph.wat).
const (
	callTreeNoLoop      abi.Func = 1
	recursionViaTable   abi.Func = 2
	smallHelpersInALoop abi.Func = 3
)

// hostileCall is one misbehaviour: a test guest and the function to call.
type hostileCall struct {
	file string
	fn   abi.Func
}

// hostile returns a fresh instance of testdata/hostile.wasm, and the log
// its output goes to.
func hostile(t *testing.T, timeout time.Duration) (policy.Instance, *testlog.Buffer) {
	t.Helper()
	return testGuest(t, "hostile.wasm", timeout)
}

// testGuest returns a fresh instance of the test guest testdata/file, and
// the log its output goes to.
func testGuest(t *testing.T, file string, timeout time.Duration) (policy.Instance, *testlog.Buffer) {
	t.Helper()
	logs := &testlog.Buffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
	rt, err := wasm.NewRuntime("", log)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { rt.Close(ctx) })
	b, err := rt.Compile(ctx, strings.TrimSuffix(file, ".wasm"), testdata(t, file), wasm.Limits{CallTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(ctx) })
	inst, err := b.NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close(ctx) })
	return inst, logs
}

// The worst-case overrun of a deadline that the tests hold the sandbox to
// (docs/ARCHITECTURE.md, "Sandbox guarantees"): generous, so that a loaded
// machine does not make them flaky, yet far from the minutes a guest could
// take before.
const maxOverrun = time.Second

func TestDeadlineCoversEveryWayAGuestSpendsTime(t *testing.T) {
	const deadline = 300 * time.Millisecond
	for name, hc := range map[string]hostileCall{
		"exponential recursion, no loop":      {"hostile.wasm", hostileFib},
		"call tree, no loop and no recursion": {"callgraph.wasm", callTreeNoLoop},
		"memory.fill of 32 MiB in a loop":     {"hostile.wasm", hostileFill},
		"memory.copy of 16 MiB in a loop":     {"hostile.wasm", hostileCopy},
		"fd_write of 1 MiB chunks in a loop":  {"hostile.wasm", hostileWrite},
		"log import of 1 MiB in a loop":       {"hostile.wasm", hostileLog},
	} {
		t.Run(name, func(t *testing.T) {
			inst, _ := testGuest(t, hc.file, deadline)
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := inst.Call(context.Background(), hc.fn, 0, 0)
				done <- err
			}()
			// While the guest runs, a GC must be able to stop the world.
			time.Sleep(50 * time.Millisecond)
			gcDone := make(chan struct{})
			go func() { runtime.GC(); close(gcDone) }()
			select {
			case <-gcDone:
			case <-time.After(5 * time.Second):
				t.Fatal("a GC could not stop the world while the guest ran")
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(deadline + 10*time.Second):
				t.Fatal("the guest was not stopped")
			}
			took := time.Since(start)
			t.Logf("stopped %v after the deadline", took-deadline)
			if !errors.Is(err, policy.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "deadline of 300ms exceeded") {
				t.Fatalf("err = %v, want the deadline exceeded", err)
			}
			if took > deadline+maxOverrun {
				t.Errorf("stopped after %v: more than %v past the %v deadline", took, maxOverrun, deadline)
			}
		})
	}
}

// allocatedDuring returns how many bytes the Go heap allocated while fn ran.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestCallStackIsBounded(t *testing.T) {
	for name, hc := range map[string]hostileCall{
		"deep recursion":            {"hostile.wasm", hostileDeep},
		"recursion with big frames": {"hostile.wasm", hostileBigFrames},
		"recursion through a table": {"callgraph.wasm", recursionViaTable},
	} {
		t.Run(name, func(t *testing.T) {
			inst, _ := testGuest(t, hc.file, 10*time.Second)
			var err error
			alloc := allocatedDuring(func() { _, err = inst.Call(context.Background(), hc.fn, 0, 0) })
			if !errors.Is(err, policy.ErrGuestTrap) || !strings.Contains(err.Error(), "call stack exhausted") {
				t.Fatalf("err = %v, want a trap for the exhausted call stack", err)
			}
			// The budget is 16 MiB of estimated frames; wazero grows a
			// stack by copying it into one twice as large.
			t.Logf("allocated %d KiB", alloc>>10)
			if limit := uint64(64 << 20); alloc > limit {
				t.Errorf("the host allocated %d MiB during the call, want at most %d MiB", alloc>>20, limit>>20)
			}
		})
	}
}

func TestTableGrowthIsCapped(t *testing.T) {
	inst, _ := hostile(t, 10*time.Second)
	var reply []byte
	var err error
	alloc := allocatedDuring(func() { reply, err = inst.Call(context.Background(), hostileTable, 0, 0) })
	if err != nil {
		t.Fatal(err)
	}
	// The guest returns its table's size as the reply's length.
	if len(reply) > wasm.MaxTableElements {
		t.Errorf("the table grew to %d elements, want at most %d", len(reply), wasm.MaxTableElements)
	}
	if alloc > 16<<20 {
		t.Errorf("the host allocated %d MiB for table.grow, want under 16", alloc>>20)
	}
}

func TestInstrumentRefusesTablesAndLocalsOverTheBounds(t *testing.T) {
	mod := func(sections ...[]byte) []byte {
		b := []byte("\x00asm\x01\x00\x00\x00")
		for _, s := range sections {
			b = append(b, s...)
		}
		return b
	}
	memory := []byte{5, 3, 1, 0, 1}
	for name, bin := range map[string][]byte{
		// one funcref table of 2^20 elements
		"huge table": mod([]byte{4, 6, 1, 0x70, 0x00, 0x80, 0x80, 0x40}, memory),
		// nine tables
		"too many tables": mod(append([]byte{4, 28, 9}, bytes.Repeat([]byte{0x70, 0x00, 0x01}, 9)...), memory),
		// a function of type ()->() with 100000 i32 locals
		"too many locals": mod([]byte{1, 4, 1, 0x60, 0, 0}, []byte{3, 2, 1, 0}, memory,
			[]byte{10, 8, 1, 6, 1, 0xA0, 0x8D, 0x06, 0x7F, 0x0B}),
		// a function touching a global that exists only once instrumented
		"added global": testdata(t, "hijack.wasm"),
	} {
		if _, err := wasm.Instrument(bin); !errors.Is(err, wasm.ErrUnsupportedModule) {
			t.Errorf("%s: err = %v, want ErrUnsupportedModule", name, err)
		}
	}
}

func TestOutputIsBounded(t *testing.T) {
	t.Run("one long line", func(t *testing.T) {
		inst, logs := hostile(t, 10*time.Second)
		if _, err := inst.Call(context.Background(), hostileLongLine, 0, 0); err != nil {
			t.Fatal(err)
		}
		out := logs.String()
		if !strings.Contains(out, "[line cut]") {
			t.Errorf("the 48 MiB line was not cut; log:\n%.300s", out)
		}
		if len(out) > wasm.MaxOutputLine+512 {
			t.Errorf("one 48 MiB line logged %d bytes, want about %d", len(out), wasm.MaxOutputLine)
		}
	})
	t.Run("many lines, per call and per second", func(t *testing.T) {
		inst, logs := hostile(t, 10*time.Second)
		start := time.Now()
		const calls = 8
		for i := 0; i < calls; i++ {
			if _, err := inst.Call(context.Background(), hostileManyLines, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		elapsed := time.Since(start)
		out := logs.String()
		// Each call writes 8 MiB in 2 Mi lines; what is logged is bounded by
		// the per-call budget and, over all calls, by the per-second one
		// (a line's budget counts its text, not the logger's timestamp and
		// fields, hence the factor).
		perSecond := float64(wasm.MaxOutputPerSecond) * (1 + elapsed.Seconds())
		if limit := 3 * min(perSecond, calls*wasm.MaxOutputPerCall); float64(len(out)) > limit {
			t.Errorf("%d calls logged %d KiB in %v, want at most %.0f KiB", calls, len(out)>>10, elapsed, limit/1024)
		}
		if !strings.Contains(out, "guest output over its limits, dropped") {
			t.Error("the dropped output was not reported")
		}
	})
}

func TestGuestExitReadsAsExit(t *testing.T) {
	inst, _ := hostile(t, 10*time.Second)
	_, err := inst.Call(context.Background(), hostileExit, 0, 0)
	if !errors.Is(err, policy.ErrGuestTrap) || !strings.Contains(err.Error(), "guest exited (code 3)") {
		t.Fatalf("err = %v, want the guest's exit and its code", err)
	}
}

func TestGuestPanicMessageIsInTheError(t *testing.T) {
	t.Run("wat", func(t *testing.T) {
		inst, _ := hostile(t, 10*time.Second)
		_, err := inst.Call(context.Background(), hostilePanic, 0, 0)
		want := "wasmsched_call: guest panicked: boom in the guest (wasm error: unreachable)"
		if err == nil || err.Error() != want {
			t.Fatalf("err = %q, want %q (one line, no stack trace)", err, want)
		}
	})
	builds(t, testwasm.Misbehave, func(t *testing.T, bin []byte) {
		rt, _ := newRuntime(t)
		ctx := context.Background()
		b, err := rt.Compile(ctx, "misbehave", bin, wasm.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := policy.Load(ctx, b, policy.Config{Name: "misbehave"})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close(ctx)
		_, err = runFilter(ctx, m, oneNode(), "trap")
		if err == nil {
			t.Fatal("the trap mode did not fail")
		}
		msg := err.Error()
		if !strings.Contains(msg, `filter plugin "Misbehave": instance lost: wasmsched_call: guest panicked: runtime error: index out of range`) {
			t.Errorf("err = %q, want the guest's panic message after the plugin's name", msg)
		}
		if strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine") || strings.Contains(msg, "wasm stack trace") {
			t.Errorf("err = %q, want one line without a stack trace", msg)
		}
	})
}

func TestCompileRefusesModuleWithoutMemoryExport(t *testing.T) {
	rt, _ := newRuntime(t)
	_, err := rt.Compile(context.Background(), "nomem", testdata(t, "nomem_export.wasm"), wasm.Limits{})
	if err == nil || !strings.Contains(err.Error(), `module "nomem": not a wasmsched ABI v1 module: its linear memory is not exported as "memory"`) {
		t.Fatalf("err = %v, want the missing memory export named", err)
	}
}

// cacheFiles lists the regular files under dir but manifests.
func cacheFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(d.Name(), "manifest") {
			files[p] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestCompileCacheTamperingIsDetected(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	version := func(rt *wasm.Runtime, file string) uint32 {
		t.Helper()
		b, err := rt.Compile(ctx, file, testdata(t, file), wasm.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close(ctx)
		inst, err := b.NewInstance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close(ctx)
		v, err := inst.ABIVersion(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	runtimeAt := func() (*wasm.Runtime, *testlog.Buffer) {
		logs := &testlog.Buffer{}
		rt, err := wasm.NewRuntime(dir, hclog.New(&hclog.LoggerOptions{Output: logs}))
		if err != nil {
			t.Fatal(err)
		}
		return rt, logs
	}

	// Compile the pinned module, then another one of the same shape.
	rt, _ := runtimeAt()
	if v := version(rt, "pinned.wasm"); v != 0x00010001 {
		t.Fatalf("pinned.wasm says ABI %#x, want 0x00010001", v)
	}
	pinned := cacheFiles(t, dir)
	if v := version(rt, "abi_v2.wasm"); v != 0x00020000 {
		t.Fatalf("abi_v2.wasm says ABI %#x, want 0x00020000", v)
	}
	rt.Close(ctx)
	var other []byte
	for f := range cacheFiles(t, dir) {
		if !pinned[f] {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			other = b
		}
	}
	if len(pinned) == 0 || other == nil {
		t.Fatalf("no cache entries found under %s", dir)
	}
	// Put the other module's code where the pinned module's is.
	for f := range pinned {
		if err := os.WriteFile(f, other, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	rt, logs := runtimeAt()
	defer rt.Close(ctx)
	if v := version(rt, "pinned.wasm"); v != 0x00010001 {
		t.Fatalf("after tampering with the cache, pinned.wasm ran code saying ABI %#x, want its own 0x00010001", v)
	}
	if got := rt.CacheRejected(); got != int64(len(pinned)) {
		t.Errorf("CacheRejected = %d, want %d", got, len(pinned))
	}
	if !strings.Contains(logs.String(), "discarded entries that do not match") {
		t.Errorf("the tampering was not logged; logs:\n%s", logs)
	}
	// And the recompiled entry is trusted again.
	rt2, _ := runtimeAt()
	defer rt2.Close(ctx)
	if v := version(rt2, "pinned.wasm"); v != 0x00010001 || rt2.CacheRejected() != 0 {
		t.Errorf("reloading after the repair: ABI %#x, %d rejected; want 0x00010001, 0", v, rt2.CacheRejected())
	}
}

func TestCompileCacheMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	rt, err := wasm.NewRuntime(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("cache dir mode %v, want 0700", st.Mode().Perm())
	}
}

func TestCompileCacheInADirectoryOfAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give a directory to another user")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := wasm.NewRuntime(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	b, err := rt.Compile(ctx, "pinned", testdata(t, "pinned.wasm"), wasm.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b.Close(ctx)
	// The cache went into a private directory of ours, not into dir itself.
	for f := range cacheFiles(t, dir) {
		if !strings.HasPrefix(f, filepath.Join(dir, "uid-0")+string(filepath.Separator)) {
			t.Errorf("cache file %s outside the private uid-0 directory", f)
		}
	}
	st, err := os.Stat(filepath.Join(dir, "uid-0"))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("private cache directory: %v, %v; want mode 0700", st, err)
	}
	if len(cacheFiles(t, dir)) == 0 {
		t.Error("nothing was cached")
	}
}
