package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code, rec.Body.String()
}

func TestHealthz(t *testing.T) {
	mux := metrics.NewServeMux(prometheus.NewRegistry(), func() error { return errors.New("not yet") }, false)
	// Liveness does not depend on readiness.
	for _, path := range []string{"/healthz", "/livez"} {
		if code, body := get(t, mux, path); code != http.StatusOK || body != "ok" {
			t.Fatalf("%s = %d %q, want 200 ok", path, code, body)
		}
	}
}

func TestReadyz(t *testing.T) {
	var notReady error = errors.New("informers not synced")
	mux := metrics.NewServeMux(prometheus.NewRegistry(), func() error { return notReady }, false)
	if code, body := get(t, mux, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "informers not synced") {
		t.Fatalf("/readyz while not ready = %d %q, want 503 with the reason", code, body)
	}
	notReady = nil
	if code, body := get(t, mux, "/readyz"); code != http.StatusOK || body != "ok" {
		t.Fatalf("/readyz when ready = %d %q, want 200 ok", code, body)
	}
	if code, _ := get(t, metrics.NewServeMux(prometheus.NewRegistry(), nil, false), "/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz without a readiness check = %d, want 200", code)
	}
}

func TestMetricsEndpointServesTheRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Profile("default-scheduler").Attempt(metrics.Scheduled, 3*time.Millisecond)
	m.Profile("default-scheduler").Attempt(metrics.Unschedulable, time.Millisecond)
	m.SetPendingPodsSource(func() metrics.PendingPods {
		return metrics.PendingPods{Active: 2, Backoff: 1, Unschedulable: 4, Gated: 3}
	})
	m.ModuleLoaded("default", nil)
	code, body := get(t, metrics.NewServeMux(reg, nil, false), "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 1`,
		`scheduler_schedule_attempts_total{profile="default-scheduler",result="error"} 0`,
		`scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="0.004"} 1`,
		`scheduler_scheduling_attempt_duration_seconds_bucket{profile="default-scheduler",result="scheduled",le="16.384"} 1`,
		`scheduler_pending_pods{queue="active"} 2`,
		`scheduler_pending_pods{queue="backoff"} 1`,
		`scheduler_pending_pods{queue="unschedulable"} 4`,
		`scheduler_pending_pods{queue="gated"} 3`,
		`wasmsched_module_loads_total{module="default",result="success"} 1`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

func TestPprofOnlyWhenEnabled(t *testing.T) {
	reg := prometheus.NewRegistry()
	off := metrics.NewServeMux(reg, nil, false)
	if code, _ := get(t, off, "/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ with pprof off = %d, want 404", code)
	}
	on := metrics.NewServeMux(reg, nil, true)
	if code, body := get(t, on, "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/ with pprof on = %d, want 200 listing profiles", code)
	}
	if code, _ := get(t, on, "/debug/pprof/goroutine?debug=1"); code != http.StatusOK {
		t.Errorf("/debug/pprof/goroutine with pprof on = %d, want 200", code)
	}
}

func TestBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithPluginSamplePercent(100))
	if err != nil {
		t.Fatal(err)
	}
	m.PluginTimer("NodeResourcesFit", metrics.Filter).Observe(abi.Unschedulable, 20*time.Microsecond)
	m.Profile("p").Attempt(metrics.Error, time.Second)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	bounds := map[string][]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			if h := mt.GetHistogram(); h != nil && bounds[mf.GetName()] == nil {
				for _, b := range h.GetBucket() {
					bounds[mf.GetName()] = append(bounds[mf.GetName()], b.GetUpperBound())
				}
			}
		}
	}
	check := func(name string, start, factor float64, n int) {
		got := bounds[name]
		if len(got) != n {
			t.Fatalf("%s: %d buckets, want %d", name, len(got), n)
		}
		want := start
		for i, b := range got {
			if d := b/want - 1; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: bucket %d = %g, want %g", name, i, b, want)
			}
			want *= factor
		}
	}
	check("scheduler_plugin_execution_duration_seconds", 0.00001, 1.5, 20)
	check("scheduler_scheduling_attempt_duration_seconds", 0.001, 2, 15)
}

