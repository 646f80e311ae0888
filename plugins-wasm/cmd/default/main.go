// Command default is the default policy bundle: kube-scheduler's default
// node plugins in one Wasm module, so they share one node mirror.
//
//	tinygo build -target=wasip1-plugin.json -buildmode=c-shared -scheduler=none -no-debug (see the Makefile)
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
package main

import (
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/plugins-wasm/defaults"
)

func init() {
	guest.Register(defaults.Plugins()...)
	// The per-node plugins walk node labels, taints, images and pod
	// groups over every node each cycle: keep them by kind.
	guest.LayOutNodeLists()
}

func main() {}
