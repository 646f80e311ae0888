package abi

import "slices"

// Eviction messages (ABI v1.2). The host's eviction coordinator
// (Katalyst-style) asks eviction policies, once per round and batched over
// every node, whether a threshold is met (FuncThresholdMet), which pods
// should go when it is (FuncTopEvictionPods), and which pods should go
// regardless of thresholds (FuncEvictPods). The coordinator does the rest:
// grace periods, aggregation across policies, filtering, sorting,
// throttling, taints and the API calls.
//
// Policies see the node mirror (with every pod: an eviction module always
// gets ManifestWantsPods) plus, per node, an observation record
// (FuncObserve): node conditions, usage, and per pod its QoS class, the
// host's critical/static/mirror flags, the annotations the module asked
// for and its usage. Pods are named by their index in the node's mirrored
// pod list, and a policy may only name pods the host offered it as
// candidates.

// QoSClass is a pod's status.qosClass.
type QoSClass uint8

const (
	QoSBestEffort QoSClass = 0
	QoSBurstable  QoSClass = 1
	QoSGuaranteed QoSClass = 2
)

// String gives the Kubernetes name.
func (q QoSClass) String() string {
	switch q {
	case QoSBestEffort:
		return "BestEffort"
	case QoSBurstable:
		return "Burstable"
	case QoSGuaranteed:
		return "Guaranteed"
	}
	return "QoSClass(" + Itoa(int64(q)) + ")"
}

// Pod observation flags.
const (
	// PodStatic: a static pod (kubernetes.io/config.source is not "api").
	PodStatic uint32 = 1 << 0
	// PodMirror: the API mirror of a static pod (kubernetes.io/config.mirror).
	PodMirror uint32 = 1 << 1
	// PodCritical: kubelet's IsCriticalPod (static, mirror, or priority of
	// at least 2000000000). The coordinator never offers such pods as
	// candidates; the flag is there for policies that count them.
	PodCritical uint32 = 1 << 2
)

// Usage is measured consumption, from the metrics API
// (metrics.k8s.io NodeMetrics/PodMetrics) or simulation documents.
type Usage struct {
	MilliCPU int64
	Memory   int64
	// Timestamp is the end of the measurement window, Unix nanoseconds.
	Timestamp int64
}

// ConditionStatus is a node condition's status.
type ConditionStatus uint8

const (
	ConditionUnknown ConditionStatus = 0
	ConditionTrue    ConditionStatus = 1
	ConditionFalse   ConditionStatus = 2
)

// NodeCondition is one of node.status.conditions.
type NodeCondition struct {
	Type   string
	Status ConditionStatus
	// LastTransition is lastTransitionTime in Unix nanoseconds; 0 unset.
	LastTransition int64
}

// PodObservation is what the eviction view adds to a mirrored pod.
type PodObservation struct {
	QoS   QoSClass
	Flags uint32
	// Annotations holds only the keys the module's manifest asked for
	// (Manifest.AnnotationKeys), sorted by key.
	Annotations Labels
	// Usage is nil when the host has no measurement ("no data", never 0).
	Usage *Usage
}

// NodeObservation is the eviction view of one node: its conditions, its
// usage (nil: no data), and one PodObservation per mirrored pod, in the
// order of NodeInfo.Pods.
type NodeObservation struct {
	Conditions []NodeCondition
	Usage      *Usage
	Pods       []PodObservation
}

// Observe request flags.
const (
	// ObserveReset drops every observation before applying the records.
	ObserveReset uint8 = 1 << 0
)

// Usage appends an optional usage.
func (e *Encoder) Usage(u *Usage) {
	e.Bool(u != nil)
	if u != nil {
		e.Varint(u.MilliCPU)
		e.Varint(u.Memory)
		e.Varint(u.Timestamp)
	}
}

// Usage reads an optional usage.
func (d *Decoder) Usage() *Usage {
	if !d.Optional() {
		return nil
	}
	return &Usage{MilliCPU: d.Varint(), Memory: d.Varint(), Timestamp: d.Varint()}
}

// NodeObservation appends a node observation.
func (e *Encoder) NodeObservation(o *NodeObservation) {
	e.Uvarint(uint64(len(o.Conditions)))
	for _, c := range o.Conditions {
		e.String(c.Type)
		e.U8(uint8(c.Status))
		e.Varint(c.LastTransition)
	}
	e.Usage(o.Usage)
	e.Uvarint(uint64(len(o.Pods)))
	for i := range o.Pods {
		p := &o.Pods[i]
		e.U8(uint8(p.QoS))
		e.Uvarint(uint64(p.Flags))
		e.Labels(p.Annotations)
		e.Usage(p.Usage)
	}
}

