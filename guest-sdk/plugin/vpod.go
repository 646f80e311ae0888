package plugin

import "github.com/wasmsched/wasmsched/abi"

// Vpod policies (ABI v1.3): Knative Eventing-style predicates and
// priorities. The host's vpod engine places a vpod's vreplicas one at a
// time onto the pods of an adapter StatefulSet (and takes them off one at
// a time when it scales down); at every step it asks the policy's
// predicates which pods may take one more vreplica and its priorities how
// good each is.
//
// A vpod plugin is configured per policy entry, not per module: one
// policy may name the same plugin twice with different args, and two
// schedulers may use different policies. So the plugin parses an entry's
// raw args once (NewVPodFilter, NewVPodScorer) into a function bound to
// them, and the SDK calls that function once per step with every
// candidate pod. Args the plugin refuses make the entry "invalid", as
// Knative's "invalid arguments": the SDK then refuses every pod for a
// predicate (Unschedulable, "invalid arguments") and fails every
// candidate's score for a priority, without calling the plugin again.
//
// A plugin may implement both interfaces (Knative's EvenPodSpread is a
// predicate and a priority under one name); the host says which one an
// entry uses.

// VPodPredicatePlugin is a vpod predicate (abi.PointVPodPredicate).
type VPodPredicatePlugin interface {
	Plugin
	// NewVPodFilter parses one policy entry's raw args (the JSON value as
	// configured; nil when the entry has none) and returns the filter
	// that entry runs at every step. An error marks the entry invalid;
	// its message reaches the host's log.
	NewVPodFilter(args []byte) (VPodFilter, error)
}

// ArgsIgnoredError is what a vpod plugin that takes no args returns,
// together with its filter or scorer, when a policy entry gives it some
// (see IgnoredArgs): Knative ignores such args and so does the entry,
// which stays valid, but the host is told (abi.ArgsIgnored), so a strict
// policy can refuse what would otherwise be silently dropped.
type ArgsIgnoredError struct {
	// Plugin is the plugin's name.
	Plugin string
}

func (e *ArgsIgnoredError) Error() string {
	return abi.ArgsIgnored + e.Plugin + " takes no args"
}

// IgnoredArgs is the error a plugin that takes no args returns for args:
// nil when there are none (absent, blank or JSON null), else an
// *ArgsIgnoredError naming plugin.
func IgnoredArgs(plugin string, args []byte) error {
	i, j := 0, len(args)
	for i < j && isSpace(args[i]) {
		i++
	}
	for j > i && isSpace(args[j-1]) {
		j--
	}
	if b := args[i:j]; len(b) == 0 || string(b) == "null" {
		return nil
	}
	return &ArgsIgnoredError{Plugin: plugin}
}

// VPodPriorityPlugin is a vpod priority (abi.PointVPodPriority).
type VPodPriorityPlugin interface {
	Plugin
	// NewVPodScorer parses one policy entry's raw args, as
	// NewVPodFilter, and returns the scorer that entry runs at every step.
	NewVPodScorer(args []byte) (VPodScorer, error)
}

// VPodFilter judges the candidate pods of one step: pods[i] is a pod
// index of s (0 ≤ pods[i] < s.NumPods()), and the filter sets
// verdicts[i] (nil on entry) to a non-nil status for a pod that may not
// take one more vreplica: Unschedulable as Knative's predicates answer,
// UnschedulableAndUnresolvable, or Error when it cannot decide. pods
// holds only the candidates every earlier predicate of the policy passed.
// Return shared, package-level statuses: a step may cover many pods.
type VPodFilter func(s *VPodState, pods []int, verdicts []*Status)

// VPodScorer scores the candidate pods of one step that passed the
// module's predicates: it sets scores[i] (0 on entry) for pods[i].
// Scores are signed and higher is better; the host multiplies them by the
// entry's weight and sums in int64 (Knative's "MaxUint64 − penalty"
// becomes −penalty). An error fails the step's scoring for all of pods,
// as a Knative scorer's non-success status aborts scoring.
type VPodScorer func(s *VPodState, pods []int, scores []int64) error

