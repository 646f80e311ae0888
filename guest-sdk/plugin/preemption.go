package plugin

import "github.com/wasmsched/wasmsched/abi"

// PreemptionPlugin is a preemption policy (ABI v1.1). The host runs the
// dry runs — it removes pods from a node in every module's what-if view,
// re-runs the filters, and gives pods back one at a time while the
// preemptor still fits — and asks the policy only what is policy:
//
//   - SelectVictims: of the pods on a node that have lower priority than
//     the preemptor (the host offers no others), which may be removed, in which order they are worth
//     keeping (most important first: the host reprieves in this order,
//     PDB-violating pods before the others), and which would violate a
//     PodDisruptionBudget (PDBHandle.PDBs). Returning no victims (or a
//     rejection) makes the node no candidate.
//   - RankCandidates: the nodes where the preemptor fits after removing
//     their victims, best first. The host takes the first; with KEP-3280
//     evictions refused (HTTP 429) it moves on to the next.
//
// The candidates, their strings and labels are valid only during the call
// (the SDK decodes them into storage it reuses): copy what must outlive it.
type PreemptionPlugin interface {
	Plugin
	// SelectVictims appends to out the chosen pods of candidates, as
	// indexes into candidates with their violating flag. node is the
	// mirror's view of the node (nil if the mirror lacks it).
	SelectVictims(state *CycleState, preemptor *abi.Pod, node *NodeInfo, candidates []abi.VictimCandidate, out []abi.VictimChoice) ([]abi.VictimChoice, *Status)
	// RankCandidates appends to out the indexes of candidates, best first;
	// it may leave some out but must keep at least one.
	RankCandidates(state *CycleState, preemptor *abi.Pod, candidates []abi.Candidate, out []int) ([]int, *Status)
}

// PDBHandle is implemented by the SDK's Handle from ABI v1.1: the
// PodDisruptionBudget table the host syncs to modules with a preemption
// plugin. A plugin type-asserts its Handle to reach it.
type PDBHandle interface {
	// PDBs lists every budget, sorted by namespace and name. Do not
	// modify them. A sync that changes the table returns a new slice, so a
	// policy may cache what it derives from one (keyed by &PDBs()[0]).
	PDBs() []abi.PDB
}
