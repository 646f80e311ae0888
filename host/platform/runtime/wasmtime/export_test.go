//go:build wasmtime

package wasmtime

import "github.com/wasmsched/wasmsched/host/platform/guest"

// InCall reports whether a call runs in inst, an instance of this
// runtime, so a test can close it during the call.
func InCall(inst guest.Instance) bool {
	i, ok := inst.(*instance)
	return ok && i.state.Load() == stateBusy
}
