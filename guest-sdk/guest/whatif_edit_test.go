package guest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// editPod is a pod with requests, a host port and labels, so that every
// aggregate an edit changes is exercised.
func editPod(uid string, cpu int64, port int32) abi.Pod {
	p := abi.Pod{UID: uid, Namespace: "ns", Name: uid, Labels: abi.Labels{{Key: "app", Value: uid[:1]}},
		Containers: []abi.Container{{Name: "c", Requests: abi.Resources{MilliCPU: cpu, Memory: cpu << 20}}}}
	if port != 0 {
		p.Containers[0].Ports = []abi.HostPort{{Protocol: abi.ProtocolTCP, Port: port}}
	}
	return p
}

// editNodes: slot 0 mirrors its pods (a1, a2), slot 1 carries only the
// aggregates of its pods (b1, b2), as a module that wants no pods gets it.
func editNodes() (map[uint32]*abi.NodeInfo, map[string]abi.Pod) {
	pods := map[string]abi.Pod{}
	for _, p := range []abi.Pod{editPod("a1", 500, 80), editPod("a2", 300, 0), editPod("b1", 700, 0), editPod("b2", 100, 443), editPod("n1", 250, 8080)} {
		pods[p.UID] = p
	}
	n0 := &abi.NodeInfo{Node: abi.Node{Name: "mirrored", AllowedPods: 3}}
	n0.AddPod(ptr(pods["a1"]))
	n0.AddPod(ptr(pods["a2"]))
	n1 := &abi.NodeInfo{Node: abi.Node{Name: "bare", AllowedPods: 3}}
	n1.AddPod(ptr(pods["b1"]))
	n1.AddPod(ptr(pods["b2"]))
	n1.Pods = nil
	return map[uint32]*abi.NodeInfo{0: n0, 1: n1}, pods
}

func ptr(p abi.Pod) *abi.Pod { return &p }

func editGuest(t *testing.T) (*Guest, map[string]abi.Pod) {
	t.Helper()
	g := New(plugin.Registration{Name: "PodLimit", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return podLimit{}, nil }})
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	call(t, g, abi.FuncInit, 0, e.B)
	nodes, pods := editNodes()
	syncInfos(t, g, abi.SyncReset, nodes, nil)
	e.Reset()
	e.Pod(&abi.Pod{UID: "me", Name: "preemptor"})
	call(t, g, abi.FuncCycle, 0, e.B)
	call(t, g, abi.FuncPreFilter, 0, nil)
	return g, pods
}

func editsBytes(edits ...abi.ViewEdit) []byte {
	var e abi.Encoder
	e.ViewEdits(edits)
	return e.B
}

func rm(slot uint32, uid string) abi.ViewEdit {
	return abi.ViewEdit{Slot: slot, Op: abi.EditRemove, UID: uid}
}
func rmPod(slot uint32, p abi.Pod) abi.ViewEdit {
	return abi.ViewEdit{Slot: slot, Op: abi.EditRemovePod, Pod: &p}
}
func add(slot uint32, p abi.Pod) abi.ViewEdit {
	return abi.ViewEdit{Slot: slot, Op: abi.EditAdd, Pod: &p}
}
func restore(slot uint32, uid string) abi.ViewEdit {
	return abi.ViewEdit{Slot: slot, Op: abi.EditRestore, UID: uid}
}

// view is what a node of the view says, for comparisons.
type view struct {
	Requested, NonZero abi.Resources
	PodCount           int32
	Ports              []abi.HostPort
	Groups             []abi.PodGroup
	Pods               []string
}

func viewOf(n *plugin.NodeInfo) view {
	v := view{Requested: n.Requested, NonZero: n.NonZeroRequested, PodCount: n.PodCount,
		Ports: append([]abi.HostPort{}, n.UsedPorts...), Groups: append([]abi.PodGroup{}, n.PodGroups...)}
	for i := range n.Pods {
		v.Pods = append(v.Pods, n.Pods[i].UID)
	}
	return v
}

