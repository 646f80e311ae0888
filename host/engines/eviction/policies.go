package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/bind"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/modules"
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
	pool   *guest.Pool
	index  int       // the plugin's index in its module's manifest
	points abi.Point // the eviction points it declares
	table  int       // index of its module's observation table
}

// Name is the policy's plugin name.
func (p *Policy) Name() string { return p.Plugin }

// PolicySet is the policies of one configuration with their instance
// pools: one pool per module (one instance: rounds run one at a time),
// initialised with the args of that module's policies. A reload builds a
// new set (RebuildPolicies, keeping the pools of unchanged modules) and
// swaps it in between rounds.
type PolicySet struct {
	policies []*Policy
	pools    *bind.Pools
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
	return RebuildPolicies(ctx, specs, reg, field, nil)
}

// RebuildPolicies is BuildPolicies for a reload: where prev (the running
// set, or nil) has a pool of the same compiled module with the same args,
// the new set shares it instead of loading and initialising a new
// instance. prev stays usable and must still be closed.
func RebuildPolicies(ctx context.Context, specs []PolicySpec, reg *modules.Registry, field string, prev *PolicySet) (*PolicySet, error) {
	if len(specs) > config.MaxEvictionPolicies {
		return nil, fmt.Errorf("%s: %d policies, more than the limit of %d", field, len(specs), config.MaxEvictionPolicies)
	}
	set := &PolicySet{pools: bind.New(bind.Options{PoolSize: 1, Metrics: reg.Metrics()})}
	need := bind.Need{Points: abi.PointsEviction, Role: "an eviction policy",
		Hint: "an eviction policy implements EvictionThreshold or EvictPods"}
	var entry []int // each policy's index in set.pools
	for i, spec := range specs {
		f := fmt.Sprintf("%s[%d].plugin", field, i)
		need.Plugin = spec.Plugin
		m, idx, err := bind.Resolve(reg, "", need)
		if gone := unavailable(reg, err); gone != "" {
			// The plugin may be a FailOpen module's that could not be
			// fetched: the coordinator runs without the policy, loudly.
			reg.Log().Error("eviction policy left out: no module serves its plugin and a FailOpen module is unavailable",
				"field", f, "plugin", spec.Plugin, "unavailable", gone)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if n := len(m.Manifest.AnnotationKeys); n > MaxAnnotationKeys {
			return nil, fmt.Errorf("%s: module %q asks for %d annotation keys (annotationKeys), more than the limit of %d",
				f, m.Config.Name, n, MaxAnnotationKeys)
		}
		var args []abi.PluginArgs
		if spec.Args.Kind != abi.KindNull {
			args = append(args, abi.PluginArgs{Name: spec.Plugin, Args: spec.Args})
		}
		entry = append(entry, set.pools.Add(m, args...))
		set.policies = append(set.policies, &Policy{PolicySpec: spec, index: idx, points: m.Manifest.Plugins[idx].Points & abi.PointsEviction})
	}
	var prevPools *bind.Pools
	if prev != nil {
		prevPools = prev.pools
	}
	if err := set.pools.Load(ctx, prevPools); err != nil {
		set.Close(ctx)
		return nil, fmt.Errorf("%s: %w", field, err) // the error names the module
	}
	tables := make([]int, len(set.pools.Entries()))
	for i, e := range set.pools.Entries() {
		tables[i] = set.table(e.Module.Manifest.AnnotationKeys)
	}
	for i, p := range set.policies {
		p.pool, p.table = set.pools.Entry(entry[i]).Pool, tables[entry[i]]
	}
	return set, nil
}

// unavailable names the FailOpen modules reg runs without when err says
// no module serves a plugin, and is "" otherwise (a served plugin, another
// error, or every module available).
func unavailable(reg *modules.Registry, err error) string {
	var unserved *bind.UnservedError
	if !errors.As(err, &unserved) {
		return ""
	}
	return reg.UnavailableNames("")
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

// Close closes the set's pools (those a later set shares stay open until
// it is closed too) and its own registry.
func (s *PolicySet) Close(ctx context.Context) {
	s.pools.Close(ctx)
	if s.registry != nil {
		s.registry.Close(ctx)
		s.registry = nil
	}
}
