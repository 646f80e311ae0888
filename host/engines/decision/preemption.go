package decision

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// Preemption is why PostFilter chose its victims, attached to the
// scheduling record of the attempt (Scheduling.Preemption): every
// candidate node the dry runs found, with its victims and the
// PodDisruptionBudgets they violate, the order the victim policy ranked
// them in, which candidate won and why, the nomination, and — as the
// API calls that remove the victims report back, possibly after the
// cycle (asynchronous preemption) — what became of each victim.
//
// The fields set by the cycle are read-only once the record is added to
// a sink; the outcome fields are written under a lock by the preemption
// goroutine and read through MarshalJSON or Execution.
type Preemption struct {
	PreemptionDecision

	mu   sync.Mutex
	exec Execution
}

// PreemptionDecision is what the cycle decided, written once by it; the
// victims' outcomes, which come later, are Preemption's Execution.
type PreemptionDecision struct {
	Pod     string `json:"pod"`
	Profile string `json:"profile,omitempty"`
	// Policy is the victim policy that chose victims and ranked the
	// candidates.
	Policy string `json:"policy,omitempty"`
	// Async: the victims are removed after the cycle (KEP-4832).
	Async bool `json:"async,omitempty"`
	// Ineligible says why the pod may not preempt at all ("" when it
	// may).
	Ineligible string `json:"ineligible,omitempty"`
	// PotentialNodes is how many nodes a removal could help (rejected
	// as Unschedulable, not UnschedulableAndUnresolvable).
	PotentialNodes int `json:"potentialNodes"`
	// Candidates are the nodes the dry runs found room on, in the order
	// the policy ranked them (best first); CandidatesDropped counts those
	// past Limits.MaxNodes.
	Candidates        []Candidate `json:"candidates,omitempty"`
	CandidatesDropped int         `json:"candidatesDropped,omitempty"`
	// NoCandidate groups the nodes that gave no candidate by reason
	// (Plugin is empty), most nodes first, at most MaxReasons.
	NoCandidate []ReasonCount `json:"noCandidate,omitempty"`
	// Chosen is the candidate ranked first, whose victims the cycle
	// acts on; Why says what set it above the runner-up.
	Chosen string `json:"chosen,omitempty"`
	Why    string `json:"why,omitempty"`
	// Nominated is the node the pod was nominated to in the cycle.
	Nominated string `json:"nominated,omitempty"`
	// Message is the failure the pod got when preemption found nothing.
	Message string `json:"message,omitempty"`
}

// Candidate is one node preemption could free for the pod, with the
// facts kube-scheduler's pickOneNodeForPreemption compares.
type Candidate struct {
	Node string `json:"node"`
	// Victims are namespace/name, at most Limits.MaxNodes; VictimsDropped
	// counts the rest (NumVictims counts them all).
	Victims        []string `json:"victims"`
	VictimsDropped int      `json:"victimsDropped,omitempty"`
	PDBViolations  int      `json:"pdbViolations"`
	// HighestPriority is the highest victim priority; PrioritySum the sum
	// of the victims' priorities (each offset by 2^31, as kube-scheduler
	// sums them); EarliestStart the earliest start (Unix nanoseconds; 0:
	// not started) among the victims of HighestPriority.
	HighestPriority int32 `json:"highestPriority"`
	PrioritySum     int64 `json:"prioritySum"`
	NumVictims      int   `json:"numVictims"`
	EarliestStart   int64 `json:"earliestStart,omitempty"`
}

// Execution is what carrying out the preemption did: the candidate whose
// victims were removed (a refused eviction moves to the next one, under
// KEP-3280), and each victim's outcome.
type Execution struct {
	// Used is the node whose victims were all removed ("" while running
	// or after a failure); Refused the candidates abandoned after a 429.
	Used    string   `json:"used,omitempty"`
	Refused []string `json:"refused,omitempty"`
	// Victims are the outcomes in the order they came, at most
	// Limits.MaxNodes (VictimsDropped counts the rest).
	Victims        []VictimOutcome `json:"victims,omitempty"`
	VictimsDropped int             `json:"victimsDropped,omitempty"`
	Done           bool            `json:"done"`
	Error          string          `json:"error,omitempty"`
}

