//go:build wasmtime

package wasmtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync/atomic"
	"time"

	wt "github.com/bytecodealliance/wasmtime-go/v44"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/guestout"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// instance is one module instance in a store of its own. It runs one call
// at a time (guest.Instance).
type instance struct {
	backend *Backend
	store   *wt.Store
	mem     *wt.Memory
	// grow is the module's record of its last memory.grow
	// (wasm.GrowGlobal); nil when the module has no memory.grow.
	grow  *wt.Global
	fns   [4]*wt.Func // the exports in calls, kept for benchmarks of wasmtime-go's own Func.Call
	calls callBlock
	out   guestout.Output
	state atomic.Int32 // stateIdle, stateBusy, …

	// How a call is bounded: the epochs it may run past the current one
	// and its fuel, the call timeout's plus the push allowance while the
	// host pushes state (push, see AllowPush); rearm says the call block
	// does not have them yet.
	epochs, fuel uint64
	push         time.Duration
	rearm        bool

	// Per call: the epoch past which host imports abort it, and why it
	// stopped when a host import ended it.
	deadline uint64
	expired  bool
	exited   bool
	exitCode uint32

	// WASI state: wazero's defaults (a fake clock advancing 1 ms per
	// reading, a random source seeded 42).
	walltime int64
	nanotime int64
	rand     *rand.Rand
}

// Initial readings of the fake clocks, as wazero's: midnight UTC
// 2022-01-01 for the wall clock, zero for the monotonic one, each reading
// 1 ms later than the last.
const (
	fakeEpochNanos = 1640995200000 * 1e6
	fakeTick       = 1e6
	randomSeed     = 42
)

// Instance states. Closing an instance while a call runs in it (another
// goroutine closing a pool, say) must not free the store under the call:
// the call frees it as it returns.
const (
	stateIdle       int32 = iota
	stateBusy             // a call runs
	stateCloseAfter       // a call runs; Close was called
	stateClosed
)

// errClosedDuringCall fails a call whose instance was closed meanwhile.
var errClosedDuringCall = errors.New("instance closed during the call")

func newInstance(b *Backend) *instance {
	inst := &instance{
		backend:  b,
		calls:    newCallBlock(),
		walltime: fakeEpochNanos - fakeTick,
		nanotime: -fakeTick,
		rand:     rand.New(rand.NewSource(randomSeed)),
	}
	inst.out.Bind(&b.output, b.log)
	return inst
}

// invoke runs one export under the call deadline. Its errors are marked
// for the pool's counters: guest.ErrDeadlineExceeded when the deadline
// stopped the guest, guest.ErrGuestTrap for any other failure of guest
// code (a trap, a panic, an exit, the stack bound or out-of-memory).
func (i *instance) invoke(fn int, what string) error {
	if !i.state.CompareAndSwap(stateIdle, stateBusy) {
		return fmt.Errorf("%s: instance closed or already in a call", what)
	}
	if i.rearm {
		i.calls.arm(i.backend.runtime.interrupt, i.epochs, i.fuel)
		i.rearm = false
	}
	i.out.StartCall()
	i.expired, i.exited = false, false
	i.deadline = i.backend.runtime.epoch.Load() + i.epochs
	ok := i.calls.call(fn)
	i.out.EndCall()
	var err error
	if !ok {
		err = i.failed(what)
	}
	if !i.state.CompareAndSwap(stateBusy, stateIdle) {
		i.free()
		i.state.Store(stateClosed)
		return fmt.Errorf("%s: %w", what, errClosedDuringCall)
	}
	return err
}

// AllowPush implements guest.Pushable: the calls that follow, until
// AllowPush(0), run under the call timeout plus extra, in epochs and (under
// InterruptFuel) in fuel. The call block takes the new bounds when the
// next call starts, in invoke, where a Close from another goroutine
// cannot free it meanwhile.
func (i *instance) AllowPush(extra time.Duration) {
	if extra < 0 {
		extra = 0
	}
	if extra == i.push {
		return
	}
	i.push = extra
	i.epochs, i.fuel = i.backend.epochs, i.backend.fuel
	if extra > 0 {
		i.epochs, i.fuel = budget(i.backend.limits.CallTimeout + extra)
	}
	i.rearm = true
}

// failed describes the last call's failure in one line.
func (i *instance) failed(what string) error {
	code, msg := i.calls.failure()
	lim := i.backend.limits
	switch {
	case i.expired || code == trapInterrupt || code == trapOutOfFuel:
		return guest.DeadlineExceeded(what, lim.CallTimeout, i.push)
	case i.exited:
		return guest.Fault(guest.ErrGuestTrap,
			&guestError{msg: what + ": " + i.out.DescribeExit(i.exitCode, i.memoryState()), err: errors.New(msg)})
	case code == trapStackOverflow:
		return guest.Fault(guest.ErrGuestTrap, &guestError{
			msg: fmt.Sprintf("%s: call stack exhausted: more than %d KiB of Wasm stack (runaway recursion?) (%s)",
				what, MaxWasmStack>>10, trapText(code, msg)),
			err: errors.New(msg)})
	}
	return guest.Fault(guest.ErrGuestTrap,
		&guestError{msg: what + ": " + i.out.DescribeTrap(trapText(code, msg), guestout.TrapSite(msg), i.memoryState()), err: errors.New(msg)})
}

