package config

import (
	"fmt"
	"time"
)

// Defaults of the vpod settings.
const (
	// DefaultVPodNamespace is the StatefulSet's namespace when none is
	// written: Kubernetes' default namespace, where the rest of wasmsched
	// (simulate, the usage model) puts objects that name none. Knative's
	// adapters live in knative-eventing: write it.
	DefaultVPodNamespace = "default"
	// DefaultVPodRefreshPeriod is the autoscaler's scale-down (and
	// compaction) period. Knative has no default (its callers set one);
	// half a minute frees idle adapter pods soon without scaling on every
	// short dip.
	DefaultVPodRefreshPeriod = 30 * time.Second
	// DefaultVPodRetryPeriod is the wait before retrying a failed
	// autoscaler pass, Knative's 1s.
	DefaultVPodRetryPeriod = time.Second
	// DefaultVPodMaxReplicas is the autoscaler's ceiling when maxReplicas
	// is not written: room for 100 × podCapacity vreplicas, more than
	// Knative's adapters usually run, while a runaway scale-up stops at
	// a size a cluster survives.
	DefaultVPodMaxReplicas = 100
)

// The VPod custom resource, the default source: spec.vreplicas,
// spec.statefulSet (the scheduler's StatefulSet, by name) and
// status.placements.
const (
	VPodSourceKind          = "VPod"
	VPodCRDGroup            = "wasmsched.io"
	VPodCRDVersion          = "v1alpha1"
	VPodCRDResource         = "vpods"
	VPodCRDVReplicasPath    = "spec.vreplicas"
	VPodCRDPlacementsPath   = "status.placements"
	VPodCRDStatefulSetField = "spec.statefulSet"
)

// VPodSettings is one vpod scheduler with every default applied and its
// policies resolved: what the engine (host/engines/vpod.Settings) and serve run
// with.
type VPodSettings struct {
	Name string
	// Namespace and StatefulSet name the adapter StatefulSet.
	Namespace, StatefulSet string
	Capacity               int32
	Strategy               VPodStrategy
	// MinReplicas is 0 unless the strategy is MAXFILLUP_SPREAD.
	MinReplicas int32
	// MaxReplicas is the autoscaler's ceiling (DefaultVPodMaxReplicas,
	// or MinReplicas if higher, unless written).
	MaxReplicas int32
	// MaxScaleUpStep bounds each autoscaler pass (see
	// VPodScheduler.MaxScaleUpStep); 0 derives it from the vpods' need.
	MaxScaleUpStep int32
	// KnativeCompat is VPodKnativeStrict unless lenient was written; the
	// policies carry it too (VPodPolicy.Lenient).
	KnativeCompat              VPodKnativeCompat
	RefreshPeriod, RetryPeriod time.Duration
	// SchedPolicy and DeschedPolicy are nil when not configured; Args
	// are in Knative's encoding (see VPodPolicyEntry).
	SchedPolicy, DeschedPolicy *VPodPolicy
	// SchedPolicyFile and DeschedPolicyFile are the paths the policies
	// were read from (resolved against the configuration's directory),
	// "" for inline or absent policies: for logs.
	SchedPolicyFile, DeschedPolicyFile string
	// Sources are never empty: [{Kind: VPod}] by default.
	Sources []VPodSource
}

// VPodSource is a source with the VPod CRD's coordinates filled in, so
// serve reads every source the same way (dynamic client, paths) and
// additionally selects VPod objects by spec.statefulSet when Kind is
// VPodSourceKind.
type VPodSource struct {
	// Kind is VPodSourceKind for the CRD, "" for a duck-typed resource.
	Kind                     string
	Group, Version, Resource string
	// VReplicasPath and PlacementsPath are dotted paths of non-empty
	// segments (strings.Split(p, ".") gives the fields).
	VReplicasPath, PlacementsPath string
}

