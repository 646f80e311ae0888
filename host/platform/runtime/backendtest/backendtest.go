// Package backendtest is the conformance suite every policy backend must
// pass: tables of cases, run against wazero (host/platform/runtime/wasm), wasmtime
// (host/platform/runtime/wasmtime) and, for the cases that apply, the native twins
// (host/platform/runtime/native). A backend's test calls
//
//	backendtest.Run(t, backendtest.Runtime{Name: "wazero", Compile: ..., CompileLogging: ...})
//
// and a new backend is done when Run passes with no case skipped. Each
// case is a subtest named group/case, so one group runs alone with, e.g.,
// go test ./host/platform/runtime/wasm -run 'TestConformance/deadlines'. The suite holds a backend
// to what the product promises (docs/ARCHITECTURE.md, "Sandbox
// guarantees"), judged from outside: errors are compared by kind
// (errors.Is guest.ErrGuestTrap, guest.ErrDeadlineExceeded,
// guest.ErrInstanceBroken) and by the words an operator reads, never by
// a runtime's own wording. What a Wasm backend must do:
//
//   - Traps (group "traps"): unreachable, an out-of-bounds load, an
//     integer division by zero, a guest's proc_exit and runaway recursion
//     fail the call with ErrGuestTrap in one line that starts with the
//     ABI function ("wasmsched_call: ") and says "unreachable", "out of
//     bounds memory access", "integer divide by zero", "guest exited
//     (code 3)" or "call stack exhausted"; a guest that printed "panic:
//     <message>" on stderr before trapping has "guest panicked:
//     <message>" in the error. Deep recursion costs the host's Go heap at
//     most 64 MiB.
//   - Deadlines ("deadlines"): an endless loop, exponential recursion, a
//     call tree with neither loop nor recursion, memory.fill and
//     memory.copy in a loop, and a loop calling fd_write or the log import
//     are each stopped within a second of the call timeout with
//     ErrDeadlineExceeded saying "deadline of <timeout> exceeded"; a Go
//     garbage collection can stop the world while such a guest runs; a
//     reactor whose _initialize never returns fails Load the same way.
//     Instances implement guest.Pushable: under a 10 ms call timeout, a
//     sync that takes far longer is cut without an allowance and answers
//     with one (through the pool too: a fresh instance's first sync of a
//     5000-node cluster answers), and a sync that never returns is
//     stopped no sooner than the call timeout plus its allowance and
//     within a second after, saying "deadline of <timeout + allowance>
//     exceeded (the call timeout <timeout> and <allowance> allowed for
//     the state the host pushed)"; the allowance ends with the push.
//   - Memory and tables ("limits"): memory.grow reaches Limits.MemoryBytes
//     exactly and then returns -1 (no trap), also for one huge step; a
//     module whose initial memory is over the cap, or that declares a
//     table over wasm.MaxTableElements, is refused at Compile or Load
//     with an error naming the module; table.grow stops at
//     wasm.MaxTableElements without the host allocating for it.
//   - ABI refusals ("abi"): Compile refuses a module with a missing or
//     mistyped export, without its memory exported as "memory", importing
//     what the host does not provide, built as a command, or not Wasm at
//     all, naming the module and each problem in the host's words
//     ("missing export wasmsched_call", "imports env.open_socket, which
//     the host does not provide", ...); Load refuses another ABI major version naming
//     both versions, and a module lacking a required plugin
//     (guest.ErrMissingPlugin).
//   - Misbehaving replies ("replies", on a scripted guest): a reply or
//     input buffer outside guest memory (past its end, wrapping around
//     2^32, longer than the memory), an empty reply, an unknown header, a
//     malformed body or error reply, more verdicts or scores than nodes,
//     a malformed or lying manifest break the instance (ErrInstanceBroken)
//     or fail Load, in words that say what was wrong; a status code a
//     function may not return, an Error status and an out-of-range score
//     are the plugin's errors and leave the instance usable; guest text
//     reaches the host without control characters.
//   - Output ("output"): a guest's stdout, stderr and log calls reach the
//     host's logger tagged module=<name> (and plugin=<name> for the log
//     import, checked in "pool"), one line at most wasm.MaxOutputLine long (cut lines
//     say "[line cut]"), without terminal escapes, within
//     wasm.MaxOutputPerCall per call and wasm.MaxOutputPerSecond per
//     module, with the drop reported ("guest output over its limits,
//     dropped"). These cases need Runtime.CompileLogging.
//   - The pool ("pool", on the misbehave guest's TinyGo and Go builds): a
//     trap (quoted: "guest panicked: runtime error: index out of range"),
//     a runaway loop and a memory hog each fail the call with
//     ErrInstanceBroken naming the module and plugin, are counted as a
//     trap or a deadline under the module and plugin, and the instance is
//     discarded; the module then serves the next call from a fresh one.
//   - Twins ("twins"): the default bundle (TinyGo and Go builds) and the
//     Rust example module answer a varied cluster exactly as their native
//     twins do (host/platform/runtime/native is the reference).
//
// RunNative runs the cases that apply to a native twin: a panicking
// plugin is a trap that breaks the instance and the pool replaces it, the
// panic message is quoted in one line, and a missing plugin is refused.
// A twin has no sandbox, so deadlines, memory and table caps, ABI shape
// and malformed replies do not apply to it; nor are its guest log lines
// tagged with module and plugin (host/platform/runtime/native logs them as they come), so
// the suite only checks they arrive.
//
// The test guests are hand-written .wat files in testdata, compiled with
// wabt's wat2wasm (go generate) and committed with their .wasm; Guest
// returns them. Guests built from Go (the misbehave guest, the default
// bundle) come from internal/testwasm; their Go (wasip1) builds take
// seconds to compile (tens under -race), so a Run compiles each once and,
// when it runs the whole suite, compiles them in the background while the
// fast cases run.
package backendtest

