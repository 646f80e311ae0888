//go:build wasmtime

package wasmtime_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/backendtest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasmtime"
	"github.com/wasmsched/wasmsched/internal/testlog"
	"github.com/wasmsched/wasmsched/internal/testwait"
	"github.com/wasmsched/wasmsched/internal/testwasm"
)

// compiler compiles modules on one runtime, logging to its buffer.
type compiler struct {
	name    string
	compile func(name string, bin []byte, lim wasm.Limits) (guest.Backend, error)
	logs    *testlog.Buffer
}

// both returns a wazero and a wasmtime compiler (epoch deadlines unless
// opts say otherwise), closed when the test ends.
func both(t *testing.T, opts wasmtime.Options) [2]compiler {
	t.Helper()
	ctx := context.Background()
	logger := func() (hclog.Logger, *testlog.Buffer) {
		logs := &testlog.Buffer{}
		return hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace}), logs
	}
	zlog, zlogs := logger()
	wz, err := wasm.NewRuntime("", zlog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wz.Close(ctx) })
	tlog, tlogs := logger()
	wt, err := wasmtime.NewRuntimeWithOptions(sharedCacheDir, tlog, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wt.Close(ctx) })
	closing := func(b guest.Backend, err error) (guest.Backend, error) {
		if err == nil {
			t.Cleanup(func() { b.Close(ctx) })
		}
		return b, err
	}
	return [2]compiler{
		{"wazero", func(name string, bin []byte, lim wasm.Limits) (guest.Backend, error) {
			return closing(wz.Compile(ctx, name, bin, lim))
		}, zlogs},
		{"wasmtime", func(name string, bin []byte, lim wasm.Limits) (guest.Backend, error) {
			return closing(wt.Compile(ctx, name, bin, lim))
		}, tlogs},
	}
}