// memoryState is the guest's memory after a failed call, for telling one that
// ran out of it (guestout.OutOfMemory).
func (i *instance) memoryState() guestout.Memory {
	size, limit := i.MemoryBytes()
	return guestout.Memory{Size: size, Limit: limit,
		GrowRefused: i.grow != nil && i.grow.Get(i.store).I32() == -1}
}

// trapWords are wazero's words for the traps both runtimes raise, so a
// failure reads the same whichever runtime ran the module.
var trapWords = map[int]string{
	trapStackOverflow:   "stack overflow",
	trapMemoryOOB:       "out of bounds memory access",
	trapHeapMisaligned:  "unaligned atomic",
	trapTableOOB:        "invalid table access",
	trapIndirectNull:    "invalid table access",
	trapBadSignature:    "indirect call type mismatch",
	trapIntegerOverflow: "integer overflow",
	trapDivideByZero:    "integer divide by zero",
	trapBadConversion:   "invalid conversion to integer",
	trapUnreachable:     "unreachable",
	trapNullReference:   "null reference",
}

// trapText is a trap in one line: "wasm error: …".
func trapText(code int, msg string) string {
	if w, ok := trapWords[code]; ok {
		return "wasm error: " + w
	}
	msg = strings.TrimPrefix(strings.TrimSpace(guestout.FirstLine(msg)), "wasm trap: ")
	if msg == "" {
		msg = "trap"
	}
	return "wasm error: " + guestout.OneLine(msg, 256)
}

// guestError is a failure of guest code, described in one line; it wraps
// Wasmtime's message (which may carry a backtrace).
type guestError struct {
	msg string
	err error
}

func (e *guestError) Error() string { return e.msg }
func (e *guestError) Unwrap() error { return e.err }

// expiredNow tells a host import whether the call's deadline has passed;
// once it has, the import traps and the call reports the deadline.
func (i *instance) expiredNow() bool {
	if i.backend.runtime.epoch.Load() >= i.deadline {
		i.expired = true
	}
	return i.expired
}

func (i *instance) ABIVersion(ctx context.Context) (uint32, error) {
	if err := i.invoke(fnVersion, abi.ExportABIVersion); err != nil {
		return 0, err
	}
	return uint32(i.calls.result0()), nil
}

func (i *instance) Input(ctx context.Context, n int) ([]byte, error) {
	if n < 0 || uint64(n) > i.backend.limits.MemoryBytes {
		return nil, fmt.Errorf("input of %d bytes exceeds the module's memory cap", n)
	}
	i.calls.setArg(0, uint32(n))
	if err := i.invoke(fnInput, abi.ExportInput); err != nil {
		return nil, err
	}
	ptr := uint32(i.calls.result0())
	buf, ok := memRange(i.calls.memory(), ptr, uint32(n))
	if !ok {
		return nil, fmt.Errorf("%s returned a buffer [%d, +%d) outside guest memory", abi.ExportInput, ptr, n)
	}
	return buf, nil
}

func (i *instance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	i.calls.setArg(0, uint32(fn))
	i.calls.setArg(1, arg)
	i.calls.setArg(2, uint32(n))
	if err := i.invoke(fnCall, abi.ExportCall); err != nil {
		return nil, err
	}
	packed := i.calls.result0()
	ptr, size := uint32(packed>>32), uint32(packed)
	reply, ok := memRange(i.calls.memory(), ptr, size)
	if !ok {
		return nil, fmt.Errorf("reply [%d, +%d) outside guest memory", ptr, size)
	}
	return reply, nil
}

// MemoryBytes implements guest.LinearMemory: the guest memory's size
// after the last call and the most it may grow to.
func (i *instance) MemoryBytes() (size, limit uint64) {
	return uint64(len(i.calls.memory())), uint64(memoryCap(i.backend.limits))
}

// memRange is mem[ptr:ptr+n] with its capacity cut there, if in range.
func memRange(mem []byte, ptr, n uint32) ([]byte, bool) {
	end := uint64(ptr) + uint64(n)
	if end > uint64(len(mem)) {
		return nil, false
	}
	return mem[ptr:end:end], true
}

// Close releases the instance's store (its memory and everything in it),
// at once or, when a call runs in it, as that call returns.
func (i *instance) Close(ctx context.Context) error {
	for {
		switch i.state.Load() {
		case stateIdle:
			if i.state.CompareAndSwap(stateIdle, stateClosed) {
				i.free()
				return nil
			}
		case stateBusy:
			if i.state.CompareAndSwap(stateBusy, stateCloseAfter) {
				return nil
			}
		default:
			return nil
		}
	}
}

func (i *instance) free() {
	i.calls.free()
	if i.store != nil {
		i.store.Close()
	}
}
