package eviction

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// A refusal (429) is reported as it arrives, forced or not: the Event
// names the budget and Retry-After, a log line is written at the default
// level (warn), and wasmsched_eviction_api_blocked_total{caller=eviction}
// counts it once.
func TestKillerReportsARefusalNamingTheBudget(t *testing.T) {
	for _, force := range []bool{false, true} {
		var logs bytes.Buffer
		e := newKillerEnv(t, func(o *KillerOptions) {
			o.Log = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})
		})
		e.api.goneOnKill = true
		p := killPodFixture("db", "u1", nil)
		e.api.add(p)
		e.api.evictErrs = []error{&podremoval.RefusedError{RetryAfter: 10 * time.Second, PDB: "db-pdb",
			Err: errors.New("evict pod ns/db: Cannot evict pod as it would violate the pod's disruption budget.")}}
		e.k.Submit([]KillRequest{{Pod: p, Policy: "mem", Reason: "why", ForceDelete: force}})
		e.run()
		if force {
			waitUntil(t, "the refusal", func() bool { return len(e.api.reasons()) > 0 })
			e.step(10 * time.Second)
		}
		waitUntil(t, "the killer to be idle", e.k.Idle)
		_, _, evs := e.api.snapshot()
		if len(evs) == 0 || evs[0].reason != ReasonEvictBlocked || !strings.Contains(evs[0].message, "PodDisruptionBudget db-pdb, retry after 10s") {
			t.Errorf("force=%v: events %+v, want EvictBlocked naming db-pdb and Retry-After first", force, evs)
		}
		if got := testmetrics.Value(t, e.reg, "wasmsched_eviction_api_blocked_total", testmetrics.Labels{"caller": metrics.CallerEviction}); got != 1 {
			t.Errorf("force=%v: wasmsched_eviction_api_blocked_total{caller=eviction} = %v, want 1", force, got)
		}
		if l := logs.String(); !strings.Contains(l, "[WARN]  the Eviction API refused the eviction (429)") ||
			!strings.Contains(l, "pdb=db-pdb") || !strings.Contains(l, "retry_after=10s") {
			t.Errorf("force=%v: warn log %q", force, l)
		}
	}
}
