package vpod

import (
	"context"
	"testing"
)

// Policies rebound over the running ones keep the pool of a module they
// still use, and the changed policy is what the shared instance runs.
func TestRebindPoliciesKeepsPools(t *testing.T) {
	ctx := context.Background()
	reg := knativeRegistry(t, "native")
	old, err := NewPolicies(ctx, reg, &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(ctx)
	changed := &Policy{Predicates: []PolicyEntry{pred("PodFitsResources")}, Priorities: []PolicyEntry{prio("LowestOrdinalPriority", 2)}}
	p, err := RebindPolicies(ctx, reg, changed, nil, nil, old)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if len(p.pools) != 1 || len(old.pools) != 1 || p.pools[0].(policyPool).m != old.pools[0].(policyPool).m {
		t.Fatalf("rebound policies have pools %v, the running ones %v: want the same one", p.pools, old.pools)
	}
	if !p.loaded.Entry(0).Reused {
		t.Error("the shared pool is not marked reused")
	}
	// The old policies close; the pool stays for the new ones, whose
	// policy the instance has registered.
	old.Close(ctx)
	ms := p.sched.mods[0]
	c, err := ms.pool.get(ctx)
	if err != nil {
		t.Fatalf("the kept pool after the old policies closed: %v", err)
	}
	defer ms.pool.put(ctx, c)
	if _, err := c.EnsureVPodPolicy(ctx, ms.policy); err != nil {
		t.Fatal(err)
	}

	fresh, err := NewPolicies(ctx, reg, changed, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close(ctx)
	if fresh.pools[0].(policyPool).m == p.pools[0].(policyPool).m {
		t.Error("policies bound without prev share a pool")
	}
}
