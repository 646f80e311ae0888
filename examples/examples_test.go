// Package examples_test runs the example manifests through the simulation
// and asserts where every pod lands, so the README's demo stays true.
package examples_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

func TestExampleClusterPlacements(t *testing.T) {
	cfg, err := config.Load("profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := sim.LoadFiles("cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), objs, sim.Options{Config: cfg, Seed: 1, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		pod, profile, node, status string
		message                    []string
	}{
		{"prod/legacy-db", "", "node-a2", sim.StatusBound, nil},
		{"ml/trainer", "default-scheduler", "gpu-c1", sim.StatusScheduled, nil},
		{"infra/log-shipper", "default-scheduler", "infra-b2", sim.StatusScheduled, nil},
		{"web/ingress-1", "default-scheduler", "node-a1", sim.StatusScheduled, nil},
		{"web/ingress-2", "default-scheduler", "node-a2", sim.StatusScheduled, nil},
		{"web/ingress-3", "default-scheduler", "", sim.StatusUnschedulable, []string{
			"0/6 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable, " +
				"2 node(s) didn't have free ports for the requested pod ports, 2 node(s) had untolerated taint(s).",
		}},
		{"batch/too-big", "default-scheduler", "", sim.StatusUnschedulable, []string{
			"0/6 nodes are available: 1 node(s) were unschedulable, 2 node(s) had untolerated taint(s), 3 Insufficient cpu.",
		}},
		// The same pod, two profiles: LeastAllocated picks the emptiest
		// node, MostAllocated the fullest that fits.
		{"batch/spread-me", "default-scheduler", "node-b1", sim.StatusScheduled, nil},
		{"batch/pack-me", "bin-packer", "node-a2", sim.StatusScheduled, nil},
		{"batch/not-mine", "", "", sim.StatusNotOurs, []string{`schedulerName "some-other-scheduler"`}},
	} {
		ns, name, _ := strings.Cut(want.pod, "/")
		got := rep.Pod(ns, name)
		if got == nil {
			t.Errorf("%s: missing from the report", want.pod)
			continue
		}
		if got.Profile != want.profile || got.Node != want.node || got.Status != want.status {
			t.Errorf("%s: got profile %q node %q status %q, want %q %q %q (%s)",
				want.pod, got.Profile, got.Node, got.Status, want.profile, want.node, want.status, got.Message)
		}
		for _, m := range want.message {
			if !strings.Contains(got.Message, m) {
				t.Errorf("%s: message %q does not contain %q", want.pod, got.Message, m)
			}
		}
	}
}

