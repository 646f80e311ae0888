package noderesources

import (
	"math"
	"math/bits"

	"github.com/wasmsched/wasmsched/abi"
)

// The scoring functions of kube-scheduler's noderesources package, with
// its integer arithmetic (truncating division, the same operand order) so
// that scores match it exactly.

// maxUtilization is 100%, the top of a shape's utilization axis.
const maxUtilization = 100

// leastRequestedScore favours free capacity: (capacity-requested)*100/capacity.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * abi.MaxScore / capacity
}

// mostRequestedScore favours full nodes: requested*100/capacity, with
// requested capped at capacity (non-zero defaults can push it over).
func mostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	if requested > capacity {
		requested = capacity
	}
	return requested * abi.MaxScore / capacity
}

// shapePoint is a RequestedToCapacityRatio shape point with its score
// already scaled from 0..10 to 0..MaxScore.
type shapePoint struct {
	utilization int64
	score       int64
}

// brokenLinear evaluates the piecewise linear function through shape at
// utilization p: flat before the first and after the last point.
func brokenLinear(shape []shapePoint, p int64) int64 {
	for i := range shape {
		if p <= shape[i].utilization {
			if i == 0 {
				return shape[0].score
			}
			a, b := &shape[i-1], &shape[i]
			return a.score + (b.score-a.score)*(p-a.utilization)/(b.utilization-a.utilization)
		}
	}
	return shape[len(shape)-1].score
}

// scaledUtilization is requested*max/capacity for 0 <= requested <=
// capacity, computed in 128 bits when the product would overflow int64.
func scaledUtilization(requested, capacity, max int64) int64 {
	if capacity <= 0 || requested <= 0 {
		return 0
	}
	if requested >= capacity {
		return max
	}
	if requested <= math.MaxInt64/max {
		return requested * max / capacity
	}
	// hi < capacity because requested < capacity, so Div64 cannot panic.
	hi, lo := bits.Mul64(uint64(requested), uint64(max))
	quo, _ := bits.Div64(hi, lo, uint64(capacity))
	return int64(quo)
}

// ratioScore is one resource's RequestedToCapacityRatio score.
func ratioScore(shape []shapePoint, requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return brokenLinear(shape, maxUtilization)
	}
	return brokenLinear(shape, scaledUtilization(requested, capacity, maxUtilization))
}

// balancedScore is BalancedAllocation's (1 - std) * MaxScore over the
// resources' requested/allocatable fractions (each capped at 1), skipping
// resources with no allocatable. For two resources upstream uses
// |f1-f2|/2, which differs from the general formula in the last float bit,
// so both are kept. Fractions are recomputed in a second pass instead of
// being stored, to stay allocation-free.
func balancedScore(requested, allocatable []int64) int64 {
	var n int
	var total, f0, f1 float64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		f := fraction(requested[i], allocatable[i])
		switch n {
		case 0:
			f0 = f
		case 1:
			f1 = f
		}
		total += f
		n++
	}
	std := 0.0
	switch {
	case n == 2:
		std = math.Abs((f0 - f1) / 2)
	case n > 2:
		mean := total / float64(n)
		var sum float64
		for i := range requested {
			if allocatable[i] == 0 {
				continue
			}
			d := fraction(requested[i], allocatable[i]) - mean
			sum = sum + float64(d*d) // the conversion forbids FMA fusion, as on amd64
		}
		std = math.Sqrt(sum / float64(n))
	}
	return int64((1 - std) * float64(abi.MaxScore))
}

func fraction(requested, allocatable int64) float64 {
	f := float64(requested) / float64(allocatable)
	if f > 1 {
		f = 1
	}
	return f
}
