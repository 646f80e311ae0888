package decision

import (
	"cmp"
	"slices"
	"time"
)

// VPod is one Schedule call of a vpod scheduler (a Policy strategy):
// per placement or removal step, every candidate adapter pod with the
// predicate that refused it or its raw score per priority, and the pod
// the step chose; the reservations the call started from; the
// placements it returned. The steps fill it from the modules' own
// batched replies.
//
// Bounded: at most Limits.MaxScored steps (the first ones; StepsDropped
// counts the rest) and, per step, at most Limits.MaxScored candidates
// (the chosen one, then the highest totals, then the refused;
// CandidatesDropped counts the rest).
type VPod struct {
	VPod        string    `json:"vpod"`
	Scheduler   string    `json:"scheduler"`
	StatefulSet string    `json:"statefulSet"`
	Time        time.Time `json:"time"`
	VReplicas   int32     `json:"vreplicas"`
	// Existing are the placements the call started from.
	Existing []VPodPlacement `json:"existing,omitempty"`
	// Reserved are the vreplicas other vpods hold on each pod that were
	// placed but not yet seen committed: the step states count them.
	Reserved []VPodPlacement `json:"reserved,omitempty"`
	// Predicates and Priorities name the policy's entries; a
	// candidate's Scores follow Priorities' order.
	Predicates   []string       `json:"predicates,omitempty"`
	Priorities   []VPodPriority `json:"priorities,omitempty"`
	Steps        []VPodStep     `json:"steps,omitempty"`
	StepsDropped int            `json:"stepsDropped,omitempty"`
	// Placements are what the call returned; Left the vreplicas it could
	// not place (the autoscaler was asked for more pods).
	Placements []VPodPlacement `json:"placements,omitempty"`
	Left       int32           `json:"left,omitempty"`
	Error      string          `json:"error,omitempty"`

	limits Limits
}

// VPodPriority is a priority of the policy, with its weight; Summed is
// false for a priority Knative computes but does not add to the total.
type VPodPriority struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight"`
	Summed bool   `json:"summed"`
}

// VPodPlacement is vreplicas on one adapter pod.
type VPodPlacement struct {
	Pod       string `json:"pod"`
	VReplicas int32  `json:"vreplicas"`
}

// Step operations.
const (
	StepPlace  = "place"
	StepRemove = "remove"
)

// VPodStep is one vreplica placed or removed.
type VPodStep struct {
	Step int    `json:"step"`
	Op   string `json:"op"`
	// Candidates are the adapter pods evaluated; Feasible counts those
	// every predicate passed.
	Candidates        []VPodCandidate `json:"candidates,omitempty"`
	CandidatesDropped int             `json:"candidatesDropped,omitempty"`
	Feasible          int             `json:"feasible"`
	// Chosen is the pod the step placed the vreplica on (or took it
	// from); Tied counts the other feasible pods with its total (the
	// choice among them was random). Why says why nothing was chosen.
	Chosen string `json:"chosen,omitempty"`
	Tied   int    `json:"tied,omitempty"`
	Why    string `json:"why,omitempty"`
}

