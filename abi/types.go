package abi

// The scheduling view: the parts of Pod and Node that scheduling policies
// read, flattened into plain structs. The host converts API objects into
// this view once (when they enter its cache); guests decode it from the
// mirror. Map-like data (labels, selectors) is a slice of pairs sorted by
// key so that encodings are deterministic and lookups cheap for the handful
// of entries real objects carry.

// Label is one key/value pair of a label set or a nodeSelector.
type Label struct {
	Key, Value string
	// KeyID and ValueID number Key and Value in the mirror's string
	// table (ABI v1.5, see StrID); zero when not numbered. Plugins compare
	// through SameString or Labels.GetID, which use them when they can.
	KeyID, ValueID StrID `abi:"host"`
}

// Labels is a label set sorted by Key.
type Labels []Label

// Get returns the value of key and whether it is set.
func (ls Labels) Get(key string) (string, bool) {
	for i := range ls {
		if ls[i].Key == key {
			return ls[i].Value, true
		}
	}
	return "", false
}

// Find returns the index of key (numbered keyID, see StrID), or -1: by
// number when the labels and the key are numbered, which is the point of
// numbering them. It answers as SameString per label would, with the
// choice of comparison made once per call rather than once per label:
// this runs per node in selectors and affinity terms.
func (ls Labels) Find(key string, keyID StrID) int {
	switch keyID {
	case 0:
		for i := range ls {
			if ls[i].Key == key {
				return i
			}
		}
	case StrAbsent:
		// Not in the table: equal only to a key that is not numbered
		// either (or also looked up and absent), by text.
		for i := range ls {
			if id := ls[i].KeyID; (id == 0 || id == StrAbsent) && ls[i].Key == key {
				return i
			}
		}
	default:
		for i := range ls {
			id := ls[i].KeyID
			if id == keyID || (id == 0 && ls[i].Key == key) {
				return i
			}
		}
	}
	return -1
}

// Scalar is an extended or other named resource quantity (e.g.
// "nvidia.com/gpu", "hugepages-2Mi") in its base unit.
type Scalar struct {
	Name  string
	Value int64
}

// Resources is a resource list: CPU in millicores, memory and ephemeral
// storage in bytes, and any other resource in Scalars, sorted by Name.
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Scalars          []Scalar
}

// Well-known resource names, as in the core/v1 API.
const (
	ResourceCPU              = "cpu"
	ResourceMemory           = "memory"
	ResourceEphemeralStorage = "ephemeral-storage"
	ResourcePods             = "pods"
)

// Get returns the quantity of the named resource (cpu in millicores).
func (r *Resources) Get(name string) int64 {
	switch name {
	case ResourceCPU:
		return r.MilliCPU
	case ResourceMemory:
		return r.Memory
	case ResourceEphemeralStorage:
		return r.EphemeralStorage
	}
	for i := range r.Scalars {
		if r.Scalars[i].Name == name {
			return r.Scalars[i].Value
		}
	}
	return 0
}

// Add adds v of the named resource, keeping Scalars sorted.
func (r *Resources) Add(name string, v int64) {
	switch name {
	case ResourceCPU:
		r.MilliCPU += v
		return
	case ResourceMemory:
		r.Memory += v
		return
	case ResourceEphemeralStorage:
		r.EphemeralStorage += v
		return
	}
	i := 0
	for i < len(r.Scalars) && r.Scalars[i].Name < name {
		i++
	}
	if i < len(r.Scalars) && r.Scalars[i].Name == name {
		r.Scalars[i].Value += v
		return
	}
	r.Scalars = append(r.Scalars, Scalar{})
	copy(r.Scalars[i+1:], r.Scalars[i:])
	r.Scalars[i] = Scalar{Name: name, Value: v}
}

// AddAll adds every quantity of o to r.
func (r *Resources) AddAll(o *Resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	for _, s := range o.Scalars {
		r.Add(s.Name, s.Value)
	}
}

// SetMax raises every quantity of r to at least o's.
func (r *Resources) SetMax(o *Resources) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	for _, s := range o.Scalars {
		if cur := r.Get(s.Name); s.Value > cur {
			r.Add(s.Name, s.Value-cur)
		}
	}
}

