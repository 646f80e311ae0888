package parity

import (
	"bytes"
	"context"
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// Wasmsched places cases' pending pods the way `wasmsched simulate`
// does with no --config: the embedded default profile, the builtin
// bundle, manifests read and checked as simulate reads them.
type Wasmsched struct {
	cfg    *config.Configuration
	reg    *modules.Registry
	native bool
}

// NewWasmsched loads the builtin modules once for every case: as Wasm
// (what users run), or with native the bundle's native twin (the same Go
// sources compiled into the test, for when the committed Wasm build lags
// the sources being changed).
func NewWasmsched(ctx context.Context, native bool) (*Wasmsched, error) {
	cfg := config.Default()
	cfg.PercentageOfNodesToScore = ptr.To[int32](100)
	reg, err := modules.Load(ctx, cfg, modules.Options{NativeBuiltin: native})
	if err != nil {
		return nil, fmt.Errorf("load wasmsched's builtin modules: %w", err)
	}
	return &Wasmsched{cfg: cfg, reg: reg, native: native}, nil
}

// Close releases the modules.
func (w *Wasmsched) Close(ctx context.Context) { w.reg.Close(ctx) }

// Result is what wasmsched did with a case's pending pod.
type Result struct {
	// Node it was bound to; empty if it was not.
	Node string
	// Status is simulate's status (Scheduled, Unschedulable,
	// SchedulerError, ...), or "Refused" when simulate would not read
	// the manifests.
	Status  string
	Message string
	// Victims counts the pods preemption removed for it.
	Victims int
}

// Place runs the simulation of c, seeded with c.Seed for tie-breaks.
func (w *Wasmsched) Place(ctx context.Context, c *Case) (*Result, error) {
	y, err := c.YAML()
	if err != nil {
		return nil, err
	}
	objs := &sim.Objects{}
	if err := objs.Read(fmt.Sprintf("case-%d.yaml", c.Seed), bytes.NewReader(y)); err != nil {
		return &Result{Status: "Refused", Message: err.Error()}, nil
	}
	rep, err := sim.Run(ctx, objs, sim.Options{Config: w.cfg, Seed: c.Seed, Registry: w.reg})
	if err != nil {
		return nil, fmt.Errorf("simulate case %d: %w", c.Seed, err)
	}
	ns := c.Pending.Namespace
	if ns == "" {
		ns = "default"
	}
	r := rep.Pod(ns, c.Pending.Name)
	if r == nil {
		return nil, fmt.Errorf("simulate case %d: no result for the pending pod", c.Seed)
	}
	out := &Result{Status: r.Status, Message: r.Message}
	for _, p := range rep.Preemptions {
		if p.Preemptor == ns+"/"+c.Pending.Name {
			out.Victims++
		}
	}
	if r.Status == sim.StatusScheduled {
		out.Node = r.Node
	}
	return out, nil
}
