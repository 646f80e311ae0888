package plugintest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// Placement is where simulate put one pod, or why it could not.
type Placement struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Profile   string `json:"profile,omitempty"`
	// Node is empty when the pod was not placed.
	Node string `json:"node,omitempty"`
	// Status is Scheduled, Bound, Unschedulable, SchedulerError, NotOurs,
	// Preempted or Evicted.
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Simulation is the outcome of Simulate, pods in manifest order, then
// what the other engines did: preemptions, eviction rounds, vpod
// placements (each empty when the configuration does not run it).
type Simulation struct {
	Pods        []Placement  `json:"pods"`
	Preemptions []Preemption `json:"preemptions,omitempty"`
	Eviction    *EvictionRun `json:"eviction,omitempty"`
	VPods       *VPodRun     `json:"vpods,omitempty"`
}

// Preemption is one victim a preemptor displaced ("namespace/name").
type Preemption struct {
	Preemptor string `json:"preemptor"`
	Victim    string `json:"victim"`
	Node      string `json:"node"`
	// How is "delete" or "evict" (through the Eviction API).
	How string `json:"how"`
}

// EvictionRun is what the eviction coordinator did over the simulated
// rounds.
type EvictionRun struct {
	Rounds    int        `json:"rounds"`
	Evictions []Eviction `json:"evictions"`
	// DryRun lists what dry-run policies would have evicted.
	DryRun []Eviction `json:"dryRun"`
}

// Eviction is one pod a policy evicted ("namespace/name").
type Eviction struct {
	Round  int    `json:"round"`
	Pod    string `json:"pod"`
	Node   string `json:"node"`
	Policy string `json:"policy"`
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
}

// VPodRun is what each vpod scheduler placed.
type VPodRun struct {
	Schedulers []VPodScheduler `json:"schedulers"`
}

// VPodScheduler is one vpod scheduler's outcome.
type VPodScheduler struct {
	Name        string       `json:"name"`
	StatefulSet string       `json:"statefulSet"`
	VPods       []VPodResult `json:"vpods"`
}

// VPodResult is where one vpod's vreplicas went.
type VPodResult struct {
	// VPod is "namespace/name".
	VPod       string          `json:"vpod"`
	VReplicas  int32           `json:"vreplicas"`
	Placements []VPodPlacement `json:"placements"`
	Pending    int32           `json:"pending"`
}

// VPodPlacement is a vpod's vreplicas on one adapter pod.
type VPodPlacement struct {
	PodName   string `json:"podName"`
	VReplicas int32  `json:"vreplicas"`
}

// VPod returns the outcome of vpod namespace/name under any scheduler, or
// nil.
func (s *Simulation) VPod(namespace, name string) *VPodResult {
	if s.VPods == nil {
		return nil
	}
	for i := range s.VPods.Schedulers {
		vs := s.VPods.Schedulers[i].VPods
		for j := range vs {
			if vs[j].VPod == namespace+"/"+name {
				return &vs[j]
			}
		}
	}
	return nil
}

// Pod returns the placement of namespace/name, or nil.
func (s *Simulation) Pod(namespace, name string) *Placement {
	for i := range s.Pods {
		if s.Pods[i].Namespace == namespace && s.Pods[i].Name == name {
			return &s.Pods[i]
		}
	}
	return nil
}

// BinaryEnv names the environment variable that points Simulate at a
// wasmsched binary; without it Simulate looks for "wasmsched" on PATH.
const BinaryEnv = "WASMSCHED"

// Simulate runs `wasmsched simulate -o json --config config manifests...`
// and returns the placements: the real host (queue, cycle, sandbox) loads
// the modules the config names — typically the .wasm this project builds —
// and schedules the manifests' pods with them. Paths are as the wasmsched
// binary sees them (relative to the test's working directory, the
// package directory under `go test`).
//
// The test is skipped, saying why, when no wasmsched binary is found, and
// fails when simulate fails (a bad config, a module that does not load).
func Simulate(tb testing.TB, config string, manifests ...string) *Simulation {
	tb.Helper()
	bin := os.Getenv(BinaryEnv)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("wasmsched"); err != nil {
			tb.Skipf("no wasmsched binary: put it on PATH or set %s to its path", BinaryEnv)
		}
	}
	args := append([]string{"simulate", "-o", "json", "--config", config}, manifests...)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			tb.Fatalf("%s %v: %v\n%s", bin, args, err, stderr.String())
		}
		tb.Fatalf("run %s: %v", bin, err)
	}
	var sim Simulation
	if err := json.Unmarshal(stdout.Bytes(), &sim); err != nil {
		tb.Fatalf("%s %v: reading its JSON report: %v", bin, args, err)
	}
	return &sim
}
