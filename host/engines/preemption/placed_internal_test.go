package preemption

import (
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// TestPlacedSaysTheNodeAndItsVictims: the Success status of a preemption
// says, in kube-scheduler v1.37's words, which node it nominated and how
// many victims that node's candidate has (not the best-ranked one's,
// when the sync path fell back to another).
func TestPlacedSaysTheNodeAndItsVictims(t *testing.T) {
	ranked := []*candidate{{node: "n1", victims: []*abi.Pod{{}}}, {node: "n2", victims: []*abi.Pod{{}, {}}}}
	st := placed("n2", ranked)
	if !st.IsSuccess() || st.Message() != "preemption: found a potential placement for pod on node n2, preempting 2 victims" {
		t.Errorf("placed = %v %q", st.Code, st.Message())
	}
}
