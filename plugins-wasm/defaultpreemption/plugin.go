// Package defaultpreemption is kube-scheduler's DefaultPreemption victim
// rules as a wasmsched preemption policy (ABI v1.1). The host runs the dry
// runs and asks this plugin two things:
//
//   - which pods on a node may be removed, in which order they are worth
//     keeping, and which would violate a PodDisruptionBudget: every pod of
//     lower priority, most important first (higher priority, then earlier
//     start; no start time counts as now), split by budgets as
//     kube-scheduler does (each budget's disruptionsAllowed spent in that
//     order, pods in status.disruptedPods not counted again, one pod may
//     spend several budgets, unlabelled pods match none). KEP-3280: a pod
//     whose PriorityClass guards its budgets against this preemptor's
//     priority is not selectable when it would violate one.
//   - which candidate node is best: fewest budget violations, then the
//     lowest priority of the most important victim, then the smallest sum
//     of victim priorities (each offset by 2^31 so that negative
//     priorities do not favour more victims), then the fewest victims,
//     then the latest start among the most important victims, then the
//     first candidate.
//
// The ordering and ranking helpers are exported so that other policies
// (see package batchpreemption) can change one rule and keep the rest.
package defaultpreemption

import (
	"math"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Name is the plugin's name in a profile (the victim policy of the host's
// DefaultPreemption plugin).
const Name = "DefaultPreemptionPolicy"

// ReasonNoVictims is kube-scheduler's message for a node where nothing
// may be removed.
const ReasonNoVictims = "No preemption victims found for incoming pod"

var statusNoVictims = plugin.NewStatus(abi.UnschedulableAndUnresolvable, ReasonNoVictims)

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// Policy is the default preemption policy.
type Policy struct {
	h      plugin.Handle
	budget Budgets
	order  []int
}

var _ plugin.PreemptionPlugin = (*Policy)(nil)

// New builds the policy; it takes no args.
func New(args *abi.Value, h plugin.Handle) (plugin.Plugin, error) {
	if args != nil && args.Kind == abi.KindMap && len(args.Map) > 0 {
		return nil, errNoArgs
	}
	return &Policy{h: h}, nil
}

type errString string

func (e errString) Error() string { return string(e) }

const errNoArgs = errString("takes no args")

// Name implements plugin.Plugin.
func (*Policy) Name() string { return Name }

// SelectVictims implements plugin.PreemptionPlugin.
func (p *Policy) SelectVictims(_ *plugin.CycleState, preemptor *abi.Pod, _ *plugin.NodeInfo, cands []abi.VictimCandidate, out []abi.VictimChoice) ([]abi.VictimChoice, *plugin.Status) {
	p.order = LowerPriority(preemptor, cands, p.order[:0])
	SortByImportance(cands, p.order, MoreImportant)
	p.budget.Reset(PDBsOf(p.h))
	out = p.budget.Split(preemptor, cands, p.order, out)
	if len(out) == 0 {
		return out, statusNoVictims
	}
	return out, nil
}

// RankCandidates implements plugin.PreemptionPlugin.
func (p *Policy) RankCandidates(_ *plugin.CycleState, _ *abi.Pod, cands []abi.Candidate, out []int) ([]int, *plugin.Status) {
	return Rank(cands, nil, out), nil
}

// PDBsOf returns the budgets the host synced, if the handle has them.
func PDBsOf(h plugin.Handle) []abi.PDB {
	if ph, ok := h.(plugin.PDBHandle); ok {
		return ph.PDBs()
	}
	return nil
}

// LowerPriority appends to out the indexes of the candidates with lower
// priority than the preemptor (the host offers only those; this keeps
// the policy right on its own).
func LowerPriority(preemptor *abi.Pod, cands []abi.VictimCandidate, out []int) []int {
	for i := range cands {
		if cands[i].Priority < preemptor.Priority {
			out = append(out, i)
		}
	}
	return out
}

// StartOrNow is a candidate's start time, with "not started" as the
// latest possible time (kube-scheduler takes now, which is later than
// every recorded start).
func StartOrNow(t int64) int64 {
	if t == 0 {
		return math.MaxInt64
	}
	return t
}

// MoreImportant is kube-scheduler's MoreImportantPod: higher priority,
// then the one that started earlier.
func MoreImportant(a, b *abi.VictimCandidate) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return StartOrNow(a.StartTime) < StartOrNow(b.StartTime)
}