// NodeObservation reads a node observation into o.
func (d *Decoder) NodeObservation(o *NodeObservation) {
	o.Conditions, o.Pods = nil, nil
	if n := d.Count(3); n > 0 {
		o.Conditions = make([]NodeCondition, n)
		for i := range o.Conditions {
			c := &o.Conditions[i]
			c.Type = d.String()
			c.Status = ConditionStatus(d.U8())
			if c.Status > ConditionFalse {
				d.failf("condition status out of range")
			}
			c.LastTransition = d.Varint()
		}
	}
	o.Usage = d.Usage()
	if n := d.Count(4); n > 0 {
		o.Pods = make([]PodObservation, n)
		for i := range o.Pods {
			p := &o.Pods[i]
			p.QoS = QoSClass(d.U8())
			if p.QoS > QoSGuaranteed {
				d.failf("QoS class out of range")
			}
			p.Flags = uint32(d.Uvarint())
			p.Annotations = d.Labels()
			p.Usage = d.Usage()
		}
	}
}

// ObservationRecord appends one observe record: the slot and the
// NodeObservation, length-prefixed (like NodeRecord, so the host can
// splice bytes it encoded once into the requests of many instances).
func (e *Encoder) ObservationRecord(slot uint32, o *NodeObservation) {
	e.U32(slot)
	e.lengthPrefixed(func() { e.NodeObservation(o) })
}

// ParseObserve walks an observe request (FuncObserve input): u8 flags,
// then a list of (u32 slot, length-prefixed NodeObservation). record is
// called with each record's bytes (aliasing b).
func ParseObserve(b []byte, record func(slot uint32, rec []byte) error) (flags uint8, err error) {
	d := NewDecoder(b)
	flags = d.U8()
	n := d.Count(5)
	for i := 0; i < n && d.Err() == nil; i++ {
		slot := d.U32()
		rec := d.Bytes()
		if d.Err() != nil {
			break
		}
		if err := record(slot, rec); err != nil {
			return flags, err
		}
	}
	if d.Err() != nil {
		return flags, d.Err()
	}
	if d.Remaining() != 0 {
		d.failf("observe request has trailing bytes")
		return flags, d.Err()
	}
	return flags, nil
}

// MetType is a threshold's state, as Katalyst's ThresholdMetType.
type MetType uint8

const (
	NotMet  MetType = 0
	SoftMet MetType = 1
	HardMet MetType = 2
)

// String names the state.
func (m MetType) String() string {
	switch m {
	case NotMet:
		return "NOT_MET"
	case SoftMet:
		return "SOFT_MET"
	case HardMet:
		return "HARD_MET"
	}
	return "MetType(" + Itoa(int64(m)) + ")"
}

// ConditionKind says what an EvictionCondition is reported on. Only node
// conditions exist in wasmsched (Katalyst's CNR conditions have no
// counterpart here).
type ConditionKind uint8

const (
	// ConditionNodeKind: the condition becomes a node taint
	// eviction.wasmsched.io/<Name> with each of Effects while it is met.
	ConditionNodeKind ConditionKind = 0
)

// EvictionCondition is a pressure condition a policy reports for a node.
type EvictionCondition struct {
	Kind    ConditionKind
	Name    string
	Effects []TaintEffect
	Met     bool
}

func (e *Encoder) evictionCondition(c *EvictionCondition) {
	e.Bool(c != nil)
	if c == nil {
		return
	}
	e.U8(uint8(c.Kind))
	e.String(c.Name)
	e.Uvarint(uint64(len(c.Effects)))
	for _, f := range c.Effects {
		e.U8(uint8(f))
	}
	e.Bool(c.Met)
}

// evictionCondition reads the optional condition of reply's answer for
// node slot, with at most MaxConditionEffects effects.
func (d *Decoder) evictionCondition(reply string, slot uint32) *EvictionCondition {
	if !d.Optional() {
		return nil
	}
	c := &EvictionCondition{Kind: ConditionKind(d.U8())}
	if c.Kind != ConditionNodeKind {
		d.failf("condition kind out of range")
	}
	c.Name = d.String()
	b := top(MaxConditionEffects, reply, "condition effects", "allowed (abi.MaxConditionEffects)").in("node slot", int64(slot))
	if n := d.countUpTo(1, b); n > 0 {
		c.Effects = make([]TaintEffect, n)
		for i := range c.Effects {
			c.Effects[i] = TaintEffect(d.U8())
		}
	}
	c.Met = d.Bool()
	return c
}