// instanceOf compiles bin and returns a fresh instance, closed when the
// test ends.
func instanceOf(t *testing.T, c compiler, name string, bin []byte, lim wasm.Limits) guest.Instance {
	t.Helper()
	b, err := c.compile(name, bin, lim)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	inst, err := b.NewInstance(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	t.Cleanup(func() { inst.Close(context.Background()) })
	return inst
}

// Misbehaviours of the suite's test guests (host/platform/runtime/backendtest/testdata).
const (
	trapsUnreachable abi.Func = 1
	trapsOOBLoad     abi.Func = 2
	trapsDivide      abi.Func = 3
	trapsLoop        abi.Func = 4
	trapsGrow        abi.Func = 5
	hostileDeep      abi.Func = 2
	hostileFill      abi.Func = 4
	hostileWrite     abi.Func = 6
	hostileExit      abi.Func = 9
	hostilePanic     abi.Func = 10
	hostileManyLines abi.Func = 12
)

// TestRefusalsReadAsOnWazero: both runtimes refuse the same modules with
// the same words.
func TestRefusalsReadAsOnWazero(t *testing.T) {
	rts := both(t, wasmtime.Options{})
	for _, tc := range []struct {
		guest string
		bin   []byte
		want  string
	}{
		{"bad_exports", nil, "missing export wasmsched_call"},
		{"nomem_export", nil, `its linear memory is not exported as "memory"`},
		{"command", nil, "is a command (exports _start)"},
		{"foreign_import", nil, "imports env.open_socket, which the host does not provide"},
		{"bigtable", nil, "module cannot be instrumented"},
		{"garbage", []byte("\x00asm but not really"), "not a Wasm 1.0 binary"},
	} {
		t.Run(tc.guest, func(t *testing.T) {
			bin := tc.bin
			if bin == nil {
				bin = backendtest.Guest(t, tc.guest)
			}
			var msgs [2]string
			for i, rt := range rts {
				_, err := rt.compile(tc.guest, bin, wasm.Limits{})
				if err == nil {
					t.Fatalf("%s compiled %s, want a refusal", rt.name, tc.guest)
				}
				msgs[i] = err.Error()
			}
			if msgs[0] != msgs[1] {
				t.Errorf("refusals differ:\n wazero:   %s\n wasmtime: %s", msgs[0], msgs[1])
			}
			if !strings.Contains(msgs[1], tc.want) || !strings.HasPrefix(msgs[1], fmt.Sprintf("module %q: ", tc.guest)) {
				t.Errorf("wasmtime's refusal %q does not name the module and say %q", msgs[1], tc.want)
			}
		})
	}
}

// TestFailuresReadAsOnWazero: a trap, an exit, a panic message and a
// deadline fail the call with the same kind and the same words on both
// runtimes.
func TestFailuresReadAsOnWazero(t *testing.T) {
	rts := both(t, wasmtime.Options{})
	lim := wasm.Limits{CallTimeout: 300 * time.Millisecond}
	for _, tc := range []struct {
		name  string
		guest string
		fn    abi.Func
		kind  error
		want  string
	}{
		{"unreachable", "traps", trapsUnreachable, guest.ErrGuestTrap, "wasmsched_call: wasm error: unreachable"},
		{"out-of-bounds load", "traps", trapsOOBLoad, guest.ErrGuestTrap, "wasmsched_call: wasm error: out of bounds memory access"},
		{"division by zero", "traps", trapsDivide, guest.ErrGuestTrap, "wasmsched_call: wasm error: integer divide by zero"},
		{"endless loop", "traps", trapsLoop, guest.ErrDeadlineExceeded, "wasmsched_call: deadline of 300ms exceeded"},
		{"fd_write in a loop", "hostile", hostileWrite, guest.ErrDeadlineExceeded, "wasmsched_call: deadline of 300ms exceeded"},
		{"proc_exit", "hostile", hostileExit, guest.ErrGuestTrap, "wasmsched_call: guest exited (code 3)"},
		{"panic message", "hostile", hostilePanic, guest.ErrGuestTrap,
			"wasmsched_call: guest panicked: boom in the guest (wasm error: unreachable)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := backendtest.Guest(t, tc.guest)
			var msgs [2]string
			for i, rt := range rts {
				inst := instanceOf(t, rt, tc.guest, bin, lim)
				start := time.Now()
				_, err := inst.Call(context.Background(), tc.fn, 0, 0)
				if !errors.Is(err, tc.kind) {
					t.Fatalf("%s: err = %v, want %v", rt.name, err, tc.kind)
				}
				if took := time.Since(start); tc.kind == guest.ErrDeadlineExceeded && took > lim.CallTimeout+time.Second {
					t.Errorf("%s: stopped after %v, more than a second past the deadline", rt.name, took)
				}
				msgs[i] = err.Error()
			}
			if msgs[0] != msgs[1] {
				t.Errorf("failures differ:\n wazero:   %s\n wasmtime: %s", msgs[0], msgs[1])
			}
			if msgs[1] != tc.want && !strings.HasPrefix(msgs[1], tc.want) {
				t.Errorf("wasmtime: %q, want %q", msgs[1], tc.want)
			}
		})
	}
}

