package vpod

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

func TestNewRefuses(t *testing.T) {
	c := zonedCluster(1, 1, 1)
	pol := &Policy{}
	for _, tc := range []struct {
		name string
		set  Settings
		p    *Policies
		want string
	}{
		{"capacity 0", Settings{StatefulSet: "s", Capacity: 0, Strategy: StrategyMaxFillUp}, nil, "capacity 0"},
		{"no strategy", Settings{StatefulSet: "s", Capacity: 1}, nil, "no strategy"},
		{"unknown strategy", Settings{StatefulSet: "s", Capacity: 1, Strategy: "FILL"}, nil, `unknown strategy "FILL"`},
		{"no statefulset", Settings{Capacity: 1, Strategy: StrategyMaxFillUp}, nil, "no statefulset"},
		{"negative min replicas", Settings{StatefulSet: "s", Capacity: 1, Strategy: StrategyMaxFillUpSpread, MinReplicas: -1}, nil, "minReplicas -1"},
		{"unbound policies", Settings{StatefulSet: "s", Capacity: 1, Strategy: StrategyPolicy, SchedPolicy: pol}, nil, "NewPolicies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.set, c, tc.p, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestScheduleBadInput(t *testing.T) {
	t.Run("negative vreplicas", func(t *testing.T) {
		c := zonedCluster(2, 1, 1, vp("bad", -1), vp("good", 3))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp}, c, nil, Options{})
		if _, err := s.Schedule(bg, vp("bad", -1)); err == nil || !strings.Contains(err.Error(), "ns/bad") {
			t.Fatalf("error %v, want one naming ns/bad", err)
		}
		got, err := s.Schedule(bg, vp("good", 3))
		if err != nil || !reflect.DeepEqual(got, []Placement{pl(0, 3)}) {
			t.Fatalf("good: %v %v", got, err)
		}
	})
	t.Run("missing statefulset", func(t *testing.T) {
		for _, strategy := range []Strategy{StrategyMaxFillUp, StrategyMaxFillUpSpread, StrategyPolicy} {
			c := zonedCluster(2, 1, 1, vp("v", 3))
			c.DeleteStatefulSet()
			s := newSched(t, Settings{Capacity: 10, Strategy: strategy}, c, nil, Options{})
			if _, err := s.Schedule(bg, vp("v", 3)); err == nil || !strings.Contains(err.Error(), "not found") {
				t.Errorf("%s: error %v, want the StatefulSet's", strategy, err)
			}
			if _, err := s.Autoscale(bg, false); err == nil {
				t.Errorf("%s: autoscaler: no error", strategy)
			}
		}
	})
	t.Run("pod on a missing node", func(t *testing.T) {
		c := zonedCluster(2, 1, 1, vp("v", 3))
		c.SetPod(mkPod(1, "nowhere"))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp}, c, nil, Options{})
		if got, err := s.Schedule(bg, vp("v", 3)); err == nil || got != nil || !strings.Contains(err.Error(), "nowhere") {
			t.Fatalf("%v %v", got, err)
		}
		if len(s.Reserved()) != 0 {
			t.Errorf("a failed state build reserved %v", s.Reserved())
		}
	})
	t.Run("pod names without ordinals", func(t *testing.T) {
		// Knative would index out of range; they are left out of the
		// capacity and dropped from the vpod's placements.
		c := zonedCluster(2, 1, 1, vp("v", 3, Placement{PodName: "junk", VReplicas: 2}), vp("w", 1, Placement{PodName: "x-99999999", VReplicas: 1}))
		s := newSched(t, Settings{Capacity: 10, Strategy: StrategyMaxFillUp}, c, nil, Options{})
		got, err := s.Schedule(bg, vp("v", 3, Placement{PodName: "junk", VReplicas: 2}))
		if err != nil || !reflect.DeepEqual(got, []Placement{pl(0, 3)}) {
			t.Fatalf("%v %v", got, err)
		}
	})
}

