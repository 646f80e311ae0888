package perfdriver

import (
	"math"
	"sort"
	"time"
)

// SampleInterval is how often the bound count is sampled: scheduler_perf's
// throughputSampleInterval, so samples are comparable with its numbers.
const SampleInterval = time.Second

// Sampler turns the number of bound pods, read once per tick, into
// throughput samples the way scheduler_perf's throughput collector does.
// It is pure (no clock, no goroutines) so the arithmetic that decides the
// reported numbers can be tested tick by tick:
//
//   - ticks before any pod is bound are ignored; the first tick that sees a
//     bound pod starts sampling and its sample is dropped, because pod
//     creation and sampling start independently and that interval is an
//     outlier;
//   - a tick that sees no new bound pod records nothing; its interval is
//     folded into the next tick that does, whose rate (pods over the actual
//     elapsed time) is then recorded once per interval it covers, so
//     percentiles still weigh every interval.
//
// The zero value is ready to use.
type Sampler struct {
	started  bool
	last     int
	lastTime time.Time
	skipped  int
	samples  []float64
}

// Tick records the cumulative count of bound pods observed at now.
func (s *Sampler) Tick(now time.Time, bound int) {
	if bound == 0 {
		return
	}
	if !s.started {
		s.started, s.last, s.lastTime = true, bound, now
		return
	}
	n := bound - s.last
	if n <= 0 {
		s.skipped++
		return
	}
	rate := float64(n) / now.Sub(s.lastTime).Seconds()
	for range s.skipped + 1 {
		s.samples = append(s.samples, rate)
	}
	s.last, s.lastTime, s.skipped = bound, now, 0
}

// Samples returns a copy of the samples recorded so far, in pods/s, in the
// order they were taken.
func (s *Sampler) Samples() []float64 {
	return append([]float64(nil), s.samples...)
}

// Tick is one observation of a synthetic or recorded event stream: the
// cumulative number of bound pods at a moment.
type Tick struct {
	At    time.Time
	Bound int
}

// SamplesOf runs a Sampler over ticks and returns its samples; it is the
// whole measurement for a stream recorded elsewhere (and the tests' entry
// point).
func SamplesOf(ticks []Tick) []float64 {
	var s Sampler
	for _, t := range ticks {
		s.Tick(t.At, t.Bound)
	}
	return s.Samples()
}

// Throughput is scheduler_perf's SchedulingThroughput data item: the
// average and nearest-rank percentiles of the samples, in pods/s. With no
// samples every field is zero (scheduler_perf then reports nothing and
// warns that the run was too short to measure).
type Throughput struct {
	Samples int     `json:"samples"`
	Average float64 `json:"average"`
	Perc50  float64 `json:"perc50"`
	Perc90  float64 `json:"perc90"`
	Perc95  float64 `json:"perc95"`
	Perc99  float64 `json:"perc99"`
}

// Summarize computes the Throughput of samples: the mean, and for each
// percentile p the sorted sample at nearest rank ceil(n·p/100) (1-based),
// as scheduler_perf does. samples is not modified.
func Summarize(samples []float64) Throughput {
	n := len(samples)
	if n == 0 {
		return Throughput{}
	}
	sorted := append([]float64(nil), samples...)
	sort.Float64s(sorted)
	sum := 0.0
	for _, v := range sorted {
		sum += v
	}
	rank := func(p int) float64 { return sorted[int(math.Ceil(float64(n*p)/100))-1] }
	return Throughput{Samples: n, Average: sum / float64(n), Perc50: rank(50), Perc90: rank(90), Perc95: rank(95), Perc99: rank(99)}
}
