package plugin

import "github.com/wasmsched/wasmsched/abi"

// Plugin is the base of every extension point: a unique name, the one a
// profile's YAML refers to.
type Plugin interface {
	Name() string
}

// PreFilterPlugin runs once per scheduling cycle before Filter. It computes
// what Filter needs from the pod alone (store it in the CycleState) and may
// reject the pod outright (UnschedulableAndUnresolvable) or return Skip to
// have its Filter skipped for this pod.
type PreFilterPlugin interface {
	Plugin
	PreFilter(state *CycleState, pod *abi.Pod) *Status
}

// FilterPlugin says whether the pod fits on one node. It returns nil (or
// Success) when it fits, Unschedulable when preemption might make room,
// UnschedulableAndUnresolvable when nothing would, and Error on failure.
// It must only read the NodeInfo it is given: the host may pass a copy with
// nominated or preempted pods added or removed.
type FilterPlugin interface {
	Plugin
	Filter(state *CycleState, pod *abi.Pod, node *NodeInfo) *Status
}

// PreScorePlugin runs once per cycle before Score, with the nodes that
// passed filtering. Skip has its Score skipped for this pod.
type PreScorePlugin interface {
	Plugin
	PreScore(state *CycleState, pod *abi.Pod, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks one feasible node. Scores are int64; after
// NormalizeScore (if any) they must lie in [0, abi.MaxScore].
type ScorePlugin interface {
	Plugin
	Score(state *CycleState, pod *abi.Pod, node *NodeInfo) (int64, *Status)
}

// ScoreNormalizer is implemented by a ScorePlugin whose raw scores need
// rescaling once all nodes are scored. scores[i] belongs to nodes[i] of the
// Score batch; change them in place.
type ScoreNormalizer interface {
	NormalizeScore(state *CycleState, pod *abi.Pod, scores []int64) *Status
}

// Handle gives plugins cluster-wide facts the SDK's mirror keeps.
type Handle interface {
	// NumNodes is the number of nodes in the cluster.
	NumNodes() int
	// ImageNumNodes is the number of nodes that have an image under this
	// name (tag or digest), as kube-scheduler's ImageStateSummary.NumNodes.
	ImageNumNodes(name string) int
	// Nodes lists every node of the mirror (not the cycle's what-if view),
	// for plugins whose PreFilter looks across nodes (topology spread,
	// inter-pod affinity). Do not modify the slice.
	Nodes() []*NodeInfo
	// NamespaceLabels returns the labels of a namespace, for
	// namespaceSelector; false if the host sent no such namespace.
	NamespaceLabels(name string) (abi.Labels, bool)
	// NodesWithAffinityPods lists the nodes that have pods with pod
	// (anti-)affinity terms (non-empty PodsWithAffinity), so inter-pod
	// affinity's symmetric checks visit only those, not every node. Kept
	// up to date incrementally; do not modify the slice.
	NodesWithAffinityPods() []*NodeInfo
	// StringID numbers s as the mirror's string table does (ABI v1.5, see
	// abi.StrID), so a plugin can compare a value of the cycle's pod with
	// the numbered values of node records by number: abi.StrAbsent when
	// no record carries s, 0 when the handle numbers nothing (compare
	// strings then, e.g. with abi.SameString).
	StringID(s string) abi.StrID
}

// Factory builds a plugin from its args (nil when the profile gives none:
// use defaults). It returns an error naming the bad field.
type Factory func(args *abi.Value, h Handle) (Plugin, error)

// Registration names a plugin and how to build it.
type Registration struct {
	Name string
	New  Factory
	// WantsPods: the plugin reads NodeInfo.Pods (the pods on each node).
	// Without it the host may leave them out of the mirror.
	WantsPods bool
	// WantsAffinityPods: the plugin reads only the pods with pod
	// (anti-)affinity terms (NodeInfo.PodsWithAffinity and
	// PodsWithRequiredAntiAffinity); the host then sends only those, which
	// keeps node records small.
	WantsAffinityPods bool
	// AnnotationKeys are the pod annotation keys an eviction policy reads
	// (ABI v1.2): the host sends each pod's values of these keys, and of
	// no others, in PodObservation.Annotations. The manifest carries the
	// sorted union over the module's eviction policies (other plugins get
	// no observations, so their keys are left out).
	AnnotationKeys []string
}

// PreFilterExtensions is implemented by a PreFilter plugin whose cycle
// state depends on pods on nodes (spread counts, affinity matches). The
// host evaluates what-ifs — a node with nominated pods added, or with
// preemption victims removed — and tells such plugins each pod it adds to
// or removes from a node in the cycle's view, so they can update their
// state. node is the node as it is after the change. podToAdd and
// podToRemove, their strings and lists, are valid until the cycle ends
// (the SDK decodes them into storage it reuses): copy what must outlive it.
type PreFilterExtensions interface {
	AddPod(state *CycleState, podToSchedule, podToAdd *abi.Pod, node *NodeInfo) *Status
	RemovePod(state *CycleState, podToSchedule, podToRemove *abi.Pod, node *NodeInfo) *Status
}
