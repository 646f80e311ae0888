//go:build wasmtime

package eviction

// With -tags wasmtime (and cgo) BenchmarkEvictionRound also runs the
// builtin bundle on wasmtime, the runtime the image ships.
func init() { benchBackends = append(benchBackends, "wasmtime") }
