package snapshot

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// mirror applies sync requests the way a guest does, so tests can check
// that deltas reproduce the snapshot exactly.
type mirror map[uint32]abi.NodeInfo

func (m mirror) apply(t *testing.T, b []byte) {
	t.Helper()
	if b[0]&abi.SyncReset != 0 {
		clear(m)
	}
	_, _, err := abi.ParseSync(b, func(slot uint32, rec []byte) error {
		var ni abi.NodeInfo
		d := abi.NewDecoder(rec)
		d.NodeInfo(&ni)
		m[slot] = ni
		return d.Err()
	}, func(slot uint32) error { delete(m, slot); return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
}

func (m mirror) names() []string {
	var ns []string
	for _, ni := range m {
		ns = append(ns, ni.Node.Name)
	}
	sort.Strings(ns)
	return ns
}

func syncMirror(t *testing.T, s *Snapshot, m mirror, since uint64) (sent int) {
	t.Helper()
	var d Delta
	s.DeltaSince(since, &d)
	var e abi.Encoder
	EncodeSync(&e, &d, s.NumNodes(), AllPods, &StringsSent{})
	m.apply(t, e.B)
	return len(d.Changed)
}

func TestDeltaSendsOnlyChangedNodesAndReproducesTheSnapshot(t *testing.T) {
	s := New()
	for i := 0; i < 5; i++ {
		s.SetNode(abi.Node{Name: fmt.Sprintf("n%d", i), AllowedPods: 10})
	}
	m := mirror{}
	if sent := syncMirror(t, s, m, 0); sent != 5 {
		t.Fatalf("first sync sent %d nodes, want all 5", sent)
	}
	gen := s.Generation()

	pod := &abi.Pod{UID: "p1", Name: "p1", NodeName: "n2", Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 100}}}}
	if err := s.AddPod(pod); err != nil {
		t.Fatal(err)
	}
	if sent := syncMirror(t, s, m, gen); sent != 1 {
		t.Fatalf("after one pod, sync sent %d nodes, want 1", sent)
	}
	if got := m[s.Get("n2").Slot]; got.Requested.MilliCPU != 100 || got.PodCount != 1 || len(got.Pods) != 1 {
		t.Fatalf("mirror n2 = %+v, want the pod counted", got)
	}
	gen = s.Generation()
	if sent := syncMirror(t, s, m, gen); sent != 0 {
		t.Fatalf("sync with nothing changed sent %d", sent)
	}
}

func TestDeletedSlotReusedWhileGuestWasAway(t *testing.T) {
	s := New()
	s.SetNode(abi.Node{Name: "a"})
	s.SetNode(abi.Node{Name: "b"})
	m := mirror{}
	syncMirror(t, s, m, 0)
	gen := s.Generation()
	// a goes, c takes its slot, c goes, d takes it again.
	for _, step := range []func() error{
		func() error { return s.RemoveNode("a") },
		func() error { s.SetNode(abi.Node{Name: "c"}); return nil },
		func() error { return s.RemoveNode("c") },
		func() error { s.SetNode(abi.Node{Name: "d"}); return nil },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	syncMirror(t, s, m, gen)
	if got, want := m.names(), []string{"b", "d"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("mirror holds %v, want %v", got, want)
	}
	if m[s.Get("d").Slot].Node.Name != "d" {
		t.Fatal("d is not in its slot")
	}
}

func TestGuestBehindForgottenDeletionsIsReset(t *testing.T) {
	s := New()
	s.SetNode(abi.Node{Name: "keep"})
	for i := 0; i < maxTombstones+10; i++ {
		s.SetNode(abi.Node{Name: "tmp"})
		if err := s.RemoveNode("tmp"); err != nil {
			t.Fatal(err)
		}
	}
	var d Delta
	s.DeltaSince(1, &d)
	if !d.Reset || len(d.Changed) != 1 {
		t.Fatalf("delta = reset %v, %d changed; want a reset with the one node", d.Reset, len(d.Changed))
	}
}

func TestRemovePodRecomputesAggregates(t *testing.T) {
	s := New()
	s.SetNode(abi.Node{Name: "n"})
	p1 := &abi.Pod{UID: "1", NodeName: "n", Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 100, Memory: 1}, Ports: []abi.HostPort{{Port: 80}}}}}
	p2 := &abi.Pod{UID: "2", NodeName: "n", Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 300}}}}
	for _, p := range []*abi.Pod{p1, p2} {
		if err := s.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RemovePod(p1); err != nil {
		t.Fatal(err)
	}
	ni := s.Get("n").Info
	if ni.Requested.MilliCPU != 300 || ni.Requested.Memory != 0 || ni.PodCount != 1 || len(ni.UsedPorts) != 0 {
		t.Fatalf("after removing p1: %+v", ni)
	}
	if ni.NonZeroRequested.Memory != abi.DefaultMemoryRequest {
		t.Fatalf("non-zero memory = %d, want the default for p2", ni.NonZeroRequested.Memory)
	}
	if err := s.RemovePod(p1); err == nil {
		t.Fatal("removing a pod twice succeeded")
	}
	if err := s.AddPod(&abi.Pod{UID: "3", NodeName: "nowhere"}); err == nil {
		t.Fatal("adding a pod to a missing node succeeded")
	}
}

