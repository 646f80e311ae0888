package abi

import (
	"slices"
	"unsafe"
)

// Vpod messages (ABI v1.3). The host's vpod engine (Knative Eventing's
// vreplica scheduler) places the vreplicas of a vpod one at a time onto
// the pods of an adapter StatefulSet, and takes them off one at a time
// when it scales a vpod down. Every step asks the policy's predicates
// which pods may take one more vreplica and its priorities how good each
// is. A module serving some of a policy's plugins gets one FuncVPodStep
// per step, covering all of them and every candidate pod at once.
//
// Three calls, from the slowest-changing state to the fastest:
//
//   - FuncVPodPolicy registers a policy: its entries (plugin, predicate or
//     priority, raw args) under an ID the host chooses. The guest parses
//     the args once and says which it refuses.
//   - FuncVPodTopology describes the schedulable adapter pods, their nodes
//     and the nodes' zones, under a generation. It changes when pods,
//     nodes or the StatefulSet's scale do, not between steps.
//   - FuncVPodStep carries what changes every step: the free capacity of
//     every pod and the stepped vpod's spread over pods, nodes and zones.
//
// Spread entries are sparse (only the pods, nodes and zones present in
// the vpod's spread maps) because a vpod touches few of them; "present
// with 0 vreplicas" differs from "absent" (Knative's NoMaxResourceCount
// and RemoveWith… priorities look at presence), so presence is explicit.

// VPodEntryKind says whether a policy entry is a predicate or a priority.
type VPodEntryKind uint8

const (
	// VPodPredicate entries decide feasibility; the first one a pod fails
	// makes it infeasible.
	VPodPredicate VPodEntryKind = 1
	// VPodPriority entries score feasible pods; the host multiplies by the
	// entry's weight and sums.
	VPodPriority VPodEntryKind = 2
)

// VPodEntry is one predicate or priority of a policy, as the module sees
// it. The weight stays with the host.
type VPodEntry struct {
	// Plugin is the plugin's index in the module's manifest.
	Plugin uint32
	Kind   VPodEntryKind
	// Args is the entry's args as raw JSON, as configured (Knative gives
	// a JSON string holding the args object); nil when the entry has none.
	Args []byte
}

// VPodPolicy is the input of FuncVPodPolicy: the entries of one policy
// that this module serves, in policy order. Step replies name entries by
// their index in this list.
type VPodPolicy struct {
	// ID names the policy in later steps; registering an ID again
	// replaces it.
	ID      uint32
	Entries []VPodEntry
}

// VPodPolicyReply answers FuncVPodPolicy: one message per entry, empty
// when the entry's args were accepted. An entry with refused args stays
// registered: its predicate refuses every pod and its priority fails
// every step (Knative's "invalid arguments" status), as the reference
// scheduler does when it decodes args at each call.
//
// A message that begins with ArgsIgnored is not a refusal: the plugin
// takes no args and runs as if the entry had none (Knative ignores such
// args); the host reports it, and a strict policy refuses the entry.
type VPodPolicyReply struct {
	Invalid []string
}

// ArgsIgnored begins a VPodPolicyReply message for an entry whose plugin
// takes no args but was given some: the entry stays valid.
const ArgsIgnored = "args ignored: "

// VPodPod is a schedulable adapter pod of the topology.
type VPodPod struct {
	// Ordinal is the StatefulSet ordinal (the suffix after the last '-').
	Ordinal int32
	// Node is the index of the pod's node in VPodTopology.Nodes.
	Node uint32
}

// VPodNode is a schedulable node (not cordoned, not unreachable); every
// such node of the cluster is listed, with or without adapter pods.
type VPodNode struct {
	Name string
	// Zone is the index of the node's zone in VPodTopology.Zones.
	Zone uint32
}

// VPodTopology is the input of FuncVPodTopology.
type VPodTopology struct {
	// Generation identifies this topology; steps name the one they use.
	Generation  uint64
	StatefulSet string
	// Capacity is the number of vreplicas one adapter pod holds.
	Capacity int32
	// Replicas is the StatefulSet's scale (spec.replicas).
	Replicas int32
	// Pods are the schedulable adapter pods in ascending ordinal.
	Pods []VPodPod
	// Nodes are the schedulable nodes, ordered by name.
	Nodes []VPodNode
	// Zones are the distinct zones of Nodes, ordered; a node without the
	// topology.kubernetes.io/zone label is in zone "unknown".
	Zones []string
}

// VPodCount is one present entry of a vpod's spread map: the index of a
// pod, node or zone in the topology and the vpod's vreplicas there.
type VPodCount struct {
	Index     uint32
	VReplicas int32
}

