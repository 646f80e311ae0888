package parity

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/platform/modules"
	"github.com/wasmsched/wasmsched/host/run/sim"
)

// Cycles runs c through simulate's machinery (sim.Start: the manifests
// read and admitted as simulate reads them, the queue, cache, profiles
// and the builtin bundle; then the scheduling cycles sim.Run's Settle
// runs) while activeQ holds a pod, and returns what each cycle did, in
// order. The simulated clock stands still, so as upstream's each pod is
// tried once: a pod an event moves out of the unschedulable pods waits
// out a backoff that never ends. With c.Config the configuration is read
// by wasmsched's own loader (config.Parse) and its modules loaded for it.
func (w *Wasmsched) Cycles(ctx context.Context, c *Case) ([]*PodOutcome, error) {
	y, err := c.YAML()
	if err != nil {
		return nil, err
	}
	objs := &sim.Objects{}
	if err := objs.Read(fmt.Sprintf("case-%d.yaml", c.Seed), bytes.NewReader(y)); err != nil {
		return []*PodOutcome{{Pod: refusedPod, Message: err.Error()}}, nil
	}
	cfg, reg := w.cfg, w.reg
	if len(c.Config) > 0 {
		if cfg, err = config.Parse(c.Config); err != nil {
			return []*PodOutcome{{Pod: refusedPod, Message: "configuration: " + err.Error()}}, nil
		}
		if reg, err = modules.Load(ctx, cfg, modules.Options{NativeBuiltin: w.native, Previous: w.reg}); err != nil {
			return nil, fmt.Errorf("load modules for case %d's configuration: %w", c.Seed, err)
		}
		defer reg.Close(ctx)
	}
	env, err := sim.Start(ctx, objs, sim.Options{Config: cfg, Seed: c.Seed, Registry: reg})
	if err != nil {
		return []*PodOutcome{{Pod: refusedPod, Message: err.Error()}}, nil
	}
	defer env.Close(ctx)

	attempts := map[string]int{}
	seen := 0 // preemptions reported by earlier cycles
	var out []*PodOutcome
	for cycles := 0; ; cycles++ {
		if active, _, _ := env.Queue.PendingPods(); active == 0 {
			break
		}
		if cycles > 2*len(c.pendings()) {
			return nil, fmt.Errorf("harness: wasmsched ran %d cycles for %d pods", cycles, len(c.pendings()))
		}
		if err := env.Scheduler.ScheduleOne(ctx); err != nil {
			return nil, fmt.Errorf("case %d: ScheduleOne: %w", c.Seed, err)
		}
		env.Scheduler.WaitBindings()
		if env.Preemption != nil {
			env.Preemption.Wait()
		}
		rep := env.Report()
		var tried *sim.PodResult
		for i := range rep.Pods {
			r := &rep.Pods[i]
			key := r.Namespace + "/" + r.Name
			if r.Attempts > attempts[key] {
				if tried != nil {
					return nil, fmt.Errorf("harness: one wasmsched cycle tried both %s and %s/%s", tried.Name, r.Namespace, r.Name)
				}
				tried = r
				attempts[key] = r.Attempts
			}
		}
		if tried == nil {
			return nil, fmt.Errorf("harness: wasmsched cycle %d tried no pod", cycles)
		}
		key := tried.Namespace + "/" + tried.Name
		o := &PodOutcome{Pod: key}
		if tried.Status == sim.StatusScheduled {
			o.Chosen = tried.Node
		} else {
			o.Message = tried.Message
			o.Nominated = tried.NominatedNode
		}
		for _, p := range rep.Preemptions[seen:] { // this cycle's
			if p.Preemptor == key {
				o.Victims = append(o.Victims, p.Victim)
			}
		}
		seen = len(rep.Preemptions)
		sort.Strings(o.Victims)
		out = append(out, o)
	}
	return out, nil
}

// refusedPod names the outcome that stands for manifests or a
// configuration simulate would not read.
const refusedPod = "(refused)"
