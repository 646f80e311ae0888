// Package guestout is what a Wasm backend does with a guest's output —
// its stdout and stderr lines and its wasmsched.log calls — whatever
// runtime runs the guest: lines are tagged with the module (and plugin),
// made safe to print, and bounded per line, per call and per second; the
// guest's last words on stderr (a Go or TinyGo panic message) are kept so
// that a failing call's error can quote them on one line.
//
// host/platform/runtime/wasm (wazero) and host/platform/runtime/wasmtime share it, so a guest's output reads
// and is bounded the same on either runtime.
package guestout

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// Bounds on what a guest can make the host log: its stdout and stderr
// lines and its log calls alike. Output past a bound is dropped (and the
// drop reported at most once per second per module), so a guest writing
// in a loop costs the host neither memory nor a flood of log lines.
const (
	// MaxLine cuts longer lines (and log messages).
	MaxLine = 1 << 10
	// MaxPerCall is what one call into a guest may log.
	MaxPerCall = 64 << 10
	// MaxPerSecond is what all instances of a module may log per second
	// (with a burst of as much).
	MaxPerSecond = 256 << 10
	// maxPanicMessage bounds the guest's last words kept for an error.
	maxPanicMessage = 512
	// lineOverhead is what a logged line costs on top of its text (the
	// logger's timestamp, level and fields), so empty lines are not free.
	lineOverhead = 64
)

// Stream indexes of a guest's standard output and error.
const (
	Stdout = iota
	Stderr
)

var streamNames = [...]string{"stdout", "stderr"}

// Budget is a module's output budget per second, shared by its instances,
// and the count of what it dropped. The zero value is ready to use.
type Budget struct {
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	dropped    int64
	lastReport time.Time
}

// take spends n bytes of the budget, or reports that there is not enough.
func (l *Budget) take(n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.last.IsZero() {
		l.tokens = MaxPerSecond
	} else {
		l.tokens += now.Sub(l.last).Seconds() * MaxPerSecond
		if l.tokens > MaxPerSecond {
			l.tokens = MaxPerSecond
		}
	}
	l.last = now
	if float64(n) > l.tokens {
		return false
	}
	l.tokens -= float64(n)
	return true
}

// drop counts n dropped bytes and returns how many to report now (0 when
// the last report is less than a second old).
func (l *Budget) drop(n int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropped += int64(n)
	now := time.Now()
	if l.dropped == 0 || now.Sub(l.lastReport) < time.Second {
		return 0
	}
	d := l.dropped
	l.dropped, l.lastReport = 0, now
	return d
}

// Output is one instance's guest output: partial lines of each stream,
// what the current call has logged, and the call's last words on stderr
// (for the error of a call that fails). Bind it to its module's budget
// and logger before a call; one call at a time uses it.
type Output struct {
	budget    *Budget
	log       hclog.Logger
	partial   [2][]byte
	cut       [2]bool // the partial line was cut: skip the rest of it
	used      int     // bytes logged during the current call
	dropped   int     // bytes dropped during the current call
	panicLine string  // first "panic: …" or "fatal error: …" line of the call, either stream
	lastLine  string  // last non-empty stderr line of the call
}

// Bind sets where the output goes: the module's budget and its logger
// (already tagged with the module).
func (o *Output) Bind(b *Budget, log hclog.Logger) { o.budget, o.log = b, log }

// StartCall resets the per-call state.
func (o *Output) StartCall() {
	o.used, o.dropped = 0, 0
	o.panicLine, o.lastLine = "", ""
}

// EndCall reports dropped output (rate-limited).
func (o *Output) EndCall() {
	if o.dropped == 0 {
		return
	}
	if n := o.budget.drop(o.dropped); n > 0 {
		o.log.Warn("guest output over its limits, dropped",
			"bytes", n, "per_call", MaxPerCall, "per_second", MaxPerSecond)
	}
	o.dropped = 0
}

