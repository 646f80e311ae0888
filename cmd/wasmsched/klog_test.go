package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/hashicorp/go-hclog"
)

// TestKlogLinesBecomeHclogLines: logr calls (what klog forwards) land in
// hclog at the mapped levels, with their key-value pairs, and below the
// logger's level they are dropped.
func TestKlogLinesBecomeHclogLines(t *testing.T) {
	var buf bytes.Buffer
	l := logr.New(&hclogSink{log: hclog.New(&hclog.LoggerOptions{Name: "wasmsched", Level: hclog.Info, Output: &buf})})
	l.Info("Serving securely", "address", "127.0.0.1:10259")
	l.V(2).Info("hidden at info")
	l.WithName("k8s").Error(errors.New("invalid bearer token"), "Unable to authenticate the request")
	out := buf.String()
	for _, want := range []string{
		`[INFO]  wasmsched: Serving securely: address=127.0.0.1:10259`,
		`[ERROR] wasmsched.k8s: Unable to authenticate the request: error="invalid bearer token"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Errorf("a V(2) line showed at info:\n%s", out)
	}
}
