package backendtest

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// deadlineRow is a way for a guest to spend time without end.
type deadlineRow struct {
	name  string
	guest string
	fn    abi.Func
}

var deadlineRows = []deadlineRow{
	{"endless loop", "traps", trapsLoop},
	{"exponential recursion, no loop", "hostile", hostileFib},
	{"call tree, no loop and no recursion", "callgraph", callTreeNoLoop},
	{"memory.fill of 32 MiB in a loop", "hostile", hostileFill},
	{"memory.copy of 16 MiB in a loop", "hostile", hostileCopy},
	{"fd_write of 1 MiB chunks in a loop", "hostile", hostileWrite},
	{"log import of 1 MiB in a loop", "hostile", hostileLog},
}

var deadlineCases = func() []wasmCase {
	var cs []wasmCase
	for _, r := range deadlineRows {
		cs = append(cs, wasmCase{"deadlines/" + r.name, func(t *testing.T, s *suite) { runDeadline(t, s, r) }})
	}
	return append(cs, wasmCase{"deadlines/_initialize that never returns fails Load", initDeadline})
}()

// callDeadline is the call timeout of the deadline cases.
const callDeadline = 300 * time.Millisecond

// runDeadline runs a guest that never returns: the call fails with the
// deadline within maxOverrun of it, a GC can stop the world meanwhile,
// and what the guest wrote on the way stays within the per-call budget.
func runDeadline(t *testing.T, s *suite, r deadlineRow) {
	inst, logs := s.instance(t, r.guest, wasm.Limits{CallTimeout: callDeadline})
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := call(inst, r.fn, 0)
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
	case <-time.After(callDeadline + 10*time.Second):
		t.Fatal("the guest was not stopped")
	}
	took := time.Since(start)
	t.Logf("stopped %v after the deadline", took-callDeadline)
	wantFault(t, err, guest.ErrDeadlineExceeded, "wasmsched_call: ", "deadline of 300ms exceeded")
	if took > callDeadline+maxOverrun {
		t.Errorf("stopped after %v: more than %v past the %v deadline", took, maxOverrun, callDeadline)
	}
	if s.logging() {
		// A line's budget counts its text, not the logger's timestamp and
		// fields, hence the factor.
		if n := len(logs.String()); n > 3*wasm.MaxOutputPerCall {
			t.Errorf("the call logged %d KiB, want at most about %d KiB", n>>10, wasm.MaxOutputPerCall>>10)
		}
	}
}

// initDeadline: instantiation runs a reactor's _initialize under the call
// deadline too.
func initDeadline(t *testing.T, s *suite) {
	b, _ := s.compile(t, "initloop", Guest(t, "initloop"), wasm.Limits{CallTimeout: callDeadline})
	done := make(chan error, 1)
	go func() {
		m, err := guest.Load(context.Background(), b, guest.PoolConfig{Name: "initloop"})
		if m != nil {
			m.Close(context.Background())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a module whose _initialize never returns loaded")
		}
		if !errors.Is(err, guest.ErrDeadlineExceeded) {
			t.Errorf("err = %q: not %v", err, guest.ErrDeadlineExceeded)
		}
		wantWords(t, err, `module "initloop"`, "_initialize", "deadline of 300ms exceeded")
	case <-time.After(callDeadline + 10*time.Second):
		t.Fatal("instantiation was not stopped")
	}
}