func TestPluginTimerLabelsAndSampling(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithPluginSamplePercent(100))
	if err != nil {
		t.Fatal(err)
	}
	timer := m.PluginTimer("TaintToleration", metrics.Filter)
	timer.Observe(abi.Unschedulable, time.Microsecond)
	timer.Observe(abi.Unschedulable, time.Microsecond)
	timer.Observe(abi.Success, time.Microsecond)
	if n := testutil.CollectAndCount(reg, "scheduler_plugin_execution_duration_seconds"); n != 2 {
		t.Errorf("%d plugin duration series, want 2 (Success, Unschedulable)", n)
	}
	body := gatherText(t, reg)
	for _, s := range []string{
		`scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="TaintToleration",status="Unschedulable"} 2`,
		`scheduler_plugin_execution_duration_seconds_count{extension_point="Filter",plugin="TaintToleration",status="Success"} 1`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("missing %s", s)
		}
	}
	if !m.SamplePluginMetrics() {
		t.Error("100% sampling did not sample")
	}
	never, err := metrics.New(nil, metrics.WithPluginSamplePercent(0))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if never.SamplePluginMetrics() {
			t.Fatal("0% sampling sampled")
		}
	}
	def, _ := metrics.New(nil)
	hits := 0
	for i := 0; i < 10000; i++ {
		if def.SamplePluginMetrics() {
			hits++
		}
	}
	// 10% of 10000; the bounds are > 10 standard deviations wide.
	if hits < 700 || hits > 1300 {
		t.Errorf("default sampling hit %d of 10000 cycles, want about %d%%", hits, metrics.DefaultPluginSamplePercent)
	}
}

func gatherText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	_, body := get(t, metrics.NewServeMux(g, nil, false), "/metrics")
	return body
}

func TestNilMetricsIsANoOp(t *testing.T) {
	var m *metrics.Metrics
	m.Profile("p").Attempt(metrics.Scheduled, time.Second)
	m.PluginTimer("p", metrics.Score).Observe(abi.Success, time.Second)
	m.SetPendingPodsSource(func() metrics.PendingPods { return metrics.PendingPods{} })
	m.ModuleLoaded("m", errors.New("x"))
	mm := m.Module("m")
	mm.Trap("p")
	mm.DeadlineExceeded("p")
	mm.InstanceOpened()
	mm.InstanceClosed()
	if m.SamplePluginMetrics() {
		t.Error("a nil Metrics sampled a cycle")
	}
}

func TestNewRefusesARegistryThatHasThemAlready(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(reg); err == nil {
		t.Fatal("a second New on one registry succeeded")
	}
}

func TestGuestCountersAndInstances(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	mm := m.Module("gpu")
	mm.Trap("GPUOnly")
	mm.Trap("GPUOnly")
	mm.DeadlineExceeded("")
	mm.InstanceOpened()
	mm.InstanceOpened()
	mm.InstanceClosed()
	body := gatherText(t, reg)
	for _, s := range []string{
		`wasmsched_guest_traps_total{module="gpu",plugin="GPUOnly"} 2`,
		`wasmsched_guest_deadline_exceeded_total{module="gpu",plugin=""} 1`,
		`wasmsched_module_instances{module="gpu"} 1`,
	} {
		if !strings.Contains(body, s+"\n") {
			t.Errorf("missing %s in\n%s", s, body)
		}
	}
}

func TestServerServesAndShutsDown(t *testing.T) {
	reg := metrics.NewRegistry()
	srv, err := metrics.Listen("127.0.0.1:0", metrics.NewServeMux(reg, nil, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	resp, err := http.Get("http://" + srv.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// NewRegistry carries the Go runtime collector.
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "go_goroutines") {
		t.Fatalf("GET /metrics = %d, body lacks go_goroutines", resp.StatusCode)
	}
	// A second server cannot take the same address.
	if _, err := metrics.Listen(srv.Addr().String(), http.NewServeMux(), nil); err == nil {
		t.Error("listening twice on one address succeeded")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after shutdown: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + srv.Addr().String() + "/healthz"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

// TestRecordingDoesNotAllocate: what a cycle records (a sampled plugin
// call, an attempt) costs no allocation once a status has been seen.
func TestRecordingDoesNotAllocate(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry(), metrics.WithPluginSamplePercent(100))
	if err != nil {
		t.Fatal(err)
	}
	timer := m.PluginTimer("NodeResourcesFit", metrics.Filter)
	prof := m.Profile("default-scheduler")
	timer.Observe(abi.Unschedulable, time.Microsecond) // first sight resolves the series
	if n := testing.AllocsPerRun(1000, func() {
		if m.SamplePluginMetrics() {
			timer.Observe(abi.Success, time.Microsecond)
			timer.Observe(abi.Unschedulable, time.Microsecond)
		}
		prof.Attempt(metrics.Scheduled, time.Millisecond)
	}); n != 0 {
		t.Errorf("%v allocations per recorded cycle, want 0", n)
	}
}