// Emit logs one line if the call's and the module's budgets allow.
func (o *Output) Emit(level hclog.Level, msg string, args ...interface{}) {
	n := len(msg) + lineOverhead
	if o.used+n > MaxPerCall || !o.budget.take(n) {
		o.dropped += n
		return
	}
	o.used += n
	o.log.Log(level, msg, args...)
}

// Write takes a chunk of a stream, logging each complete line (cut at
// MaxLine) and keeping the guest's last words. Once the call has produced
// its budget's worth of lines (logged or dropped), the rest is only
// skimmed.
func (o *Output) Write(stream int, p []byte) {
	for len(p) > 0 && o.used+o.dropped < MaxPerCall {
		seg := p
		i := bytes.IndexByte(p, '\n')
		if i >= 0 {
			seg, p = p[:i], p[i+1:]
		} else {
			p = nil
		}
		if o.cut[stream] {
			// The rest of a line already logged cut.
			o.cut[stream] = i < 0
			continue
		}
		buf := o.partial[stream]
		if room := MaxLine - len(buf); len(seg) > room {
			o.partial[stream] = append(buf, seg[:room]...)
			o.line(stream, true)
			o.cut[stream] = i < 0
			continue
		}
		o.partial[stream] = append(buf, seg...)
		if i >= 0 {
			o.line(stream, false)
		}
	}
	if len(p) > 0 {
		o.skim(stream, p)
	}
}

var panicPrefix = []byte("panic: ")

// skim drops output past the call's budget in time linear in its size
// (with no per-line work), still keeping stderr's last words.
func (o *Output) skim(stream int, p []byte) {
	o.dropped += len(p)
	o.partial[stream], o.cut[stream] = o.partial[stream][:0], false
	if o.panicLine == "" {
		if j := bytes.Index(p, panicPrefix); j >= 0 {
			line := p[j:]
			if k := bytes.IndexByte(line, '\n'); k >= 0 {
				line = line[:k]
			}
			if len(line) > 2*maxPanicMessage {
				line = line[:2*maxPanicMessage]
			}
			o.panicLine = OneLine(strings.TrimSpace(string(line)), maxPanicMessage)
		}
	}
	if stream != Stderr {
		return
	}
	tail := p
	if len(tail) > 2*maxPanicMessage {
		tail = tail[len(tail)-2*maxPanicMessage:]
	}
	for len(tail) > 0 {
		line := tail
		if k := bytes.LastIndexByte(tail, '\n'); k >= 0 {
			line, tail = tail[k+1:], tail[:k]
		} else {
			tail = nil
		}
		if t := strings.TrimSpace(string(line)); t != "" {
			o.lastLine = OneLine(t, maxPanicMessage)
			return
		}
	}
}

// line logs and clears a stream's line (cut: the line was longer).
func (o *Output) line(stream int, cut bool) {
	text := string(o.partial[stream])
	o.partial[stream] = o.partial[stream][:0]
	o.note(stream, text)
	// A guest's line reaches operators' terminals and log pipelines: no
	// control characters or escape sequences pass (guest.Text).
	text = guest.Text(text)
	if cut {
		o.Emit(hclog.Info, text+" [line cut]", "stream", streamNames[stream])
		return
	}
	o.Emit(hclog.Info, text, "stream", streamNames[stream])
}

// note keeps what a failing call's error should quote: a panic line on
// either stream (Go panics on stderr, TinyGo on stdout), else the last
// line of stderr.
func (o *Output) note(stream int, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if o.panicLine == "" && (strings.HasPrefix(text, "panic: ") || strings.HasPrefix(text, "fatal error: ")) {
		o.panicLine = OneLine(text, maxPanicMessage)
	}
	if stream == Stderr {
		o.lastLine = OneLine(text, maxPanicMessage)
	}
}

