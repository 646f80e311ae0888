package backendtest

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/internal/testlog"
)

// suite is one Run: the runtime under test and the big modules compiled
// once for all cases (Go builds take seconds to compile, more under
// -race).
type suite struct {
	rt     Runtime
	mu     sync.Mutex
	shared map[string]*sharedBackend
}

// sharedBackend is a module compiled once per Run, with the log its
// guests write to. done is closed once b or err is set.
type sharedBackend struct {
	done chan struct{}
	b    guest.Backend
	logs *testlog.Buffer
	err  error
}

func newSuite(t *testing.T, rt Runtime) *suite {
	s := &suite{rt: rt, shared: map[string]*sharedBackend{}}
	t.Cleanup(func() {
		for _, sb := range s.shared {
			<-sb.done // a prefetch still compiling
			if sb.b != nil {
				sb.b.Close(context.Background())
			}
		}
	})
	return s
}

// logging reports whether the runtime can hand the suite its modules' logs.
func (s *suite) logging() bool { return s.rt.CompileLogging != nil }

// needLogs skips a case that reads the guest's log when the runtime cannot
// give it.
func (s *suite) needLogs(t *testing.T) {
	t.Helper()
	if !s.logging() {
		t.Skipf("runtime %q: Runtime.CompileLogging is nil, so the guest's log cannot be checked", s.rt.Name)
	}
}

// compileFunc returns the runtime's Compile, logging to a fresh buffer
// when it can.
func (s *suite) compileFunc() (CompileFunc, *testlog.Buffer) {
	logs := &testlog.Buffer{}
	if s.rt.CompileLogging != nil {
		return s.rt.CompileLogging(hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})), logs
	}
	return s.rt.Compile, logs
}

// tryCompile compiles a module; the backend is closed when the test ends.
func (s *suite) tryCompile(t *testing.T, name string, bin []byte, lim wasm.Limits) (guest.Backend, *testlog.Buffer, error) {
	t.Helper()
	compile, logs := s.compileFunc()
	b, err := compile(context.Background(), name, bin, lim)
	if err != nil {
		return nil, logs, err
	}
	t.Cleanup(func() { b.Close(context.Background()) })
	return b, logs, nil
}

// compile compiles a module or fails the test.
func (s *suite) compile(t *testing.T, name string, bin []byte, lim wasm.Limits) (guest.Backend, *testlog.Buffer) {
	t.Helper()
	b, logs, err := s.tryCompile(t, name, bin, lim)
	if err != nil {
		t.Fatalf("%s: compile %s: %v", s.rt.Name, name, err)
	}
	return b, logs
}

// sharedCompile compiles a module (named name in its logs) once per Run
// under key; later calls reuse it. Its log is shared too: read it for
// lines only this case makes.
func (s *suite) sharedCompile(t *testing.T, key, name string, bin func() []byte, lim wasm.Limits) (guest.Backend, *testlog.Buffer) {
	t.Helper()
	sb, first := s.sharedEntry(key)
	if first {
		func() {
			defer close(sb.done) // also when bin fails the test
			sb.compile(s, name, bin(), lim)
		}()
	}
	<-sb.done
	if sb.err != nil {
		t.Fatalf("%s: compile %s: %v", s.rt.Name, key, sb.err)
	}
	if sb.b == nil { // the first caller failed to read the module
		t.Fatalf("%s: %s could not be read", s.rt.Name, key)
	}
	return sb.b, sb.logs
}

// prefetch starts compiling a module sharedCompile will ask for, in the
// background: the Go builds take seconds each (tens under -race), and
// compiling two at once uses both cores of a small machine.
func (s *suite) prefetch(key, name string, bin []byte, lim wasm.Limits) {
	sb, first := s.sharedEntry(key)
	if !first {
		return
	}
	go func() {
		defer close(sb.done)
		sb.compile(s, name, bin, lim)
	}()
}

// sharedEntry returns key's entry, and whether the caller is the first to
// ask (and so must compile it and close done).
func (s *suite) sharedEntry(key string) (*sharedBackend, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb, ok := s.shared[key]; ok {
		return sb, false
	}
	sb := &sharedBackend{done: make(chan struct{})}
	s.shared[key] = sb
	return sb, true
}

func (sb *sharedBackend) compile(s *suite, name string, bin []byte, lim wasm.Limits) {
	compile, logs := s.compileFunc()
	sb.logs = logs
	sb.b, sb.err = compile(context.Background(), name, bin, lim)
}

// instance returns a fresh instance of the test guest name, and the log
// its output goes to.
func (s *suite) instance(t *testing.T, name string, lim wasm.Limits) (guest.Instance, *testlog.Buffer) {
	t.Helper()
	b, logs := s.compile(t, name, Guest(t, name), lim)
	ctx := context.Background()
	inst, err := b.NewInstance(ctx)
	if err != nil {
		t.Fatalf("%s: new instance of %s: %v", s.rt.Name, name, err)
	}
	t.Cleanup(func() { inst.Close(ctx) })
	return inst, logs
}

// load loads a backend as a module of the given name.
func load(t *testing.T, b guest.Backend, cfg guest.PoolConfig) *guest.Pool {
	t.Helper()
	m, err := guest.Load(context.Background(), b, cfg)
	if err != nil {
		t.Fatalf("load %s: %v", cfg.Name, err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// allocatedDuring returns how many bytes the Go heap allocated while fn ran.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// call runs fn of a test guest with arg and no input.
func call(inst guest.Instance, fn abi.Func, arg uint32) ([]byte, error) {
	return inst.Call(context.Background(), fn, arg, 0)
}

// wantFault checks an error's kind and that it reads as one line holding
// every one of words.
func wantFault(t *testing.T, err error, kind error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the call succeeded; want %v saying %q", kind, words)
	}
	if kind != nil && !errors.Is(err, kind) {
		t.Errorf("err = %q: not %v", err, kind)
	}
	wantWords(t, err, words...)
}

// wantWords checks that err is one line holding every one of words.
func wantWords(t *testing.T, err error, words ...string) {
	t.Helper()
	msg := err.Error()
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("err = %q: does not say %q", msg, w)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("err = %q: more than one line", msg)
	}
}

// maxOverrun is the worst-case overrun of a deadline the suite holds a
// backend to (docs/ARCHITECTURE.md, "Sandbox guarantees"): generous, so
// that a loaded machine does not make the suite flaky.
const maxOverrun = time.Second
