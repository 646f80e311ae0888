package plugintest

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Vpod plugins (ABI v1.3) are tested on a step built like the host's
// vpod engine builds one:
//
//	s := plugintest.MakeVPodState().Capacity(10).
//		Node("n1", "zone-a").Node("n2", "zone-b").
//		Pod(0, "n1", 7).Pod(1, "n2", 10).
//		Place(0, 3).
//		Obj(t)
//	verdicts, err := plugintest.RunVPodFilter(t, p, plugintest.KnativeArgs(`{"MaxSkew":1}`), s)

// VPodWrapper builds the state of one vpod step: adapter pods with their
// free capacity, nodes with zones, and the stepped vpod's placements.
type VPodWrapper struct {
	statefulSet  string
	capacity     int32
	replicas     int32
	replicasSet  bool
	freeCapEmpty bool
	ns, name     string
	vreplicas    int32
	nodes        map[string]string // node -> zone
	pods         map[int32]vpodPod
	placed       map[int32]int32 // ordinal -> the vpod's vreplicas
	topo         abi.VPodTopology
	step         abi.VPodStep
}

type vpodPod struct {
	node string
	free int32
}

// MakeVPodState starts a step of vpod ns/vpod over StatefulSet "adapter"
// with capacity 10 and no pods.
func MakeVPodState() *VPodWrapper {
	return &VPodWrapper{statefulSet: "adapter", capacity: 10, ns: "ns", name: "vpod",
		nodes: map[string]string{}, pods: map[int32]vpodPod{}, placed: map[int32]int32{}}
}

// StatefulSet names the adapter StatefulSet.
func (w *VPodWrapper) StatefulSet(name string) *VPodWrapper { w.statefulSet = name; return w }

// Capacity sets the vreplicas one pod holds.
func (w *VPodWrapper) Capacity(c int32) *VPodWrapper { w.capacity = c; return w }

// Replicas sets the StatefulSet's scale; by default it is the number of
// pods.
func (w *VPodWrapper) Replicas(r int32) *VPodWrapper { w.replicas, w.replicasSet = r, true; return w }

// VPod names the stepped vpod and sets its desired vreplicas.
func (w *VPodWrapper) VPod(namespace, name string, vreplicas int32) *VPodWrapper {
	w.ns, w.name, w.vreplicas = namespace, name, vreplicas
	return w
}

// FreeCapEmpty marks the host's free-capacity table empty (no schedulable
// pod and no placement anywhere).
func (w *VPodWrapper) FreeCapEmpty() *VPodWrapper { w.freeCapEmpty = true; return w }

// Node adds a schedulable node in a zone ("" is Knative's "unknown").
func (w *VPodWrapper) Node(name, zone string) *VPodWrapper {
	if zone == "" {
		zone = "unknown"
	}
	w.nodes[name] = zone
	return w
}

// Pod adds a schedulable adapter pod with its ordinal, node (added with
// zone "unknown" if not yet known) and free capacity (every vpod's
// vreplicas on it already taken off).
func (w *VPodWrapper) Pod(ordinal int32, node string, free int32) *VPodWrapper {
	if _, ok := w.nodes[node]; !ok {
		w.nodes[node] = "unknown"
	}
	w.pods[ordinal] = vpodPod{node: node, free: free}
	return w
}

// Place puts vreplicas of the stepped vpod on the pod with this ordinal:
// the pod, its node and its zone become present in the vpod's spread
// maps (even with 0) and their counts add up, as Knative's state builder
// counts placements. Placing twice on a pod adds.
func (w *VPodWrapper) Place(ordinal, vreplicas int32) *VPodWrapper {
	w.placed[ordinal] += vreplicas
	return w
}

// Topology builds the topology: pods by ordinal, nodes by name, zones
// sorted.
func (w *VPodWrapper) Topology(tb testing.TB) *abi.VPodTopology {
	tb.Helper()
	w.build(tb)
	return &w.topo
}

// Step builds the step, with every pod a candidate.
func (w *VPodWrapper) Step(tb testing.TB) *abi.VPodStep {
	tb.Helper()
	w.build(tb)
	return &w.step
}

// Obj builds the state a plugin reads.
func (w *VPodWrapper) Obj(tb testing.TB) *plugin.VPodState {
	tb.Helper()
	w.build(tb)
	s, err := plugin.NewVPodState(&w.topo, &w.step)
	if err != nil {
		tb.Fatalf("plugintest: vpod state: %v", err)
	}
	return s
}