// TestModuleFailure: a module that fails a step fails the Schedule with a
// *PolicyError: nothing is placed or removed (no placements come back:
// the committed ones stay), no requeue, no panic.
func TestModuleFailure(t *testing.T) {
	m := newFakeModule("knative")
	p, err := fakePolicies(lowestOrdinal, highestOrdinalOut, m)
	if err != nil {
		t.Fatal(err)
	}
	m.failStep = true
	c := zonedCluster(3, 1, 1, vp("v", 4, pl(1, 2)))
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyPolicy, SchedPolicy: lowestOrdinal, DeschedPolicy: highestOrdinalOut}, c, p, Options{})
	got, err := s.Schedule(bg, vp("v", 4, pl(1, 2)))
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Module != "knative" || pe.Policy != "scheduler" || got != nil {
		t.Fatalf("%v %v", got, err)
	}
	if _, requeue := IsRequeue(err); requeue {
		t.Errorf("a module failure reads as a requeue: %v", err)
	}
	if m.steps != 1 {
		t.Errorf("%d steps after a failure, want 1", m.steps)
	}
	// Scale down with the failing descheduler: nothing removed.
	got, err = s.Schedule(bg, vp("v", 1, pl(1, 2), pl(2, 1)))
	if !errors.As(err, &pe) || pe.Policy != "descheduler" || got != nil {
		t.Fatalf("scale down: %v %v", got, err)
	}
	if len(s.Reserved()) != 0 {
		t.Errorf("failed steps reserved %v", s.Reserved())
	}
}

// TestOneCallPerModulePerStep: each step is one call per module serving
// the policy, whatever the number of pods or entries; the topology is
// sent again only when it changes.
func TestOneCallPerModulePerStep(t *testing.T) {
	a := newFakeModule("a", "PodFitsResources", "LowestOrdinalPriority")
	b := newFakeModule("b", "EvenPodSpread", "AvailabilityZonePriority")
	pol := &Policy{Predicates: []PolicyEntry{pred("PodFitsResources"), pred("EvenPodSpread", `{"MaxSkew": 5}`)},
		Priorities: []PolicyEntry{prio("AvailabilityZonePriority", 10, `{"MaxSkew": 1}`), prio("LowestOrdinalPriority", 2), prio("EvenPodSpread", 1, `{"MaxSkew": 5}`)}}
	p, err := fakePolicies(pol, nil, a, b)
	if err != nil {
		t.Fatal(err)
	}
	c := zonedCluster(12, 6, 3, vp("v", 7), vp("w", 5))
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyPolicy, SchedPolicy: pol}, c, p, Options{Rand: lastRand})
	if _, err := s.Schedule(bg, vp("v", 7)); err != nil {
		t.Fatal(err)
	}
	if a.steps != 7 || b.steps != 7 || a.topos != 1 || b.topos != 1 {
		t.Fatalf("steps %d/%d, topologies %d/%d; want 7/7, 1/1", a.steps, b.steps, a.topos, b.topos)
	}
	if _, err := s.Schedule(bg, vp("w", 5)); err != nil {
		t.Fatal(err)
	}
	if a.topos != 1 {
		t.Errorf("unchanged topology sent again")
	}
	c.SetReplicas(13)
	c.SetPod(mkPod(12, "node-0"))
	if _, err := s.Schedule(bg, vp("w", 6)); err != nil {
		t.Fatal(err)
	}
	if a.topos != 2 || b.topos != 2 {
		t.Errorf("topologies %d/%d after a scale change, want 2/2", a.topos, b.topos)
	}
}

