package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"
)

func TestEndpointFlags(t *testing.T) {
	var f endpointFlags
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.register(fs)
	if f.address != ":10251" || f.enablePprof {
		t.Fatalf("defaults: address %q, pprof %v", f.address, f.enablePprof)
	}
	if err := fs.Parse([]string{"--metrics-bind-address=127.0.0.1:0", "--enable-pprof"}); err != nil {
		t.Fatal(err)
	}
	if f.address != "127.0.0.1:0" || !f.enablePprof {
		t.Fatalf("parsed: address %q, pprof %v", f.address, f.enablePprof)
	}
}

func getStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEndpointsReportReadinessAndMetrics: /readyz says 503 until Serve
// closes the ready channel, the metrics given to Serve are the ones
// /metrics shows, and pprof is there when asked for.
func TestEndpointsReportReadinessAndMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := endpointFlags{address: "127.0.0.1:0", enablePprof: true}
	m, ready, err := f.start(ctx, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + f.bound.String()
	if code, body := getStatus(t, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz before ready = %d %q, want 503", code, body)
	}
	close(ready)
	if code, _ := getStatus(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once ready = %d, want 200", code)
	}
	m.ModuleLoaded("default", nil)
	if _, body := getStatus(t, base+"/metrics"); !strings.Contains(body, `wasmsched_module_loads_total{module="default",result="success"} 1`) ||
		!strings.Contains(body, "process_start_time_seconds") {
		t.Errorf("/metrics lacks the recorded load or the process collector:\n%s", body)
	}
	if code, _ := getStatus(t, base+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ = %d with --enable-pprof", code)
	}
}

func TestEndpointsFailFastOnABusyPortAndCanBeOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := endpointFlags{address: ln.Addr().String()}
	if _, _, err := f.start(context.Background(), hclog.NewNullLogger()); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("start on a busy port: err = %v, want a listen error", err)
	}
	off := endpointFlags{}
	m, ready, err := off.start(context.Background(), hclog.NewNullLogger())
	if err != nil || m != nil || ready == nil {
		t.Errorf("start with no address = %v, %v, %v; want nil metrics, a ready channel, no error", m, ready, err)
	}
}
