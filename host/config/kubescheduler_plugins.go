package config

import (
	"reflect"
	"sort"

	kubev1 "k8s.io/kube-scheduler/config/v1"
)

// kubePlugin is what wasmsched makes of one of kube-scheduler's in-tree
// plugins when a KubeSchedulerConfiguration names it.
type kubePlugin struct {
	// score: the plugin has a Score point, so its weight counts.
	score bool
	// missing, when set, says which family of plugins wasmsched lacks;
	// the plugin is refused where a file enables it and left out of
	// kube-scheduler's default set.
	missing *missingFamily
	// args is the upstream type of its pluginConfig args, nil for none.
	args reflect.Type
	// removed: kube-scheduler v1 lists the plugin as invalid (removed), so
	// it refuses a pluginConfig entry for it, not only enabling it.
	removed bool
}

// missingFamily is a group of kube-scheduler plugins wasmsched does not
// have, with what to do instead.
type missingFamily struct {
	what       string // "volume plugins"
	workaround string // for pods that need them
}

var (
	volumeFamily = &missingFamily{what: "volume plugins (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits and the cloud volume limits)",
		workaround: "schedule pods that use PersistentVolumeClaims with kube-scheduler (a schedulerName it serves and no wasmsched profile has)"}
	draFamily = &missingFamily{what: "dynamic resource allocation (DynamicResources)",
		workaround: "schedule pods with resourceClaims with kube-scheduler (a schedulerName it serves and no wasmsched profile has)"}
	gatedFamily = &missingFamily{what: "plugins behind kube-scheduler feature gates that are off by default (GangScheduling, DeferredPodScheduling, TopologyPlacementGenerator, PodGroupPodsCount: workload scheduling and deferred resizes)",
		workaround: "leave the plugin out; kube-scheduler does not enable it by default either"}
)

// Names of the in-tree plugins the conversion treats specially.
const (
	kubeSchedulingGates   = "SchedulingGates"
	kubeDefaultPreemption = "DefaultPreemption"
	kubeDynamicResources  = "DynamicResources"
)

// kubePlugins are kube-scheduler v1.37's in-tree plugins (and the cloud
// volume-limit plugins its documentation still lists). Those without
// `missing` are served by the builtin Wasm bundle or the host: the queue
// sort, the binder and preemption are host plugins; SchedulingGates is
// host behaviour (gated pods never enter the queue) that needs no entry.
var kubePlugins = map[string]kubePlugin{
	DefaultQueueSort:                  {},
	kubeSchedulingGates:               {},
	"NodeUnschedulable":               {},
	"NodeName":                        {},
	"TaintToleration":                 {score: true},
	"NodeAffinity":                    {score: true, args: reflect.TypeFor[kubev1.NodeAffinityArgs]()},
	"NodePorts":                       {},
	"NodeResourcesFit":                {score: true, args: reflect.TypeFor[kubev1.NodeResourcesFitArgs]()},
	"PodTopologySpread":               {score: true, args: reflect.TypeFor[kubev1.PodTopologySpreadArgs]()},
	"InterPodAffinity":                {score: true, args: reflect.TypeFor[kubev1.InterPodAffinityArgs]()},
	kubeDefaultPreemption:             {args: reflect.TypeFor[kubev1.DefaultPreemptionArgs]()},
	"NodeResourcesBalancedAllocation": {score: true, args: reflect.TypeFor[kubev1.NodeResourcesBalancedAllocationArgs]()},
	"ImageLocality":                   {score: true},
	"DefaultBinder":                   {},
	"NodeDeclaredFeatures":            {},

	"VolumeBinding":              {missing: volumeFamily, args: reflect.TypeFor[kubev1.VolumeBindingArgs]()},
	"VolumeRestrictions":         {missing: volumeFamily},
	"VolumeZone":                 {missing: volumeFamily},
	"NodeVolumeLimits":           {missing: volumeFamily},
	"EBSLimits":                  {missing: volumeFamily, removed: true},
	"GCEPDLimits":                {missing: volumeFamily, removed: true},
	"AzureDiskLimits":            {missing: volumeFamily, removed: true},
	"CinderLimits":               {missing: volumeFamily, removed: true},
	"DynamicResources":           {missing: draFamily, args: reflect.TypeFor[kubev1.DynamicResourcesArgs]()},
	"GangScheduling":             {missing: gatedFamily},
	"DeferredPodScheduling":      {missing: gatedFamily},
	"TopologyPlacementGenerator": {missing: gatedFamily},
	"PodGroupPodsCount":          {missing: gatedFamily, score: true},
}

// kubeDefaultsMissing are the plugins of kube-scheduler v1.37's default
// multiPoint set that wasmsched leaves out (framework.DefaultPlugins is
// the rest, with the same weights).
var kubeDefaultsMissing = []string{"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "DynamicResources"}

// KubeSchedulerPlugins lists, sorted, the kube-scheduler plugins a
// KubeSchedulerConfiguration may enable: those wasmsched serves (from the
// builtin bundle or the host) or, for SchedulingGates, always applies.
func KubeSchedulerPlugins() []string {
	var names []string
	for name, kp := range kubePlugins {
		if kp.missing == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
