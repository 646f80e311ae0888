// Command batchpreemption is an example preemption policy module: kube's
// victim rules with pods of batch namespaces preempted first. Load it in
// a profile with modules[].path and DefaultPreemption's victimPolicy arg
// (see README.md).
package main

import (
	"github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/plugins-wasm/batchpreemption"
)

func init() { guest.Register(batchpreemption.Registration) }

func main() {}
