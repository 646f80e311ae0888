package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/pflag"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/run/endpoints"
)

// TestEndpointFlags: the secure port is on (10259) and the plain-HTTP
// address off by default; --enable-pprof is --profiling's old name.
func TestEndpointFlags(t *testing.T) {
	f := newEndpointFlags()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	f.register(fs)
	if f.address != "" || f.profiling || f.secure.Serving.BindPort != endpoints.DefaultSecurePort || !f.secure.Enabled() {
		t.Fatalf("defaults: address %q, profiling %v, secure port %d", f.address, f.profiling, f.secure.Serving.BindPort)
	}
	if err := fs.Parse([]string{"--metrics-bind-address=127.0.0.1:0", "--profiling", "--secure-port=0"}); err != nil {
		t.Fatal(err)
	}
	if f.address != "127.0.0.1:0" || !f.profiling || f.secure.Enabled() {
		t.Fatalf("parsed: address %q, profiling %v, secure %v", f.address, f.profiling, f.secure.Enabled())
	}
	old := newEndpointFlags()
	fs = pflag.NewFlagSet("serve", pflag.ContinueOnError)
	old.register(fs)
	if err := fs.Parse([]string{"--enable-pprof"}); err != nil || !old.profiling {
		t.Fatalf("--enable-pprof: %v, profiling %v", err, old.profiling)
	}
}

func getStatus(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// plainOnly are endpoint flags with the secure port off and the plain
// address on a free loopback port.
func plainOnly(profiling bool) *endpointFlags {
	f := newEndpointFlags()
	f.secure.Serving.BindPort = 0
	f.address, f.profiling = "127.0.0.1:0", profiling
	return f
}

// TestEndpointsReportReadinessAndMetrics: /readyz says 503 until Serve
// closes the ready channel, the metrics given to Serve are the ones
// /metrics shows, /configz shows the configuration, and pprof is there
// when asked for.
func TestEndpointsReportReadinessAndMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := plainOnly(true)
	s, err := f.start(ctx, hclog.NewNullLogger(), "", config.Default())
	if err != nil {
		t.Fatal(err)
	}
	c := http.DefaultClient
	base := "http://" + f.bound.String()
	if code, body := getStatus(t, c, base+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not synced") {
		t.Errorf("/readyz before ready = %d %q, want 503", code, body)
	}
	close(s.ready)
	for _, p := range []string{"/readyz", "/livez", "/healthz"} {
		if code, _ := getStatus(t, c, base+p); code != http.StatusOK {
			t.Errorf("%s once ready = %d, want 200", p, code)
		}
	}
	s.metrics.ModuleLoaded("default", nil)
	if _, body := getStatus(t, c, base+"/metrics"); !strings.Contains(body, `wasmsched_module_loads_total{module="default",result="success"} 1`) ||
		!strings.Contains(body, "process_start_time_seconds") {
		t.Errorf("/metrics lacks the recorded load or the process collector:\n%s", body)
	}
	if code, body := getStatus(t, c, base+"/configz"); code != http.StatusOK || !strings.Contains(body, config.DefaultSchedulerName) {
		t.Errorf("/configz = %d %s", code, body)
	}
	if code, _ := getStatus(t, c, base+"/debug/pprof/"); code != http.StatusOK {
		t.Errorf("/debug/pprof/ = %d with --profiling", code)
	}
}

// TestEndpointsOnBothPorts: the secure port answers the health paths to
// anyone and /metrics to no one without credentials, while the plain
// address (when asked for) serves the same mux unauthenticated; pprof is
// absent without --profiling.
func TestEndpointsOnBothPorts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := plainOnly(false)
	f.secure.Serving.Listener = ln
	f.secure.Authentication.SkipInClusterLookup = true
	s, err := f.start(ctx, hclog.NewNullLogger(), "", config.Default())
	if err != nil {
		t.Fatal(err)
	}
	close(s.ready)
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a self-signed certificate
	secure := "https://" + f.secureBound.String()
	if code, _ := getStatus(t, insecure, secure+"/readyz"); code != http.StatusOK {
		t.Errorf("secure /readyz = %d, want 200", code)
	}
	if code, _ := getStatus(t, insecure, secure+"/metrics"); code != http.StatusUnauthorized {
		t.Errorf("secure /metrics without credentials = %d, want 401", code)
	}
	if code, _ := getStatus(t, http.DefaultClient, "http://"+f.bound.String()+"/metrics"); code != http.StatusOK {
		t.Errorf("plain /metrics = %d, want 200", code)
	}
	if code, _ := getStatus(t, http.DefaultClient, "http://"+f.bound.String()+"/debug/pprof/"); code != http.StatusNotFound {
		t.Errorf("/debug/pprof/ without --profiling = %d, want 404", code)
	}
}

func TestEndpointsFailFastOnABusyPortAndCanBeOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f := plainOnly(false)
	f.address = ln.Addr().String()
	if _, err := f.start(context.Background(), hclog.NewNullLogger(), "", config.Default()); err == nil || !strings.Contains(err.Error(), "--metrics-bind-address") {
		t.Errorf("start on a busy plain port: err = %v, want one naming --metrics-bind-address", err)
	}
	busy := newEndpointFlags()
	busy.secure.Serving.BindAddress = net.IPv4(127, 0, 0, 1)
	busy.secure.Serving.BindPort = ln.Addr().(*net.TCPAddr).Port
	busy.secure.Authentication.SkipInClusterLookup = true
	want := fmt.Sprintf("--secure-port %d", busy.secure.Serving.BindPort)
	if _, err := busy.start(context.Background(), hclog.NewNullLogger(), "", config.Default()); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("start on a busy secure port: err = %v, want one naming %s", err, want)
	}
	off := plainOnly(false)
	off.address = ""
	s, err := off.start(context.Background(), hclog.NewNullLogger(), "", config.Default())
	if err != nil || s.metrics != nil || s.ready == nil || s.configz == nil {
		t.Errorf("start with both ports off = %+v, %v; want nil metrics, a ready channel, no error", s, err)
	}
}

// TestServeRefusesBadServingFlags: serve checks the secure port's flags
// before it connects to anything, naming the flag.
func TestServeRefusesBadServingFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert-file", "/nonexistent/tls.crt", "--tls-private-key-file", "/nonexistent/tls.key"}, `--tls-cert-file "/nonexistent/tls.crt"`},
		{[]string{"--tls-private-key-file", "/nonexistent/tls.key"}, "--tls-cert-file and --tls-private-key-file go together"},
		{[]string{"--client-ca-file", "/nonexistent/ca.crt"}, `--client-ca-file "/nonexistent/ca.crt"`},
		{[]string{"--secure-port", "65536"}, "--secure-port 65536: want 0 (off) to 65535"},
		{[]string{"--metrics-bind-address", "10251"}, `--metrics-bind-address "10251": want host:port`},
	} {
		args := append([]string{"serve", "--kubeconfig", "/nonexistent/kubeconfig", "--log-level", "off"}, tc.args...)
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}