// VPodState is the read-only view of one step: the topology (the
// schedulable adapter pods, their nodes and zones), the free capacity of
// every pod, and the stepped vpod's spread over pods, nodes and zones.
// Pods, nodes and zones are named by their index in the topology; an
// index out of range reads as zero values. The SDK reuses the view from
// one step to the next: do not keep it past the call that received it.
type VPodState struct {
	topo *abi.VPodTopology
	step *abi.VPodStep

	podSpread, nodeSpread, zoneSpread []int32 // dense; 0 where absent
	podHas, nodeHas, zoneHas          []bool
}

// NewVPodState checks a step against its topology and returns the view a
// plugin reads (see Load).
func NewVPodState(t *abi.VPodTopology, s *abi.VPodStep) (*VPodState, error) {
	v := &VPodState{}
	if err := v.Load(t, s); err != nil {
		return nil, err
	}
	return v, nil
}

// Load makes v the view of step s over topology t, reusing v's memory.
// It refuses a step whose indexes do not fit the topology: a free
// capacity per topology pod, spread entries in range and in strictly
// ascending index (one per pod, node or zone). Candidates are not part
// of the view and are checked by the caller. t and s must not change
// while v is in use.
func (v *VPodState) Load(t *abi.VPodTopology, s *abi.VPodStep) error {
	v.topo, v.step = nil, nil
	for _, p := range t.Pods {
		if uint64(p.Node) >= uint64(len(t.Nodes)) {
			return vpodError("topology: a pod's node index is out of range")
		}
	}
	for _, n := range t.Nodes {
		if uint64(n.Zone) >= uint64(len(t.Zones)) {
			return vpodError("topology: a node's zone index is out of range")
		}
	}
	if len(s.Free) != len(t.Pods) {
		return vpodError("step: " + abi.Itoa(int64(len(s.Free))) + " free capacities for " + abi.Itoa(int64(len(t.Pods))) + " topology pods")
	}
	var err error
	if v.podSpread, v.podHas, err = denseSpread(v.podSpread, v.podHas, s.PodSpread, len(t.Pods), "pod"); err != nil {
		return err
	}
	if v.nodeSpread, v.nodeHas, err = denseSpread(v.nodeSpread, v.nodeHas, s.NodeSpread, len(t.Nodes), "node"); err != nil {
		return err
	}
	if v.zoneSpread, v.zoneHas, err = denseSpread(v.zoneSpread, v.zoneHas, s.ZoneSpread, len(t.Zones), "zone"); err != nil {
		return err
	}
	v.topo, v.step = t, s
	return nil
}

// denseSpread spreads sparse counts over n slots, reusing vals and has.
func denseSpread(vals []int32, has []bool, counts []abi.VPodCount, n int, what string) ([]int32, []bool, error) {
	if cap(vals) < n {
		vals, has = make([]int32, n), make([]bool, n)
	}
	vals, has = vals[:n], has[:n]
	clear(vals)
	clear(has)
	for i, c := range counts {
		if uint64(c.Index) >= uint64(n) {
			return vals, has, vpodError("step: " + what + " spread index " + abi.Itoa(int64(c.Index)) + " is out of range (" + abi.Itoa(int64(n)) + " " + what + "s)")
		}
		if i > 0 && c.Index <= counts[i-1].Index {
			return vals, has, vpodError("step: " + what + " spread indexes are not strictly ascending")
		}
		vals[c.Index], has[c.Index] = c.VReplicas, true
	}
	return vals, has, nil
}

// Namespace is the stepped vpod's namespace.
func (v *VPodState) Namespace() string { return v.step.Namespace }

// Name is the stepped vpod's name.
func (v *VPodState) Name() string { return v.step.Name }

// VReplicas is the stepped vpod's desired vreplica count.
func (v *VPodState) VReplicas() int32 { return v.step.VReplicas }

// StatefulSet names the adapter StatefulSet.
func (v *VPodState) StatefulSet() string { return v.topo.StatefulSet }

// Capacity is the number of vreplicas one adapter pod holds.
func (v *VPodState) Capacity() int32 { return v.topo.Capacity }

// Replicas is the StatefulSet's scale (spec.replicas), which may differ
// from NumPods (pods missing, pending or unschedulable).
func (v *VPodState) Replicas() int32 { return v.topo.Replicas }

