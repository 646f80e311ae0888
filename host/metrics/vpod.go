package metrics

import "github.com/prometheus/client_golang/prometheus"

// VPod are the vpod engine's metrics (host/engines/vpod). A nil value records
// nothing, so the engine needs no metrics to run.
type VPod struct {
	policyFailures *prometheus.CounterVec
}

func newVPodMetrics() *VPod {
	return &VPod{
		policyFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: WasmSubsystem,
			Name:      "vpod_policy_failures_total",
			Help: "Number of vpod placement or removal steps that failed in a policy module, by vpod scheduler, plugin " +
				"(the plugins the module serves in the failing policy) and reason (trap, timeout, invalid_reply, " +
				"malformed_reply, error). The vpod kept its placements and nothing was scaled.",
		}, []string{"scheduler", "plugin", "reason"}),
	}
}

func (v *VPod) collectors() []prometheus.Collector {
	return []prometheus.Collector{v.policyFailures}
}

// VPod returns the vpod engine's metrics (nil when m is nil).
func (m *Metrics) VPod() *VPod {
	if m == nil {
		return nil
	}
	return m.vpod
}

// PolicyFailure counts one step of scheduler that failed in the module
// serving plugin, for reason (PolicyFailureTrap, ...).
func (v *VPod) PolicyFailure(scheduler, plugin, reason string) {
	if v != nil {
		v.policyFailures.WithLabelValues(scheduler, plugin, reason).Inc()
	}
}
