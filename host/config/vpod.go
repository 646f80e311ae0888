package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/wasmsched/wasmsched/host/internal/yamlcheck"
)

// VPod is the vpod section: Knative Eventing-style vreplica schedulers.
// Each scheduler places the vreplicas of its vpods (Knative sources,
// `VPod` objects) onto the pods of one adapter StatefulSet, scaling the
// StatefulSet as needed. A nil VPod (no `vpod:` section) runs none.
// Defaulted gives the settings the engine runs with.
type VPod struct {
	Schedulers []VPodScheduler `json:"schedulers,omitempty"`
}

// VPodScheduler configures one vpod scheduler (one adapter StatefulSet).
// Pointers tell "not written" from an explicit zero, so `podCapacity: 0`
// is refused instead of being mistaken for "unset".
type VPodScheduler struct {
	// Name names the scheduler in logs and metrics; unique.
	Name string `json:"name"`
	// StatefulSet is the adapter StatefulSet whose pods take vreplicas.
	StatefulSet VPodStatefulSet `json:"statefulSet"`
	// PodCapacity is how many vreplicas one adapter pod holds (Knative's
	// PodCapacity); required, at least 1.
	PodCapacity *int32 `json:"podCapacity,omitempty"`
	// Strategy is Policy, MAXFILLUP or MAXFILLUP_SPREAD; the default is
	// Policy when a scheduler policy is given, else MAXFILLUP.
	Strategy VPodStrategy `json:"strategy,omitempty"`
	// MinReplicas is the fewest pods MAXFILLUP_SPREAD spreads a vpod
	// over and the fewest StatefulSet replicas its autoscaler keeps
	// (Knative HEAD's MinReplicas); only that strategy takes it.
	MinReplicas *int32 `json:"minReplicas,omitempty"`
	// MaxReplicas is the most replicas the autoscaler scales the
	// StatefulSet to (default DefaultVPodMaxReplicas, or minReplicas if
	// higher; at most MaxVPodMaxReplicas, at least minReplicas): a
	// backstop against a runaway scale-up. Vreplicas that do not fit stay
	// pending (logged).
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// RefreshPeriod is the time between the autoscaler's scale-down (and
	// compaction) passes; RetryPeriod the wait before retrying a failed
	// pass. Defaults: DefaultVPodRefreshPeriod, DefaultVPodRetryPeriod.
	RefreshPeriod *Duration `json:"refreshPeriod,omitempty"`
	RetryPeriod   *Duration `json:"retryPeriod,omitempty"`
	// SchedulerPolicy is Knative's config-scheduler written in YAML; the
	// Policy strategy needs it (or SchedulerPolicyFile).
	SchedulerPolicy *VPodPolicyConfig `json:"schedulerPolicy,omitempty"`
	// DeschedulerPolicy is Knative's config-descheduler in YAML: how the
	// Policy strategy picks the pod to take a vreplica off when a vpod
	// scales down. Without one, a scale-down replaces the vpod's
	// vreplicas from scratch, as Knative does.
	DeschedulerPolicy *VPodPolicyConfig `json:"deschedulerPolicy,omitempty"`
	// SchedulerPolicyFile and DeschedulerPolicyFile name a file holding
	// the policy instead: Knative's ConfigMap unchanged (YAML or JSON) or
	// a bare JSON {"predicates": [...], "priorities": [...]} (see
	// ParseKnativePolicy). Relative paths are relative to the
	// configuration file's directory (the working directory for Parse).
	// The files are read when the configuration is loaded.
	SchedulerPolicyFile   string `json:"schedulerPolicyFile,omitempty"`
	DeschedulerPolicyFile string `json:"deschedulerPolicyFile,omitempty"`
	// KnativeCompat says how strictly the policies are bound to the
	// modules: strict (the default) refuses, when the scheduler is built,
	// a predicate or priority no module serves as that kind and an entry
	// whose args its plugin refuses, naming the entry and the plugins
	// that exist; lenient logs and skips unknown plugins and keeps
	// entries with refused args (their predicate refuses every pod, their
	// priority fails scoring), as Knative v1.16.0 does, for policies that
	// rely on it. Only strategy Policy takes it.
	KnativeCompat VPodKnativeCompat `json:"knativeCompat,omitempty"`
	// MaxScaleUpStep bounds each autoscaler pass: it adds at most this
	// many replicas, and never scales the StatefulSet above what the
	// vpods need (⌈Σ vreplicas / podCapacity⌉, rounded up to the scale
	// factor) plus this many. The default is what the vpods need (at
	// least the scale factor), so autoscaling never goes past twice the
	// need however the policy behaves; maxReplicas still caps it.
	MaxScaleUpStep *int32 `json:"maxScaleUpStep,omitempty"`
	// Sources say where serve finds the vpods; default [{kind: VPod}].
	Sources []VPodSourceConfig `json:"sources,omitempty"`

	// schedFile and deschedFile are the policy files as read at load,
	// with their resolved paths (nil when no file is named).
	schedFile, deschedFile *policyFile
	// at is where the configuration was read from, so inline policy
	// entries carry their file and line (nil when built in code).
	at *sourceAt
}

