package config

import (
	"strings"
	"time"
)

// LeaderElection is kube-scheduler's leaderElection section: whether
// replicas compete for a Lease, its name and timings. Unset fields leave
// serve's flags and defaults (a Lease named wasmsched in kube-system, 15s,
// 10s, 2s), so a file that says nothing here never makes wasmsched compete
// for kube-scheduler's own Lease.
type LeaderElection struct {
	// LeaderElect turns leader election on or off; nil: serve's default
	// (on).
	LeaderElect *bool `json:"leaderElect,omitempty"`
	// LeaseDuration, RenewDeadline and RetryPeriod: zero means unset.
	LeaseDuration Duration `json:"leaseDuration,omitempty"`
	RenewDeadline Duration `json:"renewDeadline,omitempty"`
	RetryPeriod   Duration `json:"retryPeriod,omitempty"`
	// ResourceLock is the kind of lock object: only "leases" (what
	// kube-scheduler uses since 1.20; client-go offers no other lock).
	ResourceLock string `json:"resourceLock,omitempty"`
	// ResourceName and ResourceNamespace name the Lease.
	ResourceName      string `json:"resourceName,omitempty"`
	ResourceNamespace string `json:"resourceNamespace,omitempty"`
}

// LeaseLock is the only leaderElection.resourceLock serve supports.
const LeaseLock = "leases"

// ClientConnection is kube-scheduler's clientConnection section: how
// serve talks to the API server.
type ClientConnection struct {
	// Kubeconfig is the kubeconfig file (relative to the configuration
	// file's directory); empty: the in-cluster configuration.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// AcceptContentTypes is the client's Accept header (comma-separated);
	// ContentType the encoding it sends and prefers.
	AcceptContentTypes string `json:"acceptContentTypes,omitempty"`
	ContentType        string `json:"contentType,omitempty"`
	// QPS and Burst rate-limit the client; nil: serve's flags (50, 100).
	// A QPS below zero turns the limit off, as in client-go.
	QPS   *float32 `json:"qps,omitempty"`
	Burst *int32   `json:"burst,omitempty"`
}

// Content types clientConnection may name: what client-go's typed
// clients can send and read.
const (
	ContentTypeJSON     = "application/json"
	ContentTypeProtobuf = "application/vnd.kubernetes.protobuf"
)

// MaxLeaderElectionPeriod bounds the leader election timings, in the
// file and in serve's flags: far past any sensible Lease, and far from
// time.Duration overflow.
const MaxLeaderElectionPeriod = time.Hour

func checkLeaderElection(le *LeaderElection, add func(field, format string, a ...any)) {
	if le == nil {
		return
	}
	const f = "leaderElection"
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"leaseDuration", le.LeaseDuration.Duration}, {"renewDeadline", le.RenewDeadline.Duration}, {"retryPeriod", le.RetryPeriod.Duration}} {
		if d.v < 0 || d.v > MaxLeaderElectionPeriod {
			add(f+"."+d.name, "%s is outside 0..%s (0 means serve's default)", d.v, MaxLeaderElectionPeriod)
		}
	}
	// The nesting client-go requires, when both sides are written (the
	// other side may come from a flag; serve checks the result again).
	if r, l := le.RenewDeadline.Duration, le.LeaseDuration.Duration; r > 0 && l > 0 && l <= r {
		add(f+".leaseDuration", "%s must be longer than renewDeadline %s", l, r)
	}
	if p, r := le.RetryPeriod.Duration, le.RenewDeadline.Duration; p > 0 && r > 0 && r <= p {
		add(f+".renewDeadline", "%s must be longer than retryPeriod %s", r, p)
	}
	if le.ResourceLock != "" && le.ResourceLock != LeaseLock {
		add(f+".resourceLock", "%q is not supported: wasmsched locks a coordination.k8s.io Lease only; use %q (kube-scheduler's default since 1.20)", le.ResourceLock, LeaseLock)
	}
}

func checkClientConnection(cc *ClientConnection, add func(field, format string, a ...any)) {
	if cc == nil {
		return
	}
	const f = "clientConnection"
	if cc.ContentType != "" && cc.ContentType != ContentTypeJSON && cc.ContentType != ContentTypeProtobuf {
		add(f+".contentType", "%q is not supported: use %q or %q", cc.ContentType, ContentTypeJSON, ContentTypeProtobuf)
	}
	if cc.AcceptContentTypes != "" {
		for _, t := range strings.Split(cc.AcceptContentTypes, ",") {
			if strings.TrimSpace(t) == "" {
				add(f+".acceptContentTypes", "%q has an empty entry", cc.AcceptContentTypes)
				break
			}
		}
	}
	if cc.Burst != nil && *cc.Burst < 0 {
		add(f+".burst", "%d must not be negative", *cc.Burst)
	}
}
