// Command eviction is the eviction bundle: the default eviction policies
// (ResourceOvercommit, NodePressure, UsageThreshold) in one Wasm module,
// so they share one node mirror and one set of observations.
//
//	tinygo build -target=wasip1-plugin.json -buildmode=c-shared -scheduler=none -no-debug (see the Makefile)
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
package main

import (
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/plugins-wasm/evictiondefaults"
)

func init() { guest.Register(evictiondefaults.Plugins()...) }

func main() {}