// TestTopologyExample checks the constraints of examples/topology.yaml
// rather than exact nodes: symmetric nodes tie, and ties are random.
func TestTopologyExample(t *testing.T) {
	objs, err := sim.LoadFiles("topology.yaml")
	if err != nil {
		t.Fatal(err)
	}
	zoneOf := map[string]string{"a1": "a", "a2": "a", "b1": "b", "b2": "b", "c1": "c", "c2": "c"}
	for seed := uint64(1); seed <= 5; seed++ {
		rep, err := sim.Run(context.Background(), objs, sim.Options{Seed: seed, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		webPerZone := map[string]int{}
		dbHosts := map[string]bool{}
		for _, p := range rep.Pods {
			if p.Namespace == "batch" {
				continue // pre-bound filler
			}
			if p.Status != sim.StatusScheduled {
				t.Fatalf("seed %d: %s/%s not scheduled: %s", seed, p.Namespace, p.Name, p.Message)
			}
			switch {
			case strings.HasPrefix(p.Name, "web-"):
				webPerZone[zoneOf[p.Node]]++
			case strings.HasPrefix(p.Name, "db-"):
				if dbHosts[p.Node] {
					t.Errorf("seed %d: two db replicas on %s despite required anti-affinity", seed, p.Node)
				}
				dbHosts[p.Node] = true
			}
		}
		if webPerZone["a"] != 2 || webPerZone["b"] != 2 || webPerZone["c"] != 2 {
			t.Errorf("seed %d: web replicas per zone %v, want 2 each (maxSkew 1)", seed, webPerZone)
		}
		if cache, db0 := rep.Pod("shop", "cache"), rep.Pod("shop", "db-0"); cache.Node != db0.Node {
			t.Errorf("seed %d: cache on %s, db-0 on %s: required affinity broken", seed, cache.Node, db0.Node)
		}
		if noisy := rep.Pod("shop", "noisy"); dbHosts[noisy.Node] {
			t.Errorf("seed %d: noisy on %s, which runs a db pod", seed, noisy.Node)
		}
	}
}

func TestPreemptionExample(t *testing.T) {
	objs, err := sim.LoadFiles("preemption.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), objs, sim.Options{Seed: 1, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"jobs/batch-1": sim.StatusBound, "jobs/batch-2": sim.StatusPreempted, "shop/db-0": sim.StatusPreempted,
		"shop/db-1": sim.StatusBound, "jobs/report": sim.StatusScheduled, "jobs/rebuild": sim.StatusScheduled,
		"jobs/rebuild-2": sim.StatusUnschedulable, "bank/ledger-0": sim.StatusPreempted, "bank/failover": sim.StatusScheduled,
	}
	for key, status := range want {
		ns, name, _ := strings.Cut(key, "/")
		if got := rep.Pod(ns, name); got == nil || got.Status != status {
			t.Errorf("%s: %+v, want %s", key, got, status)
		}
	}
	if len(rep.Preemptions) != 3 || rep.Preemptions[0] != (sim.Preemption{Preemptor: "bank/failover", Victim: "bank/ledger-0", Node: "node-3", How: "delete"}) ||
		rep.Preemptions[1] != (sim.Preemption{Preemptor: "jobs/report", Victim: "jobs/batch-2", Node: "node-1", How: "delete"}) ||
		rep.Preemptions[2] != (sim.Preemption{Preemptor: "jobs/rebuild", Victim: "shop/db-0", Node: "node-2", How: "evict"}) {
		t.Errorf("preemptions %+v", rep.Preemptions)
	}
	// The critical pod asked the Eviction API first, was refused by the
	// ledger's budget in words a user reads, and deleted instead.
	var ledger []string
	for _, e := range rep.Timeline {
		if e.Pod == "bank/ledger-0" {
			ledger = append(ledger, string(e.Op)+" "+e.Err)
		}
	}
	if want := []string{"mark-victim ", "evict blocked by PodDisruptionBudget ledger: 0 disruptions allowed", "event ", "delete ", "event "}; strings.Join(ledger, "|") != strings.Join(want, "|") {
		t.Errorf("ledger-0's timeline %q, want %q", ledger, want)
	}
	if m := rep.Pod("jobs", "rebuild-2").Message; !strings.Contains(m, "preemption would violate a PodDisruptionBudget its PriorityClass guards against this priority") {
		t.Errorf("rebuild-2 message %q does not say why", m)
	}
}

// The eviction example: node-a's shrunken allocatable costs it its
// lowest-priority pod (a batch replica, recreated on node-c), node-b's
// MemoryPressure taints it and evicts by kubelet's ranking (the cache
// using three times its request first, never the node-critical agent),
// the annotated database is never offered, and the dry-run policy evicts
// nothing.
func TestExampleEviction(t *testing.T) {
	cfg, err := config.Load("eviction.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := sim.LoadFiles("eviction-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), objs, sim.Options{Config: cfg, Seed: 1, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ev := rep.Eviction
	if ev == nil || ev.Rounds != 3 {
		t.Fatalf("eviction report %+v", ev)
	}
	type key struct {
		round       int
		pod, policy string
	}
	got := map[key]sim.Eviction{}
	for _, e := range ev.Evictions {
		got[key{e.Round, e.Pod, e.Policy}] = e
	}
	if len(got) != 3 {
		t.Fatalf("evictions %+v", ev.Evictions)
	}
	var batch sim.Eviction
	for k, e := range got {
		if k.policy == "ResourceOvercommit" {
			batch = e
		}
	}
	if batch.Round != 1 || !strings.HasPrefix(batch.Pod, "jobs/batch-") || batch.Outcome != "evicted" ||
		batch.ReplacementNode != "node-c" || batch.ReplacementStatus != sim.StatusScheduled {
		t.Errorf("overcommit eviction %+v", batch)
	}
	if e, ok := got[key{1, "shop/cache-0", "NodePressure"}]; !ok || e.Scope != "memory" || e.Replacement != "shop/cache-0" || e.ReplacementNode != "node-c" {
		t.Errorf("pressure eviction of the cache %+v (all: %+v)", e, ev.Evictions)
	}
	if _, ok := got[key{2, "jobs/reports", "NodePressure"}]; !ok {
		t.Errorf("reports not evicted in round 2: %+v", ev.Evictions)
	}
	for _, e := range ev.Evictions {
		if e.Pod == "shop/db" || e.Pod == "kube-system/node-agent" || e.Pod == "shop/api" {
			t.Errorf("%s evicted: %+v", e.Pod, e)
		}
	}
	if len(ev.Taints) != 1 || ev.Taints[0].Node != "node-b" || strings.Join(ev.Taints[0].Taints, ",") != "eviction.wasmsched.io/MemoryPressure:NoSchedule" {
		t.Errorf("taints %+v", ev.Taints)
	}
	if len(ev.DryRun) == 0 || ev.DryRun[0].Policy != "UsageThreshold" {
		t.Errorf("dry run %+v", ev.DryRun)
	}
	for _, p := range []string{"jobs/reports", "shop/cache-0"} {
		ns, name, _ := strings.Cut(p, "/")
		if r := rep.Pod(ns, name); r == nil || r.Status != sim.StatusEvicted {
			t.Errorf("%s: %+v", p, r)
		}
	}
	if r := rep.Pod("shop", "db"); r == nil || r.Status != sim.StatusBound {
		t.Errorf("db: %+v", r)
	}
}

// TestExampleVPods runs examples/vpods.yaml: Knative's README policy with
// an autoscaler scale-up on one StatefulSet, MAXFILLUP_SPREAD with a
// scale-down and compaction on the other. Ties are random, so it checks
// what the rules guarantee rather than exact pods.
func TestExampleVPods(t *testing.T) {
	cfg, err := config.Load("vpods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := sim.LoadFiles("vpods-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		rep, err := sim.Run(context.Background(), objs, sim.Options{Config: cfg, Seed: seed, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if rep.VPods == nil || len(rep.VPods.Schedulers) != 2 {
			t.Fatalf("seed %d: vpod report %+v, want two schedulers", seed, rep.VPods)
		}
		perPod := map[string]int32{}
		for _, s := range rep.VPods.Schedulers {
			if s.Error != "" {
				t.Fatalf("seed %d: scheduler %s: %s", seed, s.Name, s.Error)
			}
			for _, v := range s.VPods {
				var sum int32
				for _, p := range v.Placements {
					sum += p.VReplicas
					perPod[p.PodName] += p.VReplicas
				}
				if v.Pending != 0 || sum != v.VReplicas || v.Error != "" {
					t.Errorf("seed %d: %s: %d of %d placed (pending %d, error %q): %v", seed, v.VPod, sum, v.VReplicas, v.Pending, v.Error, v.Placements)
				}
			}
		}
		for pod, n := range perPod {
			if n > 10 {
				t.Errorf("seed %d: %s holds %d vreplicas, over its capacity of 10", seed, pod, n)
			}
		}
		src, ch := rep.VPods.Schedulers[0], rep.VPods.Schedulers[1]
		// 40 vreplicas on 3 pods of 10: the autoscaler scales up by the
		// number of zones (AvailabilityZonePriority), never by less.
		if len(src.Passes) == 0 || src.Passes[0].Kind != "scale-up" || !src.Passes[0].Scaled {
			t.Errorf("seed %d: kafka-source: first autoscaler pass %+v, want a scale-up", seed, src.Passes)
		}
		if src.ReplicasAfter < 6 || src.ReplicasAfter%3 != 0 {
			t.Errorf("seed %d: kafka-source: %d replicas after, want a multiple of the 3 zones, at least 6", seed, src.ReplicasAfter)
		}
		// 13 vreplicas need 2 pods: scale 3 -> 2, then compaction moves
		// audit off pod 2.
		if ch.ReplicasBefore != 3 || ch.ReplicasAfter != 2 {
			t.Errorf("seed %d: kafka-channel: replicas %d -> %d, want 3 -> 2", seed, ch.ReplicasBefore, ch.ReplicasAfter)
		}
		compacted := false
		for _, p := range ch.Passes {
			for _, e := range p.Evictions {
				if e.VPod.String() == "shop/audit" && e.Pod == "kafka-channel-dispatcher-2" {
					compacted = true
				}
			}
		}
		if !compacted {
			t.Errorf("seed %d: kafka-channel: passes %+v, want audit evicted from pod 2", seed, ch.Passes)
		}
		for _, v := range ch.VPods {
			for _, p := range v.Placements {
				if p.PodName == "kafka-channel-dispatcher-2" {
					t.Errorf("seed %d: %s still on %s after the scale-down", seed, v.VPod, p.PodName)
				}
			}
		}
	}
}

// The eviction and vpod examples without their profiles: a configuration
// with only an eviction or a vpod section is valid, and the simulation
// stands in for the cluster's kube-scheduler with the default profile,
// so evicted pods' replacements and the adapter pods a vpod autoscaler
// adds are placed, and every vreplica with them.
func TestExamplesWithoutProfiles(t *testing.T) {
	withoutProfiles := func(t *testing.T, file string) *config.Configuration {
		t.Helper()
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		stripped := strings.Replace(string(raw), "profiles:\n- schedulerName: default-scheduler\n", "", 1)
		if stripped == string(raw) {
			t.Fatalf("%s: no profiles section to leave out", file)
		}
		cfg, err := config.Parse([]byte(stripped))
		if err != nil {
			t.Fatalf("%s without profiles: %v", file, err)
		}
		if len(cfg.Profiles) != 0 {
			t.Fatalf("%s: profiles %+v left", file, cfg.Profiles)
		}
		return cfg
	}
	run := func(t *testing.T, cfg *config.Configuration, cluster string) *sim.Report {
		t.Helper()
		objs, err := sim.LoadFiles(cluster)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := sim.Run(context.Background(), objs, sim.Options{Config: cfg, Seed: 1, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range rep.Pods {
			if p.Status == sim.StatusNotOurs {
				t.Errorf("%s/%s: %s: %s", p.Namespace, p.Name, p.Status, p.Message)
			}
		}
		return rep
	}
	t.Run("eviction", func(t *testing.T) {
		rep := run(t, withoutProfiles(t, "eviction.yaml"), "eviction-cluster.yaml")
		if rep.Eviction == nil || len(rep.Eviction.Evictions) == 0 {
			t.Fatalf("eviction report %+v", rep.Eviction)
		}
	})
	t.Run("vpods", func(t *testing.T) {
		rep := run(t, withoutProfiles(t, "vpods.yaml"), "vpods-cluster.yaml")
		if rep.VPods == nil || len(rep.VPods.Schedulers) != 2 {
			t.Fatalf("vpod report %+v", rep.VPods)
		}
		for _, s := range rep.VPods.Schedulers {
			for _, v := range s.VPods {
				if v.Pending != 0 {
					t.Errorf("%s: %s: %d pending (%s)", s.Name, v.VPod, v.Pending, v.Error)
				}
			}
		}
	})
}
