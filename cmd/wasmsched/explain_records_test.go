package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/run/sim"
)

// --explain POD shows the eviction rounds that named the pod, and
// --explain vpod:NS/NAME the vpod's placement steps; -o json carries
// both records.
func TestSimulateExplainEvictionAndVPod(t *testing.T) {
	out, err := simulate(t, "../../examples/eviction-cluster.yaml", "--config", "../../examples/eviction.yaml", "--explain", "jobs/reports")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"EVICTION jobs/reports, round 2: evicted", "evicted on node-b by NodePressure (memory)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = simulate(t, "../../examples/vpods-cluster.yaml", "--config", "../../examples/vpods.yaml", "--explain", "vpod:shop/orders", "--explain-top", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"EXPLAIN vpod shop/orders (scheduler kafka-source", "STEP 0 (place): ", "AvailabilityZonePriority×10", "placements: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "EXPLAIN vpod shop/payments") || strings.Contains(out, "EXPLAIN shop/") {
		t.Errorf("explained what was not asked for:\n%s", out)
	}
	out, err = simulate(t, "-o", "json", "../../examples/vpods-cluster.yaml", "--config", "../../examples/vpods.yaml", "--explain", "vpod:shop/orders")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep sim.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.VPodExplanations) == 0 || rep.VPodExplanations[0].VPod != "shop/orders" || len(rep.VPodExplanations[0].Steps) == 0 {
		t.Fatalf("json vpod records: %+v", rep.VPodExplanations)
	}
	if _, err := simulate(t, "../../examples/cluster.yaml", "--explain", "vpod:"); err == nil || !strings.Contains(err.Error(), "vpod:NAMESPACE/NAME") {
		t.Errorf("bad vpod flag: %v", err)
	}
}