// Protocol of a port. The zero value is TCP, as the API defaults it.
type Protocol uint8

const (
	ProtocolTCP  Protocol = 0
	ProtocolUDP  Protocol = 1
	ProtocolSCTP Protocol = 2
)

// HostPort is a port a pod binds on its node: hostIP "" means 0.0.0.0.
type HostPort struct {
	IP       string
	Protocol Protocol
	Port     int32
}

// Container is the scheduling view of a container.
type Container struct {
	Name     string
	Image    string
	Requests Resources
	// Ports lists only ports with a hostPort; others do not matter to
	// scheduling.
	Ports []HostPort
	// RestartAlways marks a sidecar: an init container with
	// restartPolicy Always, which keeps running beside the app containers.
	RestartAlways bool
	// Given says which of CPU and memory the container's requests name,
	// even as zero (ABI v1.4). kube-scheduler substitutes its scoring
	// defaults (DefaultMilliCPURequest, DefaultMemoryRequest) only for a
	// request that is missing, never for an explicit zero. A nonzero
	// request counts as given whatever the flag; so the zero value keeps
	// the pre-v1.4 reading, where zero meant missing.
	Given RequestFlags
}

// RequestFlags name which of CPU and memory a list of requests gives.
type RequestFlags uint8

const (
	// GivesCPU: the list names cpu.
	GivesCPU RequestFlags = 1 << 0
	// GivesMemory: the list names memory.
	GivesMemory RequestFlags = 1 << 1
)

// PodLevelRequests is spec.resources.requests, the pod-level resources
// (ABI v1.4), limited to what may be set there: CPU, memory and
// hugepages-* (in Requests.Scalars). Each resource it names replaces the
// sum over the containers for that resource.
type PodLevelRequests struct {
	// Given says which of CPU and memory are named (a hugepages
	// resource is named when it is in Requests.Scalars).
	Given    RequestFlags
	Requests Resources
}

// Operator of a selector requirement, shared by node selectors and label
// selectors (Gt and Lt only occur in node selectors).
type Operator uint8

const (
	OpIn           Operator = 0
	OpNotIn        Operator = 1
	OpExists       Operator = 2
	OpDoesNotExist Operator = 3
	OpGt           Operator = 4
	OpLt           Operator = 5
)

// String gives the operator's API spelling.
func (o Operator) String() string {
	switch o {
	case OpIn:
		return "In"
	case OpNotIn:
		return "NotIn"
	case OpExists:
		return "Exists"
	case OpDoesNotExist:
		return "DoesNotExist"
	case OpGt:
		return "Gt"
	case OpLt:
		return "Lt"
	}
	return "Operator(" + Itoa(int64(o)) + ")"
}

// Requirement is one match expression: key, operator, values.
type Requirement struct {
	Key      string
	Operator Operator
	Values   []string
}

// NodeSelectorTerm is ANDed expressions over node labels and fields; the
// only field kube-scheduler supports is metadata.name.
type NodeSelectorTerm struct {
	MatchExpressions []Requirement
	MatchFields      []Requirement
}

// NodeSelector is ORed terms. A nil *NodeSelector selects every node;
// a non-nil one with no terms selects none.
type NodeSelector struct {
	Terms []NodeSelectorTerm
}

// PreferredSchedulingTerm is a weighted preference for nodes.
type PreferredSchedulingTerm struct {
	Weight int32
	Term   NodeSelectorTerm
}

// NodeAffinity is the pod's required and preferred node affinity.
type NodeAffinity struct {
	Required  *NodeSelector
	Preferred []PreferredSchedulingTerm
}

// LabelSelector is a metav1.LabelSelector: matchLabels ANDed with
// matchExpressions. A nil *LabelSelector selects nothing; an empty one
// selects everything.
type LabelSelector struct {
	MatchLabels      Labels
	MatchExpressions []Requirement
}

