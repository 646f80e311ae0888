package eviction

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/platform/modules"

	clocktesting "k8s.io/utils/clock/testing"
)

func podNames(vs []Victim) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Pod.Namespace + "/" + v.Pod.Name
	}
	return out
}

// A round's record says what the round did: its evicted are the pods
// handed to the killer, its throttled those the rate held back; it names
// the pods no policy was offered, the force answers merged, the soft
// candidates left, and each policy's answers per node.
func TestEvictionRecordEqualsTheRound(t *testing.T) {
	a := &fakePolicy{name: "A", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: lowestPriority}
	b := &fakePolicy{name: "B", points: abi.PointEvictionThreshold, threshold: hard(0, "n1"), top: lowestPriority}
	c := &fakePolicy{name: "C", points: abi.PointEvictPods, evictPods: evictNamed(false, "s1", "s2")}
	e := newEnv(t, Settings{Rate: 1e-9, RateBurst: 1}, nil, a, b, c)
	ring := decision.NewRing(4)
	e.coord.decisions = ring
	e.node("n1", 1000)
	e.node("n2", 1000)
	e.node("n3", 1000)
	e.pod("n1", "x", 1, 100)
	e.pod("n1", "mirror", 1, 100, func(p *abi.Pod) { p.Mirror = true })
	e.pod("n1", "held", 1, 100)
	e.killer.held["uid-held"] = true
	e.pod("n2", "s1", 5, 100)
	e.pod("n2", "s2", 1, 100)
	e.pod("n3", "s1b", 1, 100)
	c.evictPods = evictNamed(false, "s1", "s2", "s1b")

	r := e.round()
	rec := r.Record()
	if rec == nil || rec.Round != 1 || rec.Nodes != 3 {
		t.Fatalf("record %+v", rec)
	}
	if got, want := rec.EvictedPods(), podNames(r.Victims); !reflect.DeepEqual(got, want) {
		t.Fatalf("record evicted %v, the round handed the killer %v", got, want)
	}
	if len(rec.Throttled.Pods) != r.Throttled || r.Throttled == 0 {
		t.Fatalf("throttled %d in the record, %d in the round (want some: rate burst 1)", len(rec.Throttled.Pods), r.Throttled)
	}
	all := append(rec.EvictedPods(), podsOf(rec.Throttled)...)
	slices.Sort(all)
	if want := []string{"default/s1b", "default/s2", "default/x"}; !reflect.DeepEqual(all, want) {
		t.Errorf("evicted and throttled %v, want %v", all, want)
	}
	if got := reasonsOf(rec.NotOffered); got["default/mirror"] != "protected: mirror" || !strings.Contains(got["default/held"], "held by the killer") {
		t.Errorf("not offered %+v", rec.NotOffered)
	}
	if len(rec.Merged.Pods) != 1 || rec.Merged.Pods[0].Pod != "default/x" || rec.Merged.Pods[0].Policy != "A+B" {
		t.Errorf("merged %+v", rec.Merged)
	}
	if got := reasonsOf(rec.NotChosen); !strings.Contains(got["default/s1"], "one soft victim per node") {
		t.Errorf("not chosen %+v", rec.NotChosen)
	}
	calls := map[string]int{}
	for _, ans := range rec.Answers {
		calls[ans.Policy+" "+ans.Call]++
		if ans.Call == abi.FuncThresholdMet.String() && (ans.Met != "HARD_MET" || !ans.Acted || ans.Node != "n1") {
			t.Errorf("threshold answer %+v", ans)
		}
	}
	want := map[string]int{"A threshold_met": 1, "B threshold_met": 1, "A top_eviction_pods": 1, "B top_eviction_pods": 1, "C evict_pods": 2}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("answers %v, want %v", calls, want)
	}
	// The ring finds the round by any pod it names.
	if got := ring.Lookup("default/s2"); len(got) != 1 || got[0].Eviction != rec {
		t.Errorf("lookup by an evicted pod: %v", got)
	}
	if got := ring.Lookup("default/nobody"); len(got) != 0 {
		t.Errorf("lookup of an unnamed pod: %v", got)
	}
	// A second round is another record; without a sink none is made.
	if r2 := e.round(); r2.Record() == nil || r2.Record().Round != 2 {
		t.Errorf("second round record %+v", r2.Record())
	}
	e.coord.decisions = nil
	if r3 := e.round(); r3.Record() != nil {
		t.Errorf("a round without a sink made a record")
	}
}

func podsOf(l decision.EvictionPods) []string {
	var out []string
	for _, p := range l.Pods {
		out = append(out, p.Pod)
	}
	return out
}

func reasonsOf(l decision.EvictionPods) map[string]string {
	out := map[string]string{}
	for _, p := range l.Pods {
		out[p.Pod] = p.Reason
	}
	return out
}

// On the builtin eviction bundle, in Wasm and native, the record's
// evicted are the round's victims, and the record stays within its
// bounds on a cluster larger than them.
func TestEvictionRecordBuiltinPolicies(t *testing.T) {
	cl, u := benchCluster(300, 10)
	cfg := config.Default()
	cfg.Eviction = &config.Eviction{Policies: []config.EvictionPolicy{
		{Plugin: "ResourceOvercommit"}, {Plugin: "NodePressure"}, {Plugin: "UsageThreshold"}}}
	ctx := context.Background()
	for _, backend := range []string{"native", "wasm"} {
		t.Run(backend, func(t *testing.T) {
			reg, err := modules.Load(ctx, cfg, modules.Options{CacheDir: t.TempDir(), NativeBuiltin: backend == "native"})
			if err != nil {
				t.Fatal(err)
			}
			defer reg.Close(ctx)
			set, err := PoliciesFrom(ctx, cfg, reg)
			if err != nil {
				t.Fatal(err)
			}
			ring := decision.NewRing(2)
			coord := New(Options{Settings: Settings{Rate: 1e9, RateBurst: 1 << 30}, Cluster: &fakeCluster{cache: cl}, Killer: &fakeKiller{}, Usage: u,
				Clock: clocktesting.NewFakeClock(t0), Decisions: ring}, set)
			defer coord.Close(ctx)
			r := coord.RunRound(ctx)
			rec := r.Record()
			if len(r.Failures) > 0 || len(r.Victims) == 0 {
				t.Fatalf("round: %d victims, failures %+v", len(r.Victims), r.Failures)
			}
			lim := decision.DefaultLimits.MaxNodes
			want := podNames(r.Victims)
			if len(want) > lim {
				want = want[:lim]
			}
			if !reflect.DeepEqual(rec.EvictedPods(), want) || len(rec.Evicted.Pods)+rec.Evicted.More != len(r.Victims) {
				t.Fatalf("record evicted %d (+%d more), round %d", len(rec.Evicted.Pods), rec.Evicted.More, len(r.Victims))
			}
			if len(rec.Answers) > lim || len(rec.Answers) == 0 {
				t.Errorf("%d answers (bound %d, %d dropped)", len(rec.Answers), lim, rec.AnswersDropped)
			}
			for _, v := range r.Victims[:min(len(r.Victims), lim)] {
				key := v.Pod.Namespace + "/" + v.Pod.Name
				if got := ring.Lookup(key); len(got) != 1 || !slices.Contains(got[0].Eviction.Names(key), "evicted") {
					t.Fatalf("lookup %s: %v", key, got)
				}
			}
			t.Logf("%s: %d victims, %d answers (+%d), %d not offered", backend, len(r.Victims), len(rec.Answers), rec.AnswersDropped,
				len(rec.NotOffered.Pods)+rec.NotOffered.More)
		})
	}
}
