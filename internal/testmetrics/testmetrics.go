// Package testmetrics reads single series out of a Prometheus gatherer,
// so tests across the host can assert what was recorded without parsing
// the exposition text.
package testmetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Labels are label name/value pairs a series must carry (others may
// exist).
type Labels map[string]string

// find returns the series of family name that carry labels, failing the
// test if gathering fails.
func find(tb testing.TB, g prometheus.Gatherer, name string, labels Labels) []*dto.Metric {
	tb.Helper()
	mfs, err := g.Gather()
	if err != nil {
		tb.Fatalf("gather: %v", err)
	}
	var out []*dto.Metric
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// Value sums the counter or gauge values of the series of name that carry
// labels; 0 when there is none.
func Value(tb testing.TB, g prometheus.Gatherer, name string, labels Labels) float64 {
	tb.Helper()
	sum := 0.0
	for _, m := range find(tb, g, name, labels) {
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		default:
			tb.Fatalf("%s: not a counter or gauge", name)
		}
	}
	return sum
}

// Count sums the observation counts of the histogram series of name that
// carry labels; 0 when there is none.
func Count(tb testing.TB, g prometheus.Gatherer, name string, labels Labels) uint64 {
	tb.Helper()
	var n uint64
	for _, m := range find(tb, g, name, labels) {
		if m.Histogram == nil {
			tb.Fatalf("%s: not a histogram", name)
		}
		n += m.Histogram.GetSampleCount()
	}
	return n
}
