package vpod

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

// The "faulty" module serves three vpod plugins that misbehave at every
// step of a vpod whose name starts with "bad", until healed:
//
//   - Boom, a predicate, panics: through the native runtime a guest trap
//     (the instance is lost), as in Wasm.
//   - Slow, a priority, is stopped at its call deadline: its instances
//     answer the step as the Wasm runtime does when it stops a guest that
//     loops (an ErrDeadlineExceeded guest fault).
//   - Liar, a predicate, answers a well-formed reply with no verdict for
//     the step's candidates (an invalid reply).
//
// Knative's own plugins come from a second module, "kn", so that the
// failing module serves only the misbehaving plugin.
type faultyModule struct {
	mode   string // "trap", "deadline" or "invalid"
	healed atomic.Bool
}

func (f *faultyModule) failing(vpod string) bool {
	return strings.HasPrefix(vpod, "bad") && !f.healed.Load()
}

type faultyPlugin struct {
	name string
	f    *faultyModule
}

func (p faultyPlugin) Name() string { return p.name }

func (p faultyPlugin) NewVPodFilter([]byte) (plugin.VPodFilter, error) {
	return func(s *plugin.VPodState, _ []int, _ []*plugin.Status) {
		if p.name == "Boom" && p.f.failing(s.Name()) {
			panic("boom")
		}
	}, nil
}

func (p faultyPlugin) NewVPodScorer([]byte) (plugin.VPodScorer, error) {
	return func(*plugin.VPodState, []int, []int64) error { return nil }, nil
}

// faultyBackend serves the faulty module natively, its instances wrapped
// to play the deadline and the invalid reply.
type faultyBackend struct {
	inner guest.Backend
	f     *faultyModule
}

func newFaultyBackend(f *faultyModule) *faultyBackend {
	reg := func(name string) plugin.Registration {
		return plugin.Registration{Name: name, New: func(*abi.Value, plugin.Handle) (plugin.Plugin, error) {
			if name == "Slow" {
				return slowPlugin{faultyPlugin{name, f}}, nil
			}
			return faultyPlugin{name, f}, nil
		}}
	}
	return &faultyBackend{inner: native.New(nil, reg("Boom"), reg("Slow"), reg("Liar")), f: f}
}

// slowPlugin is a priority only.
type slowPlugin struct{ p faultyPlugin }

func (s slowPlugin) Name() string { return s.p.name }
func (s slowPlugin) NewVPodScorer(args []byte) (plugin.VPodScorer, error) {
	return s.p.NewVPodScorer(args)
}

func (b *faultyBackend) NewInstance(ctx context.Context) (guest.Instance, error) {
	inst, err := b.inner.NewInstance(ctx)
	if err != nil {
		return nil, err
	}
	return &faultyInstance{Instance: inst, f: b.f}, nil
}

func (b *faultyBackend) Close(ctx context.Context) error { return b.inner.Close(ctx) }

type faultyInstance struct {
	guest.Instance
	f  *faultyModule
	in []byte
}

func (i *faultyInstance) Input(ctx context.Context, n int) ([]byte, error) {
	b, err := i.Instance.Input(ctx, n)
	i.in = b
	return b, err
}

func (i *faultyInstance) Call(ctx context.Context, fn abi.Func, arg uint32, n int) ([]byte, error) {
	if fn == abi.FuncVPodStep && i.f.mode != "trap" {
		var st abi.VPodStep
		abi.NewDecoder(i.in[:n]).VPodStep(&st)
		if i.f.failing(st.Name) {
			if i.f.mode == "deadline" {
				return nil, guest.Fault(guest.ErrDeadlineExceeded, errors.New("wasm: the call ran past its 100ms deadline and was stopped"))
			}
			var e abi.Encoder
			e.U8(abi.ReplyOK)
			e.VPodStepReply(&abi.VPodStepReply{})
			return e.B, nil
		}
	}
	return i.Instance.Call(ctx, fn, arg, n)
}

// faultyPolicies binds pol to the "kn" (Knative's plugins) and "faulty"
// modules.
func faultyPolicies(t *testing.T, f *faultyModule, pol *Policy) *Policies {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.Modules = []config.ModuleSpec{{Name: "kn"}, {Name: "faulty"}}
	reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: t.TempDir(), NativeBuiltin: true,
		Backends: map[string]guest.Backend{"kn": native.New(nil, knativedefaults.Plugins()...), "faulty": newFaultyBackend(f)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close(ctx) })
	p, err := NewPolicies(ctx, reg, pol, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	return p
}

// faultCases are the three ways a module fails a step, each with a
// policy whose failing plugin is served by the faulty module alone.
var faultCases = []struct {
	mode, plugin, reason string
	pol                  *Policy
}{
	{"trap", "Boom", metrics.PolicyFailureTrap, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources"), pred("Boom")},
		Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}},
	{"deadline", "Slow", metrics.PolicyFailureTimeout, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")},
		Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1), prio("Slow", 1)}}},
	{"invalid", "Liar", metrics.PolicyFailureInvalidReply, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources"), pred("Liar")},
		Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}},
}

