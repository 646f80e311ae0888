//go:build wasmtime

package wasmtime_test

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/backendtest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasmtime"
)

// TestConformance runs the conformance suite every backend passes
// (host/platform/runtime/backendtest) against wasmtime with its default (epoch) deadlines.
func TestConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Runtime{
		Name: "wasmtime",
		CompileLogging: func(log hclog.Logger) backendtest.CompileFunc {
			return func(ctx context.Context, name string, bin []byte, lim wasm.Limits) (guest.Backend, error) {
				rt, err := wasmtime.NewRuntime(sharedCacheDir, log)
				if err != nil {
					return nil, err
				}
				b, err := rt.Compile(ctx, name, bin, lim)
				// Closing the runtime now frees it with its last backend.
				rt.Close(ctx)
				if err != nil {
					return nil, err
				}
				return b, nil
			}
		},
	})
}
