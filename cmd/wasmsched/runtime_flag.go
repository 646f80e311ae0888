package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/wasmsched/wasmsched/host/platform/modules"
)

// runtimeFlag is --runtime of serve and simulate: the Wasm runtime for
// the modules whose entry names none and for the builtin bundles. Its
// default is the fastest runtime the binary has (modules.DefaultRuntime):
// wasmtime in the release build and the image, wazero in a pure-Go build.
type runtimeFlag struct{ name string }

func newRuntimeFlag() *runtimeFlag { return &runtimeFlag{name: modules.DefaultRuntime()} }

func (r *runtimeFlag) register(f *pflag.FlagSet) {
	f.StringVar(&r.name, "runtime", r.name, fmt.Sprintf(
		"Wasm runtime for the modules whose entry names no runtime and for the builtin bundles: wazero or wasmtime (this binary has %s); a module entry's runtime field still picks its own",
		joinRuntimes()))
}

// validate refuses a runtime the binary lacks, naming the flag, before
// anything starts.
func (r *runtimeFlag) validate() error {
	if err := modules.CheckRuntime(r.name); err != nil {
		return fmt.Errorf("--runtime: %w", err)
	}
	return nil
}

func joinRuntimes() string {
	s := ""
	for i, n := range modules.Runtimes() {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
