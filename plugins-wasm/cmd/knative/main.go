// Command knative is the knative bundle: Knative Eventing v1.16.0's vpod
// predicates and priorities in one Wasm module, which the host's vpod
// engine asks once per placement step for every entry of a policy.
//
//	tinygo build -target=wasip1-plugin.json -buildmode=c-shared -scheduler=none -no-debug (see the Makefile)
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
package main

import (
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/plugins-wasm/knativedefaults"
)

func init() { guest.Register(knativedefaults.Plugins()...) }

func main() {}