// TestRunawayRecursionTraps: the Wasm stack is bounded (MaxWasmStack) and
// reaching the bound reads as an exhausted call stack.
func TestRunawayRecursionTraps(t *testing.T) {
	rts := both(t, wasmtime.Options{})
	inst := instanceOf(t, rts[1], "hostile", backendtest.Guest(t, "hostile"), wasm.Limits{CallTimeout: 10 * time.Second})
	_, err := inst.Call(context.Background(), hostileDeep, 0, 0)
	want := fmt.Sprintf("wasmsched_call: call stack exhausted: more than %d KiB of Wasm stack (runaway recursion?) (wasm error: stack overflow)",
		wasmtime.MaxWasmStack>>10)
	if !errors.Is(err, guest.ErrGuestTrap) || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestMemoryCap: memory.grow stops at Limits.MemoryBytes on both runtimes
// (the guest grows one page at a time until it fails and replies with
// the page count reached).
func TestMemoryCap(t *testing.T) {
	rts := both(t, wasmtime.Options{})
	const cap = 3 << 20
	for _, rt := range rts {
		inst := instanceOf(t, rt, "traps", backendtest.Guest(t, "traps"), wasm.Limits{MemoryBytes: cap})
		reply, err := inst.Call(context.Background(), trapsGrow, 0, 0)
		if err != nil {
			t.Fatalf("%s: %v", rt.name, err)
		}
		if len(reply) != 4 {
			t.Fatalf("%s: reply %x, want a u32", rt.name, reply)
		}
		if pages := uint32(reply[0]) | uint32(reply[1])<<8 | uint32(reply[2])<<16 | uint32(reply[3])<<24; pages != cap>>16 {
			t.Errorf("%s: memory grew to %d pages, want the cap's %d", rt.name, pages, cap>>16)
		}
	}
}

// TestGuestOutputIsTaggedAndBounded: stdout lines reach the log tagged
// with the module and stream, within the per-call budget, and the drop is
// reported.
func TestGuestOutputIsTaggedAndBounded(t *testing.T) {
	rts := both(t, wasmtime.Options{})
	inst := instanceOf(t, rts[1], "hostile", backendtest.Guest(t, "hostile"), wasm.Limits{CallTimeout: 10 * time.Second})
	if _, err := inst.Call(context.Background(), hostileManyLines, 0, 0); err != nil {
		t.Fatal(err)
	}
	out := rts[1].logs.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 10 || !strings.Contains(lines[0], "module=hostile") || !strings.Contains(lines[0], "stream=stdout") {
		t.Fatalf("want many lines tagged module=hostile stream=stdout; log starts:\n%.400s", out)
	}
	// 8 MiB of lines; one call logs at most MaxOutputPerCall of text (each
	// line counted with its overhead), the logger adds its own fields.
	if len(out) > 4*wasm.MaxOutputPerCall {
		t.Errorf("one call logged %d KiB, want about %d KiB at most", len(out)>>10, wasm.MaxOutputPerCall>>10)
	}
	if !strings.Contains(out, "guest output over its limits, dropped") {
		t.Error("the dropped output was not reported")
	}
}

// TestFuelStopsAnEndlessLoop: under InterruptFuel running out of fuel
// reads as the deadline, and the epoch deadline still stops what fuel
// does not count (a memory.fill loop costs one unit per fill).
func TestFuelStopsAnEndlessLoop(t *testing.T) {
	rts := both(t, wasmtime.Options{Interrupt: wasmtime.InterruptFuel})
	const timeout = 100 * time.Millisecond
	for _, tc := range []struct {
		guest string
		fn    abi.Func
	}{{"traps", trapsLoop}, {"hostile", hostileFill}} {
		inst := instanceOf(t, rts[1], tc.guest, backendtest.Guest(t, tc.guest), wasm.Limits{CallTimeout: timeout})
		start := time.Now()
		_, err := inst.Call(context.Background(), tc.fn, 0, 0)
		if !errors.Is(err, guest.ErrDeadlineExceeded) || err.Error() != "wasmsched_call: deadline of 100ms exceeded" {
			t.Fatalf("%s %d: err = %v, want the deadline exceeded", tc.guest, tc.fn, err)
		}
		if took := time.Since(start); took > timeout+time.Second {
			t.Errorf("%s %d: stopped after %v, more than a second past the deadline", tc.guest, tc.fn, took)
		}
	}
}

// TestFuelFollowsThePushAllowance: under InterruptFuel a push gets fuel
// for its allowance as well as epochs, so a sync that needs far more fuel
// than the call timeout's answers, and the next call has the call
// timeout's fuel again.
func TestFuelFollowsThePushAllowance(t *testing.T) {
	rts := both(t, wasmtime.Options{Interrupt: wasmtime.InterruptFuel})
	const timeout, n = 10 * time.Millisecond, 4 << 20
	inst := instanceOf(t, rts[1], "slowpush", backendtest.Guest(t, "slowpush"), wasm.Limits{CallTimeout: timeout})
	ctx := context.Background()
	sync := func(allow time.Duration) error {
		p := inst.(guest.Pushable)
		p.AllowPush(allow)
		defer p.AllowPush(0)
		if _, err := inst.Input(ctx, n); err != nil {
			return err
		}
		_, err := inst.Call(ctx, abi.FuncSync, 0, n)
		return err
	}
	// 4 MiB hashed 32 rounds a byte: over 10^9 instructions, where 10 ms
	// of fuel is 1.6·10^8.
	if err := sync(guest.PushAllowance(n)); err != nil {
		t.Fatalf("a sync of %d bytes with its allowance: %v", n, err)
	}
	err := sync(0)
	if !errors.Is(err, guest.ErrDeadlineExceeded) || err.Error() != "wasmsched_call: deadline of 10ms exceeded" {
		t.Fatalf("the same sync without an allowance: err = %v, want the deadline exceeded", err)
	}
}

// recorder wraps a backend and records every reply its instances give,
// in order, so that two runtimes' answers can be compared byte for byte.
type recorder struct {
	guest.Backend
	replies *[][]byte
}

func (r recorder) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := r.Backend.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return recordingInstance{inst, r.replies}, nil
}

