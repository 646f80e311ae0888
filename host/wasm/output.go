package wasm

import (
	"bytes"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/policy"
)

// Bounds on what a guest can make the host log: its stdout and stderr
// lines and its log calls alike. Output past a bound is dropped (and the
// drop reported at most once per second per module), so a guest writing
// in a loop costs the host neither memory nor a flood of log lines.
const (
	// MaxOutputLine cuts longer lines (and log messages).
	MaxOutputLine = 1 << 10
	// MaxOutputPerCall is what one call into a guest may log.
	MaxOutputPerCall = 64 << 10
	// MaxOutputPerSecond is what all instances of a module may log per
	// second (with a burst of as much).
	MaxOutputPerSecond = 256 << 10
	// maxPanicMessage bounds the guest's last words kept for an error.
	maxPanicMessage = 512
	// lineOverhead is what a logged line costs on top of its text (the
	// logger's timestamp, level and fields), so empty lines are not free.
	lineOverhead = 64
)

// Stream indexes of a guest's standard output and error.
const (
	streamStdout = iota
	streamStderr
)

var streamNames = [...]string{"stdout", "stderr"}

// outputLimiter is a module's output budget per second, shared by its
// instances, and the count of what it dropped.
type outputLimiter struct {
	mu         sync.Mutex
	tokens     float64
	last       time.Time
	dropped    int64
	lastReport time.Time
}

// take spends n bytes of the budget, or reports that there is not enough.
func (l *outputLimiter) take(n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.last.IsZero() {
		l.tokens = MaxOutputPerSecond
	} else {
		l.tokens += now.Sub(l.last).Seconds() * MaxOutputPerSecond
		if l.tokens > MaxOutputPerSecond {
			l.tokens = MaxOutputPerSecond
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
func (l *outputLimiter) drop(n int) int64 {
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

// output is one instance's guest output: partial lines of each stream,
// what the current call has logged, and the call's last words on stderr
// (for the error of a call that fails).
type output struct {
	backend   *Backend
	partial   [2][]byte
	cut       [2]bool // the partial line was cut: skip the rest of it
	used      int     // bytes logged during the current call
	dropped   int     // bytes dropped during the current call
	panicLine string  // first "panic: …" or "fatal error: …" line of the call, either stream
	lastLine  string  // last non-empty stderr line of the call
}

// startCall resets the per-call state.
func (o *output) startCall() {
	o.used, o.dropped = 0, 0
	o.panicLine, o.lastLine = "", ""
}

// endCall reports dropped output (rate-limited).
func (o *output) endCall() {
	if o.dropped == 0 {
		return
	}
	if n := o.backend.output.drop(o.dropped); n > 0 {
		o.backend.log.Warn("guest output over its limits, dropped",
			"bytes", n, "per_call", MaxOutputPerCall, "per_second", MaxOutputPerSecond)
	}
	o.dropped = 0
}

// emit logs one line if the call's and the module's budgets allow.
func (o *output) emit(level hclog.Level, msg string, args ...interface{}) {
	n := len(msg) + lineOverhead
	if o.used+n > MaxOutputPerCall || !o.backend.output.take(n) {
		o.dropped += n
		return
	}
	o.used += n
	o.backend.log.Log(level, msg, args...)
}

// write takes a chunk of a stream, logging each complete line (cut at
// MaxOutputLine) and keeping the guest's last words. Once the call has
// produced its budget's worth of lines (logged or dropped), the rest is
// only skimmed.
func (o *output) write(stream int, p []byte) {
	for len(p) > 0 && o.used+o.dropped < MaxOutputPerCall {
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
		if room := MaxOutputLine - len(buf); len(seg) > room {
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
func (o *output) skim(stream int, p []byte) {
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
			o.panicLine = oneLine(strings.TrimSpace(string(line)), maxPanicMessage)
		}
	}
	if stream != streamStderr {
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
			o.lastLine = oneLine(t, maxPanicMessage)
			return
		}
	}
}

// line logs and clears a stream's line (cut: the line was longer).
func (o *output) line(stream int, cut bool) {
	text := string(o.partial[stream])
	o.partial[stream] = o.partial[stream][:0]
	o.note(stream, text)
	// A guest's line reaches operators' terminals and log pipelines: no
	// control characters or escape sequences pass (policy.GuestText).
	text = policy.GuestText(text)
	if cut {
		o.emit(hclog.Info, text+" [line cut]", "stream", streamNames[stream])
		return
	}
	o.emit(hclog.Info, text, "stream", streamNames[stream])
}

// note keeps what a failing call's error should quote: a panic line on
// either stream (Go panics on stderr, TinyGo on stdout), else the last
// line of stderr.
func (o *output) note(stream int, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	if o.panicLine == "" && (strings.HasPrefix(text, "panic: ") || strings.HasPrefix(text, "fatal error: ")) {
		o.panicLine = oneLine(text, maxPanicMessage)
	}
	if stream == streamStderr {
		o.lastLine = oneLine(text, maxPanicMessage)
	}
}

// lastWords is what the guest said on stderr before failing: its panic
// line if it printed one, else its last line (an unfinished one counts).
// panicked tells which.
func (o *output) lastWords() (text string, panicked bool) {
	if o.panicLine != "" {
		return o.panicLine, true
	}
	for _, p := range o.partial {
		if line := strings.TrimSpace(string(p)); strings.HasPrefix(line, "panic: ") {
			return oneLine(line, maxPanicMessage), true
		}
	}
	if p := strings.TrimSpace(string(o.partial[streamStderr])); p != "" {
		return oneLine(p, maxPanicMessage), false
	}
	return o.lastLine, false
}

// log implements the wasmsched.log import for this instance.
func (o *output) log(level abi.LogLevel, msg []byte) {
	cut := len(msg) > MaxOutputLine
	if cut {
		msg = msg[:MaxOutputLine]
	}
	text := string(msg)
	suffix := ""
	if cut {
		suffix = " [line cut]"
	}
	if i := strings.IndexByte(text, abi.LogPluginSeparator); i > 0 {
		o.emit(policy.HclogLevel(level), policy.GuestText(text[i+1:])+suffix, "plugin", policy.GuestText(text[:i]))
		return
	}
	o.emit(policy.HclogLevel(level), policy.GuestText(text)+suffix)
}

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

// oneLine makes guest text safe for a one-line message: control
// characters become spaces, invalid UTF-8 is replaced, and it is cut to
// max bytes on a rune boundary.
func oneLine(s string, max int) string {
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