// The batched edits leave the view, the cycle state and the filters'
// verdicts exactly as the same changes made with add_pod and remove_pod,
// and as the host's own NodeInfo arithmetic.
func TestEditViewMatchesPerPodCalls(t *testing.T) {
	batched, pods := editGuest(t)
	perPod, _ := editGuest(t)
	steps := []struct {
		edits []abi.ViewEdit
		fn    []abi.Func // the per-pod calls, one per edit
	}{
		{[]abi.ViewEdit{rm(0, "a1"), rmPod(1, pods["b1"]), rmPod(1, pods["b2"])}, []abi.Func{abi.FuncRemovePod, abi.FuncRemovePod, abi.FuncRemovePod}},
		{[]abi.ViewEdit{add(1, pods["n1"]), restore(0, "a1"), restore(1, "b2")}, []abi.Func{abi.FuncAddPod, abi.FuncAddPod, abi.FuncAddPod}},
		{[]abi.ViewEdit{rm(0, "a1"), rm(1, "b2"), rm(1, "n1"), rm(0, "a2")}, []abi.Func{abi.FuncRemovePod, abi.FuncRemovePod, abi.FuncRemovePod, abi.FuncRemovePod}},
		{[]abi.ViewEdit{restore(0, "a2"), restore(1, "b1")}, []abi.Func{abi.FuncAddPod, abi.FuncAddPod}},
	}
	nodes, _ := editNodes()
	oracle := map[uint32]abi.NodeInfo{0: nodes[0].Clone(), 1: nodes[1].Clone()}
	for i, st := range steps {
		call(t, batched, abi.FuncEditView, 0, editsBytes(st.edits...))
		for k, e := range st.edits {
			uid := e.UID
			if e.Pod != nil {
				uid = e.Pod.UID
			}
			p := pods[uid]
			call(t, perPod, st.fn[k], e.Slot, podBytes(&p))
			o := oracle[e.Slot]
			if st.fn[k] == abi.FuncAddPod {
				o.AddPod(&p)
			} else {
				o.RemovePod(&p)
			}
			oracle[e.Slot] = o
		}
		for slot := uint32(0); slot < 2; slot++ {
			got, want := viewOf(batched.node(slot)), viewOf(perPod.node(slot))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d slot %d: batched view\n%+v\nper-pod view\n%+v", i, slot, got, want)
			}
			o := oracle[slot]
			if !reflect.DeepEqual(got, viewOf(&plugin.NodeInfo{NodeInfo: o})) {
				t.Fatalf("step %d slot %d: view %+v, host arithmetic %+v", i, slot, got, viewOf(&plugin.NodeInfo{NodeInfo: o}))
			}
		}
		if a, b := filterVerdicts(t, batched), filterVerdicts(t, perPod); !reflect.DeepEqual(a, b) {
			t.Fatalf("step %d: verdicts %v batched, %v per pod", i, a, b)
		}
		if a, b := *batched.cycle.state.Read(seenKey).(*seen), *perPod.cycle.state.Read(seenKey).(*seen); a != b {
			t.Fatalf("step %d: extensions saw %+v batched, %+v per pod", i, a, b)
		}
	}
	nodes, _ = editNodes()
	if !reflect.DeepEqual(viewOf(batched.mirror.nodes[0]), viewOf(&plugin.NodeInfo{NodeInfo: *nodes[0]})) {
		t.Fatal("edits changed the mirror")
	}
}

// All edits of one call share one copy of each node; a push makes the
// next change copy again, and pop_state brings back the removed pods as
// they were, so a restore works after the pop as before the push.
func TestEditViewCopiesEachNodeOncePerLevel(t *testing.T) {
	g, pods := editGuest(t)
	call(t, g, abi.FuncEditView, 0, editsBytes(rm(0, "a1"), rm(0, "a2"), rmPod(1, pods["b1"])))
	if len(g.view.overlay) != 2 {
		t.Fatalf("%d overlay nodes, want 2", len(g.view.overlay))
	}
	first := g.view.overlay[0]
	call(t, g, abi.FuncEditView, 0, editsBytes(restore(0, "a2")))
	if g.view.overlay[0] != first {
		t.Fatal("a second call at the same level copied the node again")
	}
	call(t, g, abi.FuncPushState, 0, nil)
	call(t, g, abi.FuncEditView, 0, editsBytes(restore(0, "a1"), rm(0, "a2"), restore(1, "b1")))
	if g.view.overlay[0] == first || first.level == g.view.level {
		t.Fatal("a change after push_state did not copy the saved node")
	}
	if got := viewOf(g.node(0)).Pods; !reflect.DeepEqual(got, []string{"a1"}) {
		t.Fatalf("pods after the pushed edits %v", got)
	}
	call(t, g, abi.FuncPopState, 0, nil)
	if got := viewOf(g.node(0)).Pods; !reflect.DeepEqual(got, []string{"a2"}) || g.node(1).PodCount != 1 {
		t.Fatalf("after pop: pods %v, bare node count %d", got, g.node(1).PodCount)
	}
	call(t, g, abi.FuncEditView, 0, editsBytes(restore(0, "a1"), restore(1, "b1")))
	if g.node(0).PodCount != 2 || g.node(1).PodCount != 2 {
		t.Fatalf("restores after pop: counts %d, %d", g.node(0).PodCount, g.node(1).PodCount)
	}
}

