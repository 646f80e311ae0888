//go:build wasmtime

package modules

import (
	"context"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/policy"
	"github.com/wasmsched/wasmsched/host/wasm"
	"github.com/wasmsched/wasmsched/host/wasmtime"
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

func (c wasmtimeCompiler) Compile(ctx context.Context, name string, bin []byte, lim wasm.Limits) (policy.Backend, error) {
	return c.rt.Compile(ctx, name, bin, lim)
}

func (c wasmtimeCompiler) Close(ctx context.Context) error { return c.rt.Close(ctx) }
