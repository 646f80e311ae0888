package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A flag whose configuration twin is bounded has the same bound, and the
// error names the flag: --eviction-rounds ran any number of rounds while
// eviction.simulateRounds stops at 1000; --kube-api-burst took a negative
// burst clientConnection.burst refuses; the leader election periods took
// what leaderElection's refuse past an hour.
func TestFlagsHaveTheBoundsOfTheirConfigTwins(t *testing.T) {
	cluster := filepath.Join("testdata", "shadow-cluster.yaml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", cluster, "--eviction-rounds", "1001"}, "--eviction-rounds: 1001 is outside 0..1000"},
		{[]string{"simulate", cluster, "--eviction-rounds", "-2"}, "--eviction-rounds: -2 is outside 0..1000"},
		{[]string{"serve", "--kube-api-burst=-1"}, "--kube-api-burst: -1 must not be negative"},
		{[]string{"serve", "--leader-elect-lease-duration", "2h"}, "--leader-elect-lease-duration: 2h0m0s exceeds the limit 1h0m0s"},
		{[]string{"serve", "--leader-elect=false", "--leader-elect-retry-period", "90m"}, "--leader-elect-retry-period: 1h30m0s exceeds the limit 1h0m0s"},
	} {
		t.Setenv("XDG_CACHE_HOME", t.TempDir())
		if _, err := run(t, append(tc.args, "--log-level", "off")...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, err := run(t, "simulate", cluster, "--eviction-rounds", "1000", "--log-level", "off"); err != nil {
		t.Errorf("--eviction-rounds 1000, the limit: %v", err)
	}
}

// simulate --from-cluster names the list a limit cut, the limit, and the
// flag that raises it; the limits' flags need --from-cluster.
func TestSimulateFromClusterNamesTheFlagOfALimit(t *testing.T) {
	stop := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(stalled.Close)
	t.Cleanup(func() { close(stop) })
	chunk := []byte(strings.Repeat(" ", 64<<10))
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i < 1024; i++ { // 64 MiB at most
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(huge.Close)
	for _, tc := range []struct {
		server *httptest.Server
		args   []string
		want   string
	}{
		{stalled, []string{"--from-cluster-request-timeout", "200ms"},
			"--from-cluster: list priorityclasses: no complete response within 200ms, the time limit for one request; --from-cluster-request-timeout raises the limit"},
		{stalled, []string{"--from-cluster-timeout", "300ms"},
			"--from-cluster: list priorityclasses: reading the cluster took longer than 300ms, its time limit; --from-cluster-timeout raises the limit"},
		{huge, []string{"--from-cluster-max-page-bytes", "1Mi"},
			"--from-cluster: list priorityclasses: a response is larger than 1 MiB, the limit for one response (one page of a list); --from-cluster-max-page-bytes raises the limit"},
		{huge, []string{"--from-cluster-max-bytes", "100Ki"},
			"larger than 100 KiB, the limit for reading the cluster; --from-cluster-max-bytes raises the limit"},
	} {
		args := append([]string{"--from-cluster", "--kubeconfig", kubeconfigFor(t, tc.server.URL)}, tc.args...)
		if _, err := simulate(t, args...); err == nil || err.Error() != tc.want && !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%v:\nerr  %v\nwant %s", tc.args, err, tc.want)
		}
	}
	cluster := filepath.Join("testdata", "shadow-cluster.yaml")
	for _, args := range [][]string{
		{cluster, "--from-cluster-max-bytes", "1Gi"},
		{cluster, "--from-cluster-timeout", "1m"},
	} {
		if _, err := simulate(t, args...); err == nil || !strings.Contains(err.Error(), "only with --from-cluster") {
			t.Errorf("%v: err = %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"--from-cluster", "--from-cluster-max-page-bytes", "0"},
		{"--from-cluster", "--from-cluster-max-bytes", "lots"},
		{"--from-cluster", "--from-cluster-request-timeout", "0s"},
	} {
		if _, err := simulate(t, args...); err == nil || !strings.Contains(err.Error(), args[1]) {
			t.Errorf("%v: err = %v, want it to name the flag", args, err)
		}
	}
}

// kubeconfigFor writes a kubeconfig pointing at server.
func kubeconfigFor(t *testing.T, server string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
