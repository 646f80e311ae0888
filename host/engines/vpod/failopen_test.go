package vpod

import (
	"context"
	"strings"
	"testing"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/internal/testoci"
)

// A strict policy entry whose plugin no module serves is left out, not
// refused, while a FailOpen module could not be fetched (the plugin may
// be that module's), as profiles and eviction policies do; with every
// module available it is refused.
func TestFailOpenModuleLeavesItsVPodEntriesOut(t *testing.T) {
	ctx := context.Background()
	const yaml = `apiVersion: wasmsched.io/v1alpha1
kind: WasmSchedulerConfiguration
modules:
- name: extra
  image: registry.example:5000/policies/extra@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  failStrategy: FailOpen
profiles: [{schedulerName: a}]
vpod:
  schedulers:
  - name: k
    statefulSet: {name: s}
    podCapacity: 2
    schedulerPolicy:
      predicates: [{name: ExtraPredicate}, {name: PodFitsResources}]
`
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	unreachable := testoci.Unreachable()
	reg, err := modules.Load(ctx, cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir(), Fetcher: unreachable})
	if err != nil {
		t.Fatalf("FailOpen: %v", err)
	}
	defer reg.Close(ctx)
	sets, err := cfg.VPod.Defaulted()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPolicies(ctx, reg, PolicyFrom(sets[0].SchedPolicy), nil, nil)
	if err != nil {
		t.Fatalf("with a FailOpen module unavailable: %v", err)
	}
	defer p.Close(ctx)
	if len(p.sched.preds) != 1 || p.sched.preds[0].name != "PodFitsResources" {
		t.Fatalf("bound %+v, want only PodFitsResources", p.sched.preds)
	}

	cfg.Modules = nil
	reg2, err := modules.Load(ctx, cfg, modules.Options{NativeBuiltin: true, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer reg2.Close(ctx)
	if _, err := NewPolicies(ctx, reg2, PolicyFrom(sets[0].SchedPolicy), nil, nil); err == nil ||
		!strings.Contains(err.Error(), `vpod.schedulers[0].schedulerPolicy.predicates[0]: vpod predicate "ExtraPredicate": no module serves it`) {
		t.Fatalf("every module available: %v", err)
	}
}