func TestUpdateFromFollowsTheLiveSnapshotIncrementally(t *testing.T) {
	live := New()
	for i := 0; i < 4; i++ {
		live.SetNode(abi.Node{Name: fmt.Sprintf("n%d", i)})
	}
	cyc := New()
	cyc.UpdateFrom(live)
	if cyc.NumNodes() != 4 || cyc.Generation() != live.Generation() {
		t.Fatalf("after first update: %d nodes, gen %d/%d", cyc.NumNodes(), cyc.Generation(), live.Generation())
	}
	before := cyc.Get("n1")
	p := &abi.Pod{UID: "p", NodeName: "n1", Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 5}}}}
	if err := live.AddPod(p); err != nil {
		t.Fatal(err)
	}
	if err := live.RemoveNode("n3"); err != nil {
		t.Fatal(err)
	}
	live.SetNode(abi.Node{Name: "n4"}) // takes n3's slot
	if before.Info.PodCount != 0 {
		t.Fatal("a change to the live snapshot showed through before UpdateFrom")
	}
	cyc.UpdateFrom(live)
	if got := cyc.Get("n1"); got.Info.PodCount != 1 || got.Generation != live.Get("n1").Generation {
		t.Fatalf("n1 = %+v", got)
	}
	if cyc.Get("n3") != nil || cyc.Get("n4") == nil || cyc.Get("n4").Slot != live.Get("n4").Slot || cyc.NumNodes() != 4 {
		t.Fatalf("node set not followed: n3 %v n4 %v, %d nodes", cyc.Get("n3"), cyc.Get("n4"), cyc.NumNodes())
	}
	// Removing a pod in place on the live side must not corrupt the copy.
	q := &abi.Pod{UID: "q", NodeName: "n1"}
	if err := live.AddPod(q); err != nil {
		t.Fatal(err)
	}
	cyc.UpdateFrom(live)
	copyPods := cyc.Get("n1").Info.Pods
	if err := live.RemovePod(p); err != nil {
		t.Fatal(err)
	}
	if copyPods[0].UID != "p" || copyPods[1].UID != "q" {
		t.Fatalf("copy changed under a live removal: %v, %v", copyPods[0].UID, copyPods[1].UID)
	}
	// A guest mirror synced from the copy sees the deletion of n3.
	m := mirror{}
	var d Delta
	cyc.DeltaSince(0, &d)
	var e abi.Encoder
	EncodeSync(&e, &d, cyc.NumNodes(), NoPods, &StringsSent{})
	m.apply(t, e.B)
	if got, want := m.names(), []string{"n0", "n1", "n2", "n4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("mirror from the copy: %v, want %v", got, want)
	}
}

