package wasm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/backendtest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
)

// TestConformance holds wazero to the suite every backend must pass.
func TestConformance(t *testing.T) {
	backendtest.Run(t, backendtest.Runtime{
		Name:           "wazero",
		Compile:        compileLogging(nil),
		CompileLogging: compileLogging,
	})
}

// compileLogging compiles each module in a runtime of its own (in-memory
// cache) logging to log; closing the backend closes the runtime.
func compileLogging(log hclog.Logger) backendtest.CompileFunc {
	return func(ctx context.Context, name string, bin []byte, lim wasm.Limits) (guest.Backend, error) {
		rt, err := wasm.NewRuntime("", log)
		if err != nil {
			return nil, err
		}
		b, err := rt.Compile(ctx, name, bin, lim)
		if err != nil {
			rt.Close(ctx)
			return nil, err
		}
		return ownRuntime{b, rt}, nil
	}
}

// ownRuntime is a backend that owns its runtime.
type ownRuntime struct {
	guest.Backend
	rt *wasm.Runtime
}

func (b ownRuntime) Close(ctx context.Context) error {
	return errors.Join(b.Backend.Close(ctx), b.rt.Close(ctx))
}
