package backendtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/internal/testwasm"
	"github.com/wasmsched/wasmsched/plugins-wasm/zonepreference"
)

// The Rust example module (plugins-rust/zonepreference) is written from
// docs/ABI.md alone; these cases load its committed build and hold it to
// its Go twin (plugins-wasm/zonepreference run natively), so a gap or
// Go-ism in the spec shows up as a disagreement.

// zoneBackends returns the native twin and the committed Rust build.
func zoneBackends(t *testing.T, s *suite) (twin, rust guest.Backend) {
	t.Helper()
	rust, _ = s.sharedCompile(t, "zonepreference-rust", "zonepreference-rust", func() []byte {
		return testwasm.CommittedBytes(t, testwasm.RustZonePreference)
	}, wasm.Limits{})
	return native.New(nil, zonepreference.Registration), rust
}

func zoneArgs(args abi.Value) []abi.PluginArgs {
	return []abi.PluginArgs{{Name: zonepreference.Name, Args: args}}
}

func strArg(key, v string) abi.Value {
	return abi.Value{Kind: abi.KindMap, Map: []abi.Field{{Key: key, Value: abi.Value{Kind: abi.KindString, Str: v}}}}
}

func rustGuestLoadsAndValidates(t *testing.T, s *suite) {
	ctx := context.Background()
	twin, rust := zoneBackends(t, s)
	load := func(b guest.Backend, args []abi.PluginArgs) (*guest.Pool, error) {
		m, err := guest.Load(ctx, b, guest.PoolConfig{Name: "zone", PoolSize: 1, Require: []string{zonepreference.Name}, Args: args})
		if err == nil {
			t.Cleanup(func() { m.Close(ctx) })
		}
		return m, err
	}
	m, err := load(rust, zoneArgs(strArg("preferredZone", "zone-b")))
	if err != nil {
		t.Fatalf("the host refuses the Rust build: %v", err)
	}
	man := m.Manifest()
	// The Rust module is built for v1.0: an older minor the v1.x host must take.
	if man.VersionMajor != 1 || man.VersionMinor != 0 || man.Flags != 0 {
		t.Errorf("manifest header: v%d.%d flags %v, want v1.0 with no flags", man.VersionMajor, man.VersionMinor, man.Flags)
	}
	tm, err := load(twin, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(man.Plugins), fmt.Sprint(tm.Manifest().Plugins); got != want {
		t.Errorf("Rust manifest plugins %s, twin %s", got, want)
	}
	if want := abi.PointFilter | abi.PointScore; man.Plugins[0].Points != want {
		t.Errorf("points %s, want %s", man.Plugins[0].Points, want)
	}

	// Both refuse the same bad args at load, naming the field.
	bad := map[string]abi.Value{
		"unknown field": strArg("preferedZone", "zone-b"),
		"zone not a string": {Kind: abi.KindMap, Map: []abi.Field{{Key: "preferredZone",
			Value: abi.Value{Kind: abi.KindInt, Int: 3}}}},
		"args not a map": {Kind: abi.KindList},
	}
	for name, args := range bad {
		for _, be := range []struct {
			name string
			b    guest.Backend
		}{{"native", twin}, {"rust", rust}} {
			if _, err := load(be.b, zoneArgs(args)); err == nil {
				t.Errorf("%s: %s build accepted bad args", name, be.name)
			}
		}
	}
	// Null args and a null zone are the defaults.
	for _, args := range []abi.Value{{}, {Kind: abi.KindMap, Map: []abi.Field{{Key: "preferredZone"}}}} {
		if _, err := load(rust, zoneArgs(args)); err != nil {
			t.Errorf("Rust build refuses default args %v: %v", args, err)
		}
	}
}

// zoneCluster is a varied cluster: nodes without a zone label or with an
// empty one, sizes from 0 to 64 CPUs, pods with sidecars and overhead,
// and a namespace table (a sync flag the module must step over).
func zoneCluster(t *testing.T) *snapshot.Snapshot {
	snap := snapshot.New()
	snap.SetNamespace("default", abi.Labels{{Key: "team", Value: "a"}})
	for i := 0; i < 40; i++ {
		n := fixtures.Node(i)
		switch i % 8 {
		case 1: // no zone label
			n.Labels = append(n.Labels[:3:3], n.Labels[4:]...)
		case 2: // an empty zone
			n.Labels[3].Value = ""
		case 3:
			n.Allocatable.MilliCPU = 0
		case 4:
			n.Allocatable.MilliCPU = 64000
		case 5:
			n.Allocatable.MilliCPU = 150
		}
		n.Taints = append(n.Taints, abi.Taint{Key: "k", Value: "v", Effect: abi.EffectNoExecute})
		snap.SetNode(n)
	}
	for j := 0; j < 70; j++ {
		p := zonePod("existing", j)
		p.NodeName = snap.Nodes()[(j*3)%len(snap.Nodes())].Info.Node.Name
		if err := snap.AddPod(&p); err != nil {
			t.Fatal(err)
		}
	}
	// An idle node in the preferred zone (fixture zones go round robin).
	if z := fixtures.Node(40).Labels[3].Value; z != "zone-b" {
		t.Fatalf("fixture node 40 is in %s", z)
	}
	snap.SetNode(fixtures.Node(40))
	return snap
}

// zonePod varies the effective CPU request: app containers, sidecars
// (restartable init containers), plain init containers and overhead.
func zonePod(ns string, j int) abi.Pod {
	p := fixtures.Pod(ns, j)
	p.Containers[0].Requests.MilliCPU = int64(50 + 37*(j%11))
	p.Containers[0].Ports = []abi.HostPort{{Protocol: abi.ProtocolUDP, Port: int32(9000 + j)}}
	if j%3 == 0 {
		p.InitContainers = []abi.Container{
			{Name: "warm", Requests: abi.Resources{MilliCPU: 900}},
			{Name: "proxy", Requests: abi.Resources{MilliCPU: 120}, RestartAlways: true},
			{Name: "late", Requests: abi.Resources{MilliCPU: 1000}},
		}
	}
	if j%4 == 0 {
		p.Overhead.MilliCPU = 25
	}
	return p
}

func rustGuestAgreesWithNativeTwin(t *testing.T, s *suite) {
	ctx := context.Background()
	twin, rust := zoneBackends(t, s)
	snap := zoneCluster(t)
	pod := zonePod("new", 1)

	type session struct {
		c   *guest.Client
		out []string // everything observed, in order
	}
	open := func(b guest.Backend) *session {
		m, err := guest.Load(ctx, b, guest.PoolConfig{Name: "zone", PoolSize: 1, Args: zoneArgs(strArg("preferredZone", "zone-b"))})
		if err != nil {
			t.Fatal(err)
		}
		c, err := m.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Put(ctx, c); m.Close(ctx) })
		return &session{c: c}
	}
	sessions := []*session{open(twin), open(rust)}
	twinScores := map[int64]bool{}
	// each runs one step on both sessions; a failing step fails the test.
	each := func(step string, f func(s *session) (string, error)) {
		for _, s := range sessions {
			r, err := f(s)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			s.out = append(s.out, step+": "+r)
		}
	}
	slots := func() []uint32 {
		var all []uint32
		for _, n := range snap.Nodes() {
			all = append(all, n.Slot)
		}
		return all
	}
	filterScore := func(step string) {
		all := slots()
		each(step+" filter", func(s *session) (string, error) {
			r, err := s.c.Filter(ctx, 0, all)
			if err != nil {
				return "", err
			}
			v := make([]string, len(r.Indexes))
			for i, ix := range r.Indexes {
				if ix != 0 {
					e := r.Entries[ix-1]
					v[i] = fmt.Sprint(e.Code, e.Reasons)
				}
			}
			return fmt.Sprintf("%q", v), nil
		})
		each(step+" score", func(s *session) (string, error) {
			sc, err := s.c.Score(ctx, 0, all)
			if s == sessions[0] {
				for _, v := range sc {
					twinScores[v] = true
				}
			}
			return fmt.Sprint(sc), err
		})
	}
	syncCycle := func(step string) {
		each(step+" sync+cycle", func(s *session) (string, error) {
			if err := s.c.Sync(ctx, snap); err != nil {
				return "", err
			}
			return "", s.c.StartCycle(ctx, &pod)
		})
	}

	syncCycle("full")
	filterScore("full")

	// What-ifs: a pod added to one node and a pod removed from another,
	// nested states, then back to the mirror.
	target, other := snap.Nodes()[6].Slot, snap.Nodes()[0].Slot
	victim := zonePod("existing", 0) // on node 0
	added := zonePod("nominated", 3) // sidecar and init containers
	// Big enough that the app plus the sidecar, not the init peak, counts.
	added.Containers[0].Requests.MilliCPU = 1500
	each("push", func(s *session) (string, error) { return "", s.c.PushState(ctx) })
	each("add", func(s *session) (string, error) { return "", s.c.AddPod(ctx, target, &added) })
	each("push", func(s *session) (string, error) { return "", s.c.PushState(ctx) })
	each("remove", func(s *session) (string, error) { return "", s.c.RemovePod(ctx, other, &victim) })
	filterScore("nested what-if")
	each("pop", func(s *session) (string, error) { return "", s.c.PopState(ctx) })
	filterScore("outer what-if")
	each("pop", func(s *session) (string, error) { return "", s.c.PopState(ctx) })
	filterScore("popped")

	// A delta sync: a node loses its zone, one is deleted, pods land.
	n := snap.Nodes()[9].Info.Node
	n.Labels = n.Labels[:3:3]
	snap.SetNode(n)
	if err := snap.RemoveNode(snap.Nodes()[12].Info.Node.Name); err != nil {
		t.Fatal(err)
	}
	for j := 100; j < 110; j++ {
		p := zonePod("existing", j)
		p.NodeName = snap.Nodes()[j%7].Info.Node.Name
		if err := snap.AddPod(&p); err != nil {
			t.Fatal(err)
		}
	}
	syncCycle("delta")
	filterScore("delta")

	want, got := sessions[0].out, sessions[1].out
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Rust build differs from the native twin at step %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	// The comparison proves something only if the fixture exercises every
	// branch: rejections, the zone bonus on a fully free node, a full or
	// zoneless node scoring 0, and what-ifs that move a score.
	for _, v := range []int64{0, 100} {
		if !twinScores[v] {
			t.Errorf("the fixture never scores %d: %v", v, want)
		}
	}
	if !strings.Contains(fmt.Sprint(want), zonepreference.ErrReasonNoZone) {
		t.Errorf("the fixture rejects no node: %v", want)
	}
	if nested, popped := want[indexOf(want, "nested what-if score")], want[indexOf(want, "popped score")]; nested[len("nested what-if score"):] == popped[len("popped score"):] {
		t.Errorf("the what-ifs change no score: %v", want)
	}
}

func indexOf(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	panic("no step " + prefix)
}
