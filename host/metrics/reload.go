package metrics

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the result label of wasmsched_config_reloads_total.
const (
	ReloadSuccess = "success"
	// ReloadRefused: the candidate failed a check (parse, module, canary)
	// and the running configuration kept serving.
	ReloadRefused = "refused"
	// ReloadUnchanged: nothing the reload reads had changed.
	ReloadUnchanged = "unchanged"
)

// Values of the result label of wasmsched_shadow_decisions_total.
const (
	ShadowSame               = "same"
	ShadowDifferentNode      = "different_node"
	ShadowOnlyLiveFeasible   = "only_live_feasible"
	ShadowOnlyShadowFeasible = "only_shadow_feasible"
	ShadowBothUnfit          = "both_unschedulable"
	ShadowError              = "error"
	ShadowSkipped            = "skipped"
)

// reloadMetrics are the live-rollout metrics: configuration reloads,
// the modules serving, and shadow decisions.
type reloadMetrics struct {
	reloads     *prometheus.CounterVec
	lastSuccess prometheus.Gauge
	moduleInfo  *prometheus.GaugeVec
	shadow      *prometheus.CounterVec
}

func newReloadMetrics() *reloadMetrics {
	return &reloadMetrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "config_reloads_total",
			Help: "Number of configuration reloads (file change, SIGHUP), by result: 'success' swapped the new " +
				"configuration in, 'refused' kept the running one (see the log for why), 'unchanged' found nothing new.",
		}, []string{"result"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: WasmSubsystem,
			Name:      "config_last_reload_success_timestamp_seconds",
			Help:      "Unix time of the last configuration load that went live (the first load counts).",
		}),
		moduleInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: WasmSubsystem,
			Name:      "module_info",
			Help:      "1 for each policy module serving now, by name and the sha256 of its bytes.",
		}, []string{"module", "sha256"}),
		shadow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "shadow_decisions_total",
			Help: "Decisions of shadow profiles compared with the live profile's, by the live profile and the result: " +
				"'same' node, 'different_node', 'only_live_feasible' (the shadow finds no node), 'only_shadow_feasible', " +
				"'both_unschedulable', 'error' (the shadow failed), 'skipped' (its queue was full).",
		}, []string{"profile", "result"}),
	}
}

func (r *reloadMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.reloads, r.lastSuccess, r.moduleInfo, r.shadow}
}

// Reloaded counts one reload attempt by its result (ReloadSuccess, ...)
// and, on success, stamps the time.
func (m *Metrics) Reloaded(result string, at time.Time) {
	if m == nil {
		return
	}
	m.reload.reloads.WithLabelValues(result).Inc()
	if result == ReloadSuccess {
		m.reload.lastSuccess.Set(float64(at.UnixNano()) / 1e9)
	}
}

// ModuleDigest is a module serving now and its sha256.
type ModuleDigest struct{ Module, SHA256 string }

// SetServingModules replaces wasmsched_module_info with the modules that
// serve now.
func (m *Metrics) SetServingModules(mods []ModuleDigest) {
	if m == nil {
		return
	}
	m.reload.moduleInfo.Reset()
	for _, d := range mods {
		m.reload.moduleInfo.WithLabelValues(d.Module, d.SHA256).Set(1)
	}
}

// ShadowDecision counts one comparison of a shadow profile's decision
// with the live profile's (result: ShadowSame, ...).
func (m *Metrics) ShadowDecision(profile, result string) {
	if m != nil {
		m.reload.shadow.WithLabelValues(profile, result).Inc()
	}
}

// SetShadowSource sets what /debug/shadow serves: the scheduler's latest
// differing shadow decisions.
func (m *Metrics) SetShadowSource(f func() any) {
	if m != nil {
		m.shadowSource.Store(&f)
	}
}

// ShadowHandler serves the shadow source as JSON ([] before a scheduler
// set one).
func (m *Metrics) ShadowHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var v any = []any{}
		if m != nil {
			if f := m.shadowSource.Load(); f != nil {
				v = (*f)()
			}
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	})
}
