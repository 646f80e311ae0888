package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// TestKubeSchedulerConfigExample runs kube-scheduler's documented
// configuration (examples/kube-scheduler-config.yaml) over the example
// cluster: its default-scheduler places every pod as wasmsched's own
// default does, its bin-packer (MostAllocated) packs, and its
// no-scoring-scheduler still filters.
func TestKubeSchedulerConfigExample(t *testing.T) {
	cfg, err := config.Load("kube-scheduler-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.FromKubeScheduler() || len(cfg.Profiles) != 3 {
		t.Fatalf("kube format %v, %d profiles", cfg.FromKubeScheduler(), len(cfg.Profiles))
	}
	if w := strings.Join(cfg.Warnings(), "\n"); strings.Count(w, "VolumeBinding") != 1 || !strings.Contains(w, "DynamicResources") {
		t.Errorf("want one warning naming the left-out volume and DRA defaults, got:\n%s", w)
	}
	// One more pod, for the profile with scoring off: only node-b1 is in
	// zone-b without a taint it would need to tolerate.
	extra := filepath.Join(t.TempDir(), "no-scoring.yaml")
	if err := os.WriteFile(extra, []byte(`apiVersion: v1
kind: Pod
metadata: {name: unscored, namespace: batch}
spec:
  schedulerName: no-scoring-scheduler
  nodeSelector: {topology.kubernetes.io/zone: zone-b}
  containers: [{name: job, image: example.com/job:1, resources: {requests: {cpu: "1", memory: 1Gi}}}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	objs, err := sim.LoadFiles("cluster.yaml", extra)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := sim.Run(context.Background(), objs, sim.Options{Config: cfg, Seed: 1, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct{ pod, profile, node, status string }{
		{"prod/legacy-db", "", "node-a2", sim.StatusBound},
		{"ml/trainer", "default-scheduler", "gpu-c1", sim.StatusScheduled},
		{"infra/log-shipper", "default-scheduler", "infra-b2", sim.StatusScheduled},
		{"web/ingress-1", "default-scheduler", "node-a1", sim.StatusScheduled},
		{"web/ingress-2", "default-scheduler", "node-a2", sim.StatusScheduled},
		{"web/ingress-3", "default-scheduler", "", sim.StatusUnschedulable},
		{"batch/too-big", "default-scheduler", "", sim.StatusUnschedulable},
		// LeastAllocated: the emptiest node.
		{"batch/spread-me", "default-scheduler", "node-b1", sim.StatusScheduled},
		// MostAllocated over cpu and memory (the intel.com resources no
		// node has do not count): node-a2, half full with legacy-db, wins
		// by far over the emptier nodes.
		{"batch/pack-me", "bin-packer", "node-a2", sim.StatusScheduled},
		{"batch/unscored", "no-scoring-scheduler", "node-b1", sim.StatusScheduled},
		{"batch/not-mine", "", "", sim.StatusNotOurs},
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
	}
}