type recordingInstance struct {
	guest.Instance
	replies *[][]byte
}

func (r recordingInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	reply, err := r.Instance.Call(ctx, fn, arg, n)
	*r.replies = append(*r.replies, append([]byte(fmt.Sprintf("%s(%d): ", fn, arg)), reply...))
	return reply, err
}

// TestDefaultBundleRepliesAgreeWithWazero: the default bundle's TinyGo
// and Go builds give, call for call, byte-identical replies on both
// runtimes over a cluster where every plugin has work (the same cycles as
// BenchmarkRuntimesPerNode, on 300 nodes, with a topology pod too).
func TestDefaultBundleRepliesAgreeWithWazero(t *testing.T) {
	ctx := context.Background()
	snap := fixtures.ClusterOfWorkloads(300, 900)
	all := fixtures.Slots(snap)
	pods := []abi.Pod{fixtures.Pod("agree", 0), fixtures.TopologyPod("agree", 1)}
	for _, build := range []struct {
		name string
		bin  func() []byte
	}{
		{"tinygo", func() []byte { return testwasm.TinyGoBytes(t, testwasm.Default) }},
		{"go", func() []byte { return testwasm.GoBytes(t, testwasm.Default) }},
	} {
		t.Run(build.name, func(t *testing.T) {
			bin := build.bin()
			var replies [2][][]byte
			for i, rt := range both(t, wasmtime.Options{}) {
				b, err := rt.compile("default", bin, wasm.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				c := fixtures.SyncedClient(t, recorder{b, &replies[i]}, "default", snap)
				var plugins []int
				for p := range c.Module().Manifest().Plugins {
					plugins = append(plugins, p)
				}
				for _, pod := range pods {
					if _, err := fixtures.Pass(ctx, c, plugins, &pod, all, nil); err != nil {
						t.Fatalf("%s: %v", rt.name, err)
					}
				}
			}
			if len(replies[0]) < 20 {
				t.Fatalf("only %d replies recorded: the comparison would prove little", len(replies[0]))
			}
			if len(replies[0]) != len(replies[1]) {
				t.Fatalf("%d replies on wazero, %d on wasmtime", len(replies[0]), len(replies[1]))
			}
			for k := range replies[0] {
				if !bytes.Equal(replies[0][k], replies[1][k]) {
					t.Fatalf("reply %d differs:\n wazero:   %.200q\n wasmtime: %.200q", k, replies[0][k], replies[1][k])
				}
			}
		})
	}
}

// TestCompileCache: a module compiles cold once, then comes from the
// runtime's memory, then from disk in a new runtime; an altered entry on
// disk is rejected, counted and recompiled, never loaded.
func TestCompileCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	runtimeAt := func() (*wasmtime.Runtime, *testlog.Buffer) {
		logs := &testlog.Buffer{}
		rt, err := wasmtime.NewRuntime(dir, hclog.New(&hclog.LoggerOptions{Output: logs}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rt.Close(ctx) })
		return rt, logs
	}
	// version compiles a guest and returns its ABI version and whether its
	// code came from a cache.
	version := func(rt *wasmtime.Runtime, guest string) (uint32, bool) {
		t.Helper()
		b, err := rt.Compile(ctx, guest, backendtest.Guest(t, guest), wasm.Limits{})
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
		return v, b.FromCache()
	}

	rt, _ := runtimeAt()
	want := map[string]uint32{}
	v, cached := version(rt, "hostile")
	if cached || v>>16 != 1 {
		t.Fatalf("first compile: ABI %#x, cached %v; want v1, compiled", v, cached)
	}
	want["hostile"] = v
	if _, cached := version(rt, "hostile"); !cached {
		t.Error("second compile in the same runtime was not served from memory")
	}
	if want["abi_v2"], _ = version(rt, "abi_v2"); want["abi_v2"] != 0x00020000 {
		t.Fatalf("abi_v2 says %#x", want["abi_v2"])
	}
	rt2, _ := runtimeAt()
	if _, cached := version(rt2, "hostile"); !cached {
		t.Error("a new runtime over the same directory did not load the module from disk")
	}

	// Put one module's code where the other's is.
	files, err := filepath.Glob(filepath.Join(dir, "*", "module.cwasm"))
	if err != nil || len(files) != 2 {
		t.Fatalf("cache files %v (%v), want two", files, err)
	}
	other, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[0], other, 0o600); err != nil {
		t.Fatal(err)
	}
	rejected := int64(0)
	for _, guest := range []string{"hostile", "abi_v2"} {
		rt3, logs := runtimeAt()
		v, cached := version(rt3, guest)
		if v != want[guest] {
			t.Fatalf("after tampering, %s ran code saying ABI %#x, want its own %#x", guest, v, want[guest])
		}
		n := rt3.CacheRejected()
		if cached == (n == 1) {
			t.Errorf("%s: cached %v with %d rejected; the altered entry must be rejected and recompiled, the other loaded", guest, cached, n)
		}
		if n == 1 && !strings.Contains(logs.String(), "discarded entries that do not match") {
			t.Errorf("the tampering was not logged; logs:\n%s", logs)
		}
		rejected += n
	}
	if rejected != 1 {
		t.Errorf("%d entries rejected, want the one altered", rejected)
	}
	// And the recompiled entry is trusted again.
	rt4, _ := runtimeAt()
	if _, cached := version(rt4, "hostile"); !cached || rt4.CacheRejected() != 0 {
		t.Errorf("after the repair: cached %v, %d rejected; want cached, 0", cached, rt4.CacheRejected())
	}
}