func (w *VPodWrapper) build(tb testing.TB) {
	tb.Helper()
	var nodeNames, zones []string
	zoneSet := map[string]bool{}
	for n, z := range w.nodes {
		nodeNames = append(nodeNames, n)
		if !zoneSet[z] {
			zoneSet[z] = true
			zones = append(zones, z)
		}
	}
	sort.Strings(nodeNames)
	sort.Strings(zones)
	nodeIx, zoneIx := map[string]int{}, map[string]int{}
	for i, z := range zones {
		zoneIx[z] = i
	}
	t := abi.VPodTopology{Generation: 1, StatefulSet: w.statefulSet, Capacity: w.capacity, Replicas: w.replicas, Zones: zones}
	for i, n := range nodeNames {
		nodeIx[n] = i
		t.Nodes = append(t.Nodes, abi.VPodNode{Name: n, Zone: uint32(zoneIx[w.nodes[n]])})
	}
	var ordinals []int32
	for o := range w.pods {
		ordinals = append(ordinals, o)
	}
	sort.Slice(ordinals, func(i, j int) bool { return ordinals[i] < ordinals[j] })
	if !w.replicasSet {
		t.Replicas = int32(len(ordinals))
	}
	s := abi.VPodStep{Policy: 0, Topology: t.Generation, Namespace: w.ns, Name: w.name, VReplicas: w.vreplicas, FreeCapEmpty: w.freeCapEmpty}
	nodeSpread, zoneSpread := map[int]int32{}, map[int]int32{}
	for i, o := range ordinals {
		p := w.pods[o]
		t.Pods = append(t.Pods, abi.VPodPod{Ordinal: o, Node: uint32(nodeIx[p.node])})
		s.Free = append(s.Free, p.free)
		s.Candidates = append(s.Candidates, uint32(i))
		if v, ok := w.placed[o]; ok {
			s.PodSpread = append(s.PodSpread, abi.VPodCount{Index: uint32(i), VReplicas: v})
			nodeSpread[nodeIx[p.node]] += v
			zoneSpread[zoneIx[w.nodes[p.node]]] += v
		}
	}
	for o := range w.placed {
		if _, ok := w.pods[o]; !ok {
			tb.Fatalf("plugintest: Place on ordinal %d, which has no Pod", o)
		}
	}
	s.NodeSpread, s.ZoneSpread = sortedCounts(nodeSpread), sortedCounts(zoneSpread)
	w.topo, w.step = t, s
}

func sortedCounts(m map[int]int32) []abi.VPodCount {
	var cs []abi.VPodCount
	for i, v := range m {
		cs = append(cs, abi.VPodCount{Index: uint32(i), VReplicas: v})
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Index < cs[j].Index })
	return cs
}

// KnativeArgs turns an args object written as JSON into the raw args a
// Knative policy entry carries: a JSON string holding it.
func KnativeArgs(object string) string {
	b, _ := json.Marshal(object) // a string always marshals
	return string(b)
}

// rawArgs is the entry's raw args: nil for "" (absent).
func rawArgs(args string) []byte {
	if args == "" {
		return nil
	}
	return []byte(args)
}

// RunVPodFilter builds a vpod predicate's filter from args (the entry's
// raw JSON args, "" for none) and runs it over pods (pod indexes of s;
// every pod when none are given), returning one status per pod (nil
// where it passes) and the args error. As the SDK runtime does, refused
// args fail every pod with Unschedulable "invalid arguments", and a
// status code other than Unschedulable, UnschedulableAndUnresolvable or
// Error fails the test.
func RunVPodFilter(tb testing.TB, p plugin.Plugin, args string, s *plugin.VPodState, pods ...int) ([]*plugin.Status, error) {
	tb.Helper()
	pp, ok := p.(plugin.VPodPredicatePlugin)
	if !ok {
		tb.Fatalf("plugin %s is no vpod predicate", p.Name())
	}
	pods = allPods(s, pods)
	out := make([]*plugin.Status, len(pods))
	f, err := pp.NewVPodFilter(rawArgs(args))
	if err != nil && !(f != nil && argsIgnored(tb, err)) {
		for i := range out {
			out[i] = plugin.NewStatus(abi.Unschedulable, "invalid arguments")
		}
		return out, err
	}
	f(s, pods, out)
	for i, st := range out {
		if st.IsSuccess() {
			out[i] = nil
			continue
		}
		switch st.Code() {
		case abi.Unschedulable, abi.UnschedulableAndUnresolvable, abi.Error:
		default:
			tb.Errorf("plugin %s: pod %d: status code %s is no vpod predicate verdict", p.Name(), pods[i], st.Code())
		}
	}
	return out, nil
}

