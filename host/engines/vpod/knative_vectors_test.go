package vpod

// Knative Eventing v1.16.0's own scheduler and autoscaler test tables
// (pkg/scheduler/statefulset: TestStatefulsetScheduler,
// TestReservePlacements, TestAutoscaler, TestCompactor,
// TestAutoscalerScaleDownToZero) replayed against this engine with the
// knative bundle's native twins. The inputs and the expected results are
// Knative's; the harness that builds the cluster around them is ours and
// mirrors theirs:
//
//   - nodes node0…node5, node "node"+(j·3+i) in zone "zone"+i (i < 3,
//     j < 2), so zone0 = {node0, node3}, zone1 = {node1, node4}, zone2 =
//     {node2, node5}; the scheduler table adds node6 without a zone label
//     (the "unknown" zone), the autoscaler and compactor tables do not;
//   - adapter pods statefulset-name-i on node i in namespace test-ns: for
//     i < replicas (scheduler, compactor) or i < max(replicas,
//     wantReplicas) (autoscaler), none annotated;
//   - pod capacity 10; the StatefulSet's scale is replicas;
//   - the vpods of a case are in the lister with their placements (the
//     scheduler table's one vpod source-namespace/source-name included);
//   - reservations are injected where Knative's getReserved returns them.
//
// None of these vectors is changed by our two deliberate deviations
// (contract §0): every descheduling case has ordinals ≤ 3 with
// RemoveWithHighestOrdinalPriority weight 2 against a spread priority of
// weight 10, so Knative's uint64 sums never wrap past zero (2·ordinal <
// 10), and no descheduling case takes a pod's last vreplica before its
// final removal step, so Knative never re-offers an emptied pod. Each
// case therefore asserts Knative's own expected value.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/internal/testwait"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

const (
	kvNS       = "test-ns"
	kvSTS      = "statefulset-name"
	kvCapacity = 10
	kvModule   = "knative-vectors"
)

// kvSourceKey is the vpod TestStatefulsetScheduler schedules.
var kvSourceKey = Key{Namespace: "source-namespace", Name: "source-name"}

// kvKey names a vpod of the autoscaler and compactor tables.
func kvKey(name string) Key { return Key{Namespace: kvNS, Name: name} }

func kvPod(o int) string { return fmt.Sprintf("%s-%d", kvSTS, o) }

// kvP is the placement of vr vreplicas on pod o.
func kvP(o int, vr int32) Placement { return Placement{PodName: kvPod(o), VReplicas: vr} }

// kvNodes are the harness's nodes: node0…node5 in zone0…zone2, plus node6
// with no zone label when unknownZone.
func kvNodes(unknownZone bool) []*corev1.Node {
	const numZones, numNodes = 3, 6
	var out []*corev1.Node
	for i := 0; i < numZones; i++ {
		for j := 0; j < numNodes/numZones; j++ {
			out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{
				Name:   fmt.Sprintf("node%d", j*(numNodes/numZones+1)+i),
				Labels: map[string]string{ZoneLabel: fmt.Sprintf("zone%d", i)},
			}})
		}
	}
	if unknownZone {
		out = append(out, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node%d", numNodes)}})
	}
	return out
}

// kvPods are adapter pods 0…n−1, pod i on node i.
func kvPods(n int32) []*corev1.Pod {
	var out []*corev1.Pod
	for i := int32(0); i < n; i++ {
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: kvNS, Name: kvPod(int(i))},
			Spec:       corev1.PodSpec{NodeName: fmt.Sprintf("node%d", i)},
		})
	}
	return out
}

// kvE is a policy entry the Knative way: args (when not empty) are a JSON
// string holding the args object.
func kvE(name string, weight int64, args string) PolicyEntry {
	e := PolicyEntry{Name: name, Weight: weight}
	if args != "" {
		e.Args, _ = json.Marshal(args) // a string always marshals
	}
	return e
}

// The policies of Knative's tables.
var (
	kvFitsLowest = &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, "")},
		Priorities: []PolicyEntry{kvE("LowestOrdinalPriority", 1, "")},
	}
	kvFitsEven1 = &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, ""), kvE("EvenPodSpread", 0, `{"MaxSkew": 1}`)},
	}
	kvDeschedEven = &Policy{Priorities: []PolicyEntry{
		kvE("RemoveWithEvenPodSpreadPriority", 10, `{"MaxSkew": 2}`), kvE("RemoveWithHighestOrdinalPriority", 2, ""),
	}}
	kvDeschedZone = &Policy{Priorities: []PolicyEntry{
		kvE("RemoveWithAvailabilityZonePriority", 10, `{"MaxSkew": 2}`), kvE("RemoveWithHighestOrdinalPriority", 2, ""),
	}}
	kvZoneLowest = &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, "")},
		Priorities: []PolicyEntry{kvE("AvailabilityZonePriority", 10, `{"MaxSkew": 1}`), kvE("LowestOrdinalPriority", 5, "")},
	}
	kvNodeLowest = &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, "")},
		Priorities: []PolicyEntry{kvE("AvailabilityNodePriority", 10, `{"MaxSkew": 1}`), kvE("LowestOrdinalPriority", 5, "")},
	}
	kvEvenLowest5 = &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, ""), kvE("EvenPodSpread", 0, `{"MaxSkew": 1}`)},
		Priorities: []PolicyEntry{kvE("LowestOrdinalPriority", 5, "")},
	}
	kvEvenZoneLowest = &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, ""), kvE("EvenPodSpread", 0, `{"MaxSkew": 1}`)},
		Priorities: []PolicyEntry{kvE("AvailabilityZonePriority", 10, `{"MaxSkew": 1}`), kvE("LowestOrdinalPriority", 5, "")},
	}
	kvEvenNodeLowest = &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, ""), kvE("EvenPodSpread", 0, `{"MaxSkew": 1}`)},
		Priorities: []PolicyEntry{kvE("AvailabilityNodePriority", 10, `{"MaxSkew": 1}`), kvE("LowestOrdinalPriority", 5, "")},
	}
)

