package vpod

import "github.com/wasmsched/wasmsched/host/config"

// SettingsFrom maps one configured vpod scheduler (defaults applied,
// policy files read) onto the engine's settings; serve and simulate both
// build their engines from it.
func SettingsFrom(s config.VPodSettings) Settings {
	return Settings{
		Name: s.Name, Namespace: s.Namespace, StatefulSet: s.StatefulSet, Capacity: s.Capacity,
		Strategy: Strategy(s.Strategy), MinReplicas: s.MinReplicas, MaxReplicas: s.MaxReplicas,
		SchedPolicy: PolicyFrom(s.SchedPolicy), DeschedPolicy: PolicyFrom(s.DeschedPolicy),
		RefreshPeriod: s.RefreshPeriod, RetryPeriod: s.RetryPeriod,
	}
}

// PolicyFrom maps a configured policy onto the engine's; nil stays nil.
func PolicyFrom(p *config.VPodPolicy) *Policy {
	if p == nil {
		return nil
	}
	out := &Policy{}
	for _, e := range p.Predicates {
		out.Predicates = append(out.Predicates, PolicyEntry{Name: e.Name, Weight: e.Weight, Args: e.Args})
	}
	for _, e := range p.Priorities {
		out.Priorities = append(out.Priorities, PolicyEntry{Name: e.Name, Weight: e.Weight, Args: e.Args})
	}
	return out
}