// LastWords is what the guest said on stderr before failing: its panic
// line if it printed one, else its last line (an unfinished one counts).
// panicked tells which.
func (o *Output) LastWords() (text string, panicked bool) {
	if o.panicLine != "" {
		return o.panicLine, true
	}
	for _, p := range o.partial {
		if line := strings.TrimSpace(string(p)); strings.HasPrefix(line, "panic: ") {
			return OneLine(line, maxPanicMessage), true
		}
	}
	if p := strings.TrimSpace(string(o.partial[Stderr])); p != "" {
		return OneLine(p, maxPanicMessage), false
	}
	return o.lastLine, false
}

// Log implements the wasmsched.log import for this instance. msg may be
// one byte longer than MaxLine (a backend reads at most that much), so
// that the cut shows.
func (o *Output) Log(level abi.LogLevel, msg []byte) {
	cut := len(msg) > MaxLine
	if cut {
		msg = msg[:MaxLine]
	}
	text := string(msg)
	suffix := ""
	if cut {
		suffix = " [line cut]"
	}
	if i := strings.IndexByte(text, abi.LogPluginSeparator); i > 0 {
		o.Emit(guest.HclogLevel(level), guest.Text(text[i+1:])+suffix, "plugin", guest.Text(text[:i]))
		return
	}
	o.Emit(guest.HclogLevel(level), guest.Text(text)+suffix)
}

// DescribeTrap says in one line why guest code trapped, given the
// runtime's one-line description of the trap ("wasm error: unreachable"),
// where it happened (TrapSite; "" when unknown) and the guest's memory
// after the call: with the guest's panic message when it printed one
// before trapping, else its last stderr line, else the function that
// trapped — all a module built with TinyGo's -panic=trap (as the builtin
// bundles are) leaves to go on. A guest that ran out of memory says so
// first (see OutOfMemory).
func (o *Output) DescribeTrap(trap, site string, mem Memory) string {
	words, panicked := o.LastWords()
	var why string
	switch {
	case panicked:
		why = fmt.Sprintf("guest panicked: %s (%s)", strings.TrimPrefix(words, "panic: "), trap)
	case words != "":
		why = fmt.Sprintf("%s (guest stderr: %s)", trap, words)
	case site != "":
		why = fmt.Sprintf("%s in function %s", trap, site)
	default:
		why = trap
	}
	if oom := OutOfMemory(words, site, mem); oom != "" {
		return oom + ": " + why
	}
	return why
}

// Memory is what a backend knows of a failed call's guest memory, for
// telling a guest that ran out of memory from one that failed otherwise.
type Memory struct {
	// Size is the memory's size after the call, Limit the most it may
	// grow to (the module's memoryLimit in whole pages), in bytes.
	Size, Limit uint64
	// GrowRefused says the guest's last memory.grow returned -1: it asked
	// for more memory than the limit leaves (the rewritten module records
	// the result, see wasm.GrowGlobal).
	GrowRefused bool
}

// wasmPage is the unit linear memory grows by.
const wasmPage = 64 << 10

// tinyGoAllocSites are the functions of TinyGo's allocator a -panic=trap
// build traps in when the heap cannot grow (its "out of memory" panic,
// inlined as an unreachable).
var tinyGoAllocSites = map[string]bool{"runtime.alloc": true}

// OutOfMemory returns, when a failed call ran out of guest memory, the
// words to say so with ("guest out of memory (memoryLimit 64 MiB
// reached)"), or "". The evidence, any of: the guest's last memory.grow
// was refused; the call trapped in TinyGo's allocator (site); the guest's
// last words (words) say so — TinyGo's and Go's "out of memory", Rust's
// "memory allocation of N bytes failed". A guest whose memory is at its
// limit is told so; one under it (TinyGo doubles its memory, so a
// non-power-of-two limit stops it short) is told both sizes.
func OutOfMemory(words, site string, mem Memory) string {
	if !mem.GrowRefused && !tinyGoAllocSites[site] && !saysOutOfMemory(words) {
		return ""
	}
	switch {
	case mem.Limit == 0:
		return "guest out of memory"
	case mem.Size+wasmPage > mem.Limit:
		return fmt.Sprintf("guest out of memory (memoryLimit %s reached)", Bytes(mem.Limit))
	case mem.GrowRefused:
		return fmt.Sprintf("guest out of memory (memory %s, memoryLimit %s: a memory.grow past the limit was refused)",
			Bytes(mem.Size), Bytes(mem.Limit))
	}
	return fmt.Sprintf("guest out of memory (memory %s, memoryLimit %s)", Bytes(mem.Size), Bytes(mem.Limit))
}

