package preemption

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DefaultVictimPolicy is the Wasm plugin that chooses victims unless a
// profile names another: kube-scheduler's rules, in the default bundle.
const DefaultVictimPolicy = "DefaultPreemptionPolicy"

// Args are DefaultPreemption's pluginConfig args. kube-scheduler's two
// candidate-search knobs, plus wasmsched's: the execution mode and the
// victim policy.
type Args struct {
	// MinCandidateNodesPercentage and MinCandidateNodesAbsolute bound how
	// many candidate nodes the dry runs look for: max(percentage of the
	// potential nodes, absolute), at most all of them. Defaults 10 and 100.
	MinCandidateNodesPercentage int32 `json:"minCandidateNodesPercentage"`
	MinCandidateNodesAbsolute   int32 `json:"minCandidateNodesAbsolute"`
	// AsyncPreemption (default true) makes the API calls in a goroutine
	// after nominating the pod (KEP-4832); false makes them in the
	// scheduling cycle, for comparison.
	AsyncPreemption bool `json:"asyncPreemption"`
	// VictimPolicy names the Wasm preemption policy plugin (ABI v1.1).
	VictimPolicy string `json:"victimPolicy"`
}

// DefaultArgs are kube-scheduler's defaults, asynchronous.
func DefaultArgs() Args {
	return Args{MinCandidateNodesPercentage: 10, MinCandidateNodesAbsolute: 100, AsyncPreemption: true, VictimPolicy: DefaultVictimPolicy}
}

// ParseArgs reads args (nil means defaults) strictly and validates them;
// errors name the field.
func ParseArgs(raw []byte) (Args, error) {
	a := DefaultArgs()
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&a); err != nil {
			return Args{}, fmt.Errorf("%w", err)
		}
	}
	switch {
	case a.MinCandidateNodesPercentage < 0 || a.MinCandidateNodesPercentage > 100:
		return Args{}, fmt.Errorf("minCandidateNodesPercentage: %d is outside 0..100", a.MinCandidateNodesPercentage)
	case a.MinCandidateNodesAbsolute < 0:
		return Args{}, fmt.Errorf("minCandidateNodesAbsolute: %d must not be negative", a.MinCandidateNodesAbsolute)
	case a.MinCandidateNodesPercentage == 0 && a.MinCandidateNodesAbsolute == 0:
		return Args{}, fmt.Errorf("minCandidateNodesPercentage and minCandidateNodesAbsolute must not both be 0")
	case a.VictimPolicy == "":
		return Args{}, fmt.Errorf("victimPolicy: must not be empty")
	}
	return a, nil
}

// NumCandidates is how many candidates the dry runs look for among n
// potential nodes.
func (a Args) NumCandidates(n int) int {
	c := n * int(a.MinCandidateNodesPercentage) / 100
	c = max(c, int(a.MinCandidateNodesAbsolute))
	return min(c, n)
}
