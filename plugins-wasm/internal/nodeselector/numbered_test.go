package nodeselector

import (
	"math/rand/v2"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugintest"
)

// tableHandle numbers strings with a fixed table, as the guest's does.
type tableHandle struct {
	plugintest.Handle
	t *abi.StringTable
}

func (h *tableHandle) StringID(s string) abi.StrID { return h.t.Lookup(s) }

// TestNumberedTermsMatchAsStringsDo checks node selector terms matched by
// numbers (node labels numbered as records are, terms numbered through
// the handle) against the same terms matched by strings, over random
// labels and terms where only part of the vocabulary is numbered.
func TestNumberedTermsMatchAsStringsDo(t *testing.T) {
	vocab := []string{"zone", "disk", "gpu", "a", "b", "ssd", "1", "7"}
	var table abi.StringTable
	if err := table.Append(0, vocab[:4]); err != nil {
		t.Fatal(err)
	}
	h := &tableHandle{t: &table}
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(from []string) string { return from[rng.IntN(len(from))] }
	keys, values := vocab[:3], vocab[3:]
	ops := []abi.Operator{abi.OpIn, abi.OpNotIn, abi.OpExists, abi.OpDoesNotExist, abi.OpGt, abi.OpLt}
	for i := 0; i < 5000; i++ {
		node := abi.Node{Name: "n"}
		seen := map[string]bool{}
		for n := rng.IntN(4); n > 0; n-- {
			if k := pick(keys); !seen[k] {
				seen[k] = true
				node.Labels = append(node.Labels, abi.Label{Key: k, Value: pick(values)})
			}
		}
		numbered := node
		numbered.Labels = append(abi.Labels(nil), node.Labels...)
		table.Number(numbered.Labels)
		var term abi.NodeSelectorTerm
		for n := 1 + rng.IntN(2); n > 0; n-- {
			r := abi.Requirement{Key: pick(keys), Operator: ops[rng.IntN(len(ops))]}
			switch r.Operator {
			case abi.OpIn, abi.OpNotIn:
				r.Values = []string{pick(values), pick(values)}
			case abi.OpGt, abi.OpLt:
				r.Values = []string{pick([]string{"1", "7"})}
			}
			term.MatchExpressions = append(term.MatchExpressions, r)
		}
		ns := &abi.NodeSelector{Terms: []abi.NodeSelectorTerm{term}}
		plain, err := Compile(ns, "")
		if err != nil {
			t.Fatal(err)
		}
		fast, _ := Compile(ns, "")
		fast.Number(h)
		if want, got := plain.Matches(&node), fast.Matches(&numbered); got != want {
			t.Fatalf("term %+v on %+v: numbered %v, strings %v", term, numbered.Labels, got, want)
		}
		pod := &abi.Pod{NodeSelector: abi.Labels{{Key: pick(keys), Value: pick(values)}}}
		numberedPod := &abi.Pod{NodeSelector: append(abi.Labels(nil), pod.NodeSelector...)}
		table.Number(numberedPod.NodeSelector)
		if want, got := ForPod(pod, nil).Matches(&node), ForPod(numberedPod, h).Matches(&numbered); got != want {
			t.Fatalf("nodeSelector %+v on %+v: numbered %v, strings %v", pod.NodeSelector, numbered.Labels, got, want)
		}
	}
}
