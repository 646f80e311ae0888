package guest

import (
	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
)

// HclogLevel maps a guest log level onto go-hclog's, for every backend
// that forwards guest log lines; unknown levels log as info.
func HclogLevel(l abi.LogLevel) hclog.Level {
	switch l {
	case abi.LogTrace:
		return hclog.Trace
	case abi.LogDebug:
		return hclog.Debug
	case abi.LogWarn:
		return hclog.Warn
	case abi.LogError:
		return hclog.Error
	}
	return hclog.Info
}
