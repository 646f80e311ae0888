package defaultpreemption

import (
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/wasmsched/wasmsched/abi"
)

// Rank's binary insertion sort orders exactly as a stable sort by the same
// rules: ties (many, here) keep the host's order, with and without a first
// rule.
func TestRankIsAStableSort(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		n := rng.Intn(60)
		cands := make([]abi.Candidate, n)
		for i := range cands {
			cands[i].NumPDBViolations = int32(rng.Intn(2))
			for k := rng.Intn(3) + 1; k > 0; k-- {
				cands[i].Victims = append(cands[i].Victims, abi.VictimCandidate{Priority: int32(rng.Intn(3)), StartTime: int64(rng.Intn(3))})
			}
		}
		key := make([]int, n)
		for i := range key {
			key[i] = rng.Intn(3)
		}
		for _, first := range []func(a, b int) int{nil, func(a, b int) int { return key[a] - key[b] }} {
			want := make([]int, n)
			sums := make([]Summary, n)
			for i := range want {
				want[i] = i
				sums[i] = Summarize(&cands[i])
			}
			sort.SliceStable(want, func(x, y int) bool {
				a, b := want[x], want[y]
				if first != nil {
					if c := first(a, b); c != 0 {
						return c < 0
					}
				}
				return Better(&sums[a], &sums[b])
			})
			if got := Rank(cands, first, nil); !reflect.DeepEqual(got, want) && n > 0 {
				t.Fatalf("round %d (first rule %v): Rank %v, stable sort %v", round, first != nil, got, want)
			}
		}
	}
}