func TestEditViewRefusesBadEdits(t *testing.T) {
	g, pods := editGuest(t)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"unknown slot", editsBytes(rm(7, "a1")), "edit 0: unknown node slot"},
		{"unknown UID", editsBytes(rm(0, "a1"), rm(0, "zz")), `edit 1: no pod with UID "zz" on node mirrored`},
		{"pod only in aggregates", editsBytes(rm(1, "b1")), `no pod with UID "b1" on node bare`},
		{"empty UID", editsBytes(rm(0, "")), `no pod with UID ""`},
		{"restore of a pod not removed", editsBytes(restore(0, "a2")), `edit 0: restore of pod UID "a2", which no edit of this cycle took off node mirrored`},
		{"restore on another node", editsBytes(rm(0, "a1"), restore(1, "a1")), `edit 1: restore of pod UID "a1", which no edit of this cycle took off node bare`},
		{"restore twice", editsBytes(rmPod(1, pods["b1"]), restore(1, "b1"), restore(1, "b1")), "edit 2: restore of pod UID \"b1\""},
		{"unknown op", []byte{1, 0, 0, 0, 0, 9, 0}, "edit 0: abi: decode unknown view edit op"},
		{"truncated", editsBytes(rm(0, "a1"))[:7], "edit 0: abi: decode"},
		{"count beyond input", []byte{200, 1}, "edit_view: abi: decode list count exceeds input"},
		{"bad pod", []byte{1, 0, 0, 0, 0, 3, 2, 0xff, 0xff}, "edit 0: abi: decode"},
		{"trailing bytes in pod", append(editsBytes()[:0], addTrailing(pods["n1"])...), "trailing bytes after the pod"},
		{"trailing bytes", append(editsBytes(rm(0, "a1")), 0), "trailing bytes after the edits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call(t, g, abi.FuncCycle, 0, podBytes(&abi.Pod{UID: "me"})) // a fresh view
			call(t, g, abi.FuncPreFilter, 0, nil)
			if msg := callErr(g, abi.FuncEditView, 0, tc.in); !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q, want it to contain %q", msg, tc.want)
			}
		})
	}
	var e abi.Encoder
	e.InitRequest(&abi.InitRequest{})
	fresh := New(plugin.Registration{Name: "PodLimit", New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) { return podLimit{}, nil }})
	if msg := callErr(fresh, abi.FuncEditView, 0, editsBytes()); !strings.Contains(msg, "what-if edit before init") {
		t.Errorf("before init: %q", msg)
	}
	call(t, fresh, abi.FuncInit, 0, e.B)
	if msg := callErr(fresh, abi.FuncEditView, 0, editsBytes()); !strings.Contains(msg, "what-if edit outside a cycle") {
		t.Errorf("outside a cycle: %q", msg)
	}
}

// addTrailing is a one-edit ViewEdits adding p to slot 0, with a byte
// after the pod inside its length prefix.
func addTrailing(p abi.Pod) []byte {
	var pe abi.Encoder
	pe.Pod(&p)
	pe.U8(0)
	var e abi.Encoder
	e.Uvarint(1)
	e.U32(0)
	e.U8(uint8(abi.EditAdd))
	e.Bytes(pe.B)
	return e.B
}

// Once its pools are warm, a dry run's edits (by UID) and its push/pop
// allocate nothing but the clones of the cycle state's entries: TinyGo's
// collector, which walks the whole mirror, is not woken by them.
func TestEditViewDoesNotAllocate(t *testing.T) {
	g, pods := editGuest(t)
	removeAll := editsBytes(rm(0, "a1"), rm(0, "a2"), rmPod(1, pods["b1"]))
	call(t, g, abi.FuncEditView, 0, removeAll)
	reprieve := editsBytes(restore(0, "a1"), restore(0, "a2"), restore(1, "b1"))
	again := editsBytes(rm(0, "a1"), rm(0, "a2"), rm(1, "b1"))
	run := func(in []byte) {
		copy(g.Input(len(in)), in)
		if r := g.Call(abi.FuncEditView, 0, len(in)); r[0] != abi.ReplyOK {
			t.Fatalf("error reply %q", abi.NewDecoder(r[1:]).String())
		}
	}
	push := func(fn abi.Func) {
		if r := g.Call(fn, 0, 0); r[0] != abi.ReplyOK {
			t.Fatalf("%s: error reply", fn)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		push(abi.FuncPushState)
		run(reprieve)
		run(again)
		push(abi.FuncPopState)
	})
	// The state clone's one entry (the podLimit plugin's).
	if allocs > 1 {
		t.Fatalf("%.1f allocations per push, 6 edits and pop; want at most the state entry's clone", allocs)
	}
	// Pods that edits carry are decoded into the slab, which each cycle
	// (resetView) reuses. (Host ports, which few pods have, would still
	// be allocated.)
	carried := editsBytes(rmPod(1, pods["b1"]), add(0, editPod("n2", 100, 0)), rmPod(0, pods["a2"]))
	allocs = testing.AllocsPerRun(100, func() {
		g.resetView()
		push(abi.FuncPushState)
		run(carried)
		push(abi.FuncPopState)
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per cycle with 3 carried pods; want at most the state entry's clone", allocs)
	}
}