// kvHA is the tables' "two Predicates and two Priorities (HA)" policy.
func kvHA(skew int) *Policy {
	a := fmt.Sprintf(`{"MaxSkew": %d}`, skew)
	return &Policy{
		Predicates: []PolicyEntry{kvE("PodFitsResources", 0, ""), kvE("EvenPodSpread", 0, a)},
		Priorities: []PolicyEntry{kvE("LowestOrdinalPriority", 2, ""), kvE("AvailabilityZonePriority", 10, a)},
	}
}

// kvRegistry loads a registry whose only vpod module is the knative
// bundle's native twin, closed when t ends.
func kvRegistry(t *testing.T) *modules.Registry {
	t.Helper()
	cfg := config.Default()
	cfg.Modules = []config.ModuleSpec{{Name: kvModule}}
	reg, err := modules.Load(context.Background(), cfg, modules.Options{
		CacheDir:      t.TempDir(),
		NativeBuiltin: true,
		Backends:      map[string]guest.Backend{kvModule: native.New(nil, knativedefaults.Plugins()...)},
	})
	if err != nil {
		t.Fatalf("knative native registry: %v", err)
	}
	t.Cleanup(func() { reg.Close(context.Background()) })
	// NewPolicies skips names no module serves, which would quietly turn
	// a vector into a different policy: every plugin must be served.
	for _, name := range []string{"PodFitsResources", "NoMaxResourceCount", "EvenPodSpread", "AvailabilityNodePriority",
		"AvailabilityZonePriority", "LowestOrdinalPriority", "RemoveWithEvenPodSpreadPriority",
		"RemoveWithAvailabilityNodePriority", "RemoveWithAvailabilityZonePriority", "RemoveWithHighestOrdinalPriority"} {
		if m := reg.PluginModule(name); m == nil || m.Config.Name != kvModule {
			t.Fatalf("plugin %s is not served by module %s", name, kvModule)
		}
	}
	return reg
}

