package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewServeMux returns the endpoints a scheduler process serves:
//
//   - /metrics: what gatherer holds, in the Prometheus exposition format;
//   - /healthz and /livez: 200 "ok" as long as the process can answer
//     (liveness; /livez is the name kube-scheduler's probes use, /healthz
//     the older one);
//   - /readyz: 200 "ok" when ready returns nil, else 503 with its error
//     (readiness: informers synced and scheduling running); a nil ready
//     means always ready. WithReadyDetails adds lines after the "ok" that
//     leave it ready but tell an operator what is degraded;
//   - /debug/pprof/: the runtime profiles, only with enablePprof, because
//     they can be costly and tell much about the process.
//
// It is a plain net/http mux so callers may add their own handlers.
func NewServeMux(gatherer prometheus.Gatherer, ready func() error, enablePprof bool, opts ...MuxOption) *http.ServeMux {
	var o muxOptions
	for _, opt := range opts {
		opt(&o)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	live := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "ok")
	}
	mux.HandleFunc("/healthz", live)
	mux.HandleFunc("/livez", live)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not ready: %v", err)
				return
			}
		}
		fmt.Fprint(w, "ok")
		if o.details != nil {
			for _, d := range o.details() {
				fmt.Fprintf(w, "\n%s", d)
			}
		}
	})
	if enablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// ShutdownTimeout bounds how long Serve waits for requests in flight
// (a pprof profile may take 30s; it is cut off) once its context ends.
const ShutdownTimeout = 5 * time.Second

// Server is an HTTP server bound to its address: Listen binds, so a busy
// port is reported before the scheduler starts, and Serve runs it.
type Server struct {
	ln  net.Listener
	srv *http.Server
	log hclog.Logger
}

// Listen binds addr (host:port; port 0 picks a free one) for h.
func Listen(addr string, h http.Handler, log hclog.Logger) (*Server, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics and health endpoints: listen on %q: %w", addr, err)
	}
	return &Server{ln: ln, log: log, srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}}, nil
}

// Addr is the bound address (useful after binding port 0).
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve answers requests until ctx ends, then shuts down gracefully
// (waiting up to ShutdownTimeout for requests in flight). It returns nil
// after such a shutdown and the error if serving failed.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	s.log.Info("serving metrics and health endpoints", "address", s.ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("metrics and health endpoints: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil {
		s.log.Warn("metrics and health endpoints: shutdown", "error", err)
		_ = s.srv.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics and health endpoints: %w", err)
	}
	return nil
}

// ListenAndServe binds addr and serves h until ctx ends (see Serve).
func ListenAndServe(ctx context.Context, addr string, h http.Handler, log hclog.Logger) error {
	s, err := Listen(addr, h, log)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// MuxOption tunes NewServeMux.
type MuxOption func(*muxOptions)

type muxOptions struct {
	details func() []string
}

// WithReadyDetails has a ready /readyz list details's lines after its
// "ok": what runs degraded without being unready (a FailOpen module the
// configuration runs without), so a probe keeps passing and an operator
// reading the endpoint sees why.
func WithReadyDetails(details func() []string) MuxOption {
	return func(o *muxOptions) { o.details = details }
}

// ReadyDetails are the lines a ready /readyz adds: each module the
// serving configuration runs without.
func (m *Metrics) ReadyDetails() []string {
	var out []string
	for _, u := range m.UnavailableModules() {
		out = append(out, "module unavailable (failStrategy FailOpen, running without it): "+u)
	}
	return out
}
