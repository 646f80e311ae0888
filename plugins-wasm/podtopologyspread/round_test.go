package podtopologyspread

import (
	"math"
	"testing"
)

// roundScore must answer as int64(math.Round(x)) for every raw score.
func TestRoundScoreIsRound(t *testing.T) {
	xs := []float64{0, 0.25, 0.5, 0.49999999999999994, 0.5000000000000001, 1, 1.5, 2.5, 2.4999999,
		3.5, 1e15 + 0.5, 1<<52 + 1, 1 << 53, math.Log(7) * 5, -0.5, -1.5, -2.25, -0.49999999999999994, -3.5, -1e15 - 0.5}
	for i := 0; i < 1000; i++ {
		xs = append(xs, float64(i)*math.Log(float64(i%40+2))+float64(i%3))
	}
	for _, x := range xs {
		if got, want := roundScore(x), int64(math.Round(x)); got != want {
			t.Errorf("roundScore(%v) = %d, want %d", x, got, want)
		}
	}
}
