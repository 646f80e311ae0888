package guest

import (
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

var errFull = plugin.NewStatus(abi.Unschedulable, "Too many pods")

var seenKey = plugin.NewStateKey()

// seen counts the pods PreFilter extensions were told about.
type seen struct{ added, removed int }

func (s *seen) Clone() plugin.StateData { c := *s; return &c }

// podLimit rejects full nodes and records extension calls in the state.
type podLimit struct{}

func (podLimit) Name() string { return "PodLimit" }
func (podLimit) PreFilter(cs *plugin.CycleState, _ *abi.Pod) *plugin.Status {
	cs.Write(seenKey, &seen{})
	return nil
}
func (podLimit) Filter(_ *plugin.CycleState, _ *abi.Pod, n *plugin.NodeInfo) *plugin.Status {
	if int64(n.PodCount) >= n.Node.AllowedPods {
		return errFull
	}
	return nil
}
func (podLimit) AddPod(cs *plugin.CycleState, _, _ *abi.Pod, _ *plugin.NodeInfo) *plugin.Status {
	cs.Read(seenKey).(*seen).added++
	return nil
}
func (podLimit) RemovePod(cs *plugin.CycleState, _, _ *abi.Pod, _ *plugin.NodeInfo) *plugin.Status {
	cs.Read(seenKey).(*seen).removed++
	return nil
}

func whatIfGuest(t *testing.T) *Guest {
	t.Helper()
	g := New(plugin.Registration{Name: "PodLimit", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return podLimit{}, nil }})
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g, abi.FuncInit, 0, e.B)
	syncNodes(t, g, abi.Node{Name: "one-slot", AllowedPods: 1}, abi.Node{Name: "roomy", AllowedPods: 10})
	e.Reset()
	e.Pod(&abi.Pod{Name: "p"})
	call(t, g, abi.FuncCycle, 0, e.B)
	call(t, g, abi.FuncPreFilter, 0, nil)
	return g
}

func filterVerdicts(t *testing.T, g *Guest) []uint16 {
	t.Helper()
	var r abi.FilterReply
	d := abi.NewDecoder(call(t, g, abi.FuncFilter, 0, slots(0, 1)))
	d.FilterReply(&r, 2)
	return r.Indexes
}

func podBytes(p *abi.Pod) []byte {
	var e abi.Encoder
	e.Pod(p)
	return e.B
}

func TestAddPodChangesTheViewUntilPop(t *testing.T) {
	g := whatIfGuest(t)
	nominated := &abi.Pod{UID: "n", Name: "nominated"}
	call(t, g, abi.FuncPushState, 0, nil)
	call(t, g, abi.FuncAddPod, 0, podBytes(nominated))
	if v := filterVerdicts(t, g); v[0] == 0 || v[1] != 0 {
		t.Fatalf("with the nominated pod added, verdicts = %v; want slot 0 full, slot 1 fine", v)
	}
	if s := g.cycle.state.Read(seenKey).(*seen); s.added != 1 {
		t.Fatalf("PreFilter extension saw %d adds, want 1", s.added)
	}
	call(t, g, abi.FuncPopState, 0, nil)
	if v := filterVerdicts(t, g); v[0] != 0 || v[1] != 0 {
		t.Fatalf("after pop_state, verdicts = %v; want both fine", v)
	}
	if s := g.cycle.state.Read(seenKey).(*seen); s.added != 0 {
		t.Fatalf("pop_state did not restore the cycle state: %d adds", s.added)
	}
	if g.mirror.nodes[0].PodCount != 0 {
		t.Fatal("add_pod changed the mirror")
	}
}

func TestRemovePodFreesRoomInTheView(t *testing.T) {
	g := whatIfGuest(t)
	victim := &abi.Pod{UID: "v", Name: "victim"}
	call(t, g, abi.FuncAddPod, 0, podBytes(victim))
	if v := filterVerdicts(t, g); v[0] == 0 {
		t.Fatal("slot 0 not full after add")
	}
	call(t, g, abi.FuncRemovePod, 0, podBytes(victim))
	if v := filterVerdicts(t, g); v[0] != 0 {
		t.Fatal("slot 0 still full after remove")
	}
	if s := g.cycle.state.Read(seenKey).(*seen); s.added != 1 || s.removed != 1 {
		t.Fatalf("extensions saw %+v", s)
	}
}

