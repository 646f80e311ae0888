package queue

// EventResource names the kind of object a cluster event is about. The
// queue needs it to decide which parked pods an event can help: a pod
// rejected for lack of node capacity cares about nodes and deleted pods,
// not about StorageClasses.
type EventResource string

// The resources the host reports events for. Pod is a registration-only
// shorthand that matches both AssignedPod and UnscheduledPod; WildCard
// matches everything, and an incoming event whose Resource is WildCard
// moves every parked pod.
const (
	Node                  EventResource = "Node"
	Pod                   EventResource = "Pod"
	AssignedPod           EventResource = "AssignedPod"
	UnscheduledPod        EventResource = "UnscheduledPod"
	PodDisruptionBudget   EventResource = "PodDisruptionBudget"
	PersistentVolume      EventResource = "PersistentVolume"
	PersistentVolumeClaim EventResource = "PersistentVolumeClaim"
	StorageClass          EventResource = "StorageClass"
	CSINode               EventResource = "CSINode"
	WildCard              EventResource = "*"
)

// ActionType is a bitmask of what happened to the object. Updates are split
// into fine-grained bits so that a plugin can say "node taints changed" is
// interesting while "node annotations changed" is not; a registration
// matches an incoming event when their masks share a bit.
type ActionType uint64

// The actions. Update is every update bit, so a host that cannot tell what
// changed can report Update and still reach every plugin that registered a
// specific kind of update; All is Add|Delete|Update.
const (
	Add ActionType = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint
	UpdateNodeCondition
	UpdateNodeAnnotation
	UpdatePodLabel
	UpdatePodScaleDown
	UpdatePodToleration
	UpdatePodSchedulingGatesEliminated
	UpdatePodGeneratedResourceClaim
	// UpdateOther is an update none of the specific bits describes (e.g. a
	// PodDisruptionBudget spec change).
	UpdateOther
	// UpdateNodeDeclaredFeature: the node's status.declaredFeatures
	// changed.
	UpdateNodeDeclaredFeature

	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint |
		UpdateNodeCondition | UpdateNodeAnnotation | UpdatePodLabel |
		UpdatePodScaleDown | UpdatePodToleration |
		UpdatePodSchedulingGatesEliminated | UpdatePodGeneratedResourceClaim |
		UpdateOther | UpdateNodeDeclaredFeature
	All = Add | Delete | Update
)

// ClusterEvent is a change in the cluster that may make parked pods
// schedulable. The same type serves two roles: plugins register the events
// they care about (Options.PluginEvents), and the host reports the events
// that happen (MoveAllToActiveOrBackoffQueue). Label is only for logs and
// metrics.
type ClusterEvent struct {
	Resource EventResource
	Action   ActionType
	Label    string
}

// Events the queue itself raises, and two common ones, so callers and tests
// need not spell them out.
var (
	// WildCardEvent moves every parked pod: for changes the host cannot
	// describe precisely.
	WildCardEvent = ClusterEvent{Resource: WildCard, Action: All, Label: "WildCardEvent"}
	// UnschedulableTimeout is the event of the leftover flush that gives
	// up waiting for a better event after MaxInUnschedulable.
	UnschedulableTimeout = ClusterEvent{Resource: WildCard, Action: All, Label: "UnschedulableTimeout"}
	// NodeAdd is a node joining the cluster.
	NodeAdd = ClusterEvent{Resource: Node, Action: Add, Label: "NodeAdd"}
	// AssignedPodDelete is a bound pod going away, which frees capacity.
	AssignedPodDelete = ClusterEvent{Resource: AssignedPod, Action: Delete, Label: "AssignedPodDelete"}
)

// IsWildCard reports whether the event moves every parked pod regardless
// of what rejected it.
func (e ClusterEvent) IsWildCard() bool { return e.Resource == WildCard }

// String returns the label, or a description when the label is empty, for
// logs.
func (e ClusterEvent) String() string {
	if e.Label != "" {
		return e.Label
	}
	return string(e.Resource) + "/" + actionString(e.Action)
}

// Match reports whether the registration e is interested in the incoming
// event ev: same resource (Pod covering both kinds of pods, WildCard
// covering all) and at least one common action bit. An incoming wildcard
// event matches every registration.
func (e ClusterEvent) Match(ev ClusterEvent) bool {
	if ev.IsWildCard() || (e.IsWildCard() && e.Action&ev.Action != 0) {
		return true
	}
	return resourceMatch(e.Resource, ev.Resource) && e.Action&ev.Action != 0
}

func resourceMatch(reg, in EventResource) bool {
	if reg == in {
		return true
	}
	isPod := func(r EventResource) bool { return r == AssignedPod || r == UnscheduledPod }
	return (reg == Pod && isPod(in)) || (in == Pod && isPod(reg))
}

func actionString(a ActionType) string {
	switch a {
	case Add:
		return "Add"
	case Delete:
		return "Delete"
	case Update:
		return "Update"
	case All:
		return "All"
	}
	names := []string{"Add", "Delete", "UpdateNodeAllocatable", "UpdateNodeLabel",
		"UpdateNodeTaint", "UpdateNodeCondition", "UpdateNodeAnnotation",
		"UpdatePodLabel", "UpdatePodScaleDown", "UpdatePodToleration",
		"UpdatePodSchedulingGatesEliminated", "UpdatePodGeneratedResourceClaim",
		"UpdateOther", "UpdateNodeDeclaredFeature"}
	s := ""
	for i, n := range names {
		if a&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if s == "" {
		return "None"
	}
	return s
}
