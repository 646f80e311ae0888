package main

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/run/endpoints"
)

// endpointFlags are serve's flags for its endpoints (/metrics, /healthz,
// /livez, /readyz, /debug/shadow, /debug/explain, /configz, /debug/pprof/): the secure
// port with kube-scheduler's flags, on by default, and a plain-HTTP
// address, off by default because nothing on it is authenticated.
type endpointFlags struct {
	address   string // --metrics-bind-address: plain HTTP; "" serves none
	profiling bool
	ringSize  int // --explain-ring-size: decisions kept for /debug/explain; 0: none
	secure    *endpoints.SecureServing

	bound       net.Addr // the plain address start bound (port 0 resolved)
	secureBound net.Addr // the secure one
}

func newEndpointFlags() *endpointFlags {
	return &endpointFlags{secure: endpoints.NewSecureServing()}
}

func (f *endpointFlags) register(fs *pflag.FlagSet) {
	f.secure.AddFlags(fs)
	fs.StringVar(&f.address, "metrics-bind-address", "",
		"host:port also serving every endpoint over plain HTTP with no authentication or authorization (so off by default: keep it private); empty: none")
	fs.BoolVar(&f.profiling, "profiling", false,
		"also serve the Go runtime profiles under /debug/pprof/ (on the secure port they need an authorized identity, like /metrics)")
	fs.BoolVar(&f.profiling, "enable-pprof", false, "same as --profiling")
	fs.IntVar(&f.ringSize, "explain-ring-size", decision.DefaultRingSize,
		"how many of the latest decisions (scheduling attempts with their preemptions, eviction rounds, vpod placements and autoscaler passes) /debug/explain?pod=NAMESPACE/NAME or ?vpod=NAMESPACE/NAME can explain (each record is bounded, a few KiB); 0: record none and do not serve /debug/explain")
	_ = fs.MarkDeprecated("enable-pprof", "use --profiling")
}

// validate checks the flags before serve connects or binds anything.
func (f *endpointFlags) validate() error {
	if f.ringSize < 0 || f.ringSize > maxRingSize {
		return fmt.Errorf("--explain-ring-size %d: want 0 (off) to %d", f.ringSize, maxRingSize)
	}
	if f.address != "" {
		if _, _, err := net.SplitHostPort(f.address); err != nil {
			return fmt.Errorf("--metrics-bind-address %q: want host:port (empty: no plain-HTTP endpoints): %w", f.address, err)
		}
	}
	return f.secure.Validate()
}

// served is what start returns: the metrics to record into (nil when no
// port serves them), the channel Serve closes once it is ready
// (informers synced, scheduling running), which /readyz reports, and the
// configuration /configz shows.
type served struct {
	metrics *metrics.Metrics
	ready   chan<- struct{}
	configz *endpoints.Configz
	// decisions keeps the records /debug/explain answers from; nil when
	// no port serves it or --explain-ring-size is 0.
	decisions decision.Sink
}

// maxRingSize bounds --explain-ring-size: at DefaultLimits a record is
// at most some tens of KiB, so 100 000 of them stay within a few GiB in
// the worst case and far less for typical pods.
const maxRingSize = 100000

// start binds the secure port and the plain address (so a busy port
// fails the command at once, naming its flag) and serves them until ctx
// ends. kubeconfig is serve's: delegated authentication and authorization
// use it unless their own kubeconfig flags are given. With both ports
// off it serves nothing and records no metrics.
func (f *endpointFlags) start(ctx context.Context, log hclog.Logger, kubeconfig string, cfg *config.Configuration) (served, error) {
	ready := make(chan struct{})
	out := served{ready: ready, configz: &endpoints.Configz{}}
	out.configz.Set(cfg)
	if f.address == "" && !f.secure.Enabled() {
		return out, nil
	}
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return served{}, err
	}
	isReady := func() error {
		select {
		case <-ready:
			return nil
		default:
			return errors.New("informers not synced or scheduling not started yet")
		}
	}
	sources := endpoints.Sources{Gatherer: reg, Ready: isReady, Shadow: m.ShadowHandler(),
		Configz: out.configz, Profiling: f.profiling, ReadyDetails: m.ReadyDetails}
	if f.ringSize > 0 {
		ring := decision.NewRing(f.ringSize)
		sources.Explain, out.decisions = ring.Handler(), ring
	}
	mux := endpoints.NewMux(sources)
	stop := func() {}
	if f.secure.Enabled() {
		sctx, cancel := context.WithCancel(ctx)
		srv, err := f.secure.Start(sctx, mux, kubeconfig, log)
		if err != nil {
			cancel()
			return served{}, err
		}
		f.secureBound, stop = srv.Addr(), cancel
	}
	if f.address != "" {
		srv, err := metrics.Listen(f.address, mux, log)
		if err != nil {
			stop()
			return served{}, fmt.Errorf("--metrics-bind-address: %w", err)
		}
		f.bound = srv.Addr()
		log.Warn("serving every endpoint over plain HTTP without authentication or authorization", "address", f.bound.String())
		go func() {
			if err := srv.Serve(ctx); err != nil {
				log.Error("plain-HTTP endpoints stopped", "error", err)
			}
		}()
	}
	out.metrics = m
	return out, nil
}