// Victim outcomes.
const (
	VictimDeleted  = "deleted"
	VictimEvicted  = "evicted"
	VictimRefused  = "refused"    // the Eviction API said 429
	VictimGone     = "gone"       // not found: already removed
	VictimFailed   = "failed"     // another API error
	VictimLeaving  = "leaving"    // already terminating: nothing to do
	VictimDryRunOK = "dry-run-ok" // a guarded victim's dry-run eviction passed
	VictimDryRunNo = "dry-run-refused"
	VictimFellBack = "deleted-after-refusal" // 429, then deleted (KEP-3280 best effort)
)

// VictimOutcome is what one API call did to one victim.
type VictimOutcome struct {
	Victim  string `json:"victim"`
	Node    string `json:"node"`
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// NewPreemption returns an empty record for PostFilter to fill.
func NewPreemption(pod, profile, policy string, async bool) *Preemption {
	return &Preemption{PreemptionDecision: PreemptionDecision{Pod: pod, Profile: profile, Policy: policy, Async: async}}
}

// SetCandidates records the ranked candidates (best first), cut to l,
// and names the winner and why it won over the runner-up.
func (p *Preemption) SetCandidates(l Limits, ranked []Candidate) {
	l = l.or()
	keep := min(len(ranked), l.MaxNodes)
	p.CandidatesDropped = len(ranked) - keep
	p.Candidates = ranked[:keep]
	for i := range p.Candidates {
		c := &p.Candidates[i]
		if len(c.Victims) > l.MaxNodes {
			c.VictimsDropped = len(c.Victims) - l.MaxNodes
			c.Victims = c.Victims[:l.MaxNodes]
		}
	}
	if len(ranked) == 0 {
		return
	}
	p.Chosen = ranked[0].Node
	if len(ranked) == 1 {
		p.Why = "the only candidate"
		return
	}
	p.Why = WhyWon(&ranked[0], &ranked[1])
}

// SetNoCandidate groups the reasons nodes gave no candidate (node →
// reasons), bounded by l.
func (p *Preemption) SetNoCandidate(l Limits, byNode map[string][]string) {
	l = l.or()
	counts := map[string]int{}
	for _, rs := range byNode {
		for _, r := range rs {
			counts[r]++
		}
	}
	for r, n := range counts {
		p.NoCandidate = append(p.NoCandidate, ReasonCount{Reason: cut(r, l.MaxReasonBytes), Nodes: n})
	}
	slices.SortFunc(p.NoCandidate, func(a, b ReasonCount) int {
		if c := cmp.Compare(b.Nodes, a.Nodes); c != 0 {
			return c
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	p.NoCandidate = p.NoCandidate[:min(len(p.NoCandidate), l.MaxReasons)]
}

// WhyWon names the first of kube-scheduler's pickOneNodeForPreemption
// criteria that sets a (ranked first by the victim policy) above b (the
// runner-up). The policy decides the order; this says which criterion
// that order agrees with, or that it follows the policy's own rule.
func WhyWon(a, b *Candidate) string {
	switch {
	case a.PDBViolations != b.PDBViolations:
		if a.PDBViolations < b.PDBViolations {
			return fmt.Sprintf("fewest PDB violations (%d; runner-up %s: %d)", a.PDBViolations, b.Node, b.PDBViolations)
		}
	case a.HighestPriority != b.HighestPriority:
		if a.HighestPriority < b.HighestPriority {
			return fmt.Sprintf("lowest highest-priority victim (%d; runner-up %s: %d)", a.HighestPriority, b.Node, b.HighestPriority)
		}
	case a.PrioritySum != b.PrioritySum:
		if a.PrioritySum < b.PrioritySum {
			return fmt.Sprintf("smallest sum of victim priorities (runner-up %s's is %d higher)", b.Node, b.PrioritySum-a.PrioritySum)
		}
	case a.NumVictims != b.NumVictims:
		if a.NumVictims < b.NumVictims {
			return fmt.Sprintf("fewest victims (%d; runner-up %s: %d)", a.NumVictims, b.Node, b.NumVictims)
		}
	case a.EarliestStart != b.EarliestStart:
		if startOrLatest(a.EarliestStart) > startOrLatest(b.EarliestStart) {
			return fmt.Sprintf("latest start of its highest-priority victims (runner-up %s's started earlier)", b.Node)
		}
	default:
		return fmt.Sprintf("tied with runner-up %s on every criterion; the earlier in the dry runs' order wins", b.Node)
	}
	return fmt.Sprintf("the victim policy's own ranking (by kube-scheduler's criteria runner-up %s would win)", b.Node)
}

func startOrLatest(t int64) int64 {
	if t == 0 {
		return 1<<63 - 1
	}
	return t
}

// Victim records one victim's outcome; safe to call from any goroutine.
func (p *Preemption) Victim(l Limits, victim, node, outcome string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.exec.Victims) >= l.or().MaxNodes {
		p.exec.VictimsDropped++
		return
	}
	vo := VictimOutcome{Victim: victim, Node: node, Outcome: outcome}
	if err != nil {
		vo.Error = cut(err.Error(), l.or().MaxReasonBytes)
	}
	p.exec.Victims = append(p.exec.Victims, vo)
}

// Refused records that a candidate was abandoned after a 429.
func (p *Preemption) Refused(node string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.exec.Refused) < DefaultLimits.MaxNodes {
		p.exec.Refused = append(p.exec.Refused, node)
	}
}

// Finish records the end of the execution: the node used ("" on
// failure) and the error.
func (p *Preemption) Finish(used string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exec.Used, p.exec.Done = used, true
	if err != nil {
		p.exec.Error = cut(err.Error(), 4*DefaultLimits.MaxReasonBytes)
	}
}

// Execution returns a copy of what carrying out the preemption did so
// far.
func (p *Preemption) Execution() Execution {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.exec
	e.Victims = slices.Clone(e.Victims)
	e.Refused = slices.Clone(e.Refused)
	return e
}

// Victims returns the victims of the chosen candidate (nil without one).
func (p *Preemption) Victims() []string {
	if len(p.Candidates) == 0 {
		return nil
	}
	return p.Candidates[0].Victims
}

// preemptionJSON is Preemption's wire form: its fields and a snapshot of
// the execution.
type preemptionJSON struct {
	PreemptionDecision
	Execution *Execution `json:"execution,omitempty"`
}

// MarshalJSON writes the record with a consistent snapshot of its
// execution, which a preemption goroutine may still be writing.
func (p *Preemption) MarshalJSON() ([]byte, error) {
	j := preemptionJSON{PreemptionDecision: p.PreemptionDecision}
	if e := p.Execution(); e.Done || len(e.Victims) > 0 || len(e.Refused) > 0 {
		j.Execution = &e
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote (tests, tools reading -o
// json).
func (p *Preemption) UnmarshalJSON(b []byte) error {
	var j preemptionJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	p.PreemptionDecision = j.PreemptionDecision
	if j.Execution != nil {
		p.mu.Lock()
		p.exec = *j.Execution
		p.mu.Unlock()
	}
	return nil
}

// mentions reports whether key is a victim of the chosen candidate or
// one the execution acted on (a refusal moves it to later candidates).
func (p *Preemption) mentions(key string) bool {
	if slices.Contains(p.Victims(), key) {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, v := range p.exec.Victims {
		if v.Victim == key {
			return true
		}
	}
	return false
}