// PodAffinityTerm selects pods (by labels and namespaces) whose nodes share
// a topology domain (the value of TopologyKey) with the candidate node.
type PodAffinityTerm struct {
	LabelSelector *LabelSelector
	// Namespaces, with NamespaceSelector nil and Namespaces empty, means
	// the pod's own namespace.
	Namespaces        []string
	NamespaceSelector *LabelSelector
	TopologyKey       string
	MatchLabelKeys    []string
	MismatchLabelKeys []string
}

// WeightedPodAffinityTerm is a preferred (scoring) affinity term.
type WeightedPodAffinityTerm struct {
	Weight int32
	Term   PodAffinityTerm
}

// PodAffinity holds required and preferred terms; it is used both for
// affinity and for anti-affinity.
type PodAffinity struct {
	Required  []PodAffinityTerm
	Preferred []WeightedPodAffinityTerm
}

// TaintEffect of a taint or toleration. EffectAll is only meaningful in a
// toleration, where an empty effect tolerates every effect.
type TaintEffect uint8

const (
	EffectAll              TaintEffect = 0
	EffectNoSchedule       TaintEffect = 1
	EffectPreferNoSchedule TaintEffect = 2
	EffectNoExecute        TaintEffect = 3
)

// String gives the effect's API spelling.
func (e TaintEffect) String() string {
	switch e {
	case EffectAll:
		return ""
	case EffectNoSchedule:
		return "NoSchedule"
	case EffectPreferNoSchedule:
		return "PreferNoSchedule"
	case EffectNoExecute:
		return "NoExecute"
	}
	return "TaintEffect(" + Itoa(int64(e)) + ")"
}

// Taint on a node.
type Taint struct {
	Key    string
	Value  string
	Effect TaintEffect
	// KeyID and ValueID number Key and Value (ABI v1.5, see StrID).
	KeyID, ValueID StrID `abi:"host"`
}

// TolerationOperator is Equal (the API's default) or Exists.
type TolerationOperator uint8

const (
	TolerationEqual  TolerationOperator = 0
	TolerationExists TolerationOperator = 1
)

// Toleration of a pod.
type Toleration struct {
	Key      string
	Operator TolerationOperator
	Value    string
	Effect   TaintEffect
	// KeyID and ValueID number Key and Value when the SDK looked them up
	// (ABI v1.5, see StrID); zero otherwise.
	KeyID, ValueID StrID `abi:"host"`
}

// ToleratesTaint reports whether t tolerates taint, with the API's rules:
// an empty effect matches all effects; an empty key matches every key;
// Exists ignores the value; Equal compares it.
func (t *Toleration) ToleratesTaint(taint *Taint) bool {
	if t.Effect != EffectAll && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && !SameString(t.Key, t.KeyID, taint.Key, taint.KeyID) {
		return false
	}
	switch t.Operator {
	case TolerationExists:
		return true
	case TolerationEqual:
		return SameString(t.Value, t.ValueID, taint.Value, taint.ValueID)
	}
	return false
}

// WhenUnsatisfiable of a topology spread constraint.
type WhenUnsatisfiable uint8

const (
	DoNotSchedule  WhenUnsatisfiable = 0
	ScheduleAnyway WhenUnsatisfiable = 1
)

// InclusionPolicy is a topology spread constraint's nodeAffinityPolicy or
// nodeTaintsPolicy. PolicyUnset lets the plugin apply its default.
type InclusionPolicy uint8

const (
	PolicyUnset  InclusionPolicy = 0
	PolicyHonor  InclusionPolicy = 1
	PolicyIgnore InclusionPolicy = 2
)

// TopologySpreadConstraint of a pod.
type TopologySpreadConstraint struct {
	MaxSkew            int32
	TopologyKey        string
	WhenUnsatisfiable  WhenUnsatisfiable
	LabelSelector      *LabelSelector
	MinDomains         int32 // 0: unset (means 1)
	NodeAffinityPolicy InclusionPolicy
	NodeTaintsPolicy   InclusionPolicy
	MatchLabelKeys     []string
}

// OwnerRef is an owner reference of a pod.
type OwnerRef struct {
	Kind       string
	Name       string
	UID        string
	Controller bool
}

