package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
)

// strictVPodConfig is examples/vpods.yaml's kafka-source scheduler with
// no maxReplicas, a misspelt predicate (PodFitsResource) and a misspelt
// arg (MaxSkw), as a user wrote it; extra goes into the scheduler.
func strictVPodConfig(t *testing.T, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "vpods.yaml")
	doc := `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
vpod:
  schedulers:
  - name: kafka-source
    statefulSet: {namespace: knative-eventing, name: kafka-source-dispatcher}
    podCapacity: 10
` + extra + `    schedulerPolicy:
      predicates:
      - {name: PodFitsResource}
      - {name: NoMaxResourceCount, args: {NumPartitions: 100}}
      - {name: EvenPodSpread, args: {MaxSkw: 2}}
      priorities:
      - {name: AvailabilityZonePriority, weight: 10, args: {MaxSkew: 2}}
      - {name: LowestOrdinalPriority, weight: 2}
`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func strictVPodObjects(t *testing.T) *Objects {
	t.Helper()
	objs, err := LoadFiles("../../../examples/vpods-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Only the kafka-source scheduler is configured: drop the channel's
	// vpods, which would be reported as naming no scheduler.
	var keep []*VPodObject
	for _, v := range objs.VPods {
		if strings.HasSuffix(v.Spec.StatefulSet, "kafka-source-dispatcher") {
			keep = append(keep, v)
		}
	}
	objs.VPods = keep
	return objs
}

// A misspelt predicate or arg fails the simulation before anything is
// scheduled, each refusal with the file, line and field of the entry and
// what exists.
func TestVPodStrictPolicyRefusedAtStart(t *testing.T) {
	path := strictVPodConfig(t, "")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), strictVPodObjects(t), Options{Config: cfg, Seed: 1, NativeBuiltin: true})
	var es config.Errors
	if rep != nil || !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("report %v, error %v: want the two entries refused", rep, err)
	}
	for i, want := range []string{
		path + `:12: vpod.schedulers[0].schedulerPolicy.predicates[0]: vpod predicate "PodFitsResource": no module serves it (did you mean "PodFitsResources"?); the vpod predicates that exist: EvenPodSpread, NoMaxResourceCount, PodFitsResources`,
		path + `:14: vpod.schedulers[0].schedulerPolicy.predicates[2]: vpod predicate "EvenPodSpread": module "knative" refuses its args "{\"MaxSkw\":2}": invalid arguments: unknown field "MaxSkw"`,
	} {
		if !strings.HasPrefix(es[i].Error(), want) {
			t.Errorf("refusal %d:\n got %s\nwant %s…", i, es[i], want)
		}
	}
	if !strings.HasPrefix(err.Error(), `vpod scheduler "kafka-source": policies: `) {
		t.Errorf("error %q does not name the scheduler", err)
	}
}

// With knativeCompat: lenient the same policy runs as Knative runs it:
// the misspelt predicate is skipped, EvenPodSpread refuses every pod, and
// every vreplica stays pending. The autoscaler, which without a bound
// took the StatefulSet from 3 to 69 replicas, stops at what the vpods
// need (40 vreplicas of 10: 4 pods, 6 in whole zones) plus the step.
func TestVPodLenientAutoscalerBounded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra string
		most  int32
		least int32 // the run must reach it (the repro without a bound)
	}{
		{"default step", "    knativeCompat: lenient\n", 12, 0},
		{"step 1", "    knativeCompat: lenient\n    maxScaleUpStep: 1\n", 7, 0},
		{"no bound to speak of", "    knativeCompat: lenient\n    maxScaleUpStep: 65536\n", 100, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(strictVPodConfig(t, tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(context.Background(), strictVPodObjects(t), Options{Config: cfg, Seed: 1, NativeBuiltin: true})
			if err != nil {
				t.Fatal(err)
			}
			s := rep.VPods.Schedulers[0]
			bounded := false
			for _, p := range s.Passes {
				bounded = bounded || p.Bounded
				if p.Target > tc.most {
					t.Errorf("pass %+v scaled above %d", p, tc.most)
				}
			}
			if tc.least > 0 {
				if s.ReplicasAfter < tc.least || bounded {
					t.Fatalf("replicas %d -> %d (bounded %v), want the unbounded run past %d", s.ReplicasBefore, s.ReplicasAfter, bounded, tc.least)
				}
				return
			}
			if s.ReplicasBefore != 3 || s.ReplicasAfter > tc.most || !bounded {
				t.Fatalf("replicas %d -> %d (bounded %v), want at most %d; passes %+v", s.ReplicasBefore, s.ReplicasAfter, bounded, tc.most, s.Passes)
			}
		})
	}
}
