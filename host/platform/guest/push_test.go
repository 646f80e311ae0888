package guest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/internal/fixtures"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// pushFake is a module with a Filter, an eviction and a vpod plugin whose
// instances record, per call, the push allowance they were running under
// at its Input and at its Call.
type pushFake struct{ calls []pushCall }

type pushCall struct {
	fn           abi.Func
	n            int
	input, allow time.Duration // at Input (-1: none) and at Call
}

func (f *pushFake) NewInstance(context.Context) (guest.Instance, error) {
	return &pushFakeInstance{f: f, inputAllow: -1}, nil
}
func (f *pushFake) Close(context.Context) error { return nil }

type pushFakeInstance struct {
	f          *pushFake
	in         []byte
	allow      time.Duration
	inputAllow time.Duration
}

func (i *pushFakeInstance) AllowPush(d time.Duration) { i.allow = d }

func (i *pushFakeInstance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, abi.VersionMinor), nil
}

func (i *pushFakeInstance) Input(_ context.Context, n int) ([]byte, error) {
	if n > len(i.in) {
		i.in = make([]byte, n)
	}
	i.inputAllow = i.allow
	return i.in[:n], nil
}

func (i *pushFakeInstance) Call(_ context.Context, fn abi.Func, _ uint32, n int) ([]byte, error) {
	i.f.calls = append(i.f.calls, pushCall{fn: fn, n: n, input: i.inputAllow, allow: i.allow})
	i.inputAllow = -1
	e := abi.Encoder{}
	e.U8(abi.ReplyOK)
	if fn == abi.FuncManifest {
		e.Manifest(&abi.Manifest{VersionMajor: abi.VersionMajor, VersionMinor: abi.VersionMinor, Plugins: []abi.PluginInfo{
			{Name: "F", Points: abi.PointFilter},
			{Name: "E", Points: abi.PointEvictPods},
			{Name: "V", Points: abi.PointVPodPredicate}}})
	}
	return e.B, nil
}

func (i *pushFakeInstance) Close(context.Context) error { return nil }

// TestPushesRunUnderTheirAllowanceAndPolicyCallsDoNot: the host's pushes
// (sync, observe, vpod_topology) get PushAllowance of their size on top of
// the call timeout, for their Input and their Call; every other call,
// the first after a push included, runs under the call timeout alone.
func TestPushesRunUnderTheirAllowanceAndPolicyCallsDoNot(t *testing.T) {
	ctx := context.Background()
	f := &pushFake{}
	m, err := guest.Load(ctx, f, guest.PoolConfig{Name: "push", PoolSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Put(ctx, c)

	snap := fixtures.Cluster(500, 1000)
	obs := snapshot.NewObservations()
	for i := uint32(0); i < 500; i++ {
		obs.Set(i, &abi.NodeObservation{Usage: &abi.Usage{MilliCPU: 1000}})
	}
	topo := &abi.VPodTopology{Generation: 1, StatefulSet: "adapter", Capacity: 10, Replicas: 2,
		Nodes: []abi.VPodNode{{Name: "n"}}, Pods: []abi.VPodPod{{Ordinal: 0}, {Ordinal: 1}}}
	pod := fixtures.Pod("p", 0)
	steps := []struct {
		name string
		run  func() error
	}{
		{"sync", func() error { return c.Sync(ctx, snap) }},
		{"cycle", func() error { return c.StartCycle(ctx, &pod) }},
		{"observe", func() error { return c.Observe(ctx, obs) }},
		{"vpod_topology", func() error { return c.VPodTopology(ctx, topo) }},
		{"push_state", func() error { return c.PushState(ctx) }},
		{"pop_state", func() error { return c.PopState(ctx) }},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	pushes := map[abi.Func]bool{abi.FuncSync: true, abi.FuncObserve: true, abi.FuncVPodTopology: true}
	seen := map[abi.Func]bool{}
	for _, call := range f.calls {
		seen[call.fn] = true
		want := time.Duration(0)
		if pushes[call.fn] {
			want = guest.PushAllowance(call.n)
			if want <= 0 {
				t.Errorf("%s of %d bytes: allowance %v", call.fn, call.n, want)
			}
		}
		if call.allow != want {
			t.Errorf("%s of %d bytes ran with %v allowed on top of the call timeout, want %v", call.fn, call.n, call.allow, want)
		}
		if call.input >= 0 && call.input != want {
			t.Errorf("%s's input of %d bytes was asked for with %v allowed, want %v", call.fn, call.n, call.input, want)
		}
	}
	for fn := range pushes {
		if !seen[fn] {
			t.Errorf("no %s call was made", fn)
		}
	}
}

// TestPushAllowanceGrowsWithTheBytesAndStaysBounded: an allowance is
// in proportion to what is pushed, 1 s per MB, so a first sync of a big
// cluster gets seconds while a guest that never returns from a push of
// the most a 64 MiB instance can take is still stopped within about a
// minute past its call timeout.
func TestPushAllowanceGrowsWithTheBytesAndStaysBounded(t *testing.T) {
	if got := guest.PushAllowance(0); got != 0 {
		t.Errorf("PushAllowance(0) = %v", got)
	}
	if got := guest.PushAllowance(4_290_030); got < 4*time.Second {
		t.Errorf("a 4.3 MB sync (5000 nodes, 50 000 pods) gets %v, want several seconds", got)
	}
	if got := guest.PushAllowance(64 << 20); got > 70*time.Second {
		t.Errorf("a 64 MiB push gets %v, more than 70 s", got)
	}
}

// TestDeadlineExceededSaysHowThePushBudgetWasMadeUp: the deadline error
// names the budget, and for a push its two parts.
func TestDeadlineExceededSaysHowThePushBudgetWasMadeUp(t *testing.T) {
	err := guest.DeadlineExceeded("wasmsched_call", time.Second, 0)
	if !errors.Is(err, guest.ErrDeadlineExceeded) || err.Error() != "wasmsched_call: deadline of 1s exceeded" {
		t.Errorf("err = %q", err)
	}
	err = guest.DeadlineExceeded("wasmsched_call", time.Second, 4*time.Second)
	if !errors.Is(err, guest.ErrDeadlineExceeded) ||
		!strings.Contains(err.Error(), "deadline of 5s exceeded (the call timeout 1s and 4s allowed for the state the host pushed)") {
		t.Errorf("err = %q", err)
	}
}
