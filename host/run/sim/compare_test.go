package sim

import (
	"context"
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
)

func TestCompareClassifiesEveryChange(t *testing.T) {
	const prof = "default-scheduler"
	scheduled := func(name, node string) PodResult {
		return PodResult{Namespace: "ns", Name: name, Profile: prof, Node: node, Status: StatusScheduled, Attempts: 1}
	}
	failed := func(name, status, msg string) PodResult {
		return PodResult{Namespace: "ns", Name: name, Profile: prof, Status: status, Message: msg, Attempts: 3}
	}
	live := &Report{Pods: []PodResult{
		scheduled("stays", "n1"),
		scheduled("moves", "n1"),
		scheduled("lost", "n2"),
		failed("found", StatusUnschedulable, "0/2 nodes are available"),
		failed("never", StatusUnschedulable, "0/2 nodes are available: 2 Insufficient cpu"),
		{Namespace: "ns", Name: "bound", Node: "n1", Status: StatusBound},
		// Preempted keeps the node it had: it no longer runs there.
		{Namespace: "ns", Name: "victim", Profile: prof, Node: "n2", Status: StatusPreempted, Message: "preempted by ns/x on n2"},
		scheduled("evicted", "n1"),
		{Namespace: "other", Name: "stays", Profile: prof, Node: "n2", Status: StatusScheduled},
		scheduled("only-live", "n1"),
	}}
	shadow := &Report{Pods: []PodResult{
		scheduled("only-shadow", "n2"),
		// Order differs from live's: matching is by namespace/name.
		scheduled("moves", "n2"),
		scheduled("stays", "n1"),
		failed("lost", StatusUnschedulable, "0/2 nodes are available: 1 Insufficient memory"),
		scheduled("found", "n1"),
		failed("never", StatusSchedulerError, "wasm error: unreachable"),
		{Namespace: "ns", Name: "bound", Node: "n1", Status: StatusBound},
		scheduled("victim", "n1"),
		{Namespace: "ns", Name: "evicted", Profile: prof, Node: "n1", Status: StatusPreempted},
		{Namespace: "other", Name: "stays", Profile: prof, Node: "n1", Status: StatusScheduled},
	}}
	c := Compare(live, shadow)

	want := []struct {
		key    string
		change Change
	}{
		{"ns/stays", ChangeSame},
		{"ns/moves", ChangeMoved},
		{"ns/lost", ChangeNewlyUnschedulable},
		{"ns/found", ChangeNewlyPlaced},
		{"ns/never", ChangeSame},
		{"ns/bound", ChangeSame},
		{"ns/victim", ChangeNewlyPlaced},
		{"ns/evicted", ChangeNewlyUnschedulable},
		{"other/stays", ChangeMoved},
		{"ns/only-live", ChangeNewlyUnschedulable},
		{"ns/only-shadow", ChangeNewlyPlaced},
	}
	if len(c.Pods) != len(want) {
		t.Fatalf("%d pods, want %d: %+v", len(c.Pods), len(want), c.Pods)
	}
	for i, w := range want {
		got := c.Pods[i]
		if key := got.Namespace + "/" + got.Name; key != w.key || got.Change != w.change {
			t.Errorf("pod %d: %s %s, want %s %s", i, key, got.Change, w.key, w.change)
		}
	}
	wantSummary := Summary{Pods: 11, Same: 3, Moved: 2, NewlyUnschedulable: 3, NewlyPlaced: 3}
	if c.Summary != wantSummary {
		t.Errorf("summary %+v, want %+v", c.Summary, wantSummary)
	}

	moves := c.Pods[1]
	if moves.Profile != prof || moves.Live == nil || moves.Live.Node != "n1" || moves.Shadow == nil || moves.Shadow.Node != "n2" {
		t.Errorf("moves: %+v live %+v shadow %+v", moves, moves.Live, moves.Shadow)
	}
	if lost := c.Pods[2]; lost.Shadow.Message != "0/2 nodes are available: 1 Insufficient memory" {
		t.Errorf("lost: shadow result %+v, want the shadow's message", lost.Shadow)
	}
	if bound := c.Pods[5]; bound.Profile != "" {
		t.Errorf("bound pod has profile %q, want none", bound.Profile)
	}
	if onlyLive := c.Pods[9]; onlyLive.Shadow != nil || onlyLive.Live == nil {
		t.Errorf("only-live: live %v shadow %v, want a live result only", onlyLive.Live, onlyLive.Shadow)
	}
	if onlyShadow := c.Pods[10]; onlyShadow.Live != nil || onlyShadow.Shadow == nil || onlyShadow.Profile != prof {
		t.Errorf("only-shadow: %+v, want a shadow result and its profile", onlyShadow)
	}

	// The comparison holds copies: the reports can be reused.
	live.Pods[1].Node = "changed"
	if c.Pods[1].Live.Node != "n1" {
		t.Errorf("comparison aliases the live report")
	}
}

func TestCompareOfNothing(t *testing.T) {
	for _, c := range []*Comparison{Compare(nil, nil), Compare(&Report{}, &Report{})} {
		if c.Pods == nil || len(c.Pods) != 0 || c.Summary != (Summary{}) {
			t.Errorf("Compare of no pods = %+v, want an empty, non-nil list and zero counts", c)
		}
	}
	c := Compare(nil, &Report{Pods: []PodResult{{Namespace: "ns", Name: "p", Status: StatusUnschedulable}}})
	if len(c.Pods) != 1 || c.Pods[0].Change != ChangeSame || c.Summary.Same != 1 {
		t.Errorf("an unplaced pod missing from live = %+v, want same", c)
	}
}

// TestRunLeavesItsObjectsAsRead: the what-if runs the live and the
// shadow configuration on one set of objects, which holds only if Run
// does not change them (preemption and PDBs included).
func TestRunLeavesItsObjectsAsRead(t *testing.T) {
	pack := `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
- schedulerName: bin-packer
`
	shadow, err := config.Parse([]byte(pack))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for _, file := range []string{"../../../examples/cluster.yaml", "../../../examples/preemption.yaml"} {
		objs, err := LoadFiles(file)
		if err != nil {
			t.Fatal(err)
		}
		pristine, err := LoadFiles(file)
		if err != nil {
			t.Fatal(err)
		}
		first, err := Run(context.Background(), objs, Options{Seed: 1, CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), objs, Options{Config: shadow, Seed: 1, CacheDir: cache}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(objs, pristine) {
			t.Fatalf("%s: Run changed the objects it was given", file)
		}
		again, err := Run(context.Background(), objs, Options{Seed: 1, CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if c := Compare(first, again); c.Summary.Same != c.Summary.Pods || c.Summary.Pods == 0 {
			t.Errorf("%s: the same run twice differs: %+v", file, c.Summary)
		}
	}
}
