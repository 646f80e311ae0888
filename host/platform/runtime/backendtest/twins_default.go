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
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

// defaultBuilds are the builds of the default bundle (plugins-wasm/cmd/default).
var defaultBuilds = []guestBuild{
	{"tinygo", func(tb testing.TB) []byte { return testwasm.TinyGoBytes(tb, testwasm.Default) }},
	{"go", func(tb testing.TB) []byte { return testwasm.GoBytes(tb, testwasm.Default) }},
}

func defaultKey(build guestBuild) string { return "default-" + build.name }

var twinCases = []wasmCase{
	{"twins/the default bundle answers as its native twin", defaultTwinsAgree},
	{"twins/the Rust example loads and validates as its twin", rustGuestLoadsAndValidates},
	{"twins/the Rust example answers as its native twin", rustGuestAgreesWithNativeTwin},
}

// syncedClient loads a backend as a module of one instance, checks the
// instance out and syncs it with snap; cleanup returns and closes them.
func syncedClient(t *testing.T, b guest.Backend, name string, snap *snapshot.Snapshot) *guest.Client {
	t.Helper()
	ctx := context.Background()
	m := load(t, b, guest.PoolConfig{Name: name, PoolSize: 1})
	c, err := m.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Put(ctx, c) })
	if err := c.Sync(ctx, snap); err != nil {
		t.Fatal(err)
	}
	return c
}

// defaultTwinsAgree checks the default bundle's Wasm builds against the
// native twin: same feasible nodes, same reasons, same scores, on a
// cluster where every plugin rejects or ranks some nodes.
func defaultTwinsAgree(t *testing.T, s *suite) {
	ctx := context.Background()
	snap := snapshot.New()
	for i := 0; i < 60; i++ {
		n := fixtures.Node(i)
		switch i % 6 {
		case 1:
			n.Unschedulable = true
		case 2:
			n.Taints = append(n.Taints, abi.Taint{Key: "dedicated", Value: "gpu", Effect: abi.EffectNoSchedule})
		case 3:
			n.Allocatable.MilliCPU = 50
		}
		snap.SetNode(n)
	}
	pod := fixtures.Pod("diff", 0)
	pod.Containers[0].Ports = []abi.HostPort{{Port: 8080}}
	blocker := fixtures.Pod("diff", 1)
	blocker.NodeName = snap.Nodes()[4].Info.Node.Name
	blocker.Containers[0].Ports = []abi.HostPort{{Port: 8080}}
	if err := snap.AddPod(&blocker); err != nil {
		t.Fatal(err)
	}
	// Workload pods for the topology plugins: groups per node, and some
	// with required anti-affinity (the symmetric check).
	for j := 0; j < 150; j++ {
		p := fixtures.Pod("existing", 1000+j)
		p.Labels = abi.Labels{{Key: "app", Value: fmt.Sprintf("w%d", j%5)}}
		if j%7 == 0 {
			p.PodAntiAffinity = &abi.PodAffinity{Required: []abi.PodAffinityTerm{{
				LabelSelector: &abi.LabelSelector{MatchLabels: abi.Labels{{Key: "app", Value: "w1"}}},
				TopologyKey:   "kubernetes.io/hostname"}}}
		}
		p.NodeName = snap.Nodes()[(j*7)%len(snap.Nodes())].Info.Node.Name
		if err := snap.AddPod(&p); err != nil {
			t.Fatal(err)
		}
	}
	var all []uint32
	for _, n := range snap.Nodes() {
		all = append(all, n.Slot)
	}

	type outcome struct {
		verdicts [][]string // per plugin, per node: "" or code+reasons
		scores   [][]int64
	}
	run := func(t *testing.T, be guest.Backend, pod abi.Pod) outcome {
		c := syncedClient(t, be, "diff", snap)
		m := c.Module()
		if err := c.StartCycle(ctx, &pod); err != nil {
			t.Fatal(err)
		}
		var o outcome
		for p, info := range m.Manifest().Plugins {
			if info.Points.Has(abi.PointPreFilter) {
				st, err := c.PreFilter(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				o.verdicts = append(o.verdicts, []string{info.Name + " prefilter " + st.Code.String()})
				if st.Code == abi.Skip {
					continue // as the cycle does: no Filter, and no Score either for this test
				}
			}
			if info.Points.Has(abi.PointFilter) {
				r, err := c.Filter(ctx, p, all)
				if err != nil {
					t.Fatal(err)
				}
				var v []string
				for _, ix := range r.Indexes {
					if ix == 0 {
						v = append(v, "")
					} else {
						e := r.Entries[ix-1]
						v = append(v, fmt.Sprint(e.Code, e.Reasons))
					}
				}
				o.verdicts = append(o.verdicts, v)
			}
			if info.Points.Has(abi.PointScore) {
				if info.Points.Has(abi.PointPreScore) {
					st, err := c.PreScore(ctx, p, all)
					if err != nil {
						t.Fatal(err)
					}
					if st.Code == abi.Skip {
						continue
					}
				}
				sc, err := c.Score(ctx, p, all)
				if err != nil {
					t.Fatal(err)
				}
				o.scores = append(o.scores, append([]int64(nil), sc...))
			}
		}
		return o
	}
	twin := native.New(nil, defaults.Plugins()...)
	topo := fixtures.TopologyPod("diff", 2)
	for _, pod := range []abi.Pod{pod, topo} {
		want := run(t, twin, pod)
		rejected := 0
		for _, v := range want.verdicts {
			for _, s := range v {
				if s != "" {
					rejected++
				}
			}
		}
		if rejected == 0 {
			t.Fatal("the fixture rejects no node: the comparison would prove nothing")
		}
		if pod.Name == topo.Name && !strings.Contains(fmt.Sprint(want), "didn't match pod anti-affinity rules") {
			t.Fatalf("no anti-affinity rejection for the topology pod: the new plugins are not exercised: %v", want)
		}
		for _, build := range defaultBuilds {
			t.Run(pod.Name+"/"+build.name, func(t *testing.T) {
				b, _ := s.sharedCompile(t, defaultKey(build), "default", func() []byte { return build.bytes(t) }, wasm.Limits{})
				if got := run(t, b, pod); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("the %s build differs from the native twin:\n got %v\nwant %v", build.name, got, want)
				}
			})
		}
	}
}
