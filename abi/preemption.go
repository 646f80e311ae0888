package abi

// Preemption messages (ABI v1.1). The host runs the dry runs — removing
// pods from a node in every module's what-if view and re-running the
// filters — because the filters live in other plugins; a preemption
// policy decides only what is a matter of policy: which pods on a node may
// go and in which order they are worth keeping (FuncSelectVictims), and
// which of the nodes that would work is best (FuncRankCandidates). Both
// calls are batched over many nodes.

// VictimCandidate is a pod the preemptor could displace, with what a
// policy needs to judge it. The host only offers pods of lower priority
// than the preemptor.
type VictimCandidate struct {
	UID       string
	Namespace string
	Name      string
	Labels    Labels
	Priority  int32
	// StartTime is status.startTime in Unix nanoseconds; 0 if unset (a
	// pod not started yet counts as starting now).
	StartTime int64
	// DisruptionGuard is the KEP-3280 value copied from the pod's
	// PriorityClass: a preemptor of lower priority must not violate the
	// pod's PodDisruptionBudgets. nil: no guarantee.
	DisruptionGuard *int32
}

// NodeCandidates is one node of a SelectVictimsRequest: its mirror slot
// and the pods the preemptor could displace there.
type NodeCandidates struct {
	Slot uint32
	Pods []VictimCandidate
}

// VictimChoice is one pod a policy chose to remove: its index in
// NodeCandidates.Pods and whether removing it would violate a
// PodDisruptionBudget.
type VictimChoice struct {
	Index     uint32
	Violating bool
}

// NodeVictims is a policy's answer for one node: Success with the pods to
// remove, most important first (the host reprieves violating ones first,
// then the others, each group in this order), or a rejection (e.g.
// UnschedulableAndUnresolvable when nothing may be removed).
type NodeVictims struct {
	Code    Code
	Reasons []string
	Victims []VictimChoice
}

// Candidate is a node where removing Victims makes the preemptor fit,
// after the host's reprieve pass. Victims are in the policy's order.
type Candidate struct {
	Slot             uint32
	NumPDBViolations int32
	Victims          []VictimCandidate
}

// VictimCandidate appends a victim candidate.
func (e *Encoder) VictimCandidate(v *VictimCandidate) {
	e.String(v.UID)
	e.String(v.Namespace)
	e.String(v.Name)
	e.Labels(v.Labels)
	e.Varint(int64(v.Priority))
	e.Varint(v.StartTime)
	e.Bool(v.DisruptionGuard != nil)
	if v.DisruptionGuard != nil {
		e.Varint(int64(*v.DisruptionGuard))
	}
}

// VictimCandidate reads a victim candidate into v.
func (d *Decoder) VictimCandidate(v *VictimCandidate) {
	v.UID = d.String()
	v.Namespace = d.String()
	v.Name = d.String()
	v.Labels = d.Labels()
	v.Priority = d.Int32()
	v.StartTime = d.Varint()
	v.DisruptionGuard = nil
	if d.Optional() {
		g := d.Int32()
		v.DisruptionGuard = &g
	}
}

func (e *Encoder) victimCandidates(vs []VictimCandidate) {
	e.Uvarint(uint64(len(vs)))
	for i := range vs {
		e.VictimCandidate(&vs[i])
	}
}

func (d *Decoder) victimCandidates() []VictimCandidate {
	n := d.Count(7)
	if n == 0 {
		return nil
	}
	vs := make([]VictimCandidate, n)
	for i := range vs {
		d.VictimCandidate(&vs[i])
	}
	return vs
}

// SelectVictimsRequest appends the input of FuncSelectVictims.
func (e *Encoder) SelectVictimsRequest(nodes []NodeCandidates) {
	e.Uvarint(uint64(len(nodes)))
	for i := range nodes {
		e.U32(nodes[i].Slot)
		e.victimCandidates(nodes[i].Pods)
	}
}