// NumPods is the number of schedulable adapter pods; pod indexes run
// from 0 to NumPods()-1 in ascending ordinal.
func (v *VPodState) NumPods() int { return len(v.topo.Pods) }

// Ordinal is a pod's StatefulSet ordinal.
func (v *VPodState) Ordinal(pod int) int32 {
	if uint(pod) >= uint(len(v.topo.Pods)) {
		return 0
	}
	return v.topo.Pods[pod].Ordinal
}

// PodNode is the index of a pod's node.
func (v *VPodState) PodNode(pod int) int {
	if uint(pod) >= uint(len(v.topo.Pods)) {
		return 0
	}
	return int(v.topo.Pods[pod].Node)
}

// PodZone is the index of a pod's zone (its node's).
func (v *VPodState) PodZone(pod int) int { return v.NodeZone(v.PodNode(pod)) }

// Free is a pod's free capacity: Capacity minus the vreplicas of every
// vpod placed or reserved there. It may be negative (overcommitted).
func (v *VPodState) Free(pod int) int32 {
	if uint(pod) >= uint(len(v.step.Free)) {
		return 0
	}
	return v.step.Free[pod]
}

// FreeCapEmpty reports that the host's free-capacity table is empty: no
// schedulable pod and no placement anywhere (Knative's PodFitsResources
// then passes every pod).
func (v *VPodState) FreeCapEmpty() bool { return v.step.FreeCapEmpty }

// NumNodes is the number of schedulable nodes (every one, with or without
// adapter pods), ordered by name.
func (v *VPodState) NumNodes() int { return len(v.topo.Nodes) }

// NodeName is a node's name.
func (v *VPodState) NodeName(node int) string {
	if uint(node) >= uint(len(v.topo.Nodes)) {
		return ""
	}
	return v.topo.Nodes[node].Name
}

// NodeZone is the index of a node's zone.
func (v *VPodState) NodeZone(node int) int {
	if uint(node) >= uint(len(v.topo.Nodes)) {
		return 0
	}
	return int(v.topo.Nodes[node].Zone)
}

// NumZones is the number of distinct zones of the schedulable nodes.
func (v *VPodState) NumZones() int { return len(v.topo.Zones) }

// ZoneName is a zone's name ("unknown" for nodes without the
// topology.kubernetes.io/zone label).
func (v *VPodState) ZoneName(zone int) string {
	if uint(zone) >= uint(len(v.topo.Zones)) {
		return ""
	}
	return v.topo.Zones[zone]
}

// PodSpread is the stepped vpod's vreplicas on a pod and whether the pod
// is present in its spread map at all: Knative tells "present with 0"
// (a placement being rebalanced) from "absent".
func (v *VPodState) PodSpread(pod int) (vreplicas int32, present bool) {
	if uint(pod) >= uint(len(v.podHas)) {
		return 0, false
	}
	return v.podSpread[pod], v.podHas[pod]
}

// NodeSpread is PodSpread summed per node.
func (v *VPodState) NodeSpread(node int) (vreplicas int32, present bool) {
	if uint(node) >= uint(len(v.nodeHas)) {
		return 0, false
	}
	return v.nodeSpread[node], v.nodeHas[node]
}

// ZoneSpread is PodSpread summed per zone.
func (v *VPodState) ZoneSpread(zone int) (vreplicas int32, present bool) {
	if uint(zone) >= uint(len(v.zoneHas)) {
		return 0, false
	}
	return v.zoneSpread[zone], v.zoneHas[zone]
}

// PodSpreadEntries are the present entries of the vpod's pod spread, by
// ascending pod index: a vpod touches few pods, so plugins that look at
// presence iterate these instead of every pod. Do not modify.
func (v *VPodState) PodSpreadEntries() []abi.VPodCount { return v.step.PodSpread }

// NodeSpreadEntries are the present entries of the node spread.
func (v *VPodState) NodeSpreadEntries() []abi.VPodCount { return v.step.NodeSpread }

// ZoneSpreadEntries are the present entries of the zone spread.
func (v *VPodState) ZoneSpreadEntries() []abi.VPodCount { return v.step.ZoneSpread }

// vpodErr is the plugin package's error for a refused step.
type vpodErr struct{ msg string }

func (e *vpodErr) Error() string { return e.msg }

func vpodError(msg string) error { return &vpodErr{msg} }
