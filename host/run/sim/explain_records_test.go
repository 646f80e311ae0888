package sim

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// With Explain, the report carries the records of the eviction rounds
// that name an explained pod: their evicted pods are the run's
// evictions of that round, on the native and the Wasm builds.
func TestExplainEvictionRounds(t *testing.T) {
	cfg, err := config.Load("../../../examples/eviction.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := LoadFiles("../../../examples/eviction-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, native := range []bool{true, false} {
		rep, err := Run(context.Background(), objs, Options{Config: cfg, Seed: 1, NativeBuiltin: native, CacheDir: t.TempDir(),
			Explain: func(string) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Eviction == nil || len(rep.Eviction.Evictions) == 0 {
			t.Fatalf("native=%v: the example evicts nothing", native)
		}
		byRound := map[int][]string{}
		for _, ev := range rep.Eviction.Evictions {
			byRound[ev.Round] = append(byRound[ev.Round], ev.Pod)
		}
		if len(rep.EvictionExplanations) != rep.Eviction.Rounds {
			t.Fatalf("native=%v: %d round records, %d rounds", native, len(rep.EvictionExplanations), rep.Eviction.Rounds)
		}
		for _, rec := range rep.EvictionExplanations {
			got, want := rec.EvictedPods(), byRound[rec.Round]
			slices.Sort(got)
			slices.Sort(want)
			if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("native=%v round %d: record evicted %v, the run %v", native, rec.Round, got, want)
			}
		}
		// A pod not explained keeps the rounds out.
		first := rep.Eviction.Evictions[0].Pod
		rep2, err := Run(context.Background(), objs, Options{Config: cfg, Seed: 1, NativeBuiltin: native, CacheDir: t.TempDir(),
			Explain: func(k string) bool { return k == first }})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range rep2.EvictionExplanations {
			if !slices.Contains(rec.Named(), first) {
				t.Errorf("round %d kept without naming %s", rec.Round, first)
			}
		}
		if len(rep2.EvictionExplanations) == 0 {
			t.Errorf("no round kept for %s", first)
		}
	}
}

// With Explain naming a vpod, the report carries its Schedule calls'
// records: the last one's placements are the vpod's final ones.
func TestExplainVPodSteps(t *testing.T) {
	cfg, err := config.Load("../../../examples/vpods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := LoadFiles("../../../examples/vpods-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, native := range []bool{true, false} {
		key := decision.VPodKey("analytics/clickstream")
		rep, err := Run(context.Background(), objs, Options{Config: cfg, Seed: 1, NativeBuiltin: native, CacheDir: t.TempDir(),
			Explain: func(k string) bool { return k == key }})
		if err != nil {
			t.Fatal(err)
		}
		var final []decision.VPodPlacement
		for _, s := range rep.VPods.Schedulers {
			for _, v := range s.VPods {
				if v.VPod == "analytics/clickstream" {
					for _, p := range v.Placements {
						final = append(final, decision.VPodPlacement{Pod: p.PodName, VReplicas: p.VReplicas})
					}
				}
			}
		}
		if len(rep.VPodExplanations) == 0 || len(final) == 0 {
			t.Fatalf("native=%v: %d records, placements %v", native, len(rep.VPodExplanations), final)
		}
		for _, r := range rep.VPodExplanations {
			if r.VPod != "analytics/clickstream" {
				t.Fatalf("record of %s not asked for", r.VPod)
			}
		}
		last := rep.VPodExplanations[len(rep.VPodExplanations)-1]
		if !reflect.DeepEqual(last.Placements, final) {
			t.Errorf("native=%v: last record placed %v, the vpod ends with %v", native, last.Placements, final)
		}
		if len(rep.Explanations) != 0 || len(rep.EvictionExplanations) != 0 {
			t.Errorf("records of pods not asked for")
		}
	}
}
