// Command cmd is the brokerzone example module: the BrokerZonePriority
// vpod priority alone. Build it from plugins-wasm/ as the Makefile does
// (README.md beside the plugin has the command).
package main

import (
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/plugins-wasm/examples/brokerzone"
)

func init() { guest.Register(brokerzone.Registration) }

func main() {}
