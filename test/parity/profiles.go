package parity

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// scorePlugins are the default profile's score plugins with their
// default weights.
var scorePlugins = []struct {
	name   string
	weight int
}{
	{"TaintToleration", 3}, {"NodeAffinity", 2}, {"NodeResourcesFit", 1}, {"PodTopologySpread", 2},
	{"InterPodAffinity", 2}, {"NodeResourcesBalancedAllocation", 1}, {"ImageLocality", 1},
}

// filterPlugins are default filter plugins a profile may turn off.
var filterPlugins = []string{"TaintToleration", "NodeAffinity", "NodePorts", "PodTopologySpread", "InterPodAffinity", "NodeUnschedulable"}

// profilesCase: a cluster with rules of every family at random (as
// "mixed"), one or two pending pods, and a KubeSchedulerConfiguration v1
// whose single profile changes the scoring strategy, turns plugins off,
// changes weights and sets plugin args.
func (g *gen) profilesCase() {
	g.mixed()
	g.startTimes() // preemption may run: its victims must not tie on start
	if g.chance(0.4) {
		g.c.More = append(g.c.More, g.pod("pending-1", corev1.NamespaceDefault))
		g.c.More[0].Spec.TopologySpreadConstraints = nil
	}
	prof := map[string]any{}
	var pluginConfig []any
	plugins := map[string]any{}

	// NodeResourcesFit's scoring strategy.
	res := []any{map[string]any{"name": "cpu", "weight": g.between(1, 5)}, map[string]any{"name": "memory", "weight": g.between(1, 5)}}
	if g.chance(0.3) {
		res = append(res, map[string]any{"name": string(resourceGPU), "weight": g.between(1, 5)})
	}
	strategy := map[string]any{"resources": res}
	switch g.r.IntN(4) {
	case 0:
		strategy["type"] = "LeastAllocated"
	case 1:
		strategy["type"] = "MostAllocated"
	case 2:
		strategy["type"] = "RequestedToCapacityRatio"
		var shape []any
		util := 0
		for i := g.between(1, 4); i > 0 && util <= 100; i-- {
			shape = append(shape, map[string]any{"utilization": util, "score": g.between(0, 10)})
			util += g.between(1, 60)
		}
		strategy["requestedToCapacityRatio"] = map[string]any{"shape": shape}
	default:
		strategy = nil // the default (LeastAllocated, cpu and memory at 1)
	}
	if strategy != nil {
		pluginConfig = append(pluginConfig, args("NodeResourcesFit", map[string]any{"scoringStrategy": strategy}))
	}

	// PodTopologySpread's default constraints.
	switch g.r.IntN(3) {
	case 0:
		var cs []any
		keys := []string{labelZone, labelHostname}
		g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		for _, key := range keys[:g.between(0, 2)] { // one constraint per key: upstream refuses duplicates
			cs = append(cs, map[string]any{
				"maxSkew":           g.between(1, 3),
				"topologyKey":       key,
				"whenUnsatisfiable": pick(g, []string{"DoNotSchedule", "ScheduleAnyway"}),
			})
		}
		a := map[string]any{"defaultingType": "List"}
		if cs != nil {
			a["defaultConstraints"] = cs
		}
		pluginConfig = append(pluginConfig, args("PodTopologySpread", a))
	case 1:
		pluginConfig = append(pluginConfig, args("PodTopologySpread", map[string]any{"defaultingType": "System"}))
	}
	if g.chance(0.5) {
		pluginConfig = append(pluginConfig, args("InterPodAffinity", map[string]any{"hardPodAffinityWeight": g.between(0, 100)}))
	}
	if g.chance(0.4) {
		added := map[string]any{}
		if g.chance(0.6) {
			added["requiredDuringSchedulingIgnoredDuringExecution"] = map[string]any{
				"nodeSelectorTerms": []any{g.nodeSelectorTerm()},
			}
		}
		if g.chance(0.6) {
			added["preferredDuringSchedulingIgnoredDuringExecution"] = []any{map[string]any{
				"weight": g.between(1, 100), "preference": g.nodeSelectorTerm()}}
		}
		pluginConfig = append(pluginConfig, args("NodeAffinity", map[string]any{"addedAffinity": added}))
	}
	if g.chance(0.3) {
		pluginConfig = append(pluginConfig, args("NodeResourcesBalancedAllocation", map[string]any{
			"resources": []any{map[string]any{"name": "cpu", "weight": 1}, map[string]any{"name": "memory", "weight": 1}}}))
	}

	// Weights and disabled plugins.
	var scoreEnabled, scoreDisabled, multiDisabled, filterDisabled []any
	for _, sp := range scorePlugins {
		switch g.r.IntN(6) {
		case 0:
			scoreDisabled = append(scoreDisabled, map[string]any{"name": sp.name})
		case 1:
			multiDisabled = append(multiDisabled, map[string]any{"name": sp.name})
		case 2:
			scoreEnabled = append(scoreEnabled, map[string]any{"name": sp.name, "weight": g.between(1, 10)})
		}
	}
	if g.chance(0.3) {
		filterDisabled = append(filterDisabled, map[string]any{"name": pick(g, filterPlugins)})
	}
	if scoreEnabled != nil || scoreDisabled != nil {
		score := map[string]any{}
		if scoreEnabled != nil {
			score["enabled"] = scoreEnabled
		}
		if scoreDisabled != nil {
			score["disabled"] = scoreDisabled
		}
		plugins["score"] = score
	}
	if multiDisabled != nil {
		plugins["multiPoint"] = map[string]any{"disabled": multiDisabled}
	}
	if filterDisabled != nil {
		plugins["filter"] = map[string]any{"disabled": filterDisabled}
	}
	if len(plugins) > 0 {
		prof["plugins"] = plugins
	}
	if pluginConfig != nil {
		prof["pluginConfig"] = pluginConfig
	}
	if g.chance(0.3) {
		prof["schedulerName"] = "default-scheduler"
	}
	doc := map[string]any{
		"apiVersion":               "kubescheduler.config.k8s.io/v1",
		"kind":                     "KubeSchedulerConfiguration",
		"percentageOfNodesToScore": 100,
		"profiles":                 []any{prof},
	}
	y, err := yaml.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("generator: configuration of case %d: %v", g.c.Seed, err))
	}
	g.c.Config = y
}

// args is one pluginConfig entry.
func args(plugin string, a map[string]any) map[string]any {
	a["apiVersion"] = "kubescheduler.config.k8s.io/v1"
	a["kind"] = plugin + "Args"
	return map[string]any{"name": plugin, "args": a}
}
