package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// fetchMetrics count modules that could not be pulled from a registry or
// verified, and remember which of them a running configuration does
// without (failStrategy FailOpen), for /readyz.
type fetchMetrics struct {
	failures    *prometheus.CounterVec
	unavailable *prometheus.GaugeVec

	mu   sync.Mutex
	gone map[string]string // module -> why, of the serving configuration
}

func newFetchMetrics() *fetchMetrics {
	return &fetchMetrics{
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "module_fetch_failures_total",
			Help:      "Number of times a module from an OCI registry could not be pulled or verified, by module.",
		}, []string{"module"}),
		unavailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: WasmSubsystem,
			Name:      "module_unavailable",
			Help:      "1 for each module with failStrategy FailOpen that the serving configuration runs without, because it could not be fetched or verified.",
		}, []string{"module"}),
		gone: map[string]string{},
	}
}

// ModuleFetchFailed counts a module that could not be pulled or verified.
func (m *Metrics) ModuleFetchFailed(module string) {
	if m == nil {
		return
	}
	m.fetch.failures.WithLabelValues(module).Inc()
}

// SetUnavailableModules records the FailOpen modules the serving
// configuration runs without (module name -> why), replacing the last
// set.
func (m *Metrics) SetUnavailableModules(gone map[string]string) {
	if m == nil {
		return
	}
	m.fetch.mu.Lock()
	defer m.fetch.mu.Unlock()
	m.fetch.unavailable.Reset()
	m.fetch.gone = map[string]string{}
	for name, why := range gone {
		m.fetch.gone[name] = why
		m.fetch.unavailable.WithLabelValues(name).Set(1)
	}
}

// UnavailableModules lists the modules the serving configuration runs
// without, as "name: why", sorted: the detail /readyz reports.
func (m *Metrics) UnavailableModules() []string {
	if m == nil {
		return nil
	}
	m.fetch.mu.Lock()
	defer m.fetch.mu.Unlock()
	out := make([]string, 0, len(m.fetch.gone))
	for name, why := range m.fetch.gone {
		out = append(out, name+": "+why)
	}
	sort.Strings(out)
	return out
}