// SelectVictimsRequest reads the input of FuncSelectVictims.
func (d *Decoder) SelectVictimsRequest() []NodeCandidates {
	n := d.Count(5)
	if n == 0 {
		return nil
	}
	nodes := make([]NodeCandidates, n)
	for i := range nodes {
		nodes[i].Slot = d.U32()
		nodes[i].Pods = d.victimCandidates()
	}
	return nodes
}

// SelectVictimsReply appends the reply body of FuncSelectVictims: one
// NodeVictims per requested node, in order.
func (e *Encoder) SelectVictimsReply(rs []NodeVictims) {
	e.Uvarint(uint64(len(rs)))
	for i := range rs {
		e.U8(uint8(rs[i].Code))
		e.Strings(rs[i].Reasons)
		e.Uvarint(uint64(len(rs[i].Victims)))
		for _, v := range rs[i].Victims {
			e.Uvarint(uint64(v.Index))
			e.Bool(v.Violating)
		}
	}
}

// selectVictimsReply names the reply in a LimitError.
const selectVictimsReply = "select victims reply"

// SelectVictimsReply reads the reply body of FuncSelectVictims to the
// request nodes into dst (reusing its storage): at most one answer per
// node sent, each with at most MaxReasons reasons and at most one victim
// per pod offered on its node (see LimitError).
func (d *Decoder) SelectVictimsReply(dst []NodeVictims, nodes []NodeCandidates) []NodeVictims {
	n := d.countUpTo(3, top(len(nodes), selectVictimsReply, "answers", "nodes sent"))
	dst = dst[:0]
	for i := 0; i < n; i++ {
		slot := int64(nodes[i].Slot)
		var nv NodeVictims
		nv.Code = Code(d.U8())
		nv.Reasons = d.reasons(selectVictimsReply, "node slot", slot)
		if m := d.countUpTo(2, top(len(nodes[i].Pods), selectVictimsReply, "victims", "pods offered").in("node slot", slot)); m > 0 {
			nv.Victims = make([]VictimChoice, m)
			for j := range nv.Victims {
				idx := d.Uvarint()
				if idx > 1<<31 {
					d.failf("victim index out of range")
				}
				nv.Victims[j] = VictimChoice{Index: uint32(idx), Violating: d.Bool()}
			}
		}
		if d.err != nil {
			return dst[:0]
		}
		dst = append(dst, nv)
	}
	return dst
}

// RankCandidatesRequest appends the input of FuncRankCandidates.
func (e *Encoder) RankCandidatesRequest(cs []Candidate) {
	e.Uvarint(uint64(len(cs)))
	for i := range cs {
		e.U32(cs[i].Slot)
		e.Varint(int64(cs[i].NumPDBViolations))
		e.victimCandidates(cs[i].Victims)
	}
}

// RankCandidatesRequest reads the input of FuncRankCandidates.
func (d *Decoder) RankCandidatesRequest() []Candidate {
	n := d.Count(6)
	if n == 0 {
		return nil
	}
	cs := make([]Candidate, n)
	for i := range cs {
		cs[i].Slot = d.U32()
		cs[i].NumPDBViolations = d.Int32()
		cs[i].Victims = d.victimCandidates()
	}
	return cs
}

// RankCandidatesReply appends the reply body of FuncRankCandidates:
// candidate indexes, best first. It may leave candidates out (they are
// then never used) but must name at least one when there are any.
func (e *Encoder) RankCandidatesReply(order []int) {
	e.Uvarint(uint64(len(order)))
	for _, i := range order {
		e.Uvarint(uint64(i))
	}
}

// RankCandidatesReply reads the reply body of FuncRankCandidates to a
// request of candidates candidates into dst: at most one index per
// candidate sent (see LimitError).
func (d *Decoder) RankCandidatesReply(dst []int, candidates int) []int {
	n := d.countUpTo(1, top(candidates, "rank candidates reply", "indexes", "candidates sent"))
	dst = dst[:0]
	for i := 0; i < n; i++ {
		v := d.Uvarint()
		if v > 1<<31 {
			d.failf("candidate index out of range")
			return dst[:0]
		}
		dst = append(dst, int(v))
	}
	return dst
}