// saysOutOfMemory reports whether a guest's last words are an
// allocator's giving up.
func saysOutOfMemory(words string) bool {
	if strings.Contains(words, "out of memory") {
		return true
	}
	_, after, ok := strings.Cut(words, "memory allocation of ")
	return ok && strings.Contains(after, " failed")
}

// Bytes formats a memory size for a message: in MiB ("31.5 MiB"), or in
// KiB under 1 MiB (memory sizes are whole 64 KiB pages, exact either way).
func Bytes(n uint64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', -1, 64) + " MiB"
	case n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// maxSite bounds a trap site's function name in a message: names come
// from the module's name section, which the module's author controls.
const maxSite = 200

// wazeroFrame is one frame line of wazero's stack trace:
// "<module>.<function>(<param types>) <result types>".
var wazeroFrame = regexp.MustCompile(`^(.*)\((?:[a-z0-9]+(?:,[a-z0-9]+)*)?\)(?: [a-z0-9(),]*)?$`)

// TrapSite finds the innermost guest function in a runtime's full trap
// text — wazero's "wasm stack trace:" or wasmtime's "wasm backtrace:" —
// made safe for a one-line message, or "" when the text names none.
func TrapSite(text string) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if i+1 >= len(lines) {
			break
		}
		frame := strings.TrimSpace(lines[i+1])
		line = strings.TrimSpace(line)
		switch {
		case line == "wasm stack trace:": // wazero
			m := wazeroFrame.FindStringSubmatch(frame)
			if m == nil {
				return ""
			}
			name := m[1]
			if j := strings.IndexByte(name, '.'); j >= 0 && !strings.ContainsAny(name[:j], "(*/") {
				name = name[j+1:] // the module's name, before the first dot
			}
			return OneLine(name, maxSite)
		case strings.HasSuffix(line, "wasm backtrace:"): // wasmtime: "0: 0x1f6b - module!function"
			_, after, ok := strings.Cut(frame, " - ")
			if !ok {
				return ""
			}
			if _, fn, ok := strings.Cut(after, "!"); ok {
				after = fn
			}
			// An unnamed function reads as on wazero: "$3", the text
			// format's way of naming function 3.
			if n, ok := strings.CutPrefix(after, "<wasm function "); ok && strings.HasSuffix(n, ">") {
				after = "$" + strings.TrimSuffix(n, ">")
			}
			return OneLine(after, maxSite)
		}
	}
	return ""
}

// DescribeExit says in one line that the guest called WASI's proc_exit
// (Go exits 2 on a panic), quoting its panic message or last words; mem
// is the guest's memory after the call: a Go guest also exits when it
// runs out of memory, which is then said first (see OutOfMemory).
func (o *Output) DescribeExit(code uint32, mem Memory) string {
	words, panicked := o.LastWords()
	var why string
	switch {
	case panicked:
		why = fmt.Sprintf("guest panicked: %s (exit code %d)", strings.TrimPrefix(words, "panic: "), code)
	case words != "":
		why = fmt.Sprintf("guest exited (code %d): %s", code, words)
	default:
		why = fmt.Sprintf("guest exited (code %d); a Go guest exits so on a panic or at its memory cap (%s)",
			code, Bytes(mem.Limit))
	}
	if oom := OutOfMemory(words, "", mem); oom != "" {
		return oom + ": " + why
	}
	return why
}

// OneLine makes guest text safe for a one-line message: control
// characters become spaces, invalid UTF-8 is replaced, and it is cut to
// max bytes on a rune boundary.
func OneLine(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// FirstLine cuts s at its first newline (a runtime's error text may carry
// a stack trace after it).
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
