package perfdriver

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// at returns ticks at the given seconds since an arbitrary epoch.
func at(pairs ...float64) []Tick {
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var ticks []Tick
	for i := 0; i < len(pairs); i += 2 {
		ticks = append(ticks, Tick{At: t0.Add(time.Duration(pairs[i] * float64(time.Second))), Bound: int(pairs[i+1])})
	}
	return ticks
}

func TestSamplerMatchesSchedulerPerf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ticks []Tick // pairs: second, cumulative bound
		want  []float64
	}{
		{"no ticks", nil, nil},
		{"nothing ever bound", at(1, 0, 2, 0, 3, 0), nil},
		{"one tick: the first sample is dropped", at(1, 40), nil},
		{"two ticks: one sample", at(1, 10, 2, 110), []float64{100}},
		{"ticks before the first bound pod are ignored", at(1, 0, 2, 0, 3, 50, 4, 150, 5, 350), []float64{100, 200}},
		{"first sample is dropped however large", at(1, 900, 2, 1000), []float64{100}},
		{"zero ticks fold into the next sample, recorded once per interval",
			at(1, 10, 2, 110, 3, 110, 4, 110, 5, 410), []float64{100, 100, 100, 100}},
		{"folding uses the actual elapsed time", at(1, 5, 2, 5, 3.5, 35), []float64{12, 12}},
		{"late tick: rate over the actual interval", at(1, 5, 2.5, 35), []float64{20}},
		{"trailing zero ticks record nothing", at(1, 10, 2, 60, 3, 60, 4, 60), []float64{50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SamplesOf(tc.ticks)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("samples = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSamplerSamplesIsACopy(t *testing.T) {
	var s Sampler
	for _, tk := range at(1, 1, 2, 2, 3, 3) {
		s.Tick(tk.At, tk.Bound)
	}
	got := s.Samples()
	got[0] = -1
	if s.Samples()[0] != 1 {
		t.Fatal("Samples shares its slice with the sampler")
	}
}

func TestSummarizeNearestRank(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(hundred), func(i, j int) { hundred[i], hundred[j] = hundred[j], hundred[i] })
	ten := []float64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	for _, tc := range []struct {
		name    string
		samples []float64
		want    Throughput
	}{
		{"no samples", nil, Throughput{}},
		{"one sample", []float64{42}, Throughput{Samples: 1, Average: 42, Perc50: 42, Perc90: 42, Perc95: 42, Perc99: 42}},
		// ranks ceil(3p/100): 2, 3, 3, 3
		{"three", []float64{30, 10, 20}, Throughput{Samples: 3, Average: 20, Perc50: 20, Perc90: 30, Perc95: 30, Perc99: 30}},
		// ranks ceil(10p/100): 5, 9, 10, 10
		{"ten", ten, Throughput{Samples: 10, Average: 5.5, Perc50: 5, Perc90: 9, Perc95: 10, Perc99: 10}},
		// ranks ceil(2p/100): 1, 2, 2, 2
		{"two", []float64{300, 100}, Throughput{Samples: 2, Average: 200, Perc50: 100, Perc90: 300, Perc95: 300, Perc99: 300}},
		{"one to a hundred", hundred, Throughput{Samples: 100, Average: 50.5, Perc50: 50, Perc90: 90, Perc95: 95, Perc99: 99}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.samples)
			if got := Summarize(tc.samples); got != tc.want {
				t.Fatalf("Summarize = %+v, want %+v", got, tc.want)
			}
			if !slices.Equal(in, tc.samples) {
				t.Fatal("Summarize reordered its input")
			}
		})
	}
}