// TestRandomChangesKeepMirrorsExact applies random node and pod changes
// and checks, at random points, that a mirror fed only deltas equals the
// snapshot, both for the live snapshot and for a copy kept by UpdateFrom.
func TestRandomChangesKeepMirrorsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	live, cyc := New(), New()
	mLive, mCyc := mirror{}, mirror{}
	var genLive, genCyc uint64
	pods := map[string]*abi.Pod{}
	for step := 0; step < 5000; step++ {
		switch r := rng.IntN(10); {
		case r < 2 || live.NumNodes() == 0:
			live.SetNode(abi.Node{Name: fmt.Sprintf("n%d", rng.IntN(40)), AllowedPods: int64(rng.IntN(100))})
		case r < 3:
			n := live.Nodes()[rng.IntN(live.NumNodes())]
			for uid, p := range pods {
				if p.NodeName == n.Info.Node.Name {
					delete(pods, uid)
				}
			}
			if err := live.RemoveNode(n.Info.Node.Name); err != nil {
				t.Fatal(err)
			}
		case r < 7:
			n := live.Nodes()[rng.IntN(live.NumNodes())]
			p := &abi.Pod{UID: fmt.Sprintf("p%d", step), NodeName: n.Info.Node.Name,
				Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: int64(rng.IntN(1000))}}}}
			if err := live.AddPod(p); err != nil {
				t.Fatal(err)
			}
			pods[p.UID] = p
		default:
			for uid, p := range pods {
				if err := live.RemovePod(p); err != nil {
					t.Fatal(err)
				}
				delete(pods, uid)
				break
			}
		}
		if rng.IntN(7) == 0 {
			syncMirror(t, live, mLive, genLive)
			genLive = live.Generation()
			checkMirror(t, live, mLive)
		}
		if rng.IntN(5) == 0 {
			cyc.UpdateFrom(live)
			syncMirror(t, cyc, mCyc, genCyc)
			genCyc = cyc.Generation()
			checkMirror(t, cyc, mCyc)
		}
	}
}

func checkMirror(t *testing.T, s *Snapshot, m mirror) {
	t.Helper()
	if len(m) != s.NumNodes() {
		t.Fatalf("mirror has %d nodes, snapshot %d", len(m), s.NumNodes())
	}
	for _, ni := range s.Nodes() {
		got, ok := m[ni.Slot]
		if !ok || got.Node.Name != ni.Info.Node.Name || got.PodCount != ni.Info.PodCount ||
			got.Requested.MilliCPU != ni.Info.Requested.MilliCPU || got.Node.AllowedPods != ni.Info.Node.AllowedPods {
			t.Fatalf("slot %d: mirror %+v, snapshot %+v", ni.Slot, got, ni.Info)
		}
	}
}

