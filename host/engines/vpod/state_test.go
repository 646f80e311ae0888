package vpod

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// randomScenario builds a small random cluster, vpods with committed
// placements (zero-vreplica and duplicate ones included, some on pods
// past the scale) and reservations (some equal to the committed counts,
// some for vpods not listed).
func randomScenario(r *rand.Rand) (*StaticCluster, map[Key]map[string]int32, int32) {
	capacity := int32(1 + r.Intn(6))
	replicas := r.Intn(8)
	nodes := 1 + r.Intn(4)
	var ns []*corev1.Node
	for i := 0; i < nodes; i++ {
		zone := fmt.Sprintf("zone-%d", r.Intn(3))
		if r.Intn(6) == 0 {
			zone = ""
		}
		n := mkNode(fmt.Sprintf("node-%d", i), zone)
		switch r.Intn(8) {
		case 0:
			n.Spec.Unschedulable = true
		case 1:
			n.Spec.Taints = []corev1.Taint{{Key: unreachableTaint, Effect: corev1.TaintEffectNoExecute}}
		case 2:
			n.Spec.Taints = []corev1.Taint{{Key: unreachableTaint, Effect: corev1.TaintEffectNoSchedule}}
		case 3:
			n.Spec.Taints = []corev1.Taint{{Key: unreachableTaint, Effect: corev1.TaintEffectPreferNoSchedule}}
		}
		ns = append(ns, n)
	}
	var ps []*corev1.Pod
	for i := 0; i < replicas+2; i++ {
		switch r.Intn(8) {
		case 0: // missing
			continue
		case 1:
			ps = append(ps, mkPod(i, fmt.Sprintf("node-%d", r.Intn(nodes)), UnschedulableAnnotation, "true"))
		case 2:
			ps = append(ps, mkPod(i, fmt.Sprintf("node-%d", r.Intn(nodes)), UnschedulableAnnotation, "False"))
		case 3:
			ps = append(ps, mkPod(i, ""))
		default:
			ps = append(ps, mkPod(i, fmt.Sprintf("node-%d", r.Intn(nodes))))
		}
	}
	var vpods []VPod
	nv := r.Intn(6)
	for i := 0; i < nv; i++ {
		v := vp(fmt.Sprintf("v%d", i), int32(r.Intn(10)))
		for j := r.Intn(5); j > 0; j-- {
			v.Placements = append(v.Placements, pl(r.Intn(replicas+3), int32(r.Intn(4))))
		}
		vpods = append(vpods, v)
	}
	res := map[Key]map[string]int32{}
	for i := 0; i < nv+2; i++ {
		if r.Intn(2) == 0 {
			continue
		}
		k := key(fmt.Sprintf("v%d", i))
		m := map[string]int32{}
		for j := r.Intn(4); j > 0; j-- {
			m[pn(r.Intn(replicas+3))] = int32(r.Intn(4))
		}
		if i < nv && len(vpods[i].Placements) > 0 && r.Intn(2) == 0 {
			p := vpods[i].Placements[r.Intn(len(vpods[i].Placements))]
			m[p.PodName] = p.VReplicas // committed already
		}
		res[k] = m
	}
	return NewStaticCluster(testNS, testSTS, int32(replicas), ps, ns, vpods), res, capacity
}

// compareFree checks two free-capacity tables entry by entry (an
// ordinal past a table's end has the whole capacity).
func compareFree(t *testing.T, what string, o *oracleState, st *state) {
	t.Helper()
	n := max(len(o.FreeCap), len(st.free))
	for i := 0; i < n; i++ {
		if a, b := o.free(int32(i)), st.Free(int32(i)); a != b {
			t.Fatalf("%s: free[%d] = %d, oracle %d (oracle %v, engine %v)", what, i, b, a, o.FreeCap, st.free)
		}
	}
	// Whether the table is empty matters only with schedulable pods
	// (PodFitsResources on a candidate); then neither is.
	if len(o.SchedulablePods) > 0 && (len(o.FreeCap) == 0) != (len(st.free) == 0) {
		t.Fatalf("%s: free table empty: engine %v, oracle %v", what, len(st.free) == 0, len(o.FreeCap) == 0)
	}
}