// TestPolicyModuleFailureNeverScales: a module that traps, is stopped at
// its deadline, or answers invalidly fails the step with a *PolicyError
// naming the module, plugin and reason; nothing is placed or reserved,
// the autoscaler is neither triggered nor counts the vpod's pending
// vreplicas, so the StatefulSet keeps its replicas however often the vpod
// is retried; the failure is counted. Once the module behaves, the vpod
// is placed and no longer marked failed.
func TestPolicyModuleFailureNeverScales(t *testing.T) {
	for _, tc := range faultCases {
		t.Run(tc.mode, func(t *testing.T) {
			f := &faultyModule{mode: tc.mode}
			p := faultyPolicies(t, f, tc.pol)
			reg := prometheus.NewRegistry()
			m, err := metrics.New(reg)
			if err != nil {
				t.Fatal(err)
			}
			bad := vp("bad", 6, pl(1, 2))
			c := zonedCluster(3, 3, 3, bad)
			s := newSched(t, Settings{Name: "kafka", Capacity: 2, Strategy: StrategyPolicy, SchedPolicy: tc.pol}, c, p, Options{Metrics: m.VPod()})
			before := s.Reserved()
			const retries = 3
			for i := 0; i < retries; i++ {
				ps, err := s.Schedule(bg, bad)
				var pe *PolicyError
				if !errors.As(err, &pe) {
					t.Fatalf("retry %d: %v %v, want a *PolicyError", i, ps, err)
				}
				if ps != nil {
					t.Errorf("retry %d: placements %v returned with a module failure", i, ps)
				}
				want := PolicyError{Scheduler: "kafka", VPod: key("bad"), Policy: "scheduler", Module: "faulty", Plugin: tc.plugin, Reason: tc.reason}
				got := *pe
				got.Err = nil
				if got != want || pe.Err == nil {
					t.Errorf("retry %d: %+v, want %+v with the module's error", i, *pe, want)
				}
				for _, part := range []string{"ns/bad", `module "faulty"`, tc.plugin, tc.reason} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("retry %d: %q does not name %s", i, err, part)
					}
				}
				if _, requeue := IsRequeue(err); requeue {
					t.Errorf("retry %d: a module failure reads as vreplicas left: %v", i, err)
				}
				if got := s.Reserved(); !reflect.DeepEqual(got, before) {
					t.Errorf("retry %d: reservations %v, were %v", i, got, before)
				}
				if len(s.trigger) != 0 {
					t.Errorf("retry %d: the autoscaler was triggered", i)
				}
				for _, down := range []bool{false, true} {
					res, err := s.Autoscale(bg, down)
					if err != nil || res.Scaled || res.Target != 3 {
						t.Errorf("retry %d: autoscaler pass (scale down %v): %+v %v, want target 3, not scaled", i, down, res, err)
					}
				}
			}
			if got := c.Scaled(); len(got) != 0 {
				t.Errorf("the StatefulSet was scaled: %v", got)
			}
			if got, _ := c.VPod(key("bad")); !reflect.DeepEqual(got.Placements, []Placement{pl(1, 2)}) {
				t.Errorf("committed placements %v, want the old ones", got.Placements)
			}
			if got := s.Failed(); !reflect.DeepEqual(got, []Key{key("bad")}) {
				t.Errorf("Failed() = %v", got)
			}
			if n := testmetrics.Value(t, reg, "wasmsched_vpod_policy_failures_total",
				testmetrics.Labels{"scheduler": "kafka", "plugin": tc.plugin, "reason": tc.reason}); n != retries {
				t.Errorf("failures counted %v, want %d", n, retries)
			}
			f.healed.Store(true)
			ps, err := s.Schedule(bg, bad)
			if err != nil || TotalVReplicas(ps) != 6 {
				t.Fatalf("healed: %v %v", ps, err)
			}
			if got := s.Failed(); len(got) != 0 {
				t.Errorf("Failed() = %v after a good Schedule", got)
			}
		})
	}
}

// TestPolicyModuleFailureIsNoDemand: with one vpod failing in a module
// and another left with vreplicas for lack of pods, the autoscaler scales
// for the second only: the same target as when the first wants nothing
// more than it has.
func TestPolicyModuleFailureIsNoDemand(t *testing.T) {
	pol := faultCases[0].pol
	target := func(first VPod, wantPolicyErr bool) int32 {
		t.Helper()
		p := faultyPolicies(t, &faultyModule{mode: "trap"}, pol)
		good := vp("good", 6)
		c := zonedCluster(3, 3, 3, first, good)
		s := newSched(t, Settings{Capacity: 2, Strategy: StrategyPolicy, SchedPolicy: pol}, c, p, Options{})
		var pe *PolicyError
		if _, err := s.Schedule(bg, first); errors.As(err, &pe) != wantPolicyErr {
			t.Fatalf("%s: %v", first.Key, err)
		}
		if _, err := s.Schedule(bg, good); err == nil {
			t.Fatalf("good was placed whole: want vreplicas left")
		}
		res, err := s.Autoscale(bg, false)
		if err != nil || !res.Scaled {
			t.Fatalf("autoscaler: %+v %v", res, err)
		}
		return res.Target
	}
	calm := target(vp("calm", 2, pl(1, 2)), false)
	failing := target(vp("bad", 4, pl(1, 2)), true)
	if failing != calm {
		t.Errorf("target %d with a failing vpod, %d without its pending vreplicas", failing, calm)
	}
}
