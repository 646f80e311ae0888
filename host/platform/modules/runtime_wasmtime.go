//go:build wasmtime

package modules

import (
	"context"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasm"
	"github.com/wasmsched/wasmsched/host/platform/runtime/wasmtime"
)

// With the wasmtime tag (and cgo) the binary can run modules on wasmtime.
func init() {
	runtimes[config.RuntimeWasmtime] = func(dir string, log hclog.Logger) (Compiler, error) {
		rt, err := wasmtime.NewRuntime(dir, log)
		if err != nil {
			return nil, err
		}
		return wasmtimeCompiler{rt}, nil
	}
}

// wasmtimeCompiler adapts wasmtime.Runtime to Compiler.
type wasmtimeCompiler struct{ rt *wasmtime.Runtime }

func (c wasmtimeCompiler) Compile(ctx context.Context, name string, bin []byte, lim wasm.Limits) (guest.Backend, error) {
	return c.rt.Compile(ctx, name, bin, lim)
}

func (c wasmtimeCompiler) Close(ctx context.Context) error { return c.rt.Close(ctx) }