// VPodCandidate is one adapter pod a step evaluated.
type VPodCandidate struct {
	Pod string `json:"pod"`
	// Rejected is the predicate that refused the pod, with its code and
	// reason ("" when every predicate passed).
	Rejected string `json:"rejected,omitempty"`
	Code     string `json:"code,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Scores are the raw scores per priority (VPod.Priorities' order);
	// Total the weighted sum the choice compared.
	Scores []int64 `json:"scores,omitempty"`
	Total  int64   `json:"total"`
}

// NewVPod returns an empty record of a Schedule call, bounded by l.
func NewVPod(vpod, scheduler, statefulSet string, vreplicas int32, at time.Time, l Limits) *VPod {
	return &VPod{VPod: vpod, Scheduler: scheduler, StatefulSet: statefulSet, VReplicas: vreplicas, Time: at, limits: l.or()}
}

// WantStep reports whether the record keeps another step.
func (v *VPod) WantStep() bool {
	if len(v.Steps) >= v.limits.MaxScored {
		v.StepsDropped++
		return false
	}
	return true
}

// AddStep keeps a step: the chosen candidate first, then the feasible
// ones by total (highest first), then the refused, cut to the bound
// (added to the CandidatesDropped the caller counted, when it kept only
// some already). MaxCandidates says how many a caller needs to give.
func (v *VPod) AddStep(st VPodStep) {
	slices.SortStableFunc(st.Candidates, func(a, b VPodCandidate) int {
		ra, rb := rank(&a, st.Chosen), rank(&b, st.Chosen)
		if ra != rb {
			return cmp.Compare(ra, rb)
		}
		if ra == 1 {
			return cmp.Compare(b.Total, a.Total)
		}
		return 0
	})
	keep := min(len(st.Candidates), v.limits.MaxScored)
	st.CandidatesDropped += len(st.Candidates) - keep
	st.Candidates = st.Candidates[:keep]
	for i := range st.Candidates {
		st.Candidates[i].Reason = cut(st.Candidates[i].Reason, v.limits.MaxReasonBytes)
	}
	v.Steps = append(v.Steps, st)
}

func rank(c *VPodCandidate, chosen string) int {
	switch {
	case c.Pod == chosen && chosen != "":
		return 0
	case c.Rejected == "":
		return 1
	}
	return 2
}

// AddReserved records reservations considered, within the bound.
func (v *VPod) AddReserved(pod string, n int32) {
	if len(v.Reserved) < v.limits.MaxNodes {
		v.Reserved = append(v.Reserved, VPodPlacement{Pod: pod, VReplicas: n})
	}
}

// SetError records the call's failure.
func (v *VPod) SetError(err error) {
	if err != nil {
		v.Error = cut(err.Error(), 4*v.limits.MaxReasonBytes)
	}
}

// ChosenPods are the pods the kept steps chose, in step order.
func (v *VPod) ChosenPods() []string {
	var out []string
	for _, s := range v.Steps {
		if s.Chosen != "" {
			out = append(out, s.Chosen)
		}
	}
	return out
}

// VPodAutoscale is one autoscaler pass of a vpod scheduler: the demand
// it saw, the replicas it wanted and why, and the bounds it applied.
type VPodAutoscale struct {
	Scheduler   string    `json:"scheduler"`
	StatefulSet string    `json:"statefulSet"`
	Time        time.Time `json:"time"`
	// Pending and Expected are the vreplicas not yet placed and in all
	// over the listed vpods (those whose last Schedule failed in a
	// module not counted); PendingVPods names the vpods with pending
	// vreplicas (at most Limits.MaxNodes).
	Pending      int64    `json:"pending"`
	Expected     int64    `json:"expected"`
	PendingVPods []string `json:"pendingVPods,omitempty"`
	Replicas     int32    `json:"replicas"`
	Target       int32    `json:"target"`
	ScaleFactor  int32    `json:"scaleFactor"`
	// Wanted is the uncapped target when a bound applied: Bounded by
	// maxScaleUpStep (Bound, the vpods' Need), Capped by maxReplicas.
	Wanted    int32  `json:"wanted,omitempty"`
	Bounded   bool   `json:"bounded,omitempty"`
	Bound     int32  `json:"bound,omitempty"`
	Need      int32  `json:"need,omitempty"`
	Capped    bool   `json:"capped,omitempty"`
	Scaled    bool   `json:"scaled"`
	Compacted bool   `json:"compacted,omitempty"`
	Why       string `json:"why"`
	Error     string `json:"error,omitempty"`
}

// MaxCandidates is how many candidates a step of the record keeps.
func (v *VPod) MaxCandidates() int { return v.limits.MaxScored }
