package eviction

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// SettingsFrom takes the coordinator's settings from the configuration's
// eviction section (defaults applied).
func SettingsFrom(s config.EvictionSettings) Settings {
	return Settings{
		SyncPeriod: s.SyncPeriod, Burst: s.Burst, Rate: s.Rate, RateBurst: s.RateBurst,
		SkipAnnotations: s.SkipAnnotations, SkipLabels: s.SkipLabels,
		ConditionTransitionPeriod: s.ConditionTransitionPeriod,
	}
}

// PoliciesFrom binds the configuration's eviction policies to the
// modules of reg. An empty section gives an empty set.
func PoliciesFrom(ctx context.Context, cfg *config.Configuration, reg *modules.Registry) (*PolicySet, error) {
	return policiesFrom(ctx, cfg, reg, nil)
}

// policiesFrom is PoliciesFrom sharing prev's pools (see RebuildPolicies).
func policiesFrom(ctx context.Context, cfg *config.Configuration, reg *modules.Registry, prev *PolicySet) (*PolicySet, error) {
	s := cfg.Eviction.Defaulted()
	specs := make([]PolicySpec, len(s.Policies))
	for i := range s.Policies {
		p := &s.Policies[i]
		args, err := p.ArgsValue()
		if err != nil {
			return nil, cfg.ErrorAt(config.EvictionPolicyField(i)+".args", "%v", err)
		}
		specs[i] = PolicySpec{Plugin: p.Plugin, Args: args, DryRun: p.DryRun, Force: p.Force}
	}
	set, err := RebuildPolicies(ctx, specs, reg, "eviction.policies", prev)
	if err != nil {
		if at := cfg.Position("eviction.policies"); at != "" {
			return nil, fmt.Errorf("%s: %w", at, err)
		}
		return nil, err
	}
	return set, nil
}

// KillerOptionsFrom takes the killer's mode and timeout floor from the
// configuration (defaults applied); the caller adds the rest.
func KillerOptionsFrom(s config.EvictionSettings) KillerOptions {
	mode := ModeEviction
	if s.Killer == config.KillerDelete {
		mode = ModeDelete
	}
	return KillerOptions{Mode: mode, TimeoutFloor: s.KillTimeoutMin}
}

// LoadPolicies binds the configuration's eviction policies to modules
// loaded for them alone (opts.Previous shares the scheduler's compiled
// code): the set owns that registry and closes it with itself, so it
// stays usable whatever a reload does to the scheduler's registry.
func LoadPolicies(ctx context.Context, cfg *config.Configuration, opts modules.Options) (*PolicySet, error) {
	return ReloadPolicies(ctx, cfg, opts, nil)
}

// ReloadPolicies is LoadPolicies for a reload: the new set shares the
// pools of prev (the running set, or nil) whose module, args and size
// are unchanged (see RebuildPolicies), when opts.Previous chains the
// registries so that an unchanged module keeps its compiled code. prev
// stays usable and must still be closed.
func ReloadPolicies(ctx context.Context, cfg *config.Configuration, opts modules.Options, prev *PolicySet) (*PolicySet, error) {
	if len(cfg.Eviction.Defaulted().Policies) == 0 {
		return &PolicySet{}, nil
	}
	reg, err := modules.Load(ctx, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("eviction: %w", err)
	}
	set, err := policiesFrom(ctx, cfg, reg, prev)
	if err != nil {
		reg.Close(ctx)
		return nil, fmt.Errorf("eviction: %w", err)
	}
	set.registry = reg
	return set, nil
}
