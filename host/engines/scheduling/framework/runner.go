package framework

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// pluginPoint is how one extension point of a cycle runs its plugins:
// what it is called (in metrics and errors), which plugins it skips, and
// where it gets a module's instance.
type pluginPoint struct {
	// name is the extension point's metrics label, also used in errors.
	name string
	// where qualifies the point in errors (" with nominated pods").
	where string
	// skip holds the plugins this point does not run (may be nil).
	skip map[string]bool
	// client returns the instance of module i to call, or why it cannot
	// serve; a module that goes down in it sets the cycle's gone or fatal.
	// nil: the cycle's own instances (cycle.client).
	client func(ctx context.Context, i int) (*guest.Client, error)
}

// runPlugin is the guard around one plugin call of the cycle, the same at
// every extension point (kube-scheduler's runXxxPlugin): a plugin the
// point skips, or whose module is down under Ignore (gone), is not run; a
// module down under Fail ends the cycle with c.fatal; a call that fails,
// or cannot be made because the module has no instance, is handled by
// the plugin's failurePolicy. ran reports whether call ran and succeeded;
// false with a nil error means the point goes on without the plugin.
// err is c.fatal, or the failure of a Fail plugin naming it and the point.
func (c *cycle) runPlugin(ctx context.Context, at *pluginPoint, p *wasmPlugin, call func(cl *guest.Client) error) (ran bool, err error) {
	if at.skip[p.name] || c.gone[p.name] {
		return false, nil
	}
	var cl *guest.Client
	if at.client != nil {
		cl, err = at.client(ctx, p.module)
	} else {
		cl, err = c.client(ctx, p.module)
	}
	if c.fatal != nil {
		return false, c.fatal
	}
	if c.gone[p.name] {
		return false, nil // its module is down; counted there
	}
	if err == nil {
		err = call(cl)
	}
	if err != nil {
		if ferr := c.prof.pluginFailed(p, at.name, err); ferr != nil {
			return false, fmt.Errorf("running %s plugin %q%s: %w", at.name, p.name, at.where, ferr)
		}
		return false, nil
	}
	return true, nil
}