// EvictionNode is one node of an eviction request: its slot and the pods
// the host offers as candidates, as indexes into the node's mirrored pods
// (already without critical, skipped, static, mirror and terminating
// pods).
type EvictionNode struct {
	Slot       uint32
	Candidates []uint32
}

// EvictionRequest is the input of FuncThresholdMet and FuncEvictPods.
// Limit is the most pods a reply may name for one node (the
// coordinator's eviction burst): a reply naming more is refused whole.
type EvictionRequest struct {
	Limit uint32
	Nodes []EvictionNode
}

func (e *Encoder) indexes(xs []uint32) {
	e.Uvarint(uint64(len(xs)))
	for _, x := range xs {
		e.Uvarint(uint64(x))
	}
}

// indexesUpTo reads a reply's list of pod indexes, at most b.limit.
func (d *Decoder) indexesUpTo(b bound) []uint32 {
	n := d.countUpTo(1, b)
	if n == 0 {
		return nil
	}
	xs := make([]uint32, n)
	for i := range xs {
		xs[i] = d.podIndex()
	}
	if d.err != nil {
		return nil
	}
	return xs
}

// podIndex reads a pod index of a reply, below 2^31.
func (d *Decoder) podIndex() uint32 {
	v := d.Uvarint()
	if v >= 1<<31 {
		d.failf("pod index out of range")
		return 0
	}
	return uint32(v)
}

// podBound is the most pods a reply may name for one node: the
// candidates offered there (naming more would repeat one or name one not
// offered), and no more than the request's limit and topN when set
// (0: none).
func podBound(reply string, slot uint32, limit, topN uint32, offered int) bound {
	b := top(offered, reply, "pods", "offered").in("node slot", int64(slot))
	if limit > 0 && int64(limit) < int64(b.limit) {
		b.limit, b.of = int(limit), "allowed (the limit per node)"
	}
	if topN > 0 && int64(topN) < int64(b.limit) {
		b.limit, b.of = int(topN), "allowed (topN)"
	}
	return b
}

// EvictionRequest appends the input of FuncThresholdMet or FuncEvictPods.
func (e *Encoder) EvictionRequest(r *EvictionRequest) {
	e.Uvarint(uint64(r.Limit))
	e.Uvarint(uint64(len(r.Nodes)))
	for i := range r.Nodes {
		e.U32(r.Nodes[i].Slot)
		e.indexes(r.Nodes[i].Candidates)
	}
}

// EvictionRequest reads the input of FuncThresholdMet or FuncEvictPods,
// reusing the memory of what r held (its nodes and their candidate
// lists), so that a guest decoding every round's request into one value
// allocates only when a request outgrows the last.
func (d *Decoder) EvictionRequest(r *EvictionRequest) {
	r.Limit = uint32(d.Uvarint())
	r.Nodes = reuse(r.Nodes, d.Count(5))
	for i := range r.Nodes {
		x := &r.Nodes[i]
		x.Slot = d.U32()
		x.Candidates = d.indexesInto(x.Candidates)
	}
}

// reuse returns xs with length n, its memory when it has room, else new
// memory; elements past the old length keep what they held (the
// decoders overwrite every field, and reuse their slices' memory).
func reuse[T any](xs []T, n int) []T {
	if cap(xs) < n {
		ys := make([]T, n)
		copy(ys, xs[:cap(xs)])
		return ys
	}
	return xs[:n]
}

// indexesInto reads a list of pod indexes into xs's memory when it has
// room (nil for an empty list when xs has none).
func (d *Decoder) indexesInto(xs []uint32) []uint32 {
	n := d.Count(1)
	if n == 0 {
		return xs[:0]
	}
	if cap(xs) < n {
		xs = make([]uint32, n)
	}
	xs = xs[:n]
	for i := range xs {
		v := d.Uvarint()
		if v >= 1<<31 {
			d.failf("pod index out of range")
			return xs[:0]
		}
		xs[i] = uint32(v)
	}
	return xs
}

// ThresholdResult is a policy's ThresholdMet answer for one node.
type ThresholdResult struct {
	Met            MetType
	ThresholdValue float64
	ObservedValue  float64
	// Operator is informational ("<", ">", ...), as in Katalyst.
	Operator string
	// Scope names what the threshold is about, e.g. a resource name; it
	// comes back in the TopEvictionPods request and ranks soft victims.
	Scope string
	// GracePeriodSeconds is how long the threshold must stay met, in
	// consecutive rounds, before the coordinator acts on it.
	GracePeriodSeconds int64
	Condition          *EvictionCondition
	// Candidates restricts the TopEvictionPods call to these pods
	// (indexes into the node's pods, each one offered); empty: all
	// offered candidates.
	Candidates []uint32
}