// compareSpread checks the tracked vpod's spread.
func compareSpread(t *testing.T, what string, o *oracleState, ss *stepState) {
	t.Helper()
	topo := ss.st.topo
	pods, nodes, zones := map[string]int32{}, map[string]int32{}, map[string]int32{}
	for i, in := range ss.podIn {
		if in {
			pods[pn(int(topo.ordinals[i]))] = ss.podVal[i]
		}
	}
	for i, c := range ss.nodeIn {
		if c > 0 {
			nodes[topo.nodes[i]] = ss.nodeVal[i]
		}
	}
	for i, c := range ss.zoneIn {
		if c > 0 {
			zones[topo.zones[i]] = ss.zoneVal[i]
		}
	}
	want := func(m map[string]int32) map[string]int32 {
		if m == nil {
			return map[string]int32{}
		}
		return m
	}
	if !reflect.DeepEqual(pods, want(o.PodSpread[ss.key])) || !reflect.DeepEqual(nodes, want(o.NodeSpread[ss.key])) || !reflect.DeepEqual(zones, want(o.ZoneSpread[ss.key])) {
		t.Fatalf("%s: spread of %s: engine pods %v nodes %v zones %v; oracle pods %v nodes %v zones %v", what, ss.key,
			pods, nodes, zones, o.PodSpread[ss.key], o.NodeSpread[ss.key], o.ZoneSpread[ss.key])
	}
}

// stateIters is how many random scenarios TestStateMatchesOracle runs.
const stateIters = 3000

// TestStateMatchesOracle builds random states with the engine (a tally
// over the committed cache, then a step state kept current through
// random reservation changes of one vpod) and checks every one against
// Knative's from-scratch state build: free capacity, last ordinal,
// pending and expected totals, the tracked vpod's spread, and which
// reservations the build deletes.
func TestStateMatchesOracle(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for iter := 0; iter < stateIters; iter++ {
		c, res, capacity := randomScenario(r)
		what := fmt.Sprintf("scenario %d", iter)
		vw, err := readView(bg, c, testSTS, true)
		if err != nil {
			t.Fatal(err)
		}
		cc := newCommittedCache()
		// Refresh twice, the second time with half the vpods changed, so
		// the cache's incremental path is exercised.
		cc.refresh(vw.vpods)
		cc.refresh(vw.vpods)

		oRes := copyReserved(res)
		o := oracleBuild(t, c, capacity, oRes)
		eRes := copyReserved(res)
		st := tally(vw.topo, cc, capacity, eRes, nil, nil)
		compareFree(t, what, o, st)
		if st.last != o.LastOrdinal {
			t.Fatalf("%s: last ordinal %d, oracle %d", what, st.last, o.LastOrdinal)
		}
		if !reflect.DeepEqual(eRes, oRes) {
			t.Fatalf("%s: reservations after the build %v, oracle %v", what, eRes, oRes)
		}
		var pend, exp int64
		for _, p := range o.Pending {
			pend += int64(p)
		}
		for _, e := range o.Expected {
			exp += int64(e)
		}
		if cc.pending != pend || cc.expected != exp {
			t.Fatalf("%s: pending/expected %d/%d, oracle %d/%d", what, cc.pending, cc.expected, pend, exp)
		}
		if !reflect.DeepEqual(vw.topo.ordinals, o.SchedulablePods) && !(len(vw.topo.ordinals) == 0 && len(o.SchedulablePods) == 0) {
			t.Fatalf("%s: schedulable %v, oracle %v", what, vw.topo.ordinals, o.SchedulablePods)
		}

		// A step state for one vpod, through random reservation changes.
		k := key(fmt.Sprintf("v%d", r.Intn(7)))
		// As in Schedule, a state build (which settles every vpod's
		// reservations) precedes the steps; then the vpod's own
		// reservations change (the rebalance zeroes them).
		eRes = copyReserved(res)
		tally(vw.topo, cc, capacity, eRes, nil, nil)
		if m := eRes[k]; m != nil && r.Intn(2) == 0 {
			for pod := range m {
				m[pod] = 0
			}
		}
		oRes = copyReserved(eRes)
		ss := newStepState(vw.topo, cc, capacity, testSTS, eRes, k)
		o = oracleBuild(t, c, capacity, oRes)
		compareFree(t, what+" step 0", o, ss.st)
		compareSpread(t, what+" step 0", o, ss)
		for step := 1; step < 8; step++ {
			switch r.Intn(6) {
			case 0:
				ss.clear()
			default:
				for j := r.Intn(3); j >= 0; j-- {
					ss.reserve(pn(r.Intn(int(vw.topo.replicas)+3)), int32(r.Intn(4)))
				}
			}
			oRes = copyReserved(eRes)
			o = oracleBuild(t, c, capacity, oRes)
			ss.refresh()
			sw := fmt.Sprintf("%s step %d", what, step)
			compareFree(t, sw, o, ss.st)
			compareSpread(t, sw, o, ss)
			if !reflect.DeepEqual(eRes, oRes) {
				t.Fatalf("%s: reservations after the build %v, oracle %v", sw, eRes, oRes)
			}
		}
	}
}