// kvPolicies binds the policies to the registry (nil when both are nil).
func kvPolicies(t *testing.T, reg *modules.Registry, sched, desched *Policy) *Policies {
	t.Helper()
	if sched == nil && desched == nil {
		return nil
	}
	p, err := NewPolicies(context.Background(), reg, sched, desched, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// kvRands are the tie breakers each scheduling case runs with: Knative
// draws from crypto/rand, so a vector holds only if its result is the
// same whichever tied pod is taken.
var kvRands = []struct {
	name string
	mk   func() func(int64) int64
}{
	{"ties-first", func() func(int64) int64 {
		return func(n int64) int64 { return max(n-1, 0) } // never 0 past the first: keeps the earliest
	}},
	{"ties-last", func() func(int64) int64 { return func(int64) int64 { return 0 } }},
	{"ties-seed1", func() func(int64) int64 { return kvSeeded(1) }},
	{"ties-seed2", func() func(int64) int64 { return kvSeeded(2) }},
	{"ties-seed3", func() func(int64) int64 { return kvSeeded(3) }},
}

func kvSeeded(seed int64) func(int64) int64 {
	r := rand.New(rand.NewSource(seed))
	return func(n int64) int64 {
		if n <= 1 {
			return 0
		}
		return r.Int63n(n)
	}
}

// kvClock is the fixed clock of every vector.
func kvClock() time.Time { return time.Date(2024, 11, 1, 12, 0, 0, 0, time.UTC) }

// kvEvictions records evictions per vpod, in order, as Knative's
// recordEviction does.
type kvEvictions struct {
	mu  sync.Mutex
	got map[Key][]Placement
}

func (r *kvEvictions) evict(_ context.Context, pod *corev1.Pod, v VPod, from Placement) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.got == nil {
		r.got = map[Key][]Placement{}
	}
	r.got[v.Key] = append(r.got[v.Key], from)
	return nil
}

func kvScheduler(t *testing.T, reg *modules.Registry, c Cluster, maxFillUp bool, sched, desched *Policy, rnd func(int64) int64, ev *kvEvictions) *Scheduler {
	t.Helper()
	set := Settings{Name: "knative-vectors", Namespace: kvNS, StatefulSet: kvSTS, Capacity: kvCapacity,
		Strategy: StrategyPolicy, SchedPolicy: sched, DeschedPolicy: desched, RefreshPeriod: 10 * time.Second}
	if maxFillUp {
		set.Strategy = StrategyMaxFillUp
	}
	if ev == nil {
		ev = &kvEvictions{}
	}
	s, err := New(set, c, kvPolicies(t, reg, sched, desched), Options{Rand: rnd, Now: kvClock, Evictor: ev.evict})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// kvSchedCase is one row of TestStatefulsetScheduler.
type kvSchedCase struct {
	name       string
	vreplicas  int32
	replicas   int32
	placements []Placement
	want       []Placement // nil and empty differ, as in Knative's reflect.DeepEqual
	wantErr    bool        // a requeue after 5s
	maxFillUp  bool        // SchedulerPolicyType MAXFILLUP, else predicates/priorities
	sched      *Policy
	desched    *Policy
}

func TestKnativeVectorsStatefulsetScheduler(t *testing.T) {
	// Hand checks of the predicate/priority rows (pod i on node i, zone
	// i mod 3; 4 zones counting node6's "unknown"; signed totals):
	//  - "two replicas, 12 vreplicas, … no Priorities": every feasible
	//    pod scores 1 and Knative breaks the tie at random. The result is
	//    invariant: EvenPodSpread{MaxSkew 1} makes the pod ahead
	//    infeasible, so the two pods alternate and end 6/6.
	//  - HA rows: zone penalty Σ over the 3 other zones |c_z+1 − c_o|
	//    (weight 10) dominates; at equal zone penalties the lower
	//    ordinal wins (weight 2). From (k,k,k) pod 0 goes first, then
	//    pod 1 (zone penalty k+2 vs k+6), then pod 2: round robin, so 15
	//    → 5/5/5 and 20 → 7/7/6. No tie survives the ordinal priority.
	//  - desched rows: penalty Σ |(c_p−1) − c_q| over the other placed
	//    pods/zones, ·10, plus 2·ordinal: (10,10) loses on pod 1, then
	//    alternates → 8/7; 1/1/1 loses pod 2; 2/2/2 → pods 2, 1, 0.
	cases := []kvSchedCase{
		{name: "no replicas, no vreplicas", vreplicas: 0, replicas: 0, want: nil, maxFillUp: true},
		{name: "no replicas, 1 vreplicas, fail.", vreplicas: 1, replicas: 0, wantErr: true, want: []Placement{}, maxFillUp: true},
		{name: "one replica, one vreplicas", vreplicas: 1, replicas: 1, want: []Placement{kvP(0, 1)}, maxFillUp: true},
		{name: "one replica, 3 vreplicas", vreplicas: 3, replicas: 1, want: []Placement{kvP(0, 3)}, maxFillUp: true},
		{name: "one replica, 8 vreplicas, already scheduled on unschedulable pod, add replicas", vreplicas: 8, replicas: 1,
			placements: []Placement{kvP(0, 3), kvP(2, 5)}, want: []Placement{kvP(0, 8)}, maxFillUp: true},
		{name: "one replica, 1 vreplicas, already scheduled on unschedulable pod, remove replicas", vreplicas: 1, replicas: 1,
			placements: []Placement{kvP(0, 3), kvP(2, 5)}, want: []Placement{kvP(0, 1)}, maxFillUp: true},
		{name: "one replica, 15 vreplicas, unschedulable", vreplicas: 15, replicas: 1, wantErr: true,
			want: []Placement{kvP(0, 10)}, maxFillUp: true},
		{name: "two replicas, 15 vreplicas, scheduled", vreplicas: 15, replicas: 2,
			want: []Placement{kvP(0, 10), kvP(1, 5)}, maxFillUp: true},
		{name: "two replicas, 15 vreplicas, already scheduled", vreplicas: 15, replicas: 2,
			placements: []Placement{kvP(0, 10), kvP(1, 5)}, want: []Placement{kvP(0, 10), kvP(1, 5)}, maxFillUp: true},
		{name: "two replicas, 20 vreplicas, scheduling", vreplicas: 20, replicas: 2,
			placements: []Placement{kvP(0, 5), kvP(1, 5)}, want: []Placement{kvP(0, 10), kvP(1, 10)}, maxFillUp: true},
		{name: "two replicas, 15 vreplicas, too much scheduled (scale down)", vreplicas: 15, replicas: 2,
			placements: []Placement{kvP(0, 10), kvP(1, 10)}, want: []Placement{kvP(0, 10), kvP(1, 5)}, maxFillUp: true},

		{name: "no replicas, no vreplicas with Predicates and Priorities", vreplicas: 0, replicas: 0, want: nil, sched: kvFitsLowest},
		{name: "no replicas, 1 vreplicas, fail with Predicates and Priorities", vreplicas: 1, replicas: 0, wantErr: true, want: nil, sched: kvFitsLowest},
		{name: "one replica, one vreplicas with Predicates and Priorities", vreplicas: 1, replicas: 1,
			want: []Placement{kvP(0, 1)}, sched: kvFitsLowest},
		{name: "one replica, 3 vreplicas with Predicates and Priorities", vreplicas: 3, replicas: 1,
			want: []Placement{kvP(0, 3)}, sched: kvFitsLowest},
		{name: "one replica, 15 vreplicas, unschedulable with Predicates and Priorities", vreplicas: 15, replicas: 1,
			wantErr: true, want: nil, sched: kvFitsLowest},
		{name: "two replicas, 12 vreplicas, scheduled with Predicates and no Priorities", vreplicas: 12, replicas: 2,
			want: []Placement{kvP(0, 6), kvP(1, 6)}, sched: kvFitsEven1},
		{name: "two replicas, 15 vreplicas, scheduled with Predicates and Priorities", vreplicas: 15, replicas: 2,
			want: []Placement{kvP(0, 10), kvP(1, 5)}, sched: kvFitsLowest},
		{name: "two replicas, 15 vreplicas, already scheduled with Predicates and Priorities", vreplicas: 15, replicas: 2,
			placements: []Placement{kvP(0, 10), kvP(1, 5)}, want: []Placement{kvP(0, 10), kvP(1, 5)}, sched: kvFitsLowest},
		{name: "two replicas, 20 vreplicas, scheduling with Predicates and Priorities", vreplicas: 20, replicas: 2,
			placements: []Placement{kvP(0, 5), kvP(1, 5)}, want: []Placement{kvP(0, 10), kvP(1, 10)}, sched: kvFitsLowest},
		{name: "no replicas, no vreplicas with two Predicates and two Priorities", vreplicas: 0, replicas: 0, want: nil, sched: kvHA(2)},
		{name: "no replicas, 1 vreplicas, fail with two Predicates and two Priorities", vreplicas: 1, replicas: 0,
			wantErr: true, want: nil, sched: kvHA(2)},
		{name: "three replicas, one vreplica, with two Predicates and two Priorities (HA)", vreplicas: 1, replicas: 3,
			want: []Placement{kvP(0, 1)}, sched: kvHA(2)},
		{name: "three replicas, three vreplicas, with two Predicates and two Priorities (HA)", vreplicas: 3, replicas: 3,
			want: []Placement{kvP(0, 1), kvP(1, 1), kvP(2, 1)}, sched: kvHA(2)},
		{name: "one replica, 15 vreplicas, with two Predicates and two Priorities (HA)", vreplicas: 15, replicas: 1,
			wantErr: true, want: nil, sched: kvHA(2)},
		{name: "three replicas, 15 vreplicas, scheduled, with two Predicates and two Priorities (HA)", vreplicas: 15, replicas: 3,
			want: []Placement{kvP(0, 5), kvP(1, 5), kvP(2, 5)}, sched: kvHA(2)},
		{name: "three replicas, 15 vreplicas, already scheduled, with two Predicates and two Priorities (HA)", vreplicas: 15, replicas: 3,
			placements: []Placement{kvP(0, 10), kvP(1, 5)}, want: []Placement{kvP(0, 10), kvP(1, 5)}, sched: kvHA(2)},
		{name: "three replicas, 30 vreplicas, with two Predicates and two Priorities (HA)", vreplicas: 30, replicas: 3,
			placements: []Placement{kvP(0, 5), kvP(1, 5), kvP(2, 10)}, want: []Placement{kvP(0, 10), kvP(1, 10), kvP(2, 10)}, sched: kvHA(5)},
		// Knative's table lists this row twice under one name (Go's t.Run
		// suffixes the second "#01").
		{name: "three replicas, 15 vreplicas, with two Predicates and two Priorities (HA)", vreplicas: 15, replicas: 3,
			want: []Placement{kvP(0, 5), kvP(1, 5), kvP(2, 5)}, sched: kvHA(2)},
		{name: "three replicas, 20 vreplicas, with two Predicates and two Priorities (HA)", vreplicas: 20, replicas: 3,
			want: []Placement{kvP(0, 7), kvP(1, 7), kvP(2, 6)}, sched: kvHA(2)},

		{name: "one replica, 8 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 8, replicas: 1,
			placements: []Placement{kvP(0, 10)}, want: []Placement{kvP(0, 8)}, desched: kvDeschedEven},
		{name: "two replicas, 15 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 15, replicas: 2,
			placements: []Placement{kvP(0, 10), kvP(1, 10)}, want: []Placement{kvP(0, 8), kvP(1, 7)}, desched: kvDeschedEven},
		{name: "three replicas, 15 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 15, replicas: 3,
			placements: []Placement{kvP(0, 10), kvP(1, 10), kvP(2, 5)}, want: []Placement{kvP(0, 5), kvP(1, 5), kvP(2, 5)}, desched: kvDeschedZone},
		// Two rows share this name in Knative's table: even pod spread,
		// then zone.
		{name: "three replicas, 2 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 2, replicas: 3,
			placements: []Placement{kvP(0, 1), kvP(1, 1), kvP(2, 1)}, want: []Placement{kvP(0, 1), kvP(1, 1)}, desched: kvDeschedEven},
		{name: "three replicas, 2 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 2, replicas: 3,
			placements: []Placement{kvP(0, 1), kvP(1, 1), kvP(2, 1)}, want: []Placement{kvP(0, 1), kvP(1, 1)}, desched: kvDeschedZone},
		{name: "three replicas, 3 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 3, replicas: 3,
			placements: []Placement{kvP(0, 2), kvP(1, 2), kvP(2, 2)}, want: []Placement{kvP(0, 1), kvP(1, 1), kvP(2, 1)}, desched: kvDeschedEven},
		// Knative's name says 6 vreplicas; the row asks for 7.
		{name: "three replicas, 6 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 7, replicas: 3,
			placements: []Placement{kvP(0, 10), kvP(1, 10), kvP(2, 5)}, want: []Placement{kvP(0, 3), kvP(1, 2), kvP(2, 2)}, desched: kvDeschedEven},
		{name: "four replicas, 7 vreplicas, too much scheduled (scale down), with two desched Priorities", vreplicas: 7, replicas: 4,
			placements: []Placement{kvP(0, 4), kvP(1, 3), kvP(2, 4), kvP(3, 3)},
			want:       []Placement{kvP(0, 2), kvP(1, 2), kvP(2, 2), kvP(3, 1)}, desched: kvDeschedEven},
		// The row's "pending" map is never read by Knative's harness.
		{name: "three replicas, 15 vreplicas with Predicates and Priorities and non-zero pending for rebalancing", vreplicas: 15, replicas: 3,
			placements: []Placement{kvP(0, 10)}, want: []Placement{kvP(0, 5), kvP(1, 5), kvP(2, 5)}, sched: kvEvenZoneLowest},
		// Six pods, 4 zones (node6's "unknown" has no pod): every zone
		// and every node is empty, so every pod has the same spread
		// penalty and the lowest ordinal wins.
		{name: "six replicas, one vreplica, with Zone Priority (HA)", vreplicas: 1, replicas: 6,
			want: []Placement{kvP(0, 1)}, sched: &Policy{
				Predicates: []PolicyEntry{kvE("PodFitsResources", 0, "")},
				Priorities: []PolicyEntry{kvE("AvailabilityZonePriority", 10, `{"MaxSkew": 2}`), kvE("LowestOrdinalPriority", 5, "")}}},
		{name: "six replicas, one vreplica, with Node Priority (HA)", vreplicas: 1, replicas: 6,
			want: []Placement{kvP(0, 1)}, sched: &Policy{
				Predicates: []PolicyEntry{kvE("PodFitsResources", 0, "")},
				Priorities: []PolicyEntry{kvE("AvailabilityNodePriority", 10, `{"MaxSkew": 2}`), kvE("LowestOrdinalPriority", 5, "")}}},
		{name: "two replicas, 12 vreplicas, already scheduled on overcommitted pod, remove replicas", vreplicas: 12, replicas: 2,
			placements: []Placement{kvP(0, 12)}, want: []Placement{kvP(0, 10), kvP(1, 2)}, maxFillUp: true},
		{name: "one replica, 12 vreplicas, already scheduled on overcommitted pod, remove replicas", vreplicas: 12, replicas: 1,
			placements: []Placement{kvP(0, 12)}, want: []Placement{kvP(0, 10)}, wantErr: true, maxFillUp: true},
	}
	reg := kvRegistry(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range kvRands {
				t.Run(r.name, func(t *testing.T) {
					v := VPod{Key: kvSourceKey, VReplicas: tc.vreplicas, Placements: tc.placements}
					c := NewStaticCluster(kvNS, kvSTS, tc.replicas, kvPods(tc.replicas), kvNodes(true), []VPod{v})
					ev := &kvEvictions{}
					s := kvScheduler(t, reg, c, tc.maxFillUp, tc.sched, tc.desched, r.mk(), ev)
					listed, _ := c.VPod(kvSourceKey)
					got, err := s.Schedule(context.Background(), listed)
					after, requeue := IsRequeue(err)
					switch {
					case !tc.wantErr && err != nil:
						t.Fatalf("unexpected error %v", err)
					case tc.wantErr && !requeue:
						t.Fatalf("error %v, want a requeue", err)
					case tc.wantErr && after != 5*time.Second:
						t.Errorf("requeue after %s, want 5s", after)
					}
					if !reflect.DeepEqual(got, tc.want) {
						t.Errorf("placements %s, want %s", kvFmt(got), kvFmt(tc.want))
					}
					if len(ev.got) != 0 {
						t.Errorf("Schedule evicted %v", ev.got)
					}
				})
			}
		})
	}
}