import (
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// CompileFunc compiles a module's Wasm bytes into a backend of the
// runtime under test, under the given limits, or says why it refuses the
// module; the error must name the module.
type CompileFunc func(ctx context.Context, name string, wasm []byte, lim wasm.Limits) (guest.Backend, error)

// Runtime is a Wasm backend under test.
type Runtime struct {
	// Name labels the runtime in failures.
	Name string
	// Compile compiles a module (see CompileFunc). Required unless
	// CompileLogging is set.
	Compile CompileFunc
	// CompileLogging returns a Compile whose modules log to log: their
	// guest output, their log calls and the host's reports about them.
	// The output cases need it and are skipped without it.
	CompileLogging func(log hclog.Logger) CompileFunc
}

// Native is a backend that runs plugins as Go code in the host.
type Native struct {
	// Name labels the backend in failures.
	Name string
	// New returns a backend running the plugins, logging to log.
	New func(log hclog.Logger, regs ...plugin.Registration) guest.Backend
}

// wasmCase is one case of the Wasm table.
type wasmCase struct {
	name string
	run  func(t *testing.T, s *suite)
}

// nativeCase is one case of the native table.
type nativeCase struct {
	name string
	run  func(t *testing.T, n Native)
}

// The suite for Wasm runtimes, by group, in the order Run runs them.
// The cases asserting how soon a guest is stopped run first, before the
// Go builds start compiling in the background; the pool's cases, which
// bound a call's time too, run last, once those compiles are done.
var (
	timedCases = concat(trapCases, deadlineCases, pushCases)
	otherCases = concat(limitCases, replyCases, outputCases, abiCases, twinCases, poolCases)
)

// nativeCases is the suite for native twins.
var nativeCases = []nativeCase{
	{"pool/a panicking plugin breaks the instance and the pool replaces it", nativePool},
	{"abi/a module lacking a required plugin is refused", nativeMissingPlugin},
}

func concat(groups ...[]wasmCase) []wasmCase {
	var all []wasmCase
	for _, g := range groups {
		all = append(all, g...)
	}
	return all
}

// Run runs every Wasm-level case against rt, each as a subtest named
// group/case.
func Run(t *testing.T, rt Runtime) {
	t.Helper()
	if rt.Compile == nil && rt.CompileLogging == nil {
		t.Fatalf("runtime %q: Runtime.Compile is nil", rt.Name)
	}
	s := newSuite(t, rt)
	for _, c := range timedCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
	if wholeSuite() {
		s.prefetch(misbehaveKey(goBuild(misbehaveBuilds)), "misbehave", goBuild(misbehaveBuilds).bytes(t), misbehaveLimits)
		s.prefetch(defaultKey(goBuild(defaultBuilds)), "default", goBuild(defaultBuilds).bytes(t), wasm.Limits{})
	}
	for _, c := range otherCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// wholeSuite tells whether every case is to run (no -run pattern picks
// cases within the suite), so that compiling the slow Go builds at once,
// in the background, is not wasted.
func wholeSuite() bool {
	f := flag.Lookup("test.run")
	return f == nil || !strings.Contains(f.Value.String(), "/")
}

// RunNative runs the cases that apply to native twins against n.
func RunNative(t *testing.T, n Native) {
	t.Helper()
	if n.New == nil {
		t.Fatalf("native backend %q: Native.New is nil", n.Name)
	}
	for _, c := range nativeCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, n) })
	}
}
