package framework

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// FailureLogInterval is how often at most one plugin's ignored failures
// are logged: the first failure logs at once, later ones within the
// interval are counted and reported with the next line.
const FailureLogInterval = 10 * time.Second

// failureLog logs plugins' ignored failures, at most one line per plugin
// per FailureLogInterval, with the number of failures left out since the
// last line. Safe for concurrent use (preemption's dry runs filter from
// several goroutines).
type failureLog struct {
	log hclog.Logger
	now func() time.Time

	mu      sync.Mutex
	plugins map[string]*failureLogState
}

type failureLogState struct {
	last       time.Time
	suppressed int
}

func newFailureLog(log hclog.Logger) *failureLog {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &failureLog{log: log, now: time.Now, plugins: map[string]*failureLogState{}}
}

// report logs (or counts, within the interval) one ignored failure.
func (l *failureLog) report(plugin, point string, err error) {
	l.mu.Lock()
	st := l.plugins[plugin]
	if st == nil {
		st = &failureLogState{}
		l.plugins[plugin] = st
	}
	now := l.now()
	if !st.last.IsZero() && now.Sub(st.last) < FailureLogInterval {
		st.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := st.suppressed
	st.last, st.suppressed = now, 0
	l.mu.Unlock()
	args := []any{"plugin", plugin, "extension_point", point, "error", guest.Text(err.Error())}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	l.log.Warn("plugin failed; failurePolicy Ignore: going on without it", args...)
}

// pluginFailed applies p's failurePolicy to a failure of p at point:
// under Ignore it counts and logs the failure and returns nil (the caller
// goes on without the plugin), under Fail it returns err.
func (prof *Profile) pluginFailed(p *wasmPlugin, point string, err error) error {
	if !p.ignore {
		return err
	}
	prof.ignoredFailure(p.name, point, err)
	return nil
}

// ignoredFailure counts and logs a failure that Ignore let pass.
func (prof *Profile) ignoredFailure(plugin, point string, err error) {
	prof.metrics.IgnoredFailure(prof.Name, plugin, point)
	prof.failures.report(plugin, point, err)
}

// moduleWidePoint names a failed module-wide call for the
// extension_point label: the ABI function ("sync", "cycle",
// "push_state", ...) or "instance" when no instance could be had.
func moduleWidePoint(err error) string {
	var ce *guest.CallError
	if errors.As(err, &ce) {
		return ce.Func.String()
	}
	return "instance"
}