// VPodStep is the input of FuncVPodStep.
type VPodStep struct {
	// Policy is the ID of a policy registered with FuncVPodPolicy.
	Policy uint32
	// Topology is the generation of the topology the indexes refer to.
	Topology uint64
	// Namespace and Name are the vpod's key.
	Namespace string
	Name      string
	// VReplicas is the vpod's desired vreplica count.
	VReplicas int32
	// FreeCapEmpty: the host's free-capacity table is empty (no
	// schedulable pod and no placement anywhere); Knative's
	// PodFitsResources passes every pod then.
	FreeCapEmpty bool
	// Free is the free capacity of each topology pod: capacity minus the
	// vreplicas of every vpod placed or reserved there. It may be negative
	// (overcommitted).
	Free []int32
	// PodSpread, NodeSpread and ZoneSpread are the stepped vpod's present
	// spread entries, by ascending index.
	PodSpread  []VPodCount
	NodeSpread []VPodCount
	ZoneSpread []VPodCount
	// Candidates are the topology pod indexes to evaluate, ascending.
	Candidates []uint32
}

// VPodVerdict is the predicates' answer for one candidate.
type VPodVerdict struct {
	// Entry is 0 when the candidate passed every predicate the module
	// serves, else 1 + the policy entry index of the first that refused.
	Entry uint32
	// Code is Unschedulable or Error (a predicate that could not decide)
	// when Entry is not 0.
	Code   Code
	Reason string
}

// VPodScores are one priority's raw (unweighted) scores, one per
// candidate; a candidate the module's predicates refused scores 0.
// Scores are signed: higher is better, and the host sums weighted scores
// in int64 without wrapping.
type VPodScores struct {
	// Entry is the policy entry index of the priority.
	Entry  uint32
	Scores []int64
}

// VPodScoreError is a priority that failed for one candidate. The host
// ends the step's scoring if the candidate is feasible (Knative aborts
// scoring on any non-success).
type VPodScoreError struct {
	Entry uint32
	// Candidate is the position in VPodStep.Candidates.
	Candidate uint32
	Message   string
}

// VPodStepReply answers FuncVPodStep.
type VPodStepReply struct {
	// Verdicts has one verdict per candidate, in candidate order.
	Verdicts []VPodVerdict
	// Scores has one entry per priority of the policy, in policy order.
	Scores []VPodScores
	Errors []VPodScoreError
}

// VPodPolicy appends a FuncVPodPolicy input.
func (e *Encoder) VPodPolicy(p *VPodPolicy) {
	e.Uvarint(uint64(p.ID))
	e.Uvarint(uint64(len(p.Entries)))
	for i := range p.Entries {
		en := &p.Entries[i]
		e.Uvarint(uint64(en.Plugin))
		e.U8(uint8(en.Kind))
		e.Bool(en.Args != nil)
		if en.Args != nil {
			e.Bytes(en.Args)
		}
	}
}

// VPodPolicy reads a FuncVPodPolicy input.
func (d *Decoder) VPodPolicy(p *VPodPolicy) {
	p.ID = d.u32varint("policy id")
	p.Entries = nil
	n := d.Count(3)
	if n == 0 {
		return
	}
	p.Entries = make([]VPodEntry, n)
	for i := range p.Entries {
		en := &p.Entries[i]
		en.Plugin = d.u32varint("plugin index")
		en.Kind = VPodEntryKind(d.U8())
		if en.Kind != VPodPredicate && en.Kind != VPodPriority {
			d.failf("vpod entry kind out of range")
		}
		if d.Bool() {
			en.Args = append([]byte{}, d.Bytes()...) // a copy: the guest may keep it
		}
		if d.Err() != nil {
			p.Entries = nil
			return
		}
	}
}

// VPodPolicyReply appends the reply body of FuncVPodPolicy.
func (e *Encoder) VPodPolicyReply(r *VPodPolicyReply) { e.Strings(r.Invalid) }

// VPodPolicyReply reads the reply body of FuncVPodPolicy to a policy of
// entries entries: at most one answer per entry (see LimitError).
func (d *Decoder) VPodPolicyReply(r *VPodPolicyReply, entries int) {
	r.Invalid = d.stringsUpTo(top(entries, "vpod policy reply", "answers", "policy entries"))
}

// VPodTopology appends a FuncVPodTopology input.
func (e *Encoder) VPodTopology(t *VPodTopology) {
	e.U64(t.Generation)
	e.String(t.StatefulSet)
	e.Varint(int64(t.Capacity))
	e.Varint(int64(t.Replicas))
	e.Uvarint(uint64(len(t.Pods)))
	for _, p := range t.Pods {
		e.Varint(int64(p.Ordinal))
		e.Uvarint(uint64(p.Node))
	}
	e.Uvarint(uint64(len(t.Nodes)))
	for _, n := range t.Nodes {
		e.String(n.Name)
		e.Uvarint(uint64(n.Zone))
	}
	e.Strings(t.Zones)
}

