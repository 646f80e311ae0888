package backendtest

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// The misbehaviours of testdata/traps.wat.
const (
	trapsUnreachable abi.Func = 1
	trapsOutOfBounds abi.Func = 2
	trapsDivide      abi.Func = 3
	trapsLoop        abi.Func = 4
	trapsGrowByOne   abi.Func = 5
	trapsGrowHuge    abi.Func = 6
	trapsEscapes     abi.Func = 7
)

// The misbehaviours of testdata/hostile.wat.
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

// The ways testdata/oom.wat runs out of memory.
const (
	oomGrowRefused abi.Func = 1
	oomTinyGoAlloc abi.Func = 2
	oomGoExit      abi.Func = 3
	oomRustAbort   abi.Func = 4
)

// The misbehaviours of testdata/callgraph.wat.
const (
	callTreeNoLoop    abi.Func = 1
	recursionViaTable abi.Func = 2
)

// trapRow is a guest function that must trap, and what the error says.
type trapRow struct {
	name  string
	guest string
	fn    abi.Func
	want  []string // words the error must hold
	avoid []string // words it must not
	// maxAlloc bounds what the host's Go heap may allocate during the
	// call (0: unchecked).
	maxAlloc uint64
	// memory is the guest's memory limit (0: the default).
	memory uint64
}

var trapRows = []trapRow{
	// A guest that printed nothing (TinyGo's -panic=trap) still has its
	// trap located: the innermost function is named.
	{name: "unreachable", guest: "traps", fn: trapsUnreachable,
		want: []string{"wasmsched_call: ", "unreachable in function "}, avoid: []string{"out of memory"}},
	{name: "out-of-bounds load", guest: "traps", fn: trapsOutOfBounds,
		want: []string{"wasmsched_call: ", "out of bounds memory access"}},
	{name: "division by zero", guest: "traps", fn: trapsDivide,
		want: []string{"wasmsched_call: ", "integer divide by zero"}},
	{name: "panic message is quoted, stack trace left out", guest: "hostile", fn: hostilePanic,
		want:  []string{"wasmsched_call: guest panicked: boom in the guest", "unreachable"},
		avoid: []string{"stack trace", "noise"}},
	{name: "proc_exit reads as an exit", guest: "hostile", fn: hostileExit,
		want: []string{"wasmsched_call: ", "guest exited (code 3)"}},
	// The stack cases: a runaway recursion ends in a trap, not in a
	// crash of the host or gigabytes of stack. wazero grows a goroutine
	// stack by copying it into one twice as large, hence the bound.
	{name: "call stack is bounded/deep recursion", guest: "hostile", fn: hostileDeep,
		want: []string{"wasmsched_call: ", "call stack exhausted"}, maxAlloc: 64 << 20},
	{name: "call stack is bounded/recursion with big frames", guest: "hostile", fn: hostileBigFrames,
		want: []string{"wasmsched_call: ", "call stack exhausted"}, maxAlloc: 64 << 20},
	{name: "call stack is bounded/recursion through a table", guest: "callgraph", fn: recursionViaTable,
		want: []string{"wasmsched_call: ", "call stack exhausted"}, maxAlloc: 64 << 20},
	// A guest that runs out of memory says so, whatever its allocator
	// does then, and still says how it failed. The first row has no
	// words and no telling function: only the refused memory.grow (the
	// rewrite's record of it, wasm.GrowGlobal) tells.
	{name: "out of memory/memory.grow refused at the limit, then a trap", guest: "oom", fn: oomGrowRefused, memory: capBytes,
		want: []string{"wasmsched_call: guest out of memory (memoryLimit 1 MiB reached): wasm error: unreachable in function give_up"}},
	{name: "out of memory/a trap in TinyGo's allocator", guest: "oom", fn: oomTinyGoAlloc, memory: capBytes,
		want: []string{"wasmsched_call: guest out of memory (memory 64 KiB, memoryLimit 1 MiB): wasm error: unreachable in function runtime.alloc"}},
	{name: "out of memory/Go's fatal error, then an exit", guest: "oom", fn: oomGoExit, memory: capBytes,
		want: []string{"wasmsched_call: guest out of memory (memory 64 KiB, memoryLimit 1 MiB): ", "fatal error: out of memory", "exit code 2"}},
	{name: "out of memory/Rust's allocation failure, then a trap", guest: "oom", fn: oomRustAbort, memory: capBytes,
		want: []string{"wasmsched_call: guest out of memory (memory 64 KiB, memoryLimit 1 MiB): wasm error: unreachable",
			"memory allocation of 1048576 bytes failed"}},
}

var trapCases = func() []wasmCase {
	var cs []wasmCase
	for _, r := range trapRows {
		cs = append(cs, wasmCase{"traps/" + r.name, func(t *testing.T, s *suite) { runTrap(t, s, r) }})
	}
	return cs
}()

func runTrap(t *testing.T, s *suite, r trapRow) {
	inst, _ := s.instance(t, r.guest, wasm.Limits{CallTimeout: 10 * time.Second, MemoryBytes: r.memory})
	var err error
	alloc := allocatedDuring(func() { _, err = call(inst, r.fn, 0) })
	wantFault(t, err, guest.ErrGuestTrap, r.want...)
	if err == nil {
		return
	}
	for _, w := range r.avoid {
		if strings.Contains(err.Error(), w) {
			t.Errorf("err = %q: says %q", err, w)
		}
	}
	if r.maxAlloc > 0 {
		t.Logf("the host allocated %d KiB during the call", alloc>>10)
		if alloc > r.maxAlloc {
			t.Errorf("the host allocated %d MiB during the call, want at most %d MiB", alloc>>20, r.maxAlloc>>20)
		}
	}
}