// sourceAt is the configuration's file and its field lines.
type sourceAt struct {
	file  string
	lines yamlcheck.Lines
}

// VPodKnativeCompat is how strictly a vpod scheduler binds its policies.
type VPodKnativeCompat string

const (
	// VPodKnativeStrict refuses unknown plugins and refused args at load.
	VPodKnativeStrict VPodKnativeCompat = "strict"
	// VPodKnativeLenient logs and skips them, as Knative v1.16.0 does.
	VPodKnativeLenient VPodKnativeCompat = "lenient"
)

// VPodStatefulSet names the adapter StatefulSet.
type VPodStatefulSet struct {
	// Namespace defaults to DefaultVPodNamespace ("default"), as for
	// every namespaced object the configuration names.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// VPodStrategy names how a scheduler places vreplicas.
type VPodStrategy string

const (
	// VPodStrategyPolicy runs the scheduler policy's predicates and
	// priorities one vreplica at a time (Knative Eventing v1.16.0).
	VPodStrategyPolicy VPodStrategy = "Policy"
	// VPodStrategyMaxFillUp fills existing placements, then pods in
	// ordinal order (Knative v1.16.0's MAXFILLUP).
	VPodStrategyMaxFillUp VPodStrategy = "MAXFILLUP"
	// VPodStrategyMaxFillUpSpread is Knative HEAD's MAXFILLUP: round-robin
	// over candidate pods with MinReplicas.
	VPodStrategyMaxFillUpSpread VPodStrategy = "MAXFILLUP_SPREAD"
)

// VPodPolicyConfig is a Knative scheduler or descheduler policy written
// in YAML: the same entries as config-scheduler's JSON, keys in lower
// case.
type VPodPolicyConfig struct {
	Predicates []VPodPluginConfig `json:"predicates,omitempty"`
	Priorities []VPodPluginConfig `json:"priorities,omitempty"`
}

// VPodPluginConfig is one predicate or priority of a VPodPolicyConfig.
type VPodPluginConfig struct {
	// Name names a plugin a module serves as a predicate or priority
	// (as listed); another name is refused when the scheduler is built,
	// or logged and skipped with knativeCompat: lenient, as Knative does.
	Name string `json:"name"`
	// Weight multiplies a priority's score; required for priorities
	// (write 0 explicitly to run one without effect: Knative's implicit
	// 0 silently disables a priority), refused on predicates. Knative's
	// documented 0..10 range is not enforced (Knative does not either).
	Weight *int64 `json:"weight,omitempty"`
	// Args is an object, converted to the compact JSON string Knative
	// carries, or a string used as-is (Knative's own encoding).
	Args json.RawMessage `json:"args,omitempty"`
}

// VPodSourceConfig is one place vpods come from: the VPod custom resource
// (`kind: VPod`) or, duck-typed, any resource with a vreplica count and a
// placements list at the given paths (a KafkaSource's spec.consumers and
// status.placements, say).
type VPodSourceConfig struct {
	// Kind "VPod" selects the vpods.wasmsched.io CRD, whose
	// spec.statefulSet names the scheduler's StatefulSet.
	Kind string `json:"kind,omitempty"`
	// Group (empty for the core group), Version and Resource name a
	// duck-typed resource.
	Group    string `json:"group,omitempty"`
	Version  string `json:"version,omitempty"`
	Resource string `json:"resource,omitempty"`
	// VReplicasPath and PlacementsPath are dotted field paths into the
	// duck-typed objects ("spec.consumers", "status.placements").
	VReplicasPath  string `json:"vreplicasPath,omitempty"`
	PlacementsPath string `json:"placementsPath,omitempty"`
}

// HasVPod reports whether the configuration runs any vpod scheduler, so
// the builtin knative bundle is loaded.
func (c *Configuration) HasVPod() bool { return c.VPod != nil && len(c.VPod.Schedulers) > 0 }

// VPodSchedulerField is the field path of scheduler i, for errors found
// after Load ("vpod.schedulers[1].schedulerPolicy.priorities[0].name: no
// module serves ..."): pass it, with a suffix, to Configuration.ErrorAt.
func VPodSchedulerField(i int) string { return fmt.Sprintf("vpod.schedulers[%d]", i) }

// Bounds of the vpod settings. They keep the engine's int32 arithmetic
// (capacity × pods, Σ vreplicas) far from overflow and catch a unit
// mistake before it scales a StatefulSet to thousands of pods.
const (
	MaxVPodCapacity    = 1 << 20
	MaxVPodMinReplicas = 10000
	// MaxVPodMaxReplicas is the highest maxReplicas: the engine keeps
	// free capacity for ordinals 0..65535 only.
	MaxVPodMaxReplicas   = 1 << 16
	MaxVPodRefreshPeriod = 24 * time.Hour
	MaxVPodRetryPeriod   = time.Hour
	// MinVPodRefreshPeriod and MinVPodRetryPeriod keep the autoscaler
	// from running its passes (each reads the scale, may evict) in a
	// tight loop.
	MinVPodRefreshPeriod = time.Second
	MinVPodRetryPeriod   = 100 * time.Millisecond
)

// Bounds of what a vpod may ask for, checked where vpods are read
// (simulate's documents, serve's sources, the engine's Schedule) so that
// an absurd count is refused with its field named instead of attempted.
const (
	// MaxVPodVReplicas is the most vreplicas one vpod may want (its
	// spec.vreplicas, or a duck-typed source's count), and the most its
	// placements may hold in all: a Kafka topic has at most a few
	// thousand partitions, so no source has use for more consumers.
	MaxVPodVReplicas = 100000
	// MaxVPodPlacements is the most placements one vpod may list: one
	// per adapter pod, and a StatefulSet has at most MaxVPodMaxReplicas.
	MaxVPodPlacements = MaxVPodMaxReplicas
	// MaxVPodSkew and MaxVPodPartitions bound the MaxSkew and
	// NumPartitions args of Knative's plugins: a spread or a partition
	// count beyond what any vpod may want means no limit at all.
	MaxVPodSkew       = MaxVPodVReplicas
	MaxVPodPartitions = MaxVPodVReplicas
)

// checkVPod validates the vpod section (nil is fine), reporting through
// add with field paths under "vpod". Policy files are read later, at load
// (see withVPodPolicyFiles): this check needs no file system.
func checkVPod(v *VPod, add func(field, format string, a ...any)) {
	if v == nil {
		return
	}
	names := map[string]int{}
	sets := map[string]int{}
	ducks := map[string]string{} // group/resource -> the field that took it
	for i := range v.Schedulers {
		s := &v.Schedulers[i]
		f := VPodSchedulerField(i)
		if s.Name == "" {
			add(f+".name", "must not be empty")
		} else if j, dup := names[s.Name]; dup {
			add(f+".name", "duplicate %q (also schedulers[%d])", s.Name, j)
		} else {
			names[s.Name] = i
		}
		checkVPodStatefulSet(s, i, sets, add)
		switch c := s.PodCapacity; {
		case c == nil:
			add(f+".podCapacity", "required: how many vreplicas one adapter pod holds (at least 1)")
		case *c < 1:
			add(f+".podCapacity", "must be at least 1, not %d: a pod with no capacity can hold no vreplica", *c)
		case *c > MaxVPodCapacity:
			add(f+".podCapacity", "must be at most %d, not %d", MaxVPodCapacity, *c)
		}
		checkVPodStrategy(s, f, add)
		checkVPodMaxReplicas(s, f, add)
		checkVPodCompat(s, f, add)
		checkVPodPeriod(s.RefreshPeriod, f+".refreshPeriod", MinVPodRefreshPeriod, MaxVPodRefreshPeriod, add)
		checkVPodPeriod(s.RetryPeriod, f+".retryPeriod", MinVPodRetryPeriod, MaxVPodRetryPeriod, add)
		if s.SchedulerPolicy != nil {
			checkVPodPolicyConfig(s.SchedulerPolicy, f+".schedulerPolicy", add)
		}
		if s.DeschedulerPolicy != nil {
			checkVPodPolicyConfig(s.DeschedulerPolicy, f+".deschedulerPolicy", add)
		}
		checkVPodSources(s.Sources, f+".sources", ducks, add)
	}
}

func checkVPodStatefulSet(s *VPodScheduler, i int, sets map[string]int, add func(string, string, ...any)) {
	f := VPodSchedulerField(i) + ".statefulSet"
	ns, name := s.StatefulSet.Namespace, s.StatefulSet.Name
	if ns != "" {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			add(f+".namespace", "%q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
		}
	} else {
		ns = DefaultVPodNamespace
	}
	if name == "" {
		add(f+".name", "must name the adapter StatefulSet")
		return
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		add(f+".name", "%q is not a StatefulSet name: %s", name, strings.Join(msgs, "; "))
		return
	}
	// Two schedulers scaling one StatefulSet would undo each other's
	// replica counts and placements.
	key := ns + "/" + name
	if j, dup := sets[key]; dup {
		add(f+".name", "StatefulSet %s is already scheduled by schedulers[%d]", key, j)
		return
	}
	sets[key] = i
}

// checkVPodStrategy checks the strategy and the settings that depend on
// it: which policies and minReplicas it takes.
func checkVPodStrategy(s *VPodScheduler, f string, add func(string, string, ...any)) {
	hasSched := s.SchedulerPolicy != nil || s.SchedulerPolicyFile != ""
	strategy := s.effectiveStrategy()
	switch strategy {
	case VPodStrategyPolicy, VPodStrategyMaxFillUp, VPodStrategyMaxFillUpSpread:
	default:
		add(f+".strategy", "must be %s, %s or %s, not %q", VPodStrategyPolicy, VPodStrategyMaxFillUp, VPodStrategyMaxFillUpSpread, strategy)
		strategy = "" // the checks below would only repeat it
	}
	if s.SchedulerPolicy != nil && s.SchedulerPolicyFile != "" {
		add(f+".schedulerPolicyFile", "give schedulerPolicy or schedulerPolicyFile, not both")
	}
	if s.DeschedulerPolicy != nil && s.DeschedulerPolicyFile != "" {
		add(f+".deschedulerPolicyFile", "give deschedulerPolicy or deschedulerPolicyFile, not both")
	}
	how := string(strategy)
	if s.Strategy == "" {
		how += " (the default without a schedulerPolicy)"
	}
	if strategy == VPodStrategyPolicy && !hasSched {
		add(f+".schedulerPolicy", "strategy Policy needs a schedulerPolicy or a schedulerPolicyFile")
	}
	if strategy != "" && strategy != VPodStrategyPolicy {
		for _, p := range []struct {
			field string
			set   bool
		}{
			{"schedulerPolicy", s.SchedulerPolicy != nil}, {"schedulerPolicyFile", s.SchedulerPolicyFile != ""},
			{"deschedulerPolicy", s.DeschedulerPolicy != nil}, {"deschedulerPolicyFile", s.DeschedulerPolicyFile != ""},
		} {
			if p.set {
				add(f+"."+p.field, "only strategy Policy uses a policy, and the strategy is %s", how)
			}
		}
	}
	if m := s.MinReplicas; m != nil {
		switch {
		case strategy != "" && strategy != VPodStrategyMaxFillUpSpread:
			add(f+".minReplicas", "only strategy MAXFILLUP_SPREAD takes it, and the strategy is %s", how)
		case *m < 0:
			add(f+".minReplicas", "must be at least 0, not %d", *m)
		case *m > MaxVPodMinReplicas:
			add(f+".minReplicas", "must be at most %d, not %d", MaxVPodMinReplicas, *m)
		}
	}
}

// checkVPodMaxReplicas bounds maxReplicas: at least 1 and minReplicas
// (the autoscaler keeps minReplicas), at most MaxVPodMaxReplicas.
func checkVPodMaxReplicas(s *VPodScheduler, f string, add func(string, string, ...any)) {
	m := s.MaxReplicas
	if m == nil {
		return // the default is at least minReplicas
	}
	switch {
	case *m < 1:
		add(f+".maxReplicas", "must be at least 1, not %d", *m)
	case *m > MaxVPodMaxReplicas:
		add(f+".maxReplicas", "%d exceeds the limit %d", *m, MaxVPodMaxReplicas)
	case s.MinReplicas != nil && *s.MinReplicas > *m:
		add(f+".maxReplicas", "must be at least minReplicas (%d), not %d", *s.MinReplicas, *m)
	}
}

// checkVPodCompat checks knativeCompat and maxScaleUpStep.
func checkVPodCompat(s *VPodScheduler, f string, add func(string, string, ...any)) {
	switch s.KnativeCompat {
	case "", VPodKnativeStrict, VPodKnativeLenient:
		if s.KnativeCompat != "" && s.effectiveStrategy() != VPodStrategyPolicy {
			add(f+".knativeCompat", "only strategy Policy binds policies, and the strategy is %s", s.effectiveStrategy())
		}
	default:
		add(f+".knativeCompat", "must be %q or %q, not %q", VPodKnativeStrict, VPodKnativeLenient, s.KnativeCompat)
	}
	if m := s.MaxScaleUpStep; m != nil {
		switch {
		case *m < 1:
			add(f+".maxScaleUpStep", "must be at least 1, not %d", *m)
		case *m > MaxVPodMaxReplicas:
			add(f+".maxScaleUpStep", "%d exceeds the limit %d", *m, MaxVPodMaxReplicas)
		}
	}
}

// checkVPodPeriod refuses a period outside lo..hi; 0 and below keep the
// message of every other duration field.
func checkVPodPeriod(d *Duration, field string, lo, hi time.Duration, add func(string, string, ...any)) {
	if d != nil && d.Duration > 0 && d.Duration < lo {
		add(field, "%s is below the minimum %s", d.Duration, lo)
		return
	}
	checkDurationRange(d, field, time.Nanosecond, hi, add)
}

// effectiveStrategy is the strategy written, else the default.
func (s *VPodScheduler) effectiveStrategy() VPodStrategy {
	switch {
	case s.Strategy != "":
		return s.Strategy
	case s.SchedulerPolicy != nil || s.SchedulerPolicyFile != "":
		return VPodStrategyPolicy
	}
	return VPodStrategyMaxFillUp
}

func checkVPodPolicyConfig(p *VPodPolicyConfig, f string, add func(string, string, ...any)) {
	for i, e := range p.Predicates {
		ef := fmt.Sprintf("%s.predicates[%d]", f, i)
		if e.Name == "" {
			add(ef+".name", "must name a plugin")
		}
		if e.Weight != nil {
			add(ef+".weight", "only priorities have weights")
		}
		checkVPodArgs(e, ef, add)
	}
	for i, e := range p.Priorities {
		ef := fmt.Sprintf("%s.priorities[%d]", f, i)
		if e.Name == "" {
			add(ef+".name", "must name a plugin")
		}
		switch {
		case e.Weight == nil:
			add(ef+".weight", "required for a priority (0 runs it without effect)")
		case *e.Weight < 0:
			add(ef+".weight", "must be at least 0, not %d", *e.Weight)
		}
		checkVPodArgs(e, ef, add)
	}
}

// checkVPodArgs checks an entry's args: their shape, and the bound of a
// Knative plugin's sizing arg (MaxSkew, NumPartitions).
func checkVPodArgs(e VPodPluginConfig, ef string, add func(string, string, ...any)) {
	args, err := knativeArgs(e.Args)
	if err != nil {
		add(ef+".args", "%v", err)
		return
	}
	if arg, msg := checkKnativeArgBound(e.Name, args); msg != "" {
		add(ef+".args."+arg, "%s", msg)
	}
}

func checkVPodSources(srcs []VPodSourceConfig, f string, ducks map[string]string, add func(string, string, ...any)) {
	if srcs != nil && len(srcs) == 0 {
		add(f, "must list at least one source (leave it out for [{kind: %s}])", VPodSourceKind)
		return
	}
	seen := map[string]int{}
	for i, s := range srcs {
		sf := fmt.Sprintf("%s[%d]", f, i)
		if s == (VPodSourceConfig{}) {
			add(sf, "empty: give kind: %s, or group, version, resource, vreplicasPath and placementsPath", VPodSourceKind)
			continue
		}
		if s.Kind != "" {
			checkKindSource(s, sf, add)
		} else {
			checkDuckSource(s, sf, add)
		}
		key := "kind " + s.Kind
		if s.Kind == "" {
			key = s.Group + "/" + s.Resource // one resource, whatever the version
		}
		if j, dup := seen[key]; dup {
			add(sf, "duplicate source (also sources[%d])", j)
			continue
		}
		seen[key] = i
		// Two schedulers on one duck-typed resource would both place every
		// object of it, each overwriting the other's placements. (VPod
		// objects name their StatefulSet, so schedulers share that kind.)
		if s.Kind == "" && s.Resource != "" {
			if other, dup := ducks[key]; dup {
				add(sf+".resource", "%s is already a source of %s", groupResource(s), other)
			} else {
				ducks[key] = sf
			}
		}
	}
}

func checkKindSource(s VPodSourceConfig, sf string, add func(string, string, ...any)) {
	if s.Kind != VPodSourceKind {
		add(sf+".kind", "must be %q (the %s.%s CRD), not %q; a duck-typed source gives group, version and resource instead", VPodSourceKind, VPodCRDResource, VPodCRDGroup, s.Kind)
	}
	for _, x := range []struct{ field, value string }{
		{"group", s.Group}, {"version", s.Version}, {"resource", s.Resource},
		{"vreplicasPath", s.VReplicasPath}, {"placementsPath", s.PlacementsPath},
	} {
		if x.value != "" {
			add(sf+"."+x.field, "kind and %s are exclusive: give kind alone, or a duck-typed group, version and resource", x.field)
		}
	}
}

func checkDuckSource(s VPodSourceConfig, sf string, add func(string, string, ...any)) {
	if s.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(s.Group); len(msgs) > 0 {
			add(sf+".group", "%q is not an API group: %s", s.Group, strings.Join(msgs, "; "))
		}
	}
	if s.Version == "" {
		add(sf+".version", "must name the API version (e.g. v1beta1)")
	} else if msgs := validation.IsDNS1035Label(s.Version); len(msgs) > 0 {
		add(sf+".version", "%q is not an API version: %s", s.Version, strings.Join(msgs, "; "))
	}
	if s.Resource == "" {
		add(sf+".resource", "must name the resource, in the plural (e.g. kafkasources)")
	} else if msgs := validation.IsDNS1035Label(s.Resource); len(msgs) > 0 {
		add(sf+".resource", "%q is not a resource name (lower-case plural, e.g. kafkasources): %s", s.Resource, strings.Join(msgs, "; "))
	}
	checkFieldPath(s.VReplicasPath, sf+".vreplicasPath", "spec.consumers", add)
	checkFieldPath(s.PlacementsPath, sf+".placementsPath", "status.placements", add)
	if s.VReplicasPath != "" && s.VReplicasPath == s.PlacementsPath {
		add(sf+".placementsPath", "must differ from vreplicasPath")
	}
}

func groupResource(s VPodSourceConfig) string {
	if s.Group == "" {
		return s.Resource
	}
	return s.Resource + "." + s.Group
}

// checkFieldPath checks a dotted path of JSON field names: non-empty
// segments of letters, digits, '_' and '-', no leading dot (not JSONPath).
func checkFieldPath(p, field, example string, add func(string, string, ...any)) {
	if p == "" {
		add(field, "must give the dotted field path (e.g. %s)", example)
		return
	}
	if strings.HasPrefix(p, ".") || strings.HasPrefix(p, "{") || strings.HasPrefix(p, "$") {
		add(field, "%q: write a plain dotted path such as %s, not JSONPath", p, example)
		return
	}
	for i, seg := range strings.Split(p, ".") {
		if seg == "" {
			add(field, "%q has an empty segment (at %d)", p, i)
			return
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				add(field, "%q: segment %q may hold only letters, digits, '_' and '-'", p, seg)
				return
			}
		}
	}
}
