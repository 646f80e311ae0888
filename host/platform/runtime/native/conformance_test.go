package native_test

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/backendtest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/native"
)

// TestConformance holds native twins to the suite's cases that apply to
// them (the Wasm backends' conformance tests use twins as the reference).
func TestConformance(t *testing.T) {
	backendtest.RunNative(t, backendtest.Native{
		Name: "native",
		New: func(log hclog.Logger, regs ...plugin.Registration) guest.Backend {
			return native.New(log, regs...)
		},
	})
}