// VPodTopology reads a FuncVPodTopology input. Node and zone indexes are
// checked against the lists they point into.
func (d *Decoder) VPodTopology(t *VPodTopology) {
	t.Generation = d.U64()
	t.StatefulSet = d.String()
	t.Capacity = d.Int32()
	t.Replicas = d.Int32()
	t.Pods = nil
	if n := d.Count(2); n > 0 {
		t.Pods = make([]VPodPod, n)
		for i := range t.Pods {
			t.Pods[i].Ordinal = d.Int32()
			t.Pods[i].Node = d.u32varint("node index")
		}
	}
	t.Nodes = nil
	if n := d.Count(2); n > 0 {
		t.Nodes = make([]VPodNode, n)
		for i := range t.Nodes {
			t.Nodes[i].Name = d.String()
			t.Nodes[i].Zone = d.u32varint("zone index")
		}
	}
	t.Zones = d.Strings()
	if d.Err() != nil {
		return
	}
	for _, p := range t.Pods {
		if int(p.Node) >= len(t.Nodes) {
			d.failf("pod's node index out of range")
			return
		}
	}
	for _, n := range t.Nodes {
		if int(n.Zone) >= len(t.Zones) {
			d.failf("node's zone index out of range")
			return
		}
	}
}

// VPodStep appends a FuncVPodStep input.
func (e *Encoder) VPodStep(s *VPodStep) {
	e.Uvarint(uint64(s.Policy))
	e.U64(s.Topology)
	e.String(s.Namespace)
	e.String(s.Name)
	e.Varint(int64(s.VReplicas))
	e.Bool(s.FreeCapEmpty)
	e.Uvarint(uint64(len(s.Free)))
	for _, f := range s.Free {
		e.Varint(int64(f))
	}
	e.vpodCounts(s.PodSpread)
	e.vpodCounts(s.NodeSpread)
	e.vpodCounts(s.ZoneSpread)
	e.indexes(s.Candidates)
}

// VPodStep reads a FuncVPodStep input. Indexes are not checked against a
// topology here (the decoder has none); the guest runtime checks them
// against the topology the step names.
func (d *Decoder) VPodStep(s *VPodStep) {
	s.Policy = d.u32varint("policy id")
	s.Topology = d.U64()
	s.Namespace = d.stringAgain(s.Namespace)
	s.Name = d.stringAgain(s.Name)
	s.VReplicas = d.Int32()
	s.FreeCapEmpty = d.Bool()
	s.Free = grow(s.Free, d.Count(1))
	for i := range s.Free {
		s.Free[i] = d.Int32()
	}
	s.PodSpread = d.vpodCountsInto(s.PodSpread)
	s.NodeSpread = d.vpodCountsInto(s.NodeSpread)
	s.ZoneSpread = d.vpodCountsInto(s.ZoneSpread)
	s.Candidates = grow(s.Candidates, d.Count(1))
	for i := range s.Candidates {
		s.Candidates[i] = d.u32varint("candidate index")
	}
	if d.Err() != nil {
		s.Free, s.Candidates = s.Free[:0], s.Candidates[:0]
	}
}

// stringAgain reads a string, returning old itself when the bytes are
// old's: the steps of one vpod name it every time, and a guest that
// decoded a new string per step would keep its collector busy.
func (d *Decoder) stringAgain(old string) string {
	b := d.Bytes()
	if len(b) == len(old) {
		same := true
		for i := range b {
			if b[i] != old[i] {
				same = false
				break
			}
		}
		if same {
			return old
		}
	}
	if len(b) == 0 {
		return ""
	}
	if d.alias {
		return unsafe.String(&b[0], len(b))
	}
	return string(b)
}

// grow returns s with length n, reusing its memory when it is large
// enough: a guest decodes a step per vreplica into the same VPodStep, and
// allocating per step would keep its garbage collector busy.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (e *Encoder) vpodCounts(cs []VPodCount) {
	e.Uvarint(uint64(len(cs)))
	for _, c := range cs {
		e.Uvarint(uint64(c.Index))
		e.Varint(int64(c.VReplicas))
	}
}

func (d *Decoder) vpodCountsInto(cs []VPodCount) []VPodCount {
	cs = grow(cs, d.Count(2))
	for i := range cs {
		cs[i].Index = d.u32varint("spread index")
		cs[i].VReplicas = d.Int32()
		if d.Err() != nil {
			return cs[:0]
		}
	}
	return cs
}