// ThresholdMetReply appends the reply body of FuncThresholdMet: one
// result per requested node, in order.
func (e *Encoder) ThresholdMetReply(rs []ThresholdResult) {
	// A round's reply holds a result per node (thousands, most of them
	// "not met"): each result's fields up to its condition are written by
	// index into room grown once, not one append (a runtime call in a
	// TinyGo guest) per field.
	e.Uvarint(uint64(len(rs)))
	for i := range rs {
		r := &rs[i]
		size := 1 + 8 + 8 + 2*maxUvarintLen + len(r.Operator) + len(r.Scope) + maxUvarintLen
		b := slices.Grow(e.B, size)
		n := len(b)
		b = b[:n+size]
		b[n] = uint8(r.Met)
		n = putU64(b, n+1, float64bits(r.ThresholdValue))
		n = putU64(b, n, float64bits(r.ObservedValue))
		n = putUvarint(b, n, uint64(len(r.Operator)))
		n += copy(b[n:], r.Operator)
		n = putUvarint(b, n, uint64(len(r.Scope)))
		n += copy(b[n:], r.Scope)
		n = putUvarint(b, n, uint64(r.GracePeriodSeconds<<1)^uint64(r.GracePeriodSeconds>>63))
		e.B = b[:n]
		e.evictionCondition(r.Condition)
		e.indexes(r.Candidates)
	}
}