// Defaulted returns each scheduler's settings, in configuration order,
// with defaults for everything unset and the policies converted to
// Knative's encoding. Policy files were read when the configuration was
// loaded (Load, Parse); a file named in a configuration built in code is
// read now, relative to the working directory. A nil VPod gives none.
// The error is an Errors naming the fields, only for what Validate
// would refuse or a policy file that cannot be read.
func (v *VPod) Defaulted() ([]VPodSettings, error) {
	if v == nil {
		return nil, nil
	}
	out := make([]VPodSettings, 0, len(v.Schedulers))
	var errs Errors
	for i := range v.Schedulers {
		s, err := v.Schedulers[i].defaulted(VPodSchedulerField(i))
		if err != nil {
			errs = append(errs, err...)
			continue
		}
		out = append(out, s)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

func (s *VPodScheduler) defaulted(f string) (VPodSettings, Errors) {
	out := VPodSettings{
		Name:          s.Name,
		Namespace:     s.StatefulSet.Namespace,
		StatefulSet:   s.StatefulSet.Name,
		Strategy:      s.effectiveStrategy(),
		MaxReplicas:   DefaultVPodMaxReplicas,
		KnativeCompat: VPodKnativeStrict,
		RefreshPeriod: DefaultVPodRefreshPeriod,
		RetryPeriod:   DefaultVPodRetryPeriod,
	}
	if s.KnativeCompat != "" {
		out.KnativeCompat = s.KnativeCompat
	}
	if s.MaxScaleUpStep != nil {
		out.MaxScaleUpStep = *s.MaxScaleUpStep
	}
	if out.Namespace == "" {
		out.Namespace = DefaultVPodNamespace
	}
	if s.PodCapacity != nil {
		out.Capacity = *s.PodCapacity
	}
	if s.MinReplicas != nil {
		out.MinReplicas = *s.MinReplicas
	}
	out.MaxReplicas = max(out.MaxReplicas, out.MinReplicas)
	if s.MaxReplicas != nil {
		out.MaxReplicas = *s.MaxReplicas
	}
	if s.RefreshPeriod != nil {
		out.RefreshPeriod = s.RefreshPeriod.Duration
	}
	if s.RetryPeriod != nil {
		out.RetryPeriod = s.RetryPeriod.Duration
	}
	var errs Errors
	var err *Error
	out.SchedPolicy, out.SchedPolicyFile, err = resolvePolicy(s.SchedulerPolicy, s.SchedulerPolicyFile, s.schedFile, f+".schedulerPolicy", ".", s.at)
	if err != nil {
		errs = append(errs, err)
	}
	out.DeschedPolicy, out.DeschedPolicyFile, err = resolvePolicy(s.DeschedulerPolicy, s.DeschedulerPolicyFile, s.deschedFile, f+".deschedulerPolicy", ".", s.at)
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range []*VPodPolicy{out.SchedPolicy, out.DeschedPolicy} {
		if p != nil {
			p.Lenient = out.KnativeCompat == VPodKnativeLenient
		}
	}
	out.Sources = defaultedSources(s.Sources)
	return out, errs
}

// resolvePolicy gives the policy of an inline section or a file (already
// read at load, else read now relative to dir).
func resolvePolicy(inline *VPodPolicyConfig, file string, read *policyFile, field, dir string, at *sourceAt) (*VPodPolicy, string, *Error) {
	switch {
	case inline != nil && file != "":
		return nil, "", &Error{Field: field + "File", Msg: fmt.Sprintf("give %s or %sFile, not both", lastField(field), lastField(field))}
	case inline != nil:
		p, err := inline.knative(field, at)
		return p, "", err
	case file == "":
		return nil, "", nil
	case read == nil || read.name != file:
		var err *Error
		if read, err = readPolicyFile(dir, file, field+"File"); err != nil {
			return nil, "", err
		}
	}
	return read.policy.clone(), read.path, nil
}

func lastField(f string) string {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i] == '.' {
			return f[i+1:]
		}
	}
	return f
}

func defaultedSources(srcs []VPodSourceConfig) []VPodSource {
	if len(srcs) == 0 {
		srcs = []VPodSourceConfig{{Kind: VPodSourceKind}}
	}
	out := make([]VPodSource, len(srcs))
	for i, s := range srcs {
		if s.Kind != "" {
			out[i] = VPodSource{Kind: s.Kind, Group: VPodCRDGroup, Version: VPodCRDVersion, Resource: VPodCRDResource,
				VReplicasPath: VPodCRDVReplicasPath, PlacementsPath: VPodCRDPlacementsPath}
			continue
		}
		out[i] = VPodSource{Group: s.Group, Version: s.Version, Resource: s.Resource, VReplicasPath: s.VReplicasPath, PlacementsPath: s.PlacementsPath}
	}
	return out
}