// VPodStepReply appends the reply body of FuncVPodStep.
func (e *Encoder) VPodStepReply(r *VPodStepReply) {
	// A step's reply holds a few hundred integers: grow the buffer once to
	// the most they can take and write them by index, instead of one
	// append (a runtime call in a TinyGo guest) per byte.
	size := 3 * maxUvarintLen
	for i := range r.Verdicts {
		size += maxUvarintLen + 1 + maxUvarintLen + len(r.Verdicts[i].Reason)
	}
	for i := range r.Scores {
		size += 2*maxUvarintLen + maxUvarintLen*len(r.Scores[i].Scores)
	}
	for i := range r.Errors {
		size += 3*maxUvarintLen + len(r.Errors[i].Message)
	}
	b := slices.Grow(e.B, size)
	n := len(b)
	b = b[:n+size]
	n = putUvarint(b, n, uint64(len(r.Verdicts)))
	for i := range r.Verdicts {
		v := &r.Verdicts[i]
		n = putUvarint(b, n, uint64(v.Entry))
		if v.Entry != 0 {
			b[n] = uint8(v.Code)
			n = putUvarint(b, n+1, uint64(len(v.Reason)))
			n += copy(b[n:], v.Reason)
		}
	}
	n = putUvarint(b, n, uint64(len(r.Scores)))
	for i := range r.Scores {
		s := &r.Scores[i]
		n = putUvarint(b, n, uint64(s.Entry))
		n = putUvarint(b, n, uint64(len(s.Scores)))
		for _, v := range s.Scores {
			n = putUvarint(b, n, uint64(v<<1)^uint64(v>>63))
		}
	}
	n = putUvarint(b, n, uint64(len(r.Errors)))
	for i := range r.Errors {
		x := &r.Errors[i]
		n = putUvarint(b, n, uint64(x.Entry))
		n = putUvarint(b, n, uint64(x.Candidate))
		n = putUvarint(b, n, uint64(len(x.Message)))
		n += copy(b[n:], x.Message)
	}
	e.B = b[:n]
}

// maxUvarintLen is the most bytes a uvarint takes.
const maxUvarintLen = 10

// putUvarint writes v as a uvarint at b[n:], which has room for it, and
// returns the index after it.
func putUvarint(b []byte, n int, v uint64) int {
	for v >= 0x80 {
		b[n] = byte(v) | 0x80
		v >>= 7
		n++
	}
	b[n] = byte(v)
	return n + 1
}

// vpodStepReply names the step reply in a LimitError.
const vpodStepReply = "vpod step reply"

// VPodStepReply reads the reply body of FuncVPodStep to a step over
// candidates candidates of a policy of entries entries (those this
// module serves): at most a verdict per candidate, a score list per
// entry with a score per candidate, and a score error per entry and
// candidate (see LimitError). Entry and candidate indexes are
// range-checked by the host against its request.
func (d *Decoder) VPodStepReply(r *VPodStepReply, entries, candidates int) {
	*r = VPodStepReply{}
	if n := d.countUpTo(1, top(candidates, vpodStepReply, "verdicts", "candidates")); n > 0 {
		r.Verdicts = make([]VPodVerdict, n)
		for i := range r.Verdicts {
			v := &r.Verdicts[i]
			v.Entry = d.u32varint("entry index")
			if v.Entry != 0 {
				v.Code = Code(d.U8())
				v.Reason = d.String()
			}
			if d.Err() != nil {
				*r = VPodStepReply{}
				return
			}
		}
	}
	if n := d.countUpTo(2, top(entries, vpodStepReply, "score lists", "policy entries")); n > 0 {
		r.Scores = make([]VPodScores, n)
		for i := range r.Scores {
			s := &r.Scores[i]
			s.Entry = d.u32varint("entry index")
			if m := d.countUpTo(1, top(candidates, vpodStepReply, "scores", "candidates").in("score list", int64(i))); m > 0 {
				s.Scores = make([]int64, m)
				for j := range s.Scores {
					s.Scores[j] = d.Varint()
				}
			}
			if d.Err() != nil {
				*r = VPodStepReply{}
				return
			}
		}
	}
	pairs := top(entries*candidates, vpodStepReply, "score errors", "entry and candidate pairs")
	if n := d.countUpTo(3, pairs); n > 0 {
		r.Errors = make([]VPodScoreError, n)
		for i := range r.Errors {
			x := &r.Errors[i]
			x.Entry = d.u32varint("entry index")
			x.Candidate = d.u32varint("candidate index")
			x.Message = d.String()
			if d.Err() != nil {
				*r = VPodStepReply{}
				return
			}
		}
	}
}

// u32varint reads a uvarint that must fit an index (below 2^31).
func (d *Decoder) u32varint(what string) uint32 {
	v := d.Uvarint()
	if v >= 1<<31 {
		d.failf(what + " out of range")
		return 0
	}
	return uint32(v)
}
