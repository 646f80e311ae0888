package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
)

// A VPod naming a StatefulSet no vpod scheduler has is reported as
// ignored, with why, and the others are still placed.
func TestVPodNamingNoSchedulerIsReported(t *testing.T) {
	cfg, err := config.Load("../../../examples/vpods.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := LoadFiles("../../../examples/vpods-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stray := `apiVersion: wasmsched.io/v1alpha1
kind: VPod
metadata: {name: stray, namespace: shop}
spec: {vreplicas: 3, statefulSet: knative-eventing/nope}
`
	if err := objs.Read("stray.yaml", strings.NewReader(stray)); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), objs, Options{Config: cfg, Seed: 1, NativeBuiltin: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.VPods.Ignored) != 1 || rep.VPods.Ignored[0].VPod != "shop/stray" || !strings.Contains(rep.VPods.Ignored[0].Error, `"knative-eventing/nope"`) {
		t.Fatalf("ignored %+v, want shop/stray naming its StatefulSet", rep.VPods.Ignored)
	}
	for _, s := range rep.VPods.Schedulers {
		for _, v := range s.VPods {
			if v.Pending != 0 {
				t.Errorf("%s: %d pending, want the other vpods placed", v.VPod, v.Pending)
			}
		}
	}
}