// Pod is the scheduling view of a pod.
type Pod struct {
	UID       string
	Namespace string
	Name      string
	Labels    Labels
	// NamespaceID numbers Namespace (ABI v1.5, see StrID).
	NamespaceID StrID `abi:"host"`
	// NodeName is spec.nodeName: set for pods bound (or assumed) to a node.
	NodeName string
	// NominatedNodeName is status.nominatedNodeName.
	NominatedNodeName string
	// SchedulerName is spec.schedulerName: the profile that schedules it.
	SchedulerName string
	Priority      int32
	// PreemptNever is preemptionPolicy: Never.
	PreemptNever bool
	// Terminating is set when the pod has a deletionTimestamp.
	Terminating bool
	// StartTime is status.startTime in Unix nanoseconds; 0 if unset.
	StartTime int64
	// Containers and InitContainers carry each container's effective
	// requests: spec (limits defaulting requests, as the API does), or
	// for a pod whose status reports its containers' resources, what
	// kube-scheduler v1.37 counts: per resource the largest of the
	// pod's spec, actuated and allocated totals (actuated and allocated
	// alone while the resize is Infeasible), each container carrying its
	// value in the view that wins, so that PodRequests sums to it.
	Containers     []Container
	InitContainers []Container
	// PodLevel is the pod-level resources' requests (ABI v1.4); nil when
	// the pod sets none.
	PodLevel        *PodLevelRequests
	Overhead        Resources
	NodeSelector    Labels
	NodeAffinity    *NodeAffinity
	PodAffinity     *PodAffinity
	PodAntiAffinity *PodAffinity
	Tolerations     []Toleration
	TopologySpread  []TopologySpreadConstraint
	Owners          []OwnerRef
	// ControllerSelector is the combined selector of the Services,
	// ReplicationControllers, ReplicaSets and StatefulSets that select
	// this pod (their selectors ANDed), which kube-scheduler's default
	// topology spread constraints use; nil when nothing selects it. The
	// host computes it, since guests see no such objects.
	ControllerSelector *LabelSelector
	// ImageVolumes are the images of the pod's image volumes
	// (spec.volumes[].image.reference), which ImageLocality counts with
	// the containers' images; nil when it has none. Only the pod a cycle
	// schedules carries them (ABI v1.6, at the end of the cycle request):
	// the Pod encoding, and so node records and add_pod, leaves them out.
	ImageVolumes []string
	// RequiredFeatures are the node features the pod's spec needs, as
	// kube-scheduler's NodeDeclaredFeatures infers them (a restart rule
	// that restarts all containers, hostNetwork with hostUsers false, bind
	// mount options): a bit set over the host's feature registry, the same
	// numbering as Node.DeclaredFeatures, so a guest tests a subset with
	// one AND and never learns the inference rules. 0 when it needs none.
	// Only the pod a cycle schedules carries them (ABI v1.7, at the end of
	// the cycle request).
	RequiredFeatures uint64

	// The fields below are host bookkeeping for preemption. They are not
	// part of the ABI v1 Pod encoding (a v1.0 guest decoding node records
	// would be thrown off by new fields inside a list of pods); preemption
	// policies receive what they need of them in VictimCandidate records.

	// PriorityClassName is spec.priorityClassName.
	PriorityClassName string `abi:"host"`
	// PreemptedByScheduler is set while the pod carries the condition
	// DisruptionTarget=True with reason PreemptionByScheduler: a scheduler
	// has chosen it as a preemption victim and its deletion is under way.
	PreemptedByScheduler bool `abi:"host"`
	// DisruptionGuard is the KEP-3280 value copied from the pod's
	// PriorityClass (annotation AnnotationAllowDisruptionByPriority): only
	// a preemptor of at least this priority may violate the pod's
	// PodDisruptionBudgets. nil: no guarantee, any higher priority may.
	DisruptionGuard *int32 `abi:"host"`

	// The fields below are host bookkeeping for eviction (ABI v1.2):
	// policies receive them in observation records (PodObservation), and
	// the coordinator filters and kills with them.

	// QoS is status.qosClass (computed from requests and limits when the
	// status has none).
	QoS QoSClass `abi:"host"`
	// Static: a static pod (annotation kubernetes.io/config.source other
	// than "api"); Mirror: a static pod's API mirror (annotation
	// kubernetes.io/config.mirror).
	Static bool `abi:"host"`
	Mirror bool `abi:"host"`
	// Annotations are the pod's annotations, bounded (see
	// convert.MaxAnnotationValue): what eviction policies may ask for and
	// what the coordinator's skip keys test.
	Annotations Labels `abi:"host"`
	// TerminationGraceSeconds is spec.terminationGracePeriodSeconds; nil
	// if unset.
	TerminationGraceSeconds *int64 `abi:"host"`
}

