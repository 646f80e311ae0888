package main

import (
	"context"
	"errors"
	"net"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/wasmsched/wasmsched/host/metrics"
)

// defaultMetricsAddress is where serve answers /metrics, /healthz and
// /readyz by default: kube-scheduler's old plain-HTTP port (its secure port
// 10259 needs TLS and authentication, which we do not serve yet), on all
// interfaces so Prometheus and the kubelet's probes can reach a pod.
const defaultMetricsAddress = ":10251"

// endpointFlags are serve's flags for the metrics and health endpoints.
type endpointFlags struct {
	address     string
	enablePprof bool
	bound       net.Addr // the address start bound (port 0 resolved)
}

func (f *endpointFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.address, "metrics-bind-address", defaultMetricsAddress,
		"host:port serving /metrics, /healthz, /readyz and /debug/shadow over plain HTTP; empty: serve none")
	fs.BoolVar(&f.enablePprof, "enable-pprof", false,
		"also serve the Go runtime profiles under /debug/pprof/ (unauthenticated: keep the address private)")
}

// start binds the endpoints (so a busy port fails the command at once) and
// serves them until ctx ends. It returns the metrics to record into, and
// the channel Serve closes once it is ready (informers synced, scheduling
// running), which /readyz reports. With no address it serves nothing and
// returns nil metrics, so nothing is recorded.
func (f *endpointFlags) start(ctx context.Context, log hclog.Logger) (*metrics.Metrics, chan<- struct{}, error) {
	ready := make(chan struct{})
	if f.address == "" {
		return nil, ready, nil
	}
	reg := metrics.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		return nil, nil, err
	}
	isReady := func() error {
		select {
		case <-ready:
			return nil
		default:
			return errors.New("informers not synced or scheduling not started yet")
		}
	}
	mux := metrics.NewServeMux(reg, isReady, f.enablePprof, metrics.WithReadyDetails(m.ReadyDetails))
	mux.Handle("/debug/shadow", m.ShadowHandler())
	srv, err := metrics.Listen(f.address, mux, log)
	if err != nil {
		return nil, nil, err
	}
	f.bound = srv.Addr()
	go func() {
		if err := srv.Serve(ctx); err != nil {
			log.Error("metrics and health endpoints stopped", "error", err)
		}
	}()
	return m, ready, nil
}
