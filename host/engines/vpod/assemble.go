package vpod

import "github.com/wasmsched/wasmsched/host/config"

// SettingsFrom maps one configured vpod scheduler (defaults applied,
// policy files read) onto the engine's settings; serve and simulate both
// build their engines from it.
func SettingsFrom(s config.VPodSettings) Settings {
	return Settings{
		Name: s.Name, Namespace: s.Namespace, StatefulSet: s.StatefulSet, Capacity: s.Capacity,
		Strategy: Strategy(s.Strategy), MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas, MaxScaleUpStep: s.MaxScaleUpStep,
		SchedPolicy: PolicyFrom(s.SchedPolicy), DeschedPolicy: PolicyFrom(s.DeschedPolicy),
		RefreshPeriod: s.RefreshPeriod, RetryPeriod: s.RetryPeriod,
	}
}

// PolicyFrom maps a configured policy onto the engine's, with its
// knativeCompat (Lenient) and where each entry was written; nil stays
// nil.
func PolicyFrom(p *config.VPodPolicy) *Policy {
	if p == nil {
		return nil
	}
	out := &Policy{Lenient: p.Lenient}
	entry := func(e config.VPodPolicyEntry) PolicyEntry {
		return PolicyEntry{Name: e.Name, Weight: e.Weight, Args: e.Args, File: e.File, Line: e.Line, Field: e.Field}
	}
	for _, e := range p.Predicates {
		out.Predicates = append(out.Predicates, entry(e))
	}
	for _, e := range p.Priorities {
		out.Priorities = append(out.Priorities, entry(e))
	}
	return out
}