// SystemCriticalPriority is the priority from which kubelet counts a pod
// as critical (scheduling.SystemCriticalPriority).
const SystemCriticalPriority = 2000000000

// Critical is kubelet's IsCriticalPod: a static or mirror pod, or one of
// system-critical priority. The eviction coordinator never evicts one.
func (p *Pod) Critical() bool {
	return p.Static || p.Mirror || p.Priority >= SystemCriticalPriority
}

// ImageState is an image present on a node: all its names (tags and
// digests) and its size in bytes.
type ImageState struct {
	Names []string
	Size  int64
	// NameIDs number Names, index for index, in an interned record (ABI
	// v1.5, see StrID); nil otherwise.
	NameIDs []StrID `abi:"host"`
}

// Node is the scheduling view of a node.
type Node struct {
	Name          string
	Labels        Labels
	Taints        []Taint
	Unschedulable bool
	Allocatable   Resources
	// AllowedPods is allocatable "pods".
	AllowedPods int64
	Images      []ImageState
	// Conditions are status.conditions (type, status, last transition):
	// host bookkeeping for eviction (ABI v1.2), sent to eviction policies
	// in observation records, not in the v1.0 Node encoding.
	Conditions []NodeCondition `abi:"host"`
	// DeclaredFeatures are the node's status.declaredFeatures that the
	// host's feature registry knows, as a bit set (see
	// Pod.RequiredFeatures); features the registry does not know are
	// dropped, as kube-scheduler drops them. Node records carry it last,
	// after the NodeInfo's pod groups (ABI v1.7).
	DeclaredFeatures uint64
}

// NodeInfo is a node with the aggregates the host keeps for it, as in
// kube-scheduler's NodeInfo: what its pods request, how many there are,
// which host ports they use, and the pods themselves.
type NodeInfo struct {
	Node Node
	// Requested is the sum of the pods' effective requests (PodRequests).
	Requested Resources
	// NonZeroRequested is the same sum where a pod that requests no CPU or
	// memory counts the defaults kube-scheduler uses for scoring
	// (DefaultMilliCPURequest, DefaultMemoryRequest).
	NonZeroRequested Resources
	// PodCount is the number of pods on the node, assumed ones included.
	PodCount int32
	// UsedPorts are the host ports of the pods on the node.
	UsedPorts []HostPort
	// Pods on the node. A host may leave this empty for modules that do
	// not ask for pods (ManifestWantsPods unset).
	Pods []Pod
	// PodGroups count the pods on the node by namespace and identical
	// label set, sorted by namespace then labels. Pods of one workload
	// share a group, so counting the pods a selector matches over a node's
	// groups costs the number of workloads there, not of pods: topology
	// spread and inter-pod affinity count per domain this way.
	PodGroups []PodGroup
}

// PodGroup is a number of pods on one node with one namespace and one
// label set.
type PodGroup struct {
	Namespace string
	Labels    Labels
	Count     int32
	// NamespaceID numbers Namespace (ABI v1.5, see StrID).
	NamespaceID StrID `abi:"host"`
	// LabelsID numbers the label set among those of the mirror's pod
	// groups: groups with equal labels, on any node, share it, so a plugin
	// can match a selector once per label set and cycle (plugin.MemoRef).
	// A reader decoding interned records into NodeLists (the guest's
	// LayOutNodeLists) assigns it; 0 when not numbered. Not on the wire.
	LabelsID uint32 `abi:"host"`
}