// TestCompileCacheMustBePrivate: the cache directory is made private.
func TestCompileCacheMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	rt, err := wasmtime.NewRuntime(dir, nil)
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

// TestRuntimeOutlivesItsClose: closing a runtime keeps its engine (and
// deadlines) for the backends still open; it then refuses to compile.
func TestRuntimeOutlivesItsClose(t *testing.T) {
	ctx := context.Background()
	rt, err := wasmtime.NewRuntime("", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rt.Compile(ctx, "traps", backendtest.Guest(t, "traps"), wasm.Limits{CallTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Compile(ctx, "traps", backendtest.Guest(t, "traps"), wasm.Limits{}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("compile after Close: %v, want a refusal", err)
	}
	inst, err := b.NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Call(ctx, trapsLoop, 0, 0); !errors.Is(err, guest.ErrDeadlineExceeded) {
		t.Errorf("endless loop after the runtime's Close: %v, want the deadline to still stop it", err)
	}
	inst.Close(ctx)
	b.Close(ctx)
}

// TestCloseDuringACall: closing an instance while a call runs in it (a
// pool closing, say) frees it when the call returns, not under it; calls
// after Close fail without touching freed memory.
func TestCloseDuringACall(t *testing.T) {
	ctx := context.Background()
	rts := both(t, wasmtime.Options{})
	b, err := rts[1].compile("traps", backendtest.Guest(t, "traps"), wasm.Limits{CallTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := b.NewInstance(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := inst.Call(ctx, trapsLoop, 0, 0)
		done <- err
	}()
	testwait.Eventually(t, 5*time.Second, func() bool { return wasmtime.InCall(inst) }, "the call did not start")
	if err := inst.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "instance closed during the call") {
		t.Errorf("the running call returned %v, want it failed as closed during the call", err)
	}
	if _, err := inst.Call(ctx, 0, 0, 0); err == nil || !strings.Contains(err.Error(), "instance closed") {
		t.Errorf("a call after Close returned %v, want a refusal", err)
	}
	if err := inst.Close(ctx); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

// TestUnknownProfilerIsReported: a mistyped profiling switch is logged,
// naming the variable, the value and what it takes, and the runtime runs
// without a profiler.
func TestUnknownProfilerIsReported(t *testing.T) {
	t.Setenv(wasmtime.ProfileEnv, "perfmapp")
	logs := &testlog.Buffer{}
	rt, err := wasmtime.NewRuntime("", hclog.New(&hclog.LoggerOptions{Output: logs}))
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	for _, w := range []string{"wasmtime profiling not enabled", wasmtime.ProfileEnv, "perfmapp", "perfmap or jitdump"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs)
		}
	}
}
