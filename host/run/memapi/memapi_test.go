package memapi

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
)

type watcher struct {
	mu      sync.Mutex
	deleted []string
	pdbs    []abi.PDB
}

func (w *watcher) OnPodUpdate(_, _ *abi.Pod) {}
func (w *watcher) OnPodDelete(p *abi.Pod) {
	w.mu.Lock()
	w.deleted = append(w.deleted, p.Name)
	w.mu.Unlock()
}
func (w *watcher) OnPDB(p *abi.PDB) { w.mu.Lock(); w.pdbs = append(w.pdbs, *p); w.mu.Unlock() }

func TestEvictionHonoursBudgets(t *testing.T) {
	w := &watcher{}
	c := New(w)
	app := abi.Labels{{Key: "app", Value: "db"}}
	a := &abi.Pod{UID: "a", Namespace: "ns", Name: "a", NodeName: "n1", Labels: app}
	b := &abi.Pod{UID: "b", Namespace: "ns", Name: "b", NodeName: "n1", Labels: app}
	other := &abi.Pod{UID: "o", Namespace: "other", Name: "o", NodeName: "n1", Labels: app}
	for _, p := range []*abi.Pod{a, b, other} {
		c.AddPod(p)
	}
	c.SetPDB(&abi.PDB{Namespace: "ns", Name: "db", DisruptionsAllowed: 1, Selector: &abi.LabelSelector{MatchLabels: app}})
	ctx := context.Background()
	if err := c.EvictPod(ctx, a, nil); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	if err := c.EvictPod(ctx, b, nil); !errors.Is(err, podremoval.ErrTooManyRequests) {
		t.Fatalf("second eviction: %v, want 429", err)
	}
	if err := c.EvictPod(ctx, other, nil); err != nil {
		t.Fatalf("a pod no budget covers: %v", err)
	}
	if got := c.PDB("ns", "db"); got.DisruptionsAllowed != 0 || len(got.DisruptedPods) != 1 || got.DisruptedPods[0] != "a" {
		t.Fatalf("budget after eviction %+v", got)
	}
	if c.Pod("b") == nil || c.Pod("a") != nil || len(w.deleted) != 2 || len(w.pdbs) != 1 {
		t.Fatalf("cluster: a=%v b=%v deleted=%v pdbs=%v", c.Pod("a"), c.Pod("b"), w.deleted, w.pdbs)
	}
	if err := c.DeletePod(ctx, a, nil); !errors.Is(err, podremoval.ErrNotFound) {
		t.Fatalf("delete of a gone pod: %v, want NotFound", err)
	}
}

// What a refusal or a failure says is what simulate's timeline shows a
// user: the budget and what it allows, the pod that is gone, never the
// in-memory API's own name; each failed call records its HTTP status.
func TestFailuresSayWhatAUserNeeds(t *testing.T) {
	c := New(nil)
	app := abi.Labels{{Key: "app", Value: "db"}}
	a := &abi.Pod{UID: "a", Namespace: "shop", Name: "db-0", NodeName: "n1", Labels: app}
	c.AddPod(a)
	c.SetPDB(&abi.PDB{Namespace: "shop", Name: "db", DisruptionsAllowed: 0, Selector: &abi.LabelSelector{MatchLabels: app}})
	ctx := context.Background()
	err := c.EvictPod(ctx, a, nil)
	var refused *podremoval.RefusedError
	if !errors.As(err, &refused) || refused.PDB != "db" {
		t.Fatalf("eviction: %v, want a RefusedError naming db", err)
	}
	if want := "blocked by PodDisruptionBudget db: 0 disruptions allowed"; err.Error() != want {
		t.Errorf("refusal says %q, want %q", err, want)
	}
	gone := &abi.Pod{UID: "g", Namespace: "shop", Name: "gone", NodeName: "n1"}
	if err := c.EvictPod(ctx, gone, nil); !errors.Is(err, podremoval.ErrNotFound) || err.Error() != "pod shop/gone: not found (404)" {
		t.Errorf("eviction of a gone pod: %v", err)
	}
	tl := c.Timeline()
	if len(tl) != 2 || tl[0].Code != 429 || tl[1].Code != 404 {
		t.Fatalf("timeline %+v, want a 429 and a 404", tl)
	}
	for _, e := range tl {
		if strings.Contains(e.Err, "memapi") {
			t.Errorf("timeline error %q names the in-memory API", e.Err)
		}
	}
	for _, err := range []error{ErrTooManyRequests, ErrNotFound, ErrConflict, ErrInternal} {
		if strings.Contains(err.Error(), "memapi") {
			t.Errorf("injectable failure %q names the in-memory API", err)
		}
	}
}

