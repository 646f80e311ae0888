package preemption

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

// refusingAPI is dryAPI refusing g2-n1 as kube-apiserver does (a
// RefusedError naming the budget, with Retry-After), recording Events.
type refusingAPI struct {
	dryAPI
	mu     sync.Mutex
	events []string
}

func (a *refusingAPI) answer(op string, v *abi.Pod) error {
	if err := a.callAPI.answer(op, v); err != nil {
		return &podremoval.RefusedError{PDB: "pdb-" + v.Name, RetryAfter: 10 * time.Second, Err: errors.New("Cannot evict pod as it would violate the pod's disruption budget.")}
	}
	return nil
}

func (a *refusingAPI) EvictPod(_ context.Context, v *abi.Pod, _ *int64) error {
	return a.answer("evict", v)
}
func (a *refusingAPI) EvictPodDryRun(_ context.Context, v *abi.Pod) error { return a.answer("dry", v) }
func (a *refusingAPI) Event(pod *abi.Pod, warning bool, reason, message string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if warning {
		reason = "Warning " + reason
	}
	a.events = append(a.events, pod.Name+" "+reason+": "+message)
}

// noDryRun hides refusingAPI's dry runs.
type noDryRun struct{ *refusingAPI }

func (noDryRun) EvictPodDryRun() {} // not podremoval.DryRunEvictor's method: no dry runs

// blockedCount counts EvictionBlocked.
type blockedCount struct {
	nopMetrics
	mu sync.Mutex
	n  int
}

func (m *blockedCount) EvictionBlocked() { m.mu.Lock(); defer m.mu.Unlock(); m.n++ }

// A 429 from the Eviction API is reported on the victim as it arrives: a
// Warning EvictBlocked Event naming the budget and Retry-After and saying
// what preemption does next, a log line at the default level (warn), and
// the metric; whether it came from a dry run, a real eviction of a victim
// the preemptor may not push past its budget (next candidate), or of one
// it may (deleted instead).
func TestEvictionRefusalIsReportedOnTheVictim(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dry      bool
		priority int32
		node     string
		want     string
	}{
		{"dry run, below the guard", true, 500, "n2",
			"g2-n1 Warning EvictBlocked: The dry-run eviction for preemptor default/mid on node n1 was refused by PodDisruptionBudget pdb-g2-n1 (Retry-After 10s): the pod stays, and preemption tries the next candidate node"},
		{"eviction, below the guard", false, 500, "n2",
			"g2-n1 Warning EvictBlocked: The eviction for preemptor default/mid on node n1 was refused by PodDisruptionBudget pdb-g2-n1 (Retry-After 10s): the pod stays, and preemption tries the next candidate node"},
		{"eviction, guard reached", false, 5000, "n1",
			"g2-n1 Warning EvictBlocked: The eviction for preemptor default/mid on node n1 was refused by PodDisruptionBudget pdb-g2-n1 (Retry-After 10s): deleting the pod instead, as its PriorityClass lets this priority violate the budget (KEP-3280 best effort)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			preemptor := &abi.Pod{UID: "mid", Namespace: "default", Name: "mid", Priority: tc.priority}
			pods, ranked := fallbackCandidates()
			api := &refusingAPI{dryAPI: dryAPI{&callAPI{refuse: map[string]bool{"g2-n1": true}}}}
			var use API = api
			if !tc.dry {
				use = noDryRun{api}
			}
			var logs bytes.Buffer
			m := &blockedCount{}
			p := New(Options{API: use, Queue: nopQueue{}, Pods: pods, Metrics: m,
				Log: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
			node, err := p.execute(context.Background(), preemptor, ranked, false, p.opts.Log)
			if err != nil || node != tc.node {
				t.Fatalf("node %q, err %v; want %s", node, err, tc.node)
			}
			var blocked []string
			for _, e := range api.events {
				if strings.Contains(e, ReasonEvictBlocked) {
					blocked = append(blocked, e)
				}
			}
			if len(blocked) != 1 || blocked[0] != tc.want {
				t.Errorf("EvictBlocked events %q, want [%q]", blocked, tc.want)
			}
			if m.n != 1 {
				t.Errorf("EvictionBlocked counted %d times, want 1", m.n)
			}
			if l := logs.String(); !strings.Contains(l, "[WARN]  the Eviction API refused a preemption victim (429)") ||
				!strings.Contains(l, "victim=default/g2-n1") || !strings.Contains(l, "retry_after=10s") {
				t.Errorf("warn log %q", l)
			}
		})
	}
}
