package preemption

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

// callAPI records preemption's calls and refuses the evictions (real
// ones, and dry runs if it has them) of the pods named in refuse.
type callAPI struct {
	mu     sync.Mutex
	calls  []string
	refuse map[string]bool
}

func (a *callAPI) record(op string, v *abi.Pod) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, op+" "+v.Name)
}

func (a *callAPI) answer(op string, v *abi.Pod) error {
	a.record(op, v)
	if a.refuse[v.Name] {
		return fmt.Errorf("budget: %w", podremoval.ErrTooManyRequests)
	}
	return nil
}

func (a *callAPI) MarkVictim(_ context.Context, v *abi.Pod, _ string) error {
	a.record("mark", v)
	return nil
}
func (a *callAPI) DeletePod(_ context.Context, v *abi.Pod, _ *int64) error {
	a.record("delete", v)
	return nil
}
func (a *callAPI) EvictPod(_ context.Context, v *abi.Pod, _ *int64) error {
	return a.answer("evict", v)
}
func (a *callAPI) SetNomination(context.Context, *abi.Pod, string) error { return nil }
func (a *callAPI) Event(*abi.Pod, bool, string, string)                  {}

// dryAPI is callAPI with dry-run evictions.
type dryAPI struct{ *callAPI }

func (a dryAPI) EvictPodDryRun(_ context.Context, v *abi.Pod) error { return a.answer("dry", v) }

// onN1 returns n1's calls in order, the dry runs (issued in parallel)
// sorted among themselves.
func (a *callAPI) onN1() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var dry, rest []string
	for _, c := range a.calls {
		switch {
		case !strings.HasSuffix(c, "-n1"):
		case strings.HasPrefix(c, "dry "):
			dry = append(dry, c)
		default:
			rest = append(rest, c)
		}
	}
	sort.Strings(dry)
	return append(dry, rest...)
}

type nopQueue struct{}

func (nopQueue) AddNominatedPod(*abi.Pod, string)       {}
func (nopQueue) DeleteNominatedPodIfExists(*abi.Pod)    {}
func (nopQueue) NominatedPodsForNode(string) []*abi.Pod { return nil }
func (nopQueue) NominatedNode(string) string            { return "" }
func (nopQueue) Activate([]*abi.Pod)                    {}
func (nopQueue) Requeue([]*abi.Pod)                     {}

// podMap is the cache's view of the victims, by UID.
type podMap map[string]*abi.Pod

func (p podMap) GetPod(uid string) *abi.Pod { return p[uid] }

func (p podMap) add(pods ...*abi.Pod) []*abi.Pod {
	for _, v := range pods {
		p[v.UID] = v
	}
	return pods
}

func victimPod(name string, guard *int32) *abi.Pod {
	return &abi.Pod{UID: name, Namespace: "default", Name: name, Priority: 10, DisruptionGuard: guard}
}

// Three guarded victims on n1, the second refused, and an unguarded one;
// n2 has one unguarded victim.
func fallbackCandidates() (podMap, []*candidate) {
	g := int32(2000)
	pods := podMap{}
	n1 := pods.add(victimPod("g1-n1", &g), victimPod("g2-n1", &g), victimPod("g3-n1", &g), victimPod("u1-n1", nil))
	n2 := pods.add(victimPod("u1-n2", nil))
	return pods, []*candidate{{node: "n1", victims: n1}, {node: "n2", victims: n2}}
}

func TestGuardedVictimsGoFirstAndARefusalStopsTheNode(t *testing.T) {
	preemptor := &abi.Pod{UID: "mid", Namespace: "default", Name: "mid", Priority: 500}
	for _, tc := range []struct {
		dry  bool
		want []string
	}{
		// Dry runs find the refusal before anything is removed.
		{true, []string{"dry g1-n1", "dry g2-n1", "dry g3-n1"}},
		// Without dry runs: one guarded eviction at a time, stopping at
		// the refusal; g3 and the unguarded pod are never touched.
		{false, []string{"evict g1-n1", "evict g2-n1"}},
	} {
		for _, async := range []bool{false, true} {
			pods, ranked := fallbackCandidates()
			calls := &callAPI{refuse: map[string]bool{"g2-n1": true}}
			var api API = calls
			if tc.dry {
				api = dryAPI{calls}
			}
			p := New(Options{API: api, Queue: nopQueue{}, Pods: pods})
			node, err := p.execute(context.Background(), preemptor, ranked, async, hclog.NewNullLogger())
			if err != nil || node != "n2" {
				t.Fatalf("dry=%v async=%v: node %q, err %v", tc.dry, async, node, err)
			}
			if got := calls.onN1(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("dry=%v async=%v: calls on n1 %q, want %q", tc.dry, async, got, tc.want)
			}
		}
	}
}

// Once every guarded victim is accepted, they are evicted one at a time
// (in their order) before the others are marked and deleted.
func TestGuardedVictimsAreEvictedBeforeTheOthersAreTouched(t *testing.T) {
	preemptor := &abi.Pod{UID: "mid", Namespace: "default", Name: "mid", Priority: 500}
	for _, async := range []bool{false, true} {
		pods, ranked := fallbackCandidates()
		calls := &callAPI{}
		p := New(Options{API: dryAPI{calls}, Queue: nopQueue{}, Pods: pods})
		if async {
			p.startRun(preemptor.UID)
		}
		node, err := p.execute(context.Background(), preemptor, ranked, async, hclog.NewNullLogger())
		if err != nil || node != "n1" {
			t.Fatalf("async=%v: node %q, err %v", async, node, err)
		}
		want := []string{"dry g1-n1", "dry g2-n1", "dry g3-n1", "evict g1-n1", "evict g2-n1", "evict g3-n1", "mark u1-n1", "delete u1-n1"}
		if got := calls.onN1(); !reflect.DeepEqual(got, want) {
			t.Errorf("async=%v: calls on n1 %q, want %q", async, got, want)
		}
		if async {
			// The last victim recorded for the gate is the unguarded one.
			p.mu.Lock()
			last := p.running[preemptor.UID].lastVictim
			p.mu.Unlock()
			if last == nil || last.Name != "u1-n1" {
				t.Errorf("last victim %+v, want u1-n1", last)
			}
			p.endRun(preemptor.UID)
		}
	}
}
