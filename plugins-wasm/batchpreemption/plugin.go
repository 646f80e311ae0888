// Package batchpreemption is an example of swapping the preemption policy
// per profile: kube-scheduler's rules, except that pods in namespaces
// labelled scheduling.wasmsched.io/batch=true are preempted first. On a
// node, batch pods count as less important than every other pod (so they
// are chosen first and reprieved last); among nodes, the one with the
// fewest non-batch victims wins before the default tie-breaks apply.
package batchpreemption

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaultpreemption"
)

// Name is the plugin's name in a profile.
const Name = "BatchFirstPreemption"

// BatchLabel marks a namespace whose pods are preempted first.
const BatchLabel = "scheduling.wasmsched.io/batch"

// Registration lets a module register the plugin with guest.Register.
var Registration = plugin.Registration{Name: Name, New: New}

// Policy prefers victims from batch namespaces.
type Policy struct {
	h      plugin.Handle
	budget defaultpreemption.Budgets
}

// New builds the policy; it takes no args.
func New(_ *abi.Value, h plugin.Handle) (plugin.Plugin, error) { return &Policy{h: h}, nil }

// Name implements plugin.Plugin.
func (*Policy) Name() string { return Name }

func (p *Policy) batch(ns string) bool {
	l, ok := p.h.NamespaceLabels(ns)
	if !ok {
		return false
	}
	v, _ := l.Get(BatchLabel)
	return v == "true"
}

// SelectVictims implements plugin.PreemptionPlugin.
func (p *Policy) SelectVictims(_ *plugin.CycleState, preemptor *abi.Pod, _ *plugin.NodeInfo, cands []abi.VictimCandidate, out []abi.VictimChoice) ([]abi.VictimChoice, *plugin.Status) {
	order := defaultpreemption.LowerPriority(preemptor, cands, nil)
	defaultpreemption.SortByImportance(cands, order, func(a, b *abi.VictimCandidate) bool {
		if ba, bb := p.batch(a.Namespace), p.batch(b.Namespace); ba != bb {
			return bb // the non-batch pod is the more important one
		}
		return defaultpreemption.MoreImportant(a, b)
	})
	p.budget.Reset(defaultpreemption.PDBsOf(p.h))
	out = p.budget.Split(preemptor, cands, order, out)
	if len(out) == 0 {
		return out, plugin.NewStatus(abi.UnschedulableAndUnresolvable, defaultpreemption.ReasonNoVictims)
	}
	return out, nil
}

// RankCandidates implements plugin.PreemptionPlugin.
func (p *Policy) RankCandidates(_ *plugin.CycleState, _ *abi.Pod, cands []abi.Candidate, out []int) ([]int, *plugin.Status) {
	nonBatch := make([]int, len(cands))
	for i := range cands {
		for j := range cands[i].Victims {
			if !p.batch(cands[i].Victims[j].Namespace) {
				nonBatch[i]++
			}
		}
	}
	return defaultpreemption.Rank(cands, func(a, b int) int { return nonBatch[a] - nonBatch[b] }, out), nil
}