// RunVPodScore builds a vpod priority's scorer from args and runs it over
// pods (every pod of s when none are given), returning one raw score per
// pod, or the args or scoring error.
func RunVPodScore(tb testing.TB, p plugin.Plugin, args string, s *plugin.VPodState, pods ...int) ([]int64, error) {
	tb.Helper()
	pp, ok := p.(plugin.VPodPriorityPlugin)
	if !ok {
		tb.Fatalf("plugin %s is no vpod priority", p.Name())
	}
	pods = allPods(s, pods)
	sc, err := pp.NewVPodScorer(rawArgs(args))
	if err != nil && !(sc != nil && argsIgnored(tb, err)) {
		return nil, err
	}
	scores := make([]int64, len(pods))
	if err := sc(s, pods, scores); err != nil {
		return nil, err
	}
	return scores, nil
}

// argsIgnored reports whether err says the plugin takes no args and runs
// as if it had none (a *plugin.ArgsIgnoredError), as the SDK runtime runs
// it; the test log says so, since a strict policy refuses such an entry.
func argsIgnored(tb testing.TB, err error) bool {
	tb.Helper()
	if _, ok := err.(*plugin.ArgsIgnoredError); !ok {
		return false
	}
	tb.Logf("%v: the entry runs without them (knativeCompat: strict refuses it)", err)
	return true
}

func allPods(s *plugin.VPodState, pods []int) []int {
	if len(pods) > 0 {
		return pods
	}
	all := make([]int, s.NumPods())
	for i := range all {
		all[i] = i
	}
	return all
}

// VPodEntry is one entry of a vpod policy: a predicate or priority plugin
// with the entry's raw args ("" for none; KnativeArgs for an object) and,
// for a priority, its weight.
type VPodEntry struct {
	Plugin plugin.Plugin
	Args   string
	Weight int64
}

// VPodPolicy is a vpod scheduler's policy as PlaceVReplicas runs it.
type VPodPolicy struct {
	// FitsResources runs Knative's PodFitsResources first: a pod with no
	// free capacity takes no vreplica (unless the free-capacity table is
	// empty). It is a builtin of the host's knative bundle, not a plugin a
	// project has, so it is a flag here.
	FitsResources bool
	Predicates    []VPodEntry
	Priorities    []VPodEntry
}

// PlaceVReplicas places n vreplicas of w's vpod one at a time, as the vpod
// engine's Policy strategy does: at every step each pod is a candidate,
// the predicates run in order (a pod any of them refuses, with any
// status, is out; refused args refuse every pod), the priorities score
// the pods left, and the vreplica goes to the pod with the highest
// weighted sum; that pod's free capacity drops by one and the vpod's
// spread grows. The host breaks ties at random; here the lowest ordinal
// wins, so tests should not depend on a tie. It stops early, leaving the
// rest pending, when no pod is feasible or a priority fails (its error is
// returned, as the host logs it). It returns the vreplicas placed per
// ordinal (this call's only) and how many are pending. w keeps the new
// placements. The engine places a vpod's every vreplica from scratch, its
// old pods present with 0: build w that way (Place(ordinal, 0), their
// vreplicas counted as free) to test a re-placement.
func PlaceVReplicas(tb testing.TB, w *VPodWrapper, n int32, policy VPodPolicy) (placed map[int32]int32, pending int32, err error) {
	tb.Helper()
	placed = map[int32]int32{}
	for step := int32(0); step < n; step++ {
		s := w.Obj(tb)
		feasible := make([]bool, s.NumPods())
		for i := range feasible {
			feasible[i] = !policy.FitsResources || s.FreeCapEmpty() || s.Free(i) > 0
		}
		for _, e := range policy.Predicates {
			cands := feasibleOf(feasible)
			if len(cands) == 0 {
				break
			}
			verdicts, _ := RunVPodFilter(tb, e.Plugin, e.Args, s, cands...)
			for i, st := range verdicts {
				if st != nil {
					feasible[cands[i]] = false
				}
			}
		}
		cands := feasibleOf(feasible)
		if len(cands) == 0 {
			return placed, n - step, nil
		}
		totals := make([]int64, len(cands))
		for _, e := range policy.Priorities {
			scores, err := RunVPodScore(tb, e.Plugin, e.Args, s, cands...)
			if err != nil {
				return placed, n - step, err
			}
			for i, v := range scores {
				totals[i] += e.Weight * v
			}
		}
		best := 0
		for i := range totals {
			if totals[i] > totals[best] {
				best = i
			}
		}
		o := s.Ordinal(cands[best])
		p := w.pods[o]
		p.free--
		w.pods[o] = p
		w.Place(o, 1)
		placed[o]++
	}
	return placed, 0, nil
}

func feasibleOf(feasible []bool) []int {
	var out []int
	for i, ok := range feasible {
		if ok {
			out = append(out, i)
		}
	}
	return out
}