// kvFmt shows placements with nil and empty told apart.
func kvFmt(ps []Placement) string {
	if ps == nil {
		return "nil"
	}
	return fmt.Sprintf("%v", ps)
}

func TestKnativeVectorsReservePlacements(t *testing.T) {
	cases := []struct {
		name       string
		vpod       VPod
		placements []Placement
		reserved   map[string]int32
	}{
		{name: "no replicas, no placement, no reserved", vpod: VPod{Key: kvKey("vpod-1")},
			placements: nil, reserved: map[string]int32{}},
		{name: "one vpod, with placements in 2 pods, no reserved",
			vpod:       VPod{Key: kvKey("vpod-1"), VReplicas: 15, Placements: []Placement{kvP(0, 8), kvP(1, 7)}},
			placements: nil, reserved: map[string]int32{}},
		{name: "no replicas, new placements, with reserved", vpod: VPod{Key: kvKey("vpod-1")},
			placements: []Placement{kvP(0, 1)}, reserved: map[string]int32{kvPod(0): 1}},
		// v1.16.0 overwrites only the pods the new placements name.
		{name: "one vpod, with placements in 2 pods, with reserved",
			vpod:       VPod{Key: kvKey("vpod-1"), VReplicas: 15, Placements: []Placement{kvP(0, 8), kvP(1, 7)}},
			placements: []Placement{kvP(0, 1)}, reserved: map[string]int32{kvPod(0): 1, kvPod(1): 7}},
		{name: "one vpod, with placements in 2 pods, with reserved",
			vpod:       VPod{Key: kvKey("vpod-1"), VReplicas: 15, Placements: []Placement{kvP(0, 8), kvP(1, 7)}},
			placements: []Placement{kvP(0, 1), kvP(1, 1)}, reserved: map[string]int32{kvPod(0): 1, kvPod(1): 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Knative's harness has no state builder here: the scheduler
			// only keeps reservations. Ours gets an empty cluster.
			c := NewStaticCluster(kvNS, kvSTS, 0, nil, nil, []VPod{tc.vpod})
			s := kvScheduler(t, nil, c, true, nil, nil, nil, nil)
			if err := s.Promote(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !s.leader.Load() {
				t.Error("not leader after Promote")
			}
			// reservePlacements is what Schedule runs after placing (no
			// public entry point reserves given placements).
			s.resMu.Lock()
			s.reservePlacements(tc.vpod.Key, tc.vpod.Placements) // initial reserve
			s.reservePlacements(tc.vpod.Key, tc.placements)      // new reserve
			s.resMu.Unlock()
			if got := s.Reserved()[tc.vpod.Key]; !reflect.DeepEqual(got, tc.reserved) {
				t.Errorf("reserved %v, want %v", got, tc.reserved)
			}
		})
	}
}

// kvAutoscaleCase is one row of TestAutoscaler.
type kvAutoscaleCase struct {
	name         string
	replicas     int32
	vpods        []VPod
	scaleDown    bool
	wantReplicas int32
	maxFillUp    bool
	sched        *Policy
	reserved     map[Key]map[string]int32
}

func kvV(name string, vreplicas int32, ps ...Placement) VPod {
	return VPod{Key: kvKey(name), VReplicas: vreplicas, Placements: ps}
}

func TestKnativeVectorsAutoscaler(t *testing.T) {
	// Hand checks of the policy rows (replicas 2, pods 0 and 1 hold 8
	// and 7 of 18: last ordinal 1, pending 3, free 2 and 3; 3 zones and
	// 6 nodes, no node6 in this harness):
	//   zone factor 3: 1 + 1 + ⌈⌈3/10⌉/3⌉·3 = 5; node factor 6: 8;
	//   EvenPodSpread: ⌈3 / least non-zero free 2⌉ = 2 pods → 4.
	cases := []kvAutoscaleCase{
		{name: "no replicas, no placements, no pending", replicas: 0, vpods: []VPod{kvV("vpod-1", 0)}, wantReplicas: 0, maxFillUp: true},
		{name: "no replicas, no placements, with pending", replicas: 0, vpods: []VPod{kvV("vpod-1", 5)}, wantReplicas: 1, maxFillUp: true},
		{name: "no replicas, with placements, no pending", replicas: 0,
			vpods: []VPod{kvV("vpod-1", 15, kvP(0, 8), kvP(1, 7))}, wantReplicas: 2, maxFillUp: true},
		{name: "no replicas, with placements, with pending, enough capacity", replicas: 0,
			vpods: []VPod{kvV("vpod-1", 18, kvP(0, 8), kvP(1, 7))}, wantReplicas: 2, maxFillUp: true},
		{name: "no replicas, with placements, with pending, not enough capacity", replicas: 0,
			vpods: []VPod{kvV("vpod-1", 23, kvP(0, 8), kvP(1, 7))}, wantReplicas: 3, maxFillUp: true},
		{name: "with replicas, no placements, no pending, scale down", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 0)}, scaleDown: true, wantReplicas: 0, maxFillUp: true},
		{name: "with replicas, no placements, no pending, scale down (no vpods)", replicas: 3,
			vpods: []VPod{}, scaleDown: true, wantReplicas: 0, maxFillUp: true},
		{name: "with replicas, no placements, with pending, scale down", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 5)}, scaleDown: true, wantReplicas: 1, maxFillUp: true},
		{name: "with replicas, no placements, with pending, scale down disabled", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 5)}, scaleDown: false, wantReplicas: 3, maxFillUp: true},
		{name: "with replicas, no placements, with pending, scale up", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 45)}, wantReplicas: 5, maxFillUp: true},
		{name: "with replicas, no placements, with pending, no change", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 25)}, wantReplicas: 3, maxFillUp: true},
		{name: "with replicas, with placements, no pending, no change", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 15, kvP(0, 8), kvP(1, 7))}, wantReplicas: 2, maxFillUp: true},
		{name: "with replicas, with placements, with reserved", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 12, kvP(0, 5), kvP(1, 7))}, wantReplicas: 2, maxFillUp: true,
			reserved: map[Key]map[string]int32{kvKey("vpod-1"): {kvPod(0): 8}}},
		{name: "with replicas, with placements, with reserved (scale up)", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 22, kvP(0, 2), kvP(1, 7))}, wantReplicas: 3, maxFillUp: true,
			reserved: map[Key]map[string]int32{kvKey("vpod-1"): {kvPod(0): 9}}},
		{name: "with replicas, with placements, with pending (scale up)", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 21, kvP(0, 5), kvP(1, 7))}, wantReplicas: 3, maxFillUp: true},
		// Knative's table has a second row of the same name.
		{name: "with replicas, with placements, with pending (scale up)", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 21, kvP(0, 5), kvP(1, 7)), kvV("vpod-2", 19, kvP(0, 5), kvP(1, 7))}, wantReplicas: 4, maxFillUp: true},
		{name: "with replicas, with placements, with pending (scale up), 1 over capacity", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 21, kvP(0, 5), kvP(1, 7)), kvV("vpod-2", 20, kvP(0, 5), kvP(1, 7))}, wantReplicas: 5, maxFillUp: true},
		{name: "with replicas, with placements, with pending, attempt scale down", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 21, kvP(0, 5), kvP(1, 7))}, wantReplicas: 3, scaleDown: true, maxFillUp: true},
		{name: "with replicas, with placements, no pending, scale down", replicas: 5,
			vpods: []VPod{kvV("vpod-1", 15, kvP(0, 8), kvP(1, 7))}, scaleDown: true, wantReplicas: 2, maxFillUp: true},
		{name: "with replicas, with placements, with pending, enough capacity", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 18, kvP(0, 8), kvP(1, 7))}, wantReplicas: 2, maxFillUp: true},
		{name: "with replicas, with placements, with pending, not enough capacity", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 23, kvP(0, 8), kvP(1, 7))}, wantReplicas: 3, maxFillUp: true},
		{name: "with replicas, with placements, no pending, round up capacity", replicas: 5,
			vpods:        []VPod{kvV("vpod-1", 20, kvP(0, 8), kvP(1, 7), kvP(2, 1), kvP(3, 1), kvP(4, 1))},
			wantReplicas: 5, maxFillUp: true},
		{name: "with replicas, with placements, with pending, enough capacity, with Predicates and Zone Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 18, kvP(0, 8), kvP(1, 7))}, wantReplicas: 5, sched: kvZoneLowest},
		{name: "with replicas, with placements, with pending, enough capacity, with Predicates and Node Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 18, kvP(0, 8), kvP(1, 7))}, wantReplicas: 8, sched: kvNodeLowest},
		{name: "with replicas, with placements, with pending, enough capacity, with Pod Predicates and Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 18, kvP(0, 8), kvP(1, 7))}, wantReplicas: 4, sched: kvEvenLowest5},
		{name: "with replicas, with placements, with pending, enough capacity, with Pod Predicates and Zone Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 18, kvP(0, 8), kvP(1, 7))}, wantReplicas: 5, sched: kvEvenZoneLowest},
		{name: "with replicas, with placements, with pending, enough capacity, with Pod Predicates and Node Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 18, kvP(0, 8), kvP(1, 7))}, wantReplicas: 8, sched: kvEvenNodeLowest},
	}
	reg := kvRegistry(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := NewStaticCluster(kvNS, kvSTS, tc.replicas, kvPods(max(tc.replicas, tc.wantReplicas)), kvNodes(false), tc.vpods)
			s := kvScheduler(t, reg, c, tc.maxFillUp, tc.sched, nil, nil, nil)
			if err := s.Promote(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.reserved != nil {
				// Knative's getReserved hands the autoscaler these.
				s.resMu.Lock()
				s.reserved = copyReserved(tc.reserved)
				s.resMu.Unlock()
			}
			res, err := s.Autoscale(ctx, tc.scaleDown)
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			got, err := c.Replicas(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.wantReplicas {
				t.Errorf("replicas %d, want %d (pass %+v)", got, tc.wantReplicas, res)
			}
			var wantScaled []int32
			if tc.wantReplicas != tc.replicas {
				wantScaled = []int32{tc.wantReplicas}
			}
			if sc := c.Scaled(); !reflect.DeepEqual(sc, wantScaled) {
				t.Errorf("scale calls %v, want %v", sc, wantScaled)
			}
		})
	}
}

func TestKnativeVectorsAutoscalerScaleDownToZero(t *testing.T) {
	// No pods, no nodes, no vpods, the StatefulSet at 10: the first
	// refresh tick's scale-down pass takes it to ⌈0/10⌉ = 0.
	c := NewStaticCluster(kvNS, kvSTS, 10, nil, nil, nil)
	s, err := New(Settings{Name: "knative-vectors", Namespace: kvNS, StatefulSet: kvSTS, Capacity: kvCapacity,
		Strategy: StrategyMaxFillUp, RefreshPeriod: 20 * time.Millisecond}, c, nil, Options{Now: kvClock, Evictor: (&kvEvictions{}).evict})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	testwait.Within(4*time.Second, func() bool { return len(c.Scaled()) > 0 })
	cancel()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("timeout waiting for the autoscaler to stop")
	}
	if sc := c.Scaled(); len(sc) == 0 || sc[0] != 0 {
		t.Fatalf("scale calls %v, want the first to be 0", sc)
	}
	if r, _ := c.Replicas(context.Background()); r != 0 {
		t.Errorf("replicas %d, want 0", r)
	}
}

// kvCompactCase is one row of TestCompactor.
type kvCompactCase struct {
	name          string
	replicas      int32
	vpods         []VPod
	maxFillUp     bool
	sched         *Policy
	wantEvictions map[Key][]Placement
}

// kvMayCompact runs the compaction step alone, as TestCompactor calls
// mayCompact directly: a fresh state without reservations and
// TestCompactor's scale factor (zone priority → zones, else node
// priority → nodes, else 1). Autoscale would first compute a target, and
// for several rows that scales instead of compacting.
func kvMayCompact(t *testing.T, s *Scheduler, sched *Policy) AutoscaleResult {
	t.Helper()
	ctx := context.Background()
	vw, err := readView(ctx, s.c, s.set.StatefulSet, true)
	if err != nil {
		t.Fatal(err)
	}
	s.asMu.Lock()
	defer s.asMu.Unlock()
	s.asCC.refresh(vw.vpods)
	st := tally(vw.topo, s.asCC, s.set.Capacity, nil, nil, nil)
	f := int32(1)
	switch {
	case sched != nil && hasEntry(sched.Priorities, "AvailabilityZonePriority"):
		f = int32(len(vw.topo.zones))
	case sched != nil && hasEntry(sched.Priorities, "AvailabilityNodePriority"):
		f = int32(len(vw.topo.nodes))
	}
	res, err := s.mayCompact116(ctx, st, vw, f, AutoscaleResult{ScaleFactor: f})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestKnativeVectorsCompactor(t *testing.T) {
	// Hand checks (capacity 10, free per pod in parentheses):
	//   8+7 (2,3): free elsewhere 2 < 7 used on the last pod → none;
	//   8+3: 2 < 3 → none; 8+2: 2 ≥ 2 → evict pod 1's 2.
	//   6/8/7 (4,2,3): 6 < 7 → none; 6/7/7 (4,3,3): 7 ≥ 7 → evict
	//   vpod-2's 7 on pod 2.
	//   HA zone (factor 3) needs more than 3 schedulable pods; node (6)
	//   more than 6. Six pods holding 6,6,7,2,3,3 (free 4,4,3,8,7,7):
	//   the first three have 11 free ≥ 8 used on the last three, and
	//   6 − 3 ≥ 3 → evict vpod-1's placements on pods 5, 4, 3 in that
	//   order (last placement first).
	evenZone := kvEvenZoneLowest
	cases := []kvCompactCase{
		{name: "no replicas, no placements, no pending", replicas: 0, vpods: []VPod{kvV("vpod-1", 0)}, maxFillUp: true},
		{name: "one vpod, with placements in 2 pods, compacted", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 15, kvP(0, 8), kvP(1, 7))}, maxFillUp: true},
		{name: "one vpod, with  placements in 2 pods, compacted edge", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 11, kvP(0, 8), kvP(1, 3))}, maxFillUp: true},
		{name: "one vpod, with placements in 2 pods, not compacted", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 10, kvP(0, 8), kvP(1, 2))}, maxFillUp: true,
			wantEvictions: map[Key][]Placement{kvKey("vpod-1"): {kvP(1, 2)}}},
		{name: "multiple vpods, with placements in multiple pods, compacted", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 12, kvP(0, 4), kvP(1, 8)), kvV("vpod-2", 9, kvP(0, 2), kvP(2, 7))}, maxFillUp: true},
		{name: "multiple vpods, with placements in multiple pods, not compacted", replicas: 3,
			vpods:     []VPod{kvV("vpod-1", 6, kvP(0, 4), kvP(1, 7)), kvV("vpod-2", 15, kvP(0, 2), kvP(2, 7))},
			maxFillUp: true, wantEvictions: map[Key][]Placement{kvKey("vpod-2"): {kvP(2, 7)}}},

		{name: "no replicas, no placements, no pending, with Predicates and Priorities", replicas: 0,
			vpods: []VPod{kvV("vpod-1", 0)}, sched: kvEvenLowest5},
		{name: "one vpod, with placements in 2 pods, compacted, with Predicates and Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 15, kvP(0, 8), kvP(1, 7))}, sched: kvEvenLowest5},
		{name: "one vpod, with  placements in 2 pods, compacted edge, with Predicates and Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 11, kvP(0, 8), kvP(1, 3))}, sched: kvEvenLowest5},
		{name: "one vpod, with placements in 2 pods, not compacted, with Predicates and Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 10, kvP(0, 8), kvP(1, 2))}, sched: kvEvenLowest5,
			wantEvictions: map[Key][]Placement{kvKey("vpod-1"): {kvP(1, 2)}}},
		{name: "multiple vpods, with placements in multiple pods, compacted, with Predicates and Priorities", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 12, kvP(0, 4), kvP(1, 8)), kvV("vpod-2", 9, kvP(0, 2), kvP(2, 7))}, sched: kvEvenLowest5},
		{name: "multiple vpods, with placements in multiple pods, not compacted, with Predicates and Priorities", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 6, kvP(0, 4), kvP(1, 7)), kvV("vpod-2", 15, kvP(0, 2), kvP(2, 7))}, sched: kvEvenLowest5,
			wantEvictions: map[Key][]Placement{kvKey("vpod-2"): {kvP(2, 7)}}},

		{name: "no replicas, no placements, no pending, with Predicates and HA Priorities", replicas: 0,
			vpods: []VPod{kvV("vpod-1", 0)}, sched: evenZone},
		{name: "one vpod, with placements in 2 pods, compacted, with Predicates and HA Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 15, kvP(0, 8), kvP(1, 7))}, sched: evenZone},
		{name: "one vpod, with  placements in 2 pods, compacted edge, with Predicates and HA Priorities", replicas: 2,
			vpods: []VPod{kvV("vpod-1", 11, kvP(0, 8), kvP(1, 3))}, sched: evenZone},
		{name: "one vpod, with placements in 3 pods, compacted, with Predicates and HA Priorities", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 14, kvP(0, 8), kvP(1, 2), kvP(2, 4))}, sched: evenZone},
		{name: "multiple vpods, with placements in multiple pods, compacted, with Predicates and HA Priorities", replicas: 3,
			vpods: []VPod{kvV("vpod-1", 12, kvP(0, 4), kvP(1, 8)), kvV("vpod-2", 9, kvP(0, 2), kvP(2, 7))}, sched: kvEvenNodeLowest},
		{name: "multiple vpods, with placements in multiple pods, not compacted, with Predicates and HA Priorities", replicas: 6,
			vpods: []VPod{
				kvV("vpod-1", 16, kvP(0, 4), kvP(1, 2), kvP(2, 2), kvP(3, 2), kvP(4, 3), kvP(5, 3)),
				kvV("vpod-2", 11, kvP(0, 2), kvP(1, 4), kvP(2, 5)),
			}, sched: evenZone,
			wantEvictions: map[Key][]Placement{kvKey("vpod-1"): {kvP(5, 3), kvP(4, 3), kvP(3, 2)}}},
	}
	reg := kvRegistry(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewStaticCluster(kvNS, kvSTS, tc.replicas, kvPods(tc.replicas), kvNodes(false), tc.vpods)
			ev := &kvEvictions{}
			s := kvScheduler(t, reg, c, tc.maxFillUp, tc.sched, nil, nil, ev)
			if err := s.Promote(context.Background()); err != nil {
				t.Fatal(err)
			}
			res := kvMayCompact(t, s, tc.sched)
			got := ev.got
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, tc.wantEvictions) {
				t.Errorf("evictions %v, want %v", got, tc.wantEvictions)
			}
			// The pass reports what it asked the evictor.
			var reported map[Key][]Placement
			for _, e := range res.Evictions {
				if reported == nil {
					reported = map[Key][]Placement{}
				}
				reported[e.VPod] = append(reported[e.VPod], Placement{PodName: e.Pod, VReplicas: e.VReplicas})
			}
			if !reflect.DeepEqual(reported, got) {
				t.Errorf("result evictions %v, evictor saw %v", reported, got)
			}

			// The same row through the public scale-down pass (our check,
			// not Knative's): where the pass keeps the scale it compacts
			// exactly as above; where it rescales it evicts nothing.
			c2 := NewStaticCluster(kvNS, kvSTS, tc.replicas, kvPods(tc.replicas), kvNodes(false), tc.vpods)
			ev2 := &kvEvictions{}
			s2 := kvScheduler(t, reg, c2, tc.maxFillUp, tc.sched, nil, nil, ev2)
			res2, err := s2.Autoscale(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			got2 := ev2.got
			if len(got2) == 0 {
				got2 = nil
			}
			switch {
			case res2.Scaled && got2 != nil:
				t.Errorf("Autoscale rescaled to %d and evicted %v", res2.Target, got2)
			case !res2.Scaled && !reflect.DeepEqual(got2, tc.wantEvictions):
				t.Errorf("Autoscale kept %d replicas and evicted %v, want %v", res2.Target, got2, tc.wantEvictions)
			}
		})
	}
}
