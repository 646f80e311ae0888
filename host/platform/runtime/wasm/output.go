package wasm

import (
	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/guestout"
)

// Bounds on what a guest can make the host log: its stdout and stderr
// lines and its log calls alike (package guestout, shared with the
// wasmtime backend, applies them). Output past a bound is dropped (and
// the drop reported at most once per second per module), so a guest
// writing in a loop costs the host neither memory nor a flood of log
// lines.
const (
	// MaxOutputLine cuts longer lines (and log messages).
	MaxOutputLine = guestout.MaxLine
	// MaxOutputPerCall is what one call into a guest may log.
	MaxOutputPerCall = guestout.MaxPerCall
	// MaxOutputPerSecond is what all instances of a module may log per
	// second (with a burst of as much).
	MaxOutputPerSecond = guestout.MaxPerSecond
)

// Stream indexes of a guest's standard output and error.
const (
	streamStdout = guestout.Stdout
	streamStderr = guestout.Stderr
)

// output is one instance's guest output (guestout.Output), bound at each
// call to its backend's logger and per-module budget.
type output struct {
	backend *Backend
	g       guestout.Output
}

// startCall binds the output and resets the per-call state.
func (o *output) startCall() {
	o.g.Bind(&o.backend.output, o.backend.log)
	o.g.StartCall()
}

// endCall reports dropped output (rate-limited).
func (o *output) endCall() { o.g.EndCall() }

// emit logs one line if the call's and the module's budgets allow.
func (o *output) emit(level hclog.Level, msg string, args ...interface{}) {
	o.g.Emit(level, msg, args...)
}

// write takes a chunk of a stream (see guestout.Output.Write).
func (o *output) write(stream int, p []byte) { o.g.Write(stream, p) }

// log implements the wasmsched.log import for this instance.
func (o *output) log(level abi.LogLevel, msg []byte) { o.g.Log(level, msg) }

// streamWriter is the io.Writer behind a guest's stdout or stderr. After
// the call's deadline it aborts the call (see instance.abortIfExpired)
// rather than let a guest spend host time writing.
type streamWriter struct {
	inst   *instance
	stream int
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.inst.abortIfExpired()
	w.inst.out.write(w.stream, p)
	return len(p), nil
}
