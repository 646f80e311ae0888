package plugin

import "github.com/wasmsched/wasmsched/abi"

// logSink is set by the guest runtime: the host's log import in a Wasm
// module, a Go function in a native twin.
var logSink func(level abi.LogLevel, msg string)

// SetLogSink installs the function log lines go to. The SDK's runtime calls
// it; plugin code does not need to.
func SetLogSink(f func(level abi.LogLevel, msg string)) { logSink = f }

// Log sends a line to the host's logger, tagged there with the module.
// Logging crosses the sandbox boundary: keep it off per-node paths.
func Log(level abi.LogLevel, msg string) {
	if logSink != nil {
		logSink(level, msg)
	}
}
