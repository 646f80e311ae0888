//go:build wasmtime

package vpod

// With -tags wasmtime (and cgo) the knative bundle is also served on
// wasmtime, the runtime the image ships: BenchmarkPlaceAll gets a
// backend=wasmtime.
func init() { registryBackends = append(registryBackends, "wasmtime") }