func TestLatencyAndInjectedFailures(t *testing.T) {
	c := New(nil)
	p := &abi.Pod{UID: "p", Namespace: "ns", Name: "p", NodeName: "n1"}
	c.AddPod(p)
	c.SetLatency(20 * time.Millisecond)
	c.Inject(func(op Op, _ *abi.Pod) error {
		if op == OpDelete {
			return ErrInternal
		}
		return nil
	})
	start := time.Now()
	if err := c.DeletePod(context.Background(), p, nil); !errors.Is(err, ErrInternal) {
		t.Fatalf("delete: %v", err)
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("no latency: %s", d)
	}
	if c.Pod("p") == nil {
		t.Fatal("a failed delete removed the pod")
	}
	start = time.Now()
	if err := c.SetNomination(context.Background(), &abi.Pod{UID: "x", Name: "x"}, "n1"); !errors.Is(err, podremoval.ErrNotFound) {
		t.Fatalf("nominate unknown: %v", err)
	}
	if d := time.Since(start); d >= 20*time.Millisecond {
		t.Fatalf("nominations must not wait: %s", d)
	}
	tl := c.Timeline()
	if len(tl) != 1 || tl[0].Op != OpDelete || tl[0].Err == "" {
		t.Fatalf("timeline %+v", tl)
	}
}

func TestDryRunEvictionChecksBudgetsAndChangesNothing(t *testing.T) {
	w := &watcher{}
	c := New(w)
	app := abi.Labels{{Key: "app", Value: "db"}}
	a := &abi.Pod{UID: "a", Namespace: "ns", Name: "a", NodeName: "n1", Labels: app}
	b := &abi.Pod{UID: "b", Namespace: "ns", Name: "b", NodeName: "n1", Labels: app}
	c.AddPod(a)
	c.AddPod(b)
	c.SetPDB(&abi.PDB{Namespace: "ns", Name: "db", DisruptionsAllowed: 1, Selector: &abi.LabelSelector{MatchLabels: app}})
	ctx := context.Background()
	// A dry run spends nothing: both pass, each on its own.
	for _, p := range []*abi.Pod{a, b} {
		if err := c.EvictPodDryRun(ctx, p); err != nil {
			t.Fatalf("dry run of %s: %v", p.Name, err)
		}
	}
	if got := c.PDB("ns", "db"); got.DisruptionsAllowed != 1 || len(got.DisruptedPods) != 0 {
		t.Fatalf("a dry run spent the budget: %+v", got)
	}
	if c.Pod("a") == nil || c.Pod("b") == nil || len(w.deleted) != 0 || len(w.pdbs) != 0 {
		t.Fatalf("a dry run changed the cluster: deleted %v pdbs %v", w.deleted, w.pdbs)
	}
	if err := c.EvictPod(ctx, a, nil); err != nil {
		t.Fatalf("eviction: %v", err)
	}
	if err := c.EvictPodDryRun(ctx, b); !errors.Is(err, podremoval.ErrTooManyRequests) {
		t.Fatalf("dry run with the budget spent: %v, want 429", err)
	}
	if err := c.EvictPodDryRun(ctx, a); !errors.Is(err, podremoval.ErrNotFound) {
		t.Fatalf("dry run of a gone pod: %v, want NotFound", err)
	}
	c.Inject(func(op Op, _ *abi.Pod) error {
		if op == OpEvictDryRun {
			return ErrInternal
		}
		return nil
	})
	if err := c.EvictPodDryRun(ctx, b); !errors.Is(err, ErrInternal) {
		t.Fatalf("injected dry-run failure: %v", err)
	}
	var ops []string
	for _, e := range c.Timeline() {
		ops = append(ops, string(e.Op)+" "+e.Pod+" "+e.Detail)
	}
	want := []string{"evict-dry-run ns/a dry run", "evict-dry-run ns/b dry run", "evict ns/a ", "evict-dry-run ns/b ", "evict-dry-run ns/a ", "evict-dry-run ns/b "}
	if strings.Join(ops, "|") != strings.Join(want, "|") {
		t.Fatalf("timeline %q, want %q", ops, want)
	}
}
