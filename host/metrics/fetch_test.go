package metrics_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/internal/testmetrics"
)

// A FailOpen module the configuration runs without keeps /readyz ready
// and is named there, and in wasmsched_module_unavailable; a later
// configuration with the module clears both.
func TestUnavailableModulesAreReadyDetails(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	mux := metrics.NewServeMux(reg, nil, false, metrics.WithReadyDetails(m.ReadyDetails))
	m.ModuleFetchFailed("extra")
	m.SetUnavailableModules(map[string]string{"extra": "pull registry.example/extra:v1: connection refused"})
	code, body := get(t, mux, "/readyz")
	if code != http.StatusOK || !strings.HasPrefix(body, "ok\n") || !strings.Contains(body, "extra: pull registry.example/extra:v1: connection refused") {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	if v := testmetrics.Value(t, reg, "wasmsched_module_unavailable", testmetrics.Labels{"module": "extra"}); v != 1 {
		t.Fatalf("wasmsched_module_unavailable = %v", v)
	}
	if v := testmetrics.Value(t, reg, "wasmsched_module_fetch_failures_total", testmetrics.Labels{"module": "extra"}); v != 1 {
		t.Fatalf("wasmsched_module_fetch_failures_total = %v", v)
	}
	m.SetUnavailableModules(nil)
	if _, body := get(t, mux, "/readyz"); body != "ok" {
		t.Fatalf("/readyz after recovery = %q", body)
	}
	if v := testmetrics.Value(t, reg, "wasmsched_module_unavailable", testmetrics.Labels{"module": "extra"}); v != 0 {
		t.Fatalf("wasmsched_module_unavailable after recovery = %v", v)
	}
}