// putU64 writes v little-endian at b[n:], which has room for it, and
// returns the index after it.
func putU64(b []byte, n int, v uint64) int {
	_ = b[n+7]
	b[n], b[n+1], b[n+2], b[n+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	b[n+4], b[n+5], b[n+6], b[n+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
	return n + 8
}

// Names of the eviction replies in a LimitError.
const (
	thresholdReply = "eviction threshold reply"
	topPodsReply   = "eviction top-pods reply"
	evictPodsReply = "eviction evict-pods reply"
)

// ThresholdMetReply reads the reply body of FuncThresholdMet to req: at
// most one result per node sent, each naming at most the candidates
// offered on its node (see LimitError).
func (d *Decoder) ThresholdMetReply(req *EvictionRequest) []ThresholdResult {
	n := d.countUpTo(22, top(len(req.Nodes), thresholdReply, "results", "nodes sent"))
	if n == 0 {
		return nil
	}
	rs := make([]ThresholdResult, n)
	for i := range rs {
		r, node := &rs[i], &req.Nodes[i]
		r.Met = MetType(d.U8())
		if r.Met > HardMet {
			d.failf("threshold met type out of range")
		}
		r.ThresholdValue = float64frombits(d.U64())
		r.ObservedValue = float64frombits(d.U64())
		r.Operator = d.String()
		r.Scope = d.String()
		r.GracePeriodSeconds = d.Varint()
		r.Condition = d.evictionCondition(thresholdReply, node.Slot)
		r.Candidates = d.indexesUpTo(top(len(node.Candidates), thresholdReply, "candidates", "offered").in("node slot", int64(node.Slot)))
		if d.Err() != nil {
			return nil
		}
	}
	return rs
}

// TopEvictionNode is one node of a TopEvictionRequest: a threshold of the
// policy is met there (and past its grace period). TopN 1 is a hard
// threshold's query (one pod to evict at once); TopN 0 a soft one (as
// many pods as the policy sees fit, up to the request's Limit).
type TopEvictionNode struct {
	Slot       uint32
	TopN       uint32
	Scope      string
	Candidates []uint32
}

// TopEvictionRequest is the input of FuncTopEvictionPods.
type TopEvictionRequest struct {
	Limit uint32
	Nodes []TopEvictionNode
}

// TopEvictionRequest appends the input of FuncTopEvictionPods.
func (e *Encoder) TopEvictionRequest(r *TopEvictionRequest) {
	e.Uvarint(uint64(r.Limit))
	e.Uvarint(uint64(len(r.Nodes)))
	for i := range r.Nodes {
		n := &r.Nodes[i]
		e.U32(n.Slot)
		e.Uvarint(uint64(n.TopN))
		e.String(n.Scope)
		e.indexes(n.Candidates)
	}
}

// TopEvictionRequest reads the input of FuncTopEvictionPods.
// It reuses the memory of what r held, as EvictionRequest.
func (d *Decoder) TopEvictionRequest(r *TopEvictionRequest) {
	r.Limit = uint32(d.Uvarint())
	r.Nodes = reuse(r.Nodes, d.Count(7))
	for i := range r.Nodes {
		x := &r.Nodes[i]
		x.Slot = d.U32()
		x.TopN = uint32(d.Uvarint())
		x.Scope = d.String()
		x.Candidates = d.indexesInto(x.Candidates)
	}
}

// TopEvictionPods is a policy's answer for one node of a
// TopEvictionRequest: the pods to evict, and optionally the grace period
// to give them (nil: each pod's terminationGracePeriodSeconds).
type TopEvictionPods struct {
	Pods               []uint32
	GracePeriodSeconds *int64
}

func (e *Encoder) optVarint(v *int64) {
	e.Bool(v != nil)
	if v != nil {
		e.Varint(*v)
	}
}

func (d *Decoder) optVarint() *int64 {
	if !d.Optional() {
		return nil
	}
	v := d.Varint()
	return &v
}

// TopEvictionReply appends the reply body of FuncTopEvictionPods: one
// answer per requested node, in order.
func (e *Encoder) TopEvictionReply(rs []TopEvictionPods) {
	e.Uvarint(uint64(len(rs)))
	for i := range rs {
		e.indexes(rs[i].Pods)
		e.optVarint(rs[i].GracePeriodSeconds)
	}
}

// TopEvictionReply reads the reply body of FuncTopEvictionPods to req:
// at most one answer per node sent, each naming at most the pods
// podBound allows on its node (see LimitError).
func (d *Decoder) TopEvictionReply(req *TopEvictionRequest) []TopEvictionPods {
	n := d.countUpTo(2, top(len(req.Nodes), topPodsReply, "answers", "nodes sent"))
	if n == 0 {
		return nil
	}
	rs := make([]TopEvictionPods, n)
	for i := range rs {
		node := &req.Nodes[i]
		rs[i].Pods = d.indexesUpTo(podBound(topPodsReply, node.Slot, req.Limit, node.TopN, len(node.Candidates)))
		rs[i].GracePeriodSeconds = d.optVarint()
		if d.Err() != nil {
			return nil
		}
	}
	return rs
}

// EvictPod is one pod a policy wants evicted regardless of thresholds.
// Force pods go at once (within the burst); the others are soft
// candidates, of which the coordinator evicts at most one per node and
// round, the least worth keeping by its CandidateSort.
type EvictPod struct {
	Pod                uint32
	Reason             string
	Force              bool
	GracePeriodSeconds *int64
}

// NodeEvictPods is a policy's GetEvictPods answer for one node.
type NodeEvictPods struct {
	Pods      []EvictPod
	Condition *EvictionCondition
}

// EvictPodsReply appends the reply body of FuncEvictPods: one answer per
// requested node, in order.
func (e *Encoder) EvictPodsReply(rs []NodeEvictPods) {
	e.Uvarint(uint64(len(rs)))
	for i := range rs {
		e.Uvarint(uint64(len(rs[i].Pods)))
		for _, p := range rs[i].Pods {
			e.Uvarint(uint64(p.Pod))
			e.String(p.Reason)
			e.Bool(p.Force)
			e.optVarint(p.GracePeriodSeconds)
		}
		e.evictionCondition(rs[i].Condition)
	}
}

// EvictPodsReply reads the reply body of FuncEvictPods to req: at most
// one answer per node sent, each naming at most the pods podBound allows
// on its node (see LimitError).
func (d *Decoder) EvictPodsReply(req *EvictionRequest) []NodeEvictPods {
	n := d.countUpTo(2, top(len(req.Nodes), evictPodsReply, "answers", "nodes sent"))
	if n == 0 {
		return nil
	}
	rs := make([]NodeEvictPods, n)
	for i := range rs {
		node := &req.Nodes[i]
		if m := d.countUpTo(4, podBound(evictPodsReply, node.Slot, req.Limit, 0, len(node.Candidates))); m > 0 {
			rs[i].Pods = make([]EvictPod, m)
			for j := range rs[i].Pods {
				p := &rs[i].Pods[j]
				p.Pod = d.podIndex()
				p.Reason = d.String()
				p.Force = d.Bool()
				p.GracePeriodSeconds = d.optVarint()
			}
		}
		rs[i].Condition = d.evictionCondition(evictPodsReply, node.Slot)
		if d.Err() != nil {
			return nil
		}
	}
	return rs
}