// TestSetPolicies swaps the policies between calls.
func TestSetPolicies(t *testing.T) {
	low, err := fakePolicies(lowestOrdinal, nil, newFakeModule("knative"))
	if err != nil {
		t.Fatal(err)
	}
	highPol := &Policy{Priorities: []PolicyEntry{prio("LowestOrdinalPriority", -1)}} // highest ordinal first
	high, err := fakePolicies(highPol, nil, newFakeModule("knative"))
	if err != nil {
		t.Fatal(err)
	}
	c := zonedCluster(3, 1, 1, vp("v", 1), vp("w", 1))
	s := newSched(t, Settings{Capacity: 10, Strategy: StrategyPolicy, SchedPolicy: lowestOrdinal}, c, low, Options{})
	if got, _ := s.Schedule(bg, vp("v", 1)); !reflect.DeepEqual(got, []Placement{pl(0, 1)}) {
		t.Fatalf("v: %v", got)
	}
	s.SetPolicies(high)
	if got, _ := s.Schedule(bg, vp("w", 1)); !reflect.DeepEqual(got, []Placement{pl(2, 1)}) {
		t.Fatalf("w: %v", got)
	}
}

// TestNewPolicies binds policies to the modules of a real registry.
func TestNewPolicies(t *testing.T) {
	reg := knativeRegistry(t, "native")
	ctx := context.Background()
	t.Run("lenient binds and skips unknown", func(t *testing.T) {
		p, err := NewPolicies(ctx, reg, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources"), pred("Nope")},
			Priorities: []PolicyEntry{prio("PodFitsResources", 1), prio("LowestOrdinalPriority", 2)}, Lenient: true}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		if len(p.sched.preds) != 1 || len(p.sched.prios) != 1 || p.desched != nil || len(p.pools) != 1 {
			t.Fatalf("bound %d predicates, %d priorities, %d pools", len(p.sched.preds), len(p.sched.prios), len(p.pools))
		}
		if p.sched.mods[0].pool.name() != knativeTestModule {
			t.Errorf("module %q", p.sched.mods[0].pool.name())
		}
	})
	t.Run("not a vpod plugin", func(t *testing.T) {
		for _, lenient := range []bool{false, true} {
			_, err := NewPolicies(ctx, reg, &Policy{Predicates: []PolicyEntry{pred("NodeName")}, Lenient: lenient}, nil, nil)
			if err == nil || !strings.Contains(err.Error(), `"NodeName"`) {
				t.Fatalf("lenient %v: error %v, want one naming NodeName", lenient, err)
			}
		}
	})
	t.Run("lenient invalid args recorded", func(t *testing.T) {
		p, err := NewPolicies(ctx, reg, nil, &Policy{Priorities: []PolicyEntry{prio("RemoveWithEvenPodSpreadPriority", 1)}, Lenient: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		if p.desched.prios[0].invalid == "" {
			t.Errorf("the module's refusal of the args was not recorded")
		}
	})
	t.Run("no registry", func(t *testing.T) {
		p, err := NewPolicies(ctx, nil, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Lenient: true}, nil, nil)
		if err != nil || len(p.sched.preds) != 0 || !reflect.DeepEqual(p.Sched(), &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Lenient: true}) {
			t.Fatalf("%v %v", p, err)
		}
		if _, err := NewPolicies(ctx, nil, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}}, nil, nil); err == nil {
			t.Fatal("a strict policy bound with no module serving its plugin")
		}
	})
	_ = config.Default
	_ = modules.Load
}

