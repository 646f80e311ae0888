package knative

import "slices"

// absSums answers Σ|x − v| over a multiset of values in O(log n) per x:
// the values that are 0 are only counted (a vpod leaves most pods, nodes
// and zones empty), the others are sorted with prefix sums. A plugin
// keeps one per policy entry and reuses its memory from step to step.
type absSums struct {
	zeros  int64
	vals   []int64
	prefix []int64 // prefix[i] = vals[0] + … + vals[i-1]
}

func (a *absSums) reset() {
	a.zeros = 0
	a.vals = a.vals[:0]
}

func (a *absSums) add(v int64) {
	if v == 0 {
		a.zeros++
		return
	}
	a.vals = append(a.vals, v)
}

// prepare sorts the values; call it after the last add.
func (a *absSums) prepare() {
	slices.Sort(a.vals)
	a.prefix = append(a.prefix[:0], 0)
	var s int64
	for _, v := range a.vals {
		s += v
		a.prefix = append(a.prefix, s)
	}
}

// sum is Σ|x − v| over every value added.
func (a *absSums) sum(x int64) int64 {
	n := len(a.vals)
	k, _ := slices.BinarySearch(a.vals, x) // vals[:k] < x <= vals[k:]
	below := x*int64(k) - a.prefix[k]
	above := (a.prefix[n] - a.prefix[k]) - x*int64(n-k)
	return a.zeros*abs64(x) + below + above
}
