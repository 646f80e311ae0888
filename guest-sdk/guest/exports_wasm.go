//go:build wasm

package guest

import (
	"unsafe"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// The module's single guest runtime, built on first use from the plugins
// registered by init functions (which _initialize has run by then).
var module *Guest

func instance() *Guest {
	if module == nil {
		module = New(registered...)
		for _, f := range configure {
			f(module)
		}
		plugin.SetLogSink(func(level abi.LogLevel, msg string) { hostLog(level, module.cycle.current, msg) })
	}
	return module
}

//go:wasmimport wasmsched log
func wasmsched_log(level uint32, ptr unsafe.Pointer, size uint32)

// hostLog sends a line, prefixed with the running plugin's name and the
// separator abi.LogPluginSeparator when a plugin is running.
func hostLog(level abi.LogLevel, pluginName, msg string) {
	if pluginName != "" {
		msg = pluginName + string(rune(abi.LogPluginSeparator)) + msg
	}
	if len(msg) == 0 {
		return
	}
	wasmsched_log(uint32(level), unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

//go:wasmexport wasmsched_abi_version
func exportABIVersion() uint32 {
	return abi.PackVersion(abi.VersionMajor, abi.VersionMinor)
}

//go:wasmexport wasmsched_input
func exportInput(size uint32) uint32 {
	b := instance().Input(int(size))
	if len(b) == 0 {
		return 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0])))
}

//go:wasmexport wasmsched_call
func exportCall(fn, arg, size uint32) uint64 {
	reply := instance().Call(abi.Func(fn), arg, int(size))
	return uint64(uintptr(unsafe.Pointer(&reply[0])))<<32 | uint64(len(reply))
}
