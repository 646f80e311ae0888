// Package dist embeds the committed TinyGo builds of the policy bundles,
// so a wasmsched binary runs its default profile with no files beside it
// and a fresh clone needs no TinyGo. `make check-wasm` rebuilds them and
// fails if the bytes differ from what is committed.
package dist

import _ "embed"

// DefaultWasm is the default bundle (plugins-wasm/cmd/default) built with
// TinyGo; see the Makefile's `wasm` target for the exact command.
//
//go:embed default.tinygo.wasm
var DefaultWasm []byte

// EvictionWasm is the eviction bundle (plugins-wasm/cmd/eviction: the
// default eviction policies ResourceOvercommit, NodePressure and
// UsageThreshold) built with TinyGo, the module the host loads when the
// configuration's eviction section names one of them.
//
//go:embed eviction.tinygo.wasm
var EvictionWasm []byte

// KnativeWasm is the knative bundle (plugins-wasm/cmd/knative: the ten
// predicates and priorities of Knative Eventing v1.16.0's vpod scheduler)
// built with TinyGo, the module the host loads when the configuration's
// vpod section configures a scheduler.
//
//go:embed knative.tinygo.wasm
var KnativeWasm []byte
