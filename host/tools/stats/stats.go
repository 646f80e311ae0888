// Package stats holds the summary statistics the project's measuring
// tools share (the benchmark report, perf compare), so that every table
// of numbers quotes its medians the same way.
package stats

import (
	"math"
	"slices"
)

// Median is the median of xs (the mean of the middle two for an even
// count); NaN for none. xs is left as it is.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	n := len(s)
	return (s[n/2-1] + s[n/2]) / 2
}
