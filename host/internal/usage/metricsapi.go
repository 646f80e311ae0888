package usage

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// DefaultTTL is how long MetricsAPI reuses a snapshot: half the default
// eviction sync period, so the policies of one round share one pair of
// List calls and the next round gets fresh numbers.
const DefaultTTL = 2500 * time.Millisecond

// MetricsAPIOptions configure a MetricsAPI source.
type MetricsAPIOptions struct {
	// TTL is how long a snapshot is reused (0: DefaultTTL; negative:
	// never reused).
	TTL time.Duration
	// Log receives the "metrics.k8s.io is not served" notice (nil: none).
	Log hclog.Logger
	// Now is the clock (nil: time.Now); tests replace it.
	Now func() time.Time
}

// MetricsAPI is a Source reading the cluster's metrics.k8s.io API
// (metrics-server or a compatible adapter): every NodeMetrics and every
// PodMetrics, of all namespaces. A cluster that does not serve the API
// gives snapshots without data and no error, so usage-based policies see
// "no data" rather than stopping the coordinator; that is logged once,
// and again when the API comes back.
type MetricsAPI struct {
	client metricsclient.Interface
	// ttl is a time.Duration; SetTTL changes it while rounds read.
	ttl atomic.Int64
	log hclog.Logger
	now func() time.Time

	// lock is a one-slot semaphore rather than a mutex so that a caller
	// waiting for another's List calls still honours its context.
	lock      chan struct{}
	cached    *Snapshot
	fetched   time.Time
	notServed bool // the last fetch found the API not served
}

// NewMetricsAPI reads usage through client.
func NewMetricsAPI(client metricsclient.Interface, opts MetricsAPIOptions) *MetricsAPI {
	m := &MetricsAPI{client: client, log: opts.Log, now: opts.Now, lock: make(chan struct{}, 1)}
	m.SetTTL(opts.TTL)
	if m.log == nil {
		m.log = hclog.NewNullLogger()
	}
	if m.now == nil {
		m.now = time.Now
	}
	return m
}

// SetTTL changes how long a snapshot is reused, as
// MetricsAPIOptions.TTL (0: DefaultTTL): a reload that changes the
// eviction sync period keeps one fresh reading per round.
func (m *MetricsAPI) SetTTL(ttl time.Duration) {
	if ttl == 0 {
		ttl = DefaultTTL
	}
	m.ttl.Store(int64(ttl))
}

// NewMetricsAPIForConfig builds the metrics clientset from the same
// rest.Config the host's other clients use.
func NewMetricsAPIForConfig(cfg *rest.Config, opts MetricsAPIOptions) (*MetricsAPI, error) {
	c, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("usage: metrics.k8s.io client: %w", err)
	}
	return NewMetricsAPI(c, opts), nil
}

// Usage returns the cached snapshot while it is younger than the TTL,
// else lists NodeMetrics and PodMetrics anew. Errors other than "not
// served" (forbidden, timeouts) are returned and not cached, so the next
// round retries.
func (m *MetricsAPI) Usage(ctx context.Context) (*Snapshot, error) {
	select {
	case m.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("usage: waiting for metrics.k8s.io: %w", ctx.Err())
	}
	defer func() { <-m.lock }()
	if ttl := time.Duration(m.ttl.Load()); m.cached != nil && ttl > 0 && m.now().Sub(m.fetched) < ttl {
		return m.cached, nil
	}
	snap, err := m.fetch(ctx)
	switch {
	case err == nil:
		if m.notServed {
			m.notServed = false
			m.log.Info("metrics.k8s.io is served again: usage-based eviction policies see usage")
		}
	case notServed(err):
		if !m.notServed {
			m.notServed = true
			m.log.Info("metrics.k8s.io is not served by this cluster (is metrics-server installed?): usage-based eviction policies will see no data", "error", err)
		}
		snap = &Snapshot{}
	default:
		return nil, err
	}
	m.cached, m.fetched = snap, m.now()
	return snap, nil
}

func (m *MetricsAPI) fetch(ctx context.Context) (*Snapshot, error) {
	api := m.client.MetricsV1beta1()
	nodes, err := api.NodeMetricses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("usage: list NodeMetrics: %w", err)
	}
	pods, err := api.PodMetricses(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("usage: list PodMetrics: %w", err)
	}
	snap := &Snapshot{}
	skipped := 0
	for i := range nodes.Items {
		n := &nodes.Items[i]
		u, err := NodeUsage(n)
		if err != nil {
			// A record the adapter could not fill is no data, not zero.
			skipped++
			m.log.Debug("skipping NodeMetrics", "node", n.Name, "error", err)
			continue
		}
		snap.SetNode(n.Name, u)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		u, err := PodUsage(p)
		if err != nil {
			skipped++
			m.log.Debug("skipping PodMetrics", "pod", p.Namespace+"/"+p.Name, "error", err)
			continue
		}
		snap.SetPod(p.Namespace, p.Name, u)
	}
	if skipped > 0 {
		m.log.Debug("metrics.k8s.io records without usage", "skipped", skipped)
	}
	return snap, nil
}

// notServed tells "this cluster has no metrics.k8s.io" (404: the group is
// not registered; 503: its APIService exists but the backend is down; a
// RESTMapper's no-match) from errors worth reporting.
func notServed(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err) || meta.IsNoMatchError(err)
}
