// Package endpoints serves what a running scheduler answers over HTTP —
// liveness and readiness, its metrics, the shadow profiles' decisions,
// the latest scheduling decisions explained,
// the configuration it runs and, when profiling, the Go profiles — the way
// kube-scheduler serves them: on a secure port (TLS 1.2 or later, a
// certificate from files or a self-signed one kept in memory) where
// every request is authenticated (a bearer token checked with a
// TokenReview, or a client certificate checked against a CA) and
// authorized (a SubjectAccessReview of a nonResourceURL get), except the
// health paths, which answer anyone so that kubelet probes need no
// credentials. Decisions are cached for the options' TTLs, so a
// Prometheus scrape every few seconds costs the API server a review per
// TTL, not per scrape.
//
// The authentication and authorization options, the filters and the TLS
// server are k8s.io/apiserver's, as kube-scheduler uses them; this package
// chooses their defaults, checks the flags up front with errors that name
// them, and builds the handler chain.
package endpoints

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/host/metrics"
)

// Sources are what the endpoints report.
type Sources struct {
	// Gatherer is what /metrics shows.
	Gatherer prometheus.Gatherer
	// Ready reports readiness for /readyz: nil when ready, else why not.
	// A nil Ready means always ready.
	Ready func() error
	// Shadow, if set, answers /debug/shadow (the shadow profiles'
	// decisions that differ from the live ones).
	Shadow http.Handler
	// Explain, if set, answers /debug/explain?pod=NAMESPACE/NAME (why
	// the scheduler put a pod where it did, from its latest decisions).
	Explain http.Handler
	// Configz, if set, answers /configz with the running configuration.
	Configz *Configz
	// ReadyDetails, if set, lists lines a ready /readyz adds after its
	// "ok": the modules a FailOpen configuration runs without.
	ReadyDetails func() []string
	// Profiling serves the Go runtime profiles under /debug/pprof/:
	// off by default because a profile costs CPU while it runs and
	// tells much about the process.
	Profiling bool
}

// AlwaysAllowed are the paths the secure port answers without
// credentials: kube-scheduler's (and k8s.io/apiserver's) defaults for
// --authorization-always-allow-paths, so kubelet probes need no token.
var AlwaysAllowed = []string{"/healthz", "/readyz", "/livez"}

// NewMux returns the handler for every endpoint s has a source for. The
// same mux is served on the secure port (behind authentication and
// authorization) and, when asked for, on the plain-HTTP port.
func NewMux(s Sources) *http.ServeMux {
	var opts []metrics.MuxOption
	if s.ReadyDetails != nil {
		opts = append(opts, metrics.WithReadyDetails(s.ReadyDetails))
	}
	mux := metrics.NewServeMux(s.Gatherer, s.Ready, s.Profiling, opts...)
	if s.Shadow != nil {
		mux.Handle("/debug/shadow", s.Shadow)
	}
	if s.Explain != nil {
		mux.Handle("/debug/explain", s.Explain)
	}
	if s.Configz != nil {
		mux.Handle("/configz", s.Configz)
	}
	return mux
}
