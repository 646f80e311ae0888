package backendtest

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

var outputCases = []wasmCase{
	{"output/one long line is cut", longLine},
	{"output/many lines are bounded per call and per second", manyLines},
	{"output/terminal escapes never reach the log", escapes},
}

func longLine(t *testing.T, s *suite) {
	s.needLogs(t)
	inst, logs := s.instance(t, "hostile", wasm.Limits{CallTimeout: 10 * time.Second})
	if _, err := call(inst, hostileLongLine, 0); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, w := range []string{"[line cut]", "module=hostile", "stream=stderr"} {
		if !strings.Contains(out, w) {
			t.Errorf("the 48 MiB line's log does not say %q:\n%.300s", w, out)
		}
	}
	if len(out) > wasm.MaxOutputLine+512 {
		t.Errorf("one 48 MiB line logged %d bytes, want about %d", len(out), wasm.MaxOutputLine)
	}
}

func manyLines(t *testing.T, s *suite) {
	s.needLogs(t)
	inst, logs := s.instance(t, "hostile", wasm.Limits{CallTimeout: 10 * time.Second})
	start := time.Now()
	const calls = 8
	for i := 0; i < calls; i++ {
		if _, err := call(inst, hostileManyLines, 0); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	out := logs.String()
	// Each call writes 8 MiB in 2 Mi lines; what is logged is bounded by
	// the per-call budget and, over all calls, by the per-second one (a
	// line's budget counts its text, not the logger's timestamp and
	// fields, hence the factor).
	perSecond := float64(wasm.MaxOutputPerSecond) * (1 + elapsed.Seconds())
	if limit := 3 * min(perSecond, calls*wasm.MaxOutputPerCall); float64(len(out)) > limit {
		t.Errorf("%d calls logged %d KiB in %v, want at most %.0f KiB", calls, len(out)>>10, elapsed, limit/1024)
	}
	if !strings.Contains(out, "guest output over its limits, dropped") {
		t.Error("the dropped output was not reported")
	}
	if !strings.Contains(out, "module=hostile") {
		t.Errorf("the lines are not tagged with the module:\n%.300s", out)
	}
}

func escapes(t *testing.T, s *suite) {
	s.needLogs(t)
	inst, logs := s.instance(t, "traps", wasm.Limits{CallTimeout: 10 * time.Second})
	if _, err := call(inst, trapsEscapes, 0); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "evil") || !strings.Contains(out, "end") {
		t.Fatalf("the guest's line is missing:\n%q", out)
	}
	if strings.ContainsAny(out, "\x1b\x07\x00") {
		t.Errorf("a terminal escape or control character reached the log:\n%q", out)
	}
	for _, w := range []string{"module=traps", "stream=stdout"} {
		if !strings.Contains(out, w) {
			t.Errorf("the line is not tagged %q:\n%q", w, out)
		}
	}
}
