package framework

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestIgnoredFailuresAreLoggedRateLimited: the first ignored failure of a
// plugin logs at once with its plugin, point and (cleaned) error; more
// within FailureLogInterval are only counted, and the next line says how
// many were left out. Plugins are limited separately.
func TestIgnoredFailuresAreLoggedRateLimited(t *testing.T) {
	var out bytes.Buffer
	l := newFailureLog(hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Debug}).With("profile", "p"))
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }

	l.report("A", "Filter", errors.New("trap\nwith\x1b[31m a stack"))
	for i := 0; i < 5; i++ {
		now = now.Add(time.Second)
		l.report("A", "Filter", errors.New("again"))
	}
	l.report("B", "Score", errors.New("other plugin"))
	now = now.Add(FailureLogInterval)
	l.report("A", "Filter", errors.New("later"))

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3 (A, B, A again):\n%s", len(lines), out.String())
	}
	for _, want := range []string{`plugin=A`, `extension_point=Filter`, `profile=p`, `"trap with a stack"`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("first line %q lacks %s", lines[0], want)
		}
	}
	if !strings.Contains(lines[1], "plugin=B") || strings.Contains(lines[1], "suppressed") {
		t.Errorf("second line %q: want B's own first line", lines[1])
	}
	if !strings.Contains(lines[2], "plugin=A") || !strings.Contains(lines[2], "suppressed=5") {
		t.Errorf("third line %q: want A again with suppressed=5", lines[2])
	}
}
