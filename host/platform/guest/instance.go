// Package guest is the host side of a policy module: it drives the module
// through the ABI, whatever runs
// them: a Wasm instance (package wasm) or a native twin (package native).
//
// A Backend makes Instances of one module. Load checks the module once
// (ABI version, manifest, the plugins the caller needs, init with args) and
// returns a Pool that hands out Clients. A Client wraps one
// Instance with the typed calls of a cycle — Sync, StartCycle, PreFilter,
// Filter, PreScore, Score — and remembers which snapshot generation its
// guest mirror has reached, so each Sync sends only what changed.
package guest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/wasmsched/wasmsched/abi"
)

// Instance is one isolated copy of a policy module with its own memory
// and mirror. It runs one call at a time.
type Instance interface {
	// ABIVersion returns the packed version the module was built for.
	ABIVersion(ctx context.Context) (uint32, error)
	// Input returns a buffer of n bytes inside the instance; write the next
	// Call's input into it. Valid until the next Input or Call.
	Input(ctx context.Context, n int) ([]byte, error)
	// Call runs fn with arg on the n input bytes and returns the reply,
	// valid until the next Input or Call. An error means the instance is
	// unusable (trap, deadline, memory limit): close it.
	Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error)
	// Close releases the instance.
	Close(ctx context.Context) error
}

// LinearMemory is implemented by instances that run in a linear memory
// (the Wasm backends, not native twins). Pool.Put uses it to replace an
// instance whose memory has grown past its mirror (see Pool.Put), and
// to count the memory in wasmsched_module_memory_bytes.
type LinearMemory interface {
	// MemoryBytes is the memory's size now and the most it may grow to.
	MemoryBytes() (size, limit uint64)
}

// Pushable is implemented by instances whose call deadline the host can
// lengthen for a push: a call that hands the guest state the host holds
// (the cluster mirror, the eviction view, a vpod topology). A push costs
// time in proportion to the cluster, and moving the cluster into a fresh
// instance is the host's work, not a policy's, so the policy's call
// timeout alone must not cut it (at 5000 nodes and 50 000 pods a first
// sync takes a few hundred milliseconds on an idle machine, seconds on a
// busy one). The guest still runs the push, so its deadline stays finite:
// the call timeout plus an allowance in proportion to the bytes pushed
// (see PushAllowance). The Wasm backends implement it; a native twin,
// which has no deadline, does not need to.
type Pushable interface {
	// AllowPush gives the Input and Call calls that follow extra time on
	// top of the module's call timeout, until AllowPush(0).
	AllowPush(extra time.Duration)
}

// Backend makes instances of one module.
type Backend interface {
	// NewInstance returns a fresh, uninitialised instance.
	NewInstance(ctx context.Context) (Instance, error)
	// Close releases what the backend holds (compiled code).
	Close(ctx context.Context) error
}

// ErrInstanceBroken marks a call that failed in a way that leaves the
// instance unusable: a trap, a deadline, a memory limit, a malformed reply.
// The pool discards such an instance and makes a fresh one.
var ErrInstanceBroken = errors.New("policy instance broken")

// Kinds of guest failure a backend marks its errors with (see
// Fault), so the pool can count traps and deadlines apart from
// host-side refusals. Both also break the instance.
var (
	// ErrGuestTrap: the guest trapped (a panic, memory exhausted, an
	// invalid access) or, for a native twin, panicked.
	ErrGuestTrap = errors.New("guest trapped")
	// ErrDeadlineExceeded: the call ran past the module's call timeout and
	// was stopped.
	ErrDeadlineExceeded = errors.New("guest call deadline exceeded")
)

// DeadlineExceeded is the error a backend returns when a call's deadline
// stopped the guest in what (the export it ran), so every backend says it
// in the same words: the deadline, and for a push how it was made up.
func DeadlineExceeded(what string, timeout, extra time.Duration) error {
	if extra <= 0 {
		return Fault(ErrDeadlineExceeded, fmt.Errorf("%s: deadline of %s exceeded", what, timeout))
	}
	return Fault(ErrDeadlineExceeded, fmt.Errorf("%s: deadline of %s exceeded (the call timeout %s and %s allowed for the state the host pushed)",
		what, timeout+extra, timeout, extra))
}

// Fault marks err as a guest failure of the given kind
// (ErrGuestTrap or ErrDeadlineExceeded): errors.Is(result, kind) holds,
// and the message stays err's, which already says what happened.
func Fault(kind, err error) error {
	if err == nil {
		return nil
	}
	return &faultError{kind: kind, err: err}
}

type faultError struct{ kind, err error }

func (e *faultError) Error() string   { return e.err.Error() }
func (e *faultError) Unwrap() []error { return []error{e.kind, e.err} }

// CallError is a failed call into a module, naming the module, the
// function and the plugin. Is(ErrInstanceBroken) tells whether the
// instance was lost; otherwise the guest itself reported Err.
type CallError struct {
	Module string
	Func   abi.Func
	Plugin string // empty for module-wide calls
	Broken bool
	Err    error
}

// Error names the module, function and plugin, then what went wrong on
// one line: the cause may carry a guest's text (its error reply, its
// panic message), so it goes through Text, and a wasm stack trace
// (a list of frames, for logs at debug level via Unwrap) is left out.
func (e *CallError) Error() string {
	what := e.Func.String()
	if e.Plugin != "" {
		what = fmt.Sprintf("%s plugin %q", what, e.Plugin)
	}
	cause := "<nil>"
	if e.Err != nil {
		cause = Text(withoutStackTrace(e.Err.Error()))
	}
	if e.Broken {
		return fmt.Sprintf("module %q: %s: instance lost: %s", e.Module, what, cause)
	}
	return fmt.Sprintf("module %q: %s: %s", e.Module, what, cause)
}

// withoutStackTrace drops the "wasm stack trace:" line wazero adds to a
// trap's error and the indented frame lines after it, keeping any other
// line (such as a guest's panic message).
func withoutStackTrace(s string) string {
	i := strings.Index(s, "wasm stack trace:")
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(s[:i], "\n "))
	inTrace := true
	for _, line := range strings.Split(s[i:], "\n")[1:] {
		if inTrace && (strings.HasPrefix(line, "\t") || strings.HasPrefix(line, " ") || line == "") {
			continue
		}
		inTrace = false
		b.WriteString("\n")
		b.WriteString(line)
	}
	return b.String()
}

func (e *CallError) Unwrap() error { return e.Err }

// Is matches ErrInstanceBroken for broken-instance errors.
func (e *CallError) Is(target error) bool { return target == ErrInstanceBroken && e.Broken }