func TestWhatIfMisuseIsAnError(t *testing.T) {
	g := whatIfGuest(t)
	if msg := callErr(g, abi.FuncPopState, 0, nil); !strings.Contains(msg, "pop_state without push_state") {
		t.Errorf("unbalanced pop: %q", msg)
	}
	if msg := callErr(g, abi.FuncAddPod, 9, podBytes(&abi.Pod{UID: "x"})); !strings.Contains(msg, "unknown node slot") {
		t.Errorf("add to a missing slot: %q", msg)
	}
	if msg := callErr(g, abi.FuncAddPod, 0, []byte{0xff}); !strings.Contains(msg, "decode") {
		t.Errorf("add with a malformed pod: %q", msg)
	}
	for i := 0; i < maxViewDepth; i++ {
		call(t, g, abi.FuncPushState, 0, nil)
	}
	if msg := callErr(g, abi.FuncPushState, 0, nil); !strings.Contains(msg, "nested too deeply") {
		t.Errorf("push past the limit: %q", msg)
	}
	// A new cycle starts with an empty view.
	var e abi.Encoder
	e.Pod(&abi.Pod{Name: "q"})
	call(t, g, abi.FuncCycle, 0, e.B)
	if len(g.view.overlay) != 0 || len(g.view.saved) != 0 {
		t.Fatal("the view survived a new cycle")
	}
}

// reverser reverses the batch it is given in PreScore (plugins may reorder
// their nodes) and scores a node by its pod capacity.
type reverser struct{}

func (reverser) Name() string { return "Reverser" }
func (reverser) PreScore(_ *plugin.CycleState, _ *abi.Pod, nodes []*plugin.NodeInfo) *plugin.Status {
	slices.Reverse(nodes)
	return nil
}
func (reverser) Score(_ *plugin.CycleState, _ *abi.Pod, n *plugin.NodeInfo) (int64, *plugin.Status) {
	return n.Node.AllowedPods, nil
}

// TestRepeatedBatchSeesSyncsViewsAndNoReordering sends the same slot list
// again and again (as the host does to each plugin of a stage), so the
// guest reuses its last resolution: it must still see a node a sync
// replaced, the what-if view, and not a plugin's reordering of its batch.
func TestRepeatedBatchSeesSyncsViewsAndNoReordering(t *testing.T) {
	g := New(plugin.Registration{Name: "Reverser", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return reverser{}, nil }})
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g, abi.FuncInit, 0, e.B)
	syncNodes(t, g, abi.Node{Name: "a", AllowedPods: 1}, abi.Node{Name: "b", AllowedPods: 2}, abi.Node{Name: "c", AllowedPods: 3})
	cycle := func() {
		e.Reset()
		e.Pod(&abi.Pod{Name: "p"})
		call(t, g, abi.FuncCycle, 0, e.B)
	}
	scores := func() []int64 {
		d := abi.NewDecoder(call(t, g, abi.FuncScore, 0, slots(0, 1, 2)))
		return d.ScoreReply(nil, 3)
	}
	cycle()
	if got := scores(); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("scores = %v", got)
	}
	call(t, g, abi.FuncPreScore, 0, slots(0, 1, 2))
	if got := scores(); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Fatalf("after PreScore reversed its batch, scores = %v, want [1 2 3]", got)
	}
	e.Reset()
	e.SyncHeader(0, 3)
	e.Uvarint(1)
	e.NodeRecord(1, &abi.NodeInfo{Node: abi.Node{Name: "b", AllowedPods: 20}})
	e.Uvarint(0)
	call(t, g, abi.FuncSync, 0, e.B)
	cycle()
	if got := scores(); !slices.Equal(got, []int64{1, 20, 3}) {
		t.Fatalf("after a sync replaced b, scores = %v, want [1 20 3]", got)
	}

	w := whatIfGuest(t)
	if v := filterVerdicts(t, w); v[0] != 0 || v[1] != 0 {
		t.Fatalf("verdicts = %v, want both fine", v)
	}
	call(t, w, abi.FuncPushState, 0, nil)
	call(t, w, abi.FuncAddPod, 0, podBytes(&abi.Pod{UID: "n"}))
	if v := filterVerdicts(t, w); v[0] == 0 {
		t.Fatalf("the same batch after add_pod: verdicts = %v, want slot 0 full", v)
	}
	call(t, w, abi.FuncPopState, 0, nil)
	if v := filterVerdicts(t, w); v[0] != 0 {
		t.Fatalf("the same batch after pop_state: verdicts = %v, want slot 0 fine", v)
	}
}