func TestNamespacesSyncOnlyWhenChanged(t *testing.T) {
	live := New()
	live.SetNode(abi.Node{Name: "n"})
	live.SetNamespace("prod", abi.Labels{{Key: "env", Value: "prod"}})
	cyc := New()
	cyc.UpdateFrom(live)
	got := map[string]abi.Labels{}
	apply := func(d *Delta) {
		var e abi.Encoder
		EncodeSync(&e, d, cyc.NumNodes(), NoPods, &StringsSent{})
		if _, _, err := abi.ParseSync(e.B, func(uint32, []byte) error { return nil }, func(uint32) error { return nil },
			func(n abi.Namespace) error { got[n.Name] = n.Labels; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	var d Delta
	cyc.DeltaSince(0, &d)
	apply(&d)
	if v, _ := got["prod"].Get("env"); v != "prod" {
		t.Fatalf("namespaces after first sync: %v", got)
	}
	gen := cyc.Generation()
	live.SetNode(abi.Node{Name: "m"})
	cyc.UpdateFrom(live)
	cyc.DeltaSince(gen, &d)
	if d.Namespaces != nil {
		t.Fatal("namespaces sent though unchanged")
	}
	gen = cyc.Generation()
	live.SetNamespace("prod", abi.Labels{{Key: "env", Value: "staging"}})
	live.RemoveNamespace("missing")
	cyc.UpdateFrom(live)
	cyc.DeltaSince(gen, &d)
	apply(&d)
	if v, _ := got["prod"].Get("env"); v != "staging" {
		t.Fatalf("relabelled namespace not synced: %v", got)
	}
}

func TestPDBTableIsSentWhenItChangesAndFollowsCopies(t *testing.T) {
	live := New()
	live.SetNode(abi.Node{Name: "n1"})
	cyc := New()
	cyc.UpdateFrom(live)
	var d Delta
	cyc.DeltaSince(0, &d)
	if d.PDBsChanged {
		t.Fatal("a snapshot that never had budgets sent a table")
	}
	gen := cyc.Generation()
	live.SetPDB(&abi.PDB{Namespace: "b", Name: "x", DisruptionsAllowed: 1})
	live.SetPDB(&abi.PDB{Namespace: "a", Name: "y"})
	cyc.UpdateFrom(live)
	cyc.DeltaSince(gen, &d)
	if !d.PDBsChanged || len(d.PDBs) != 2 || d.PDBs[0].Namespace != "a" || len(d.Changed) != 0 {
		t.Fatalf("after adding budgets: changed=%v pdbs=%v nodes=%d", d.PDBsChanged, d.PDBs, len(d.Changed))
	}
	var e abi.Encoder
	EncodeSync(&e, &d, cyc.NumNodes(), NoPods, &StringsSent{})
	var got []string
	if _, _, err := abi.ParseSyncTables(e.B, func(uint32, []byte) error { return nil }, func(uint32) error { return nil }, nil,
		func(p *abi.PDB) error { got = append(got, p.Namespace+"/"+p.Name); return nil }); err != nil || len(got) != 2 {
		t.Fatalf("parsed %v, %v", got, err)
	}
	gen = cyc.Generation()
	cyc.DeltaSince(gen, &d)
	if d.PDBsChanged {
		t.Fatal("an unchanged table was sent again")
	}
	live.RemovePDB("a", "y")
	live.RemovePDB("a", "y") // unknown: no change
	live.RemovePDB("b", "x")
	cyc.UpdateFrom(live)
	cyc.DeltaSince(gen, &d)
	if !d.PDBsChanged || len(d.PDBs) != 0 {
		t.Fatalf("after deleting every budget the guest must get an empty table: %v %v", d.PDBsChanged, d.PDBs)
	}
}

// A module built before ABI v1.4 gets node records whose pods it decodes
// as it was built to; a v1.4 module gets the pods' v1.4 fields.
func TestRecordsSpeakEachModulesMinorVersion(t *testing.T) {
	s := New()
	s.SetNode(abi.Node{Name: "n"})
	for _, uid := range []string{"1", "2"} {
		p := &abi.Pod{UID: uid, NodeName: "n", Containers: []abi.Container{{Given: abi.GivesCPU}},
			PodLevel: &abi.PodLevelRequests{Given: abi.GivesMemory, Requests: abi.Resources{Memory: 64}}}
		if err := s.AddPod(p); err != nil {
			t.Fatal(err)
		}
	}
	ni := s.Get("n")
	for _, minor := range []uint16{0, 3, 4} {
		mode := PodsModeFor(abi.ManifestWantsPods, minor)
		var got abi.NodeInfo
		d := abi.NewDecoder(ni.Record(mode, nil))
		d.SetPeerMinor(minor)
		d.NodeInfo(&got)
		if d.Err() != nil || d.Remaining() != 0 || len(got.Pods) != 2 {
			t.Fatalf("v1.%d: err %v, %d bytes left, %d pods", minor, d.Err(), d.Remaining(), len(got.Pods))
		}
		hasV14 := got.Pods[1].PodLevel != nil && got.Pods[1].Containers[0].Given == abi.GivesCPU
		if hasV14 != (minor >= 4) {
			t.Errorf("v1.%d: second pod %+v: v1.4 fields present = %v", minor, got.Pods[1], hasV14)
		}
	}
	if PodsModeFor(0, 3)&^BeforeV17 != NoPods {
		t.Error("a module without pods gets one record for every version before v1.5")
	}
}

// A module of v1.7 reads the node's declared features after the record's
// pod groups; an older one gets the same record without them (a prefix of
// the one cached encoding), which its decoder reads to the end.
func TestRecordCarriesDeclaredFeaturesFromV17(t *testing.T) {
	s := New()
	s.SetNode(abi.Node{Name: "n", DeclaredFeatures: 1<<3 | 1<<8})
	ni := s.Get("n")
	for _, minor := range []uint16{3, 5, 6, 7} {
		mode := PodsModeFor(abi.ManifestWantsAffinityPods, minor)
		// The node has no strings to number: its records read the same
		// interned or not.
		var got abi.NodeInfo
		d := abi.NewDecoder(ni.Record(mode, s.Strings()))
		d.SetPeerMinor(minor)
		d.NodeInfo(&got)
		if d.Err() != nil || d.Remaining() != 0 {
			t.Fatalf("v1.%d: err %v, %d bytes left", minor, d.Err(), d.Remaining())
		}
		if want := minor >= 7; (got.Node.DeclaredFeatures == 1<<3|1<<8) != want {
			t.Errorf("v1.%d: declared features %b", minor, got.Node.DeclaredFeatures)
		}
	}
}

// A copy shares the live node's pods: the live side's later additions
// (into the array's spare capacity), removals and re-additions must leave
// what the copy sees alone, and the pod groups' counts, changed in place
// on the live side, must not show through either.
func TestUpdateFromSharesPodsSafely(t *testing.T) {
	live := New()
	live.SetNode(abi.Node{Name: "n"})
	pod := func(uid string) *abi.Pod {
		return &abi.Pod{UID: uid, NodeName: "n", Namespace: "ns", Labels: abi.Labels{{Key: "app", Value: "a"}},
			Containers: []abi.Container{{Requests: abi.Resources{MilliCPU: 10}, Ports: []abi.HostPort{{Port: 80}}}}}
	}
	for _, uid := range []string{"a", "b", "c"} {
		if err := live.AddPod(pod(uid)); err != nil {
			t.Fatal(err)
		}
	}
	cyc := New()
	cyc.UpdateFrom(live)
	got := cyc.Get("n").Info
	if cap(got.Pods) != len(got.Pods) || cap(got.UsedPorts) != len(got.UsedPorts) {
		t.Fatalf("copy's shared slices not capped: pods %d/%d, ports %d/%d", len(got.Pods), cap(got.Pods), len(got.UsedPorts), cap(got.UsedPorts))
	}
	check := func(step string) {
		t.Helper()
		if len(got.Pods) != 3 || got.Pods[0].UID != "a" || got.Pods[1].UID != "b" || got.Pods[2].UID != "c" ||
			len(got.UsedPorts) != 3 || len(got.PodGroups) != 1 || got.PodGroups[0].Count != 3 || got.PodCount != 3 {
			t.Fatalf("%s: the copy changed: %+v", step, got)
		}
	}
	if err := live.AddPod(pod("d")); err != nil {
		t.Fatal(err)
	}
	check("live add")
	for _, uid := range []string{"c", "a"} {
		if err := live.RemovePod(pod(uid)); err != nil {
			t.Fatal(err)
		}
		check("live remove " + uid)
	}
	for _, uid := range []string{"e", "f", "g"} {
		if err := live.AddPod(pod(uid)); err != nil {
			t.Fatal(err)
		}
		check("live re-add " + uid)
	}
	// The copy's own changes (none on the host, but abi allows them)
	// must not reach the live side.
	got.AddPod(pod("h"))
	if ln := live.Get("n").Info; len(ln.Pods) != 5 || ln.Pods[len(ln.Pods)-1].UID != "g" {
		t.Fatalf("a change to the copy reached the live node: %+v", ln.Pods)
	}
	cyc.UpdateFrom(live)
	if ni := cyc.Get("n").Info; len(ni.Pods) != 5 || ni.PodGroups[0].Count != 5 {
		t.Fatalf("after update: %+v", ni)
	}
}