// SortByImportance sorts the indexes by more, most important first,
// stably (equal pods keep the host's order). Nodes hold tens of pods, so
// an insertion sort is enough and keeps TinyGo builds free of reflection.
func SortByImportance(cands []abi.VictimCandidate, idx []int, more func(a, b *abi.VictimCandidate) bool) {
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && more(&cands[idx[j]], &cands[idx[j-1]]); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

// Budgets walks pods in importance order spending PodDisruptionBudgets,
// as kube-scheduler's filterPodsWithPDBViolation does.
type Budgets struct {
	pdbs    []abi.PDB
	sels    []plugin.Selector
	valid   []bool
	allowed []int32
	hits    []int
}

// Reset loads the budgets for a new node. Selectors are compiled again
// only when the table changed (a sync replaced it), not per node.
func (b *Budgets) Reset(pdbs []abi.PDB) {
	if len(pdbs) == len(b.pdbs) && (len(pdbs) == 0 || &pdbs[0] == &b.pdbs[0]) && len(b.allowed) == len(pdbs) {
		for i := range pdbs {
			b.allowed[i] = pdbs[i].DisruptionsAllowed
		}
		return
	}
	b.pdbs = pdbs
	b.sels = b.sels[:0]
	b.valid = b.valid[:0]
	b.allowed = b.allowed[:0]
	for i := range pdbs {
		s, err := plugin.NewSelector(pdbs[i].Selector)
		// A nil, empty or invalid selector matches nothing here.
		b.valid = append(b.valid, err == nil && pdbs[i].Selector != nil && !s.Empty())
		b.sels = append(b.sels, s)
		b.allowed = append(b.allowed, pdbs[i].DisruptionsAllowed)
	}
}

// Split appends the pods of order (most important first) to out with
// their violating flag. A pod that would violate a budget its
// DisruptionGuard protects against this preemptor is left out and spends
// nothing (KEP-3280: it is not selectable).
func (b *Budgets) Split(preemptor *abi.Pod, cands []abi.VictimCandidate, order []int, out []abi.VictimChoice) []abi.VictimChoice {
	for _, i := range order {
		c := &cands[i]
		b.hits = b.hits[:0]
		violating := false
		if len(c.Labels) > 0 {
			for j := range b.pdbs {
				pdb := &b.pdbs[j]
				if !b.valid[j] || pdb.Namespace != c.Namespace || !b.sels[j].Matches(c.Labels) || disrupted(pdb, c.Name) {
					continue
				}
				b.hits = append(b.hits, j)
				if b.allowed[j]-1 < 0 {
					violating = true
				}
			}
		}
		if violating && c.DisruptionGuard != nil && preemptor.Priority < *c.DisruptionGuard {
			continue
		}
		for _, j := range b.hits {
			b.allowed[j]--
		}
		out = append(out, abi.VictimChoice{Index: uint32(i), Violating: violating})
	}
	return out
}

func disrupted(p *abi.PDB, name string) bool {
	for _, n := range p.DisruptedPods {
		if n == name {
			return true
		}
	}
	return false
}

// Summary is what the default ranking compares of one candidate.
type Summary struct {
	Violations  int32
	TopPriority int32
	PrioritySum int64
	Count       int
	// EarliestTop is the earliest start among the victims of TopPriority.
	EarliestTop int64
}

// Summarize computes a candidate's Summary.
func Summarize(c *abi.Candidate) Summary {
	s := Summary{Violations: c.NumPDBViolations, Count: len(c.Victims), TopPriority: math.MinInt32, EarliestTop: math.MinInt64}
	for i := range c.Victims {
		v := &c.Victims[i]
		s.PrioritySum += int64(v.Priority) + 1<<31
		st := StartOrNow(v.StartTime)
		switch {
		case i == 0 || v.Priority > s.TopPriority:
			s.TopPriority, s.EarliestTop = v.Priority, st
		case v.Priority == s.TopPriority && st < s.EarliestTop:
			s.EarliestTop = st
		}
	}
	return s
}

// Better is kube-scheduler's pickOneNodeForPreemption order: it reports
// whether a beats b; neither beating the other is a tie (the earlier
// candidate wins).
func Better(a, b *Summary) bool {
	if a.Violations != b.Violations {
		return a.Violations < b.Violations
	}
	if a.TopPriority != b.TopPriority {
		return a.TopPriority < b.TopPriority
	}
	if a.PrioritySum != b.PrioritySum {
		return a.PrioritySum < b.PrioritySum
	}
	if a.Count != b.Count {
		return a.Count < b.Count
	}
	return a.EarliestTop > b.EarliestTop
}

// Rank appends the candidate indexes to out, best first by first (which
// may be nil) and then Better, stable on ties.
func Rank(cands []abi.Candidate, first func(a, b int) int, out []int) []int {
	sums := make([]Summary, len(cands))
	for i := range cands {
		sums[i] = Summarize(&cands[i])
		out = append(out, i)
	}
	better := func(a, b int) bool {
		if first != nil {
			if c := first(a, b); c != 0 {
				return c < 0
			}
		}
		return Better(&sums[a], &sums[b])
	}
	// A binary insertion sort: stable like the plain one (each candidate
	// goes after every one it does not beat), with n log n comparisons
	// instead of n² — a dry run over 5000 nodes ranks 500 candidates.
	for i := 1; i < len(out); i++ {
		x := out[i]
		lo, hi := 0, i
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if better(x, out[m]) {
				hi = m
			} else {
				lo = m + 1
			}
		}
		copy(out[lo+1:i+1], out[lo:i])
		out[lo] = x
	}
	return out
}