// TestNewPoliciesStrict: a strict policy (the default) is refused as a
// whole for every entry whose plugin no module serves as that kind and
// every entry whose args its module refuses; each refusal names where
// the entry was written, why, and what exists. The running policies a
// rebind started from are untouched.
func TestNewPoliciesStrict(t *testing.T) {
	reg := knativeRegistry(t, "native")
	ctx := context.Background()
	at := func(e PolicyEntry, file string, line int, field string) PolicyEntry {
		e.File, e.Line, e.Field = file, line, field
		return e
	}
	sched := &Policy{
		Predicates: []PolicyEntry{
			pred("PodFitsResources"),
			at(pred("PodFitsResource"), "c.yaml", 14, "vpod.schedulers[0].schedulerPolicy.predicates[1]"),
			pred("LowestOrdinalPriority"), // a priority only
		},
		Priorities: []PolicyEntry{
			at(prio("AvailabilityZonePriority", 1, `{"MaxSkw": 2}`), "sched.json", 3, "data.priorities[0]"),
			prio("LowestOrdinalPriority", 1, `{"MaxSkew": "2"}`), // takes no args: Knative ignores them
		},
	}
	prev, err := NewPolicies(ctx, reg, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer prev.Close(ctx)
	_, err = RebindPolicies(ctx, reg, sched, nil, nil, prev)
	var es config.Errors
	if !errors.As(err, &es) || len(es) != 4 {
		t.Fatalf("error %v, want 4 refusals", err)
	}
	for i, want := range []string{
		`c.yaml:14: vpod.schedulers[0].schedulerPolicy.predicates[1]: vpod predicate "PodFitsResource": no module serves it (did you mean "PodFitsResources"?); the vpod predicates that exist: EvenPodSpread, NoMaxResourceCount, PodFitsResources`,
		`scheduler policy predicates[2]: vpod predicate "LowestOrdinalPriority": module "knative-bundle" serves it as a vpod priority only; the vpod predicates that exist: EvenPodSpread, NoMaxResourceCount, PodFitsResources`,
		`sched.json:3: data.priorities[0]: vpod priority "AvailabilityZonePriority": module "knative-bundle" refuses its args "{\"MaxSkw\": 2}": invalid arguments: unknown field "MaxSkw"`,
		`scheduler policy priorities[1]: vpod priority "LowestOrdinalPriority": args "{\"MaxSkew\": \"2\"}" given to a plugin that takes none: LowestOrdinalPriority takes no args (knativeCompat: lenient ignores them, as Knative does)`,
	} {
		if !strings.HasPrefix(es[i].Error(), want) {
			t.Errorf("refusal %d:\n got %s\nwant %s…", i, es[i], want)
		}
	}
	// The running policies still schedule.
	s := newSched(t, Settings{Capacity: 2, Strategy: StrategyPolicy, SchedPolicy: prev.Sched()}, zonedCluster(2, 2, 1, vp("v", 1)), prev, Options{Rand: lastRand})
	if _, err := s.Schedule(ctx, vp("v", 1)); err != nil {
		t.Fatalf("previous policies: %v", err)
	}
}

// Args given to a plugin that takes none are refused by a strict policy;
// a lenient one runs the plugin as if it had none, as Knative does: it
// places exactly as the same policy without the args.
func TestArgsForAPluginWithoutArgs(t *testing.T) {
	for _, backend := range []string{"native", "wasm"} {
		t.Run(backend, func(t *testing.T) {
			reg := knativeRegistry(t, backend)
			ctx := context.Background()
			withArgs := func(lenient bool) *Policy {
				return &Policy{Predicates: []PolicyEntry{pred("PodFitsResources", `{"Max": 1}`)},
					Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1, `{"x": 1}`)}, Lenient: lenient}
			}
			_, err := NewPolicies(ctx, reg, withArgs(false), nil, nil)
			var es config.Errors
			if !errors.As(err, &es) || len(es) != 2 || !strings.Contains(es[0].Error(), `"PodFitsResources": args "{\"Max\": 1}" given to a plugin that takes none`) {
				t.Fatalf("strict: %v, want both entries refused", err)
			}
			place := func(pol *Policy) []Placement {
				t.Helper()
				ps, err := NewPolicies(ctx, reg, pol, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer ps.Close(ctx)
				s := newSched(t, Settings{Capacity: 2, Strategy: StrategyPolicy, SchedPolicy: ps.Sched()}, zonedCluster(4, 4, 2, vp("v", 3)), ps, Options{Rand: lastRand})
				got, err := s.Schedule(ctx, vp("v", 3))
				if err != nil {
					t.Fatal(err)
				}
				return got
			}
			plain := &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 1)}}
			if got, want := place(withArgs(true)), place(plain); !reflect.DeepEqual(got, want) {
				t.Fatalf("lenient with ignored args placed %v, without args %v", got, want)
			}
		})
	}
}
