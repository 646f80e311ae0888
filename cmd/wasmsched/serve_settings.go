package main

import (
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/kube"
)

// serveSettings are how serve connects to the API server and whether and
// how it competes for leadership. They start as serve's flags (their
// defaults or the values given); the configuration's clientConnection and
// leaderElection then fill in every setting whose flag was not given on
// the command line. So a kube-scheduler file's kubeconfig is used unless
// --kubeconfig is given, and a file that says nothing leaves the flags'
// defaults (a Lease of wasmsched's own, never kube-scheduler's).
type serveSettings struct {
	kubeconfig  string
	qps         float32
	burst       int
	contentType string // empty: protobuf, kube-scheduler's default
	accept      string
	leaderElect bool
	election    kube.LeaderElection
}

// Names of the flags the configuration's settings stand in for.
const (
	flagKubeconfig     = "kubeconfig"
	flagQPS            = "kube-api-qps"
	flagBurst          = "kube-api-burst"
	flagLeaderElect    = "leader-elect"
	flagLeaseName      = "leader-elect-resource-name"
	flagLeaseNamespace = "leader-elect-resource-namespace"
	flagLeaseDuration  = "leader-elect-lease-duration"
	flagRenewDeadline  = "leader-elect-renew-deadline"
	flagRetryPeriod    = "leader-elect-retry-period"
)

// withConfig returns s with cfg's clientConnection and leaderElection in
// place of the flags not given (given reports whether a flag was).
func (s serveSettings) withConfig(cfg *config.Configuration, given func(flag string) bool) serveSettings {
	if cc := cfg.ClientConnection; cc != nil {
		if cc.Kubeconfig != "" && !given(flagKubeconfig) {
			s.kubeconfig = cc.Kubeconfig
		}
		if cc.QPS != nil && !given(flagQPS) {
			s.qps = *cc.QPS
		}
		if cc.Burst != nil && !given(flagBurst) {
			s.burst = int(*cc.Burst)
		}
		s.contentType, s.accept = cc.ContentType, cc.AcceptContentTypes
	}
	le := cfg.LeaderElection
	if le == nil {
		return s
	}
	if le.LeaderElect != nil && !given(flagLeaderElect) {
		s.leaderElect = *le.LeaderElect
	}
	str := func(v, flag string, dst *string) {
		if v != "" && !given(flag) {
			*dst = v
		}
	}
	str(le.ResourceName, flagLeaseName, &s.election.LeaseName)
	str(le.ResourceNamespace, flagLeaseNamespace, &s.election.LeaseNamespace)
	if v := le.LeaseDuration.Duration; v > 0 && !given(flagLeaseDuration) {
		s.election.LeaseDuration = v
	}
	if v := le.RenewDeadline.Duration; v > 0 && !given(flagRenewDeadline) {
		s.election.RenewDeadline = v
	}
	if v := le.RetryPeriod.Duration; v > 0 && !given(flagRetryPeriod) {
		s.election.RetryPeriod = v
	}
	return s
}

// check refuses the settings whose configuration twin the configuration
// refuses: a negative --kube-api-burst (clientConnection.burst) and a
// leader election period past config.MaxLeaderElectionPeriod
// (leaderElection.leaseDuration, renewDeadline, retryPeriod). The values
// the configuration filled in passed its own checks, so what is refused
// here came from a flag, which the error names.
func (s serveSettings) check() error {
	if s.burst < 0 {
		return fmt.Errorf("--%s: %d must not be negative, as clientConnection.burst", flagBurst, s.burst)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{flagLeaseDuration, s.election.LeaseDuration}, {flagRenewDeadline, s.election.RenewDeadline}, {flagRetryPeriod, s.election.RetryPeriod}} {
		if d.v > config.MaxLeaderElectionPeriod {
			return fmt.Errorf("--%s: %s exceeds the limit %s, as leaderElection's periods", d.flag, d.v, config.MaxLeaderElectionPeriod)
		}
	}
	return nil
}

// restConfig makes the client configuration: the kubeconfig (or the
// in-cluster configuration) with the rate limits.
func (s serveSettings) restConfig() (*rest.Config, error) {
	return kube.RESTConfig(s.kubeconfig, s.qps, s.burst)
}

// clientsetConfig is rc with the configured content types, for the
// clientsets that read pods and nodes and write bindings, Events and the
// Lease (as kube-scheduler applies them to its clients). The content
// type defaults, as kube-scheduler's clientConnection.contentType does,
// to protobuf: the built-in types are served in it, and decoding it
// costs the scheduler and the API server less than JSON;
// clientConnection.contentType: application/json turns it off. The
// dynamic and metrics clients made from rc keep client-go's JSON (custom
// resources and aggregated APIs are not served as protobuf).
func (s serveSettings) clientsetConfig(rc *rest.Config) *rest.Config {
	c := rest.CopyConfig(rc)
	c.ContentType, c.AcceptContentTypes = s.contentType, s.accept
	if c.ContentType == "" {
		c.ContentType = config.ContentTypeProtobuf
	}
	return c
}
