// Command cmd is the taintviolation example module: the
// RemovePodsViolatingNodeTaints eviction policy alone. Build it from
// plugins-wasm/ as the Makefile does (README.md beside the plugin has the
// command).
package main

import (
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/plugins-wasm/examples/taintviolation"
)

func init() { guest.Register(taintviolation.Registration) }

func main() {}
