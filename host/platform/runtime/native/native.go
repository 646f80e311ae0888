// Package native runs a policy module's plugins as plain Go inside the
// host: a native twin. It drives the very same guest runtime (package
// guest of the SDK) through the same byte-level ABI calls a Wasm instance
// gets, so a twin and its Wasm build must answer identically; what differs
// is only the machine code underneath. Tests use twins as an oracle for
// the Wasm builds, and benchmarks use them as the native baseline.
package native

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	guestsdk "github.com/wasmsched/wasmsched/guest-sdk/guest"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// Backend makes native instances of a set of plugins.
type Backend struct {
	regs []plugin.Registration
}

// New returns a backend for the plugins a module would register. Guest log
// lines of every twin go to log (the SDK has one log sink per process).
func New(log hclog.Logger, regs ...plugin.Registration) *Backend {
	if log != nil {
		plugin.SetLogSink(func(level abi.LogLevel, msg string) {
			log.Log(guest.HclogLevel(level), msg)
		})
	}
	return &Backend{regs: regs}
}

// NewInstance implements guest.Backend.
func (b *Backend) NewInstance(ctx context.Context) (inst guest.Instance, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("native twin: %v", r)
		}
	}()
	g := guestsdk.New(b.regs...)
	// Natively too, so that a twin runs the mirror the builtin bundles
	// run (it changes where lists live, never what a plugin sees).
	g.LayOutNodeLists()
	return &instance{g: g}, nil
}

// Close implements guest.Backend.
func (b *Backend) Close(context.Context) error { return nil }

type instance struct {
	g *guestsdk.Guest
}

func (i *instance) ABIVersion(context.Context) (uint32, error) {
	return abi.PackVersion(abi.VersionMajor, abi.VersionMinor), nil
}

func (i *instance) Input(_ context.Context, n int) ([]byte, error) { return i.g.Input(n), nil }

// Call runs the guest runtime; a panicking plugin becomes an error, as a
// trap would in Wasm, instead of taking the host down.
func (i *instance) Call(_ context.Context, fn abi.Func, arg uint32, n int) (reply []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = guest.Fault(guest.ErrGuestTrap, fmt.Errorf("plugin panicked: %v", r))
		}
	}()
	return i.g.Call(fn, arg, n), nil
}

func (i *instance) Close(context.Context) error { return nil }
