package eviction

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/modules"
	"github.com/wasmsched/wasmsched/host/policy"
)

// MaxAnnotationKeys bounds the annotation keys an eviction module's
// manifest may ask for (annotationKeys): each is looked up in every pod's
// record for every observation, and the guest's copy of a pod's
// annotations holds at most these.
const MaxAnnotationKeys = 64

// PolicySpec is one configured eviction policy: a plugin some module
// serves, its args, and how the coordinator treats its answers.
type PolicySpec struct {
	Plugin string
	// Args are the plugin's args (kind null: its defaults).
	Args abi.Value
	// DryRun: evaluate and count, never evict or taint.
	DryRun bool
	// Force: victims the Eviction API refuses for a PodDisruptionBudget
	// (429) are deleted after the Retry-After wait.
	Force bool
}

// Policy is a PolicySpec bound to the module serving it.
type Policy struct {
	PolicySpec
	pool   *policy.Module
	index  int       // the plugin's index in its module's manifest
	points abi.Point // the eviction points it declares
	table  int       // index of its module's observation table
}

// Name is the policy's plugin name.
func (p *Policy) Name() string { return p.Plugin }

// PolicySet is the policies of one configuration with their instance
// pools: one pool per module (one instance: rounds run one at a time),
// initialised with the args of that module's policies. A reload builds a
// new set and swaps it in between rounds.
type PolicySet struct {
	policies []*Policy
	pools    []*policy.Module
	// keys are the annotation keys of each observation table: modules
	// asking for the same keys share one table.
	keys [][]string
	// registry, if set, is the set's own (LoadPolicies), closed with it.
	registry *modules.Registry
}

// Policies lists the set's policies in configuration order.
func (s *PolicySet) Policies() []*Policy { return s.policies }

// BuildPolicies binds specs to the modules of reg. field names the
// configuration list in errors (e.g. "eviction.policies").
func BuildPolicies(ctx context.Context, specs []PolicySpec, reg *modules.Registry, field string) (*PolicySet, error) {
	if len(specs) > config.MaxEvictionPolicies {
		return nil, fmt.Errorf("%s: %d policies, more than the limit of %d", field, len(specs), config.MaxEvictionPolicies)
	}
	set := &PolicySet{}
	byModule := map[*modules.Module][]*Policy{}
	var order []*modules.Module
	for i, spec := range specs {
		f := fmt.Sprintf("%s[%d].plugin", field, i)
		m := reg.PluginModule(spec.Plugin)
		if m == nil {
			return nil, fmt.Errorf("%s: no module serves plugin %q (modules serve: %s)", f, spec.Plugin, strings.Join(reg.PluginNames(), ", "))
		}
		idx := m.Manifest.Plugin(spec.Plugin)
		pts := m.Manifest.Plugins[idx].Points & abi.PointsEviction
		if pts == 0 {
			return nil, fmt.Errorf("%s: plugin %q of module %q is not an eviction policy (it implements %s; an eviction policy implements EvictionThreshold or EvictPods)",
				f, spec.Plugin, m.Config.Name, m.Manifest.Plugins[idx].Points)
		}
		if n := len(m.Manifest.AnnotationKeys); n > MaxAnnotationKeys {
			return nil, fmt.Errorf("%s: module %q asks for %d annotation keys (annotationKeys), more than the limit of %d",
				f, m.Config.Name, n, MaxAnnotationKeys)
		}
		p := &Policy{PolicySpec: spec, index: idx, points: pts}
		if _, seen := byModule[m]; !seen {
			order = append(order, m)
		}
		byModule[m] = append(byModule[m], p)
		set.policies = append(set.policies, p)
	}
	for _, m := range order {
		var args []abi.PluginArgs
		for _, p := range byModule[m] {
			if p.Args.Kind != abi.KindNull {
				args = append(args, abi.PluginArgs{Name: p.Plugin, Args: p.Args})
			}
		}
		pool, err := policy.Load(ctx, m.Backend, policy.Config{Name: m.Config.Name, Args: args, PoolSize: 1, Metrics: reg.Metrics(),
			Collects: m.Collects()})
		if err != nil {
			set.Close(ctx)
			return nil, fmt.Errorf("%s: %w", field, err) // the error names the module
		}
		set.pools = append(set.pools, pool)
		table := set.table(m.Manifest.AnnotationKeys)
		for _, p := range byModule[m] {
			p.pool, p.table = pool, table
		}
	}
	return set, nil
}

// table returns the index of the observation table for these annotation
// keys (sorted and made distinct first: the guests' copy of a pod's
// annotations is sorted by key), adding one if no module asked for the
// same keys yet.
func (s *PolicySet) table(keys []string) int {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	for i, k := range s.keys {
		if strings.Join(k, "\x00") == strings.Join(keys, "\x00") {
			return i
		}
	}
	s.keys = append(s.keys, keys)
	return len(s.keys) - 1
}

// Close closes the set's pools (and its own registry).
func (s *PolicySet) Close(ctx context.Context) {
	for _, p := range s.pools {
		p.Close(ctx)
	}
	s.pools = nil
	if s.registry != nil {
		s.registry.Close(ctx)
		s.registry = nil
	}
}
