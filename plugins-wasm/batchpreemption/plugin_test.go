package batchpreemption

import (
	"reflect"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

type handle struct{ plugin.Handle }

func (handle) NamespaceLabels(ns string) (abi.Labels, bool) {
	if ns == "jobs" {
		return abi.Labels{{Key: BatchLabel, Value: "true"}}, true
	}
	return nil, ns == "web"
}

func vc(ns, name string, prio int32) abi.VictimCandidate {
	return abi.VictimCandidate{UID: name, Namespace: ns, Name: name, Priority: prio, StartTime: 1}
}

func TestBatchPodsGoFirst(t *testing.T) {
	pl, _ := New(nil, handle{})
	p := pl.(*Policy)
	pods := []abi.VictimCandidate{vc("web", "w-low", 1), vc("jobs", "j-high", 50), vc("web", "w-high", 40)}
	got, st := p.SelectVictims(nil, &abi.Pod{Priority: 100}, nil, pods, nil)
	var names []string
	for _, v := range got {
		names = append(names, pods[v.Index].Name)
	}
	// Most important first: the web pods by priority, the batch pod last
	// (so it is the last reprieved and the first to go).
	if !st.IsSuccess() || !reflect.DeepEqual(names, []string{"w-high", "w-low", "j-high"}) {
		t.Fatalf("order %v (%s)", names, st.Message())
	}
	cands := []abi.Candidate{
		{Victims: []abi.VictimCandidate{vc("web", "a", 1)}},
		{Victims: []abi.VictimCandidate{vc("jobs", "b", 90), vc("jobs", "c", 90)}},
	}
	order, _ := p.RankCandidates(nil, &abi.Pod{Priority: 100}, cands, nil)
	if !reflect.DeepEqual(order, []int{1, 0}) {
		t.Fatalf("rank %v: the node with only batch victims must win over the default order", order)
	}
}
