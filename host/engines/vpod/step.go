package vpod

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
)

// topologyGen numbers module topologies process-wide, so that no two
// schedulers sharing a module instance ever send different topologies
// under one generation.
var topologyGen atomic.Uint64

// stepper runs placement steps through the modules of one Policies for
// one Schedule call, keeping one checked-out instance per module.
type stepper struct {
	s       *Scheduler
	topo    *abi.VPodTopology
	clients map[modulePool]vpodClient
	msg     abi.VPodStep
}

func newStepper(s *Scheduler, topo *abi.VPodTopology) *stepper {
	return &stepper{s: s, topo: topo, clients: map[modulePool]vpodClient{}}
}

// client checks out (once) an instance of the pool's module.
func (sp *stepper) client(ctx context.Context, p modulePool) (vpodClient, error) {
	if c, ok := sp.clients[p]; ok {
		return c, nil
	}
	c, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	sp.clients[p] = c
	return c, nil
}

// drop returns a failed instance to its pool (which discards it if it
// broke), so the next step checks out a sound one.
func (sp *stepper) drop(ctx context.Context, p modulePool) {
	if c, ok := sp.clients[p]; ok {
		delete(sp.clients, p)
		p.put(ctx, c)
	}
}

// release returns every instance.
func (sp *stepper) release(ctx context.Context) {
	for p, c := range sp.clients {
		p.put(ctx, c)
	}
	sp.clients = map[modulePool]vpodClient{}
}

// verdicts is the outcome of one step: which candidates passed every
// predicate and, when they were scored, their weighted totals.
type verdicts struct {
	feasible []bool
	totals   []int64
	// scoreErr is set when scoring failed for a feasible candidate.
	scoreErr error
	// replies are the modules' replies (bp.mods' order), kept only for a
	// recorded call (Scheduler.rec).
	replies []*abi.VPodStepReply
}

// fail is the error of a step that failed in module ms: a *PolicyError
// (plugin "" names every plugin the module serves in the policy), or,
// when ctx ended meanwhile, the context's error (the caller is going
// away; no module is to blame).
func (sp *stepper) fail(ctx context.Context, bp *boundPolicy, ms *moduleShare, v *VPod, plugin, reason string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("vpod %s: %s policy step stopped: %w", v.Key, bp.name, ctx.Err())
	}
	if plugin == "" {
		plugin = bp.plugins(ms)
	}
	return &PolicyError{Scheduler: sp.s.set.Name, VPod: v.Key, Policy: bp.name, Module: ms.pool.name(), Plugin: plugin, Reason: reason, Err: err}
}

// failureReason classifies a failed module call as the eviction
// coordinator does, for PolicyError.Reason and the metric's label.
func failureReason(err error) string {
	var ce *guest.CallError
	switch {
	case errors.Is(err, guest.ErrDeadlineExceeded):
		return metrics.PolicyFailureTimeout
	case errors.Is(err, guest.ErrGuestTrap):
		return metrics.PolicyFailureTrap
	case errors.Is(err, guest.ErrInvalidReply):
		return metrics.PolicyFailureInvalidReply
	case errors.As(err, &ce) && ce.Broken:
		return metrics.PolicyFailureMalformedReply
	}
	return metrics.PolicyFailureError
}

// evaluate runs one step of bp for the vpod over the candidates (topology
// pod indexes, ascending): one call per module. A module that fails the
// call or answers what does not match the step fails the whole step (a
// *PolicyError): nothing may be placed on anything.
func (sp *stepper) evaluate(ctx context.Context, bp *boundPolicy, ss *stepState, v *VPod, cands []uint32) (*verdicts, error) {
	out := &verdicts{feasible: make([]bool, len(cands)), totals: make([]int64, len(cands))}
	for i := range out.feasible {
		out.feasible[i] = true
	}
	if len(cands) == 0 {
		return out, nil
	}
	sp.fill(bp, ss, v, cands)
	for _, e := range bp.preds {
		if e.invalid != "" {
			for i := range out.feasible {
				out.feasible[i] = false
			}
		}
	}
	replies := make([]*abi.VPodStepReply, len(bp.mods))
	for mi, ms := range bp.mods {
		r, err := sp.call(ctx, bp, ms)
		if err != nil {
			sp.drop(ctx, ms.pool)
			return nil, sp.fail(ctx, bp, ms, v, "", failureReason(err), err)
		}
		if len(r.Verdicts) != len(cands) {
			return nil, sp.fail(ctx, bp, ms, v, "", metrics.PolicyFailureInvalidReply,
				fmt.Errorf("%d verdicts for %d candidates", len(r.Verdicts), len(cands)))
		}
		for i, vd := range r.Verdicts {
			if vd.Entry != 0 {
				out.feasible[i] = false
			}
		}
		replies[mi] = r
	}
	if sp.s.rec != nil {
		out.replies = replies
	}
	any := false
	for _, f := range out.feasible {
		any = any || f
	}
	if !any {
		return out, nil
	}
	if !bp.configuredPrios {
		for i, f := range out.feasible {
			if f {
				out.totals[i] = 1
			}
		}
		return out, nil
	}
	for _, e := range bp.prios {
		if e.invalid != "" {
			out.scoreErr = fmt.Errorf("priority %q: invalid arguments: %s", e.name, e.invalid)
			return out, nil
		}
	}
	for mi, ms := range bp.mods {
		r := replies[mi]
		for _, se := range r.Errors {
			if int(se.Candidate) < len(cands) && out.feasible[se.Candidate] {
				out.scoreErr = fmt.Errorf("priority %s of module %q failed for pod ordinal %d: %s", sp.entryName(bp, ms, int(se.Entry)), ms.pool.name(),
					sp.topo.Pods[cands[se.Candidate]].Ordinal, se.Message)
				return out, nil
			}
		}
		for _, sc := range r.Scores {
			if int(sc.Entry) >= len(ms.kinds) || ms.kinds[sc.Entry] != abi.VPodPriority || len(sc.Scores) != len(cands) {
				plugin := ""
				if int(sc.Entry) < len(ms.kinds) {
					plugin = bp.entry(ms, int(sc.Entry)).name
				}
				return nil, sp.fail(ctx, bp, ms, v, plugin, metrics.PolicyFailureInvalidReply,
					fmt.Errorf("scores for entry %d do not match the step (%d scores for %d candidates)", sc.Entry, len(sc.Scores), len(cands)))
			}
			e := &bp.prios[ms.global[sc.Entry]]
			if !e.summed {
				continue
			}
			for i, score := range sc.Scores {
				if out.feasible[i] {
					out.totals[i] = addSat(out.totals[i], mulSat(e.weight, score))
				}
			}
		}
	}
	return out, nil
}

// entryName names a module-local entry for messages.
func (sp *stepper) entryName(bp *boundPolicy, ms *moduleShare, local int) string {
	if local < 0 || local >= len(ms.kinds) {
		return fmt.Sprintf("#%d", local)
	}
	return fmt.Sprintf("%q", bp.entry(ms, local).name)
}

// call registers the policy and topology with the module's instance if
// it lacks them and runs the step.
func (sp *stepper) call(ctx context.Context, bp *boundPolicy, ms *moduleShare) (*abi.VPodStepReply, error) {
	c, err := sp.client(ctx, ms.pool)
	if err != nil {
		return nil, err
	}
	reply, err := c.EnsureVPodPolicy(ctx, ms.policy)
	if err != nil {
		return nil, fmt.Errorf("register policy: %w", err)
	}
	bp.noteInvalid(ms, reply, sp.s.log)
	if err := c.VPodTopology(ctx, sp.topo); err != nil {
		return nil, fmt.Errorf("send topology: %w", err)
	}
	sp.msg.Policy = ms.policy.ID
	r, err := c.VPodStep(ctx, ms.policy, &sp.msg)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("no reply")
	}
	return r, nil
}

// fill builds the step message (shared by every module of the policy).
func (sp *stepper) fill(bp *boundPolicy, ss *stepState, v *VPod, cands []uint32) {
	m := &sp.msg
	topo := ss.st.topo
	m.Topology = sp.topo.Generation
	m.Namespace, m.Name = v.Key.Namespace, v.Key.Name
	m.VReplicas = v.VReplicas
	m.FreeCapEmpty = len(ss.st.free) == 0
	m.Free = m.Free[:0]
	for _, o := range topo.ordinals {
		m.Free = append(m.Free, ss.st.Free(o))
	}
	m.PodSpread = appendCounts(m.PodSpread[:0], ss.podVal, func(i int) bool { return ss.podIn[i] })
	m.NodeSpread = appendCounts(m.NodeSpread[:0], ss.nodeVal, func(i int) bool { return ss.nodeIn[i] > 0 })
	m.ZoneSpread = appendCounts(m.ZoneSpread[:0], ss.zoneVal, func(i int) bool { return ss.zoneIn[i] > 0 })
	m.Candidates = append(m.Candidates[:0], cands...)
}

func appendCounts(dst []abi.VPodCount, vals []int32, present func(int) bool) []abi.VPodCount {
	for i, v := range vals {
		if present(i) {
			dst = append(dst, abi.VPodCount{Index: uint32(i), VReplicas: v})
		}
	}
	return dst
}

// selectPod picks the candidate with the highest total; ties are broken
// uniformly at random by reservoir sampling (Knative's selectPod). ids
// and totals are parallel, in Knative's iteration order.
func (s *Scheduler) selectPod(ids []int32, totals []int64) int32 {
	sel, best := ids[0], totals[0]
	var n int64 = 1
	for i := 1; i < len(ids); i++ {
		switch {
		case totals[i] > best:
			sel, best, n = ids[i], totals[i], 1
		case totals[i] == best:
			n++
			if s.rand(n) == 0 {
				sel = ids[i]
			}
		}
	}
	return sel
}

// mulSat and addSat are int64 arithmetic that saturates instead of
// wrapping, so a huge weight or score cannot turn the best pod into the
// worst.
func mulSat(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	p := a * b
	if p/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		if (a < 0) != (b < 0) {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return p
}

func addSat(a, b int64) int64 {
	s := a + b
	if (a > 0 && b > 0 && s < 0) || (a < 0 && b < 0 && s >= 0) {
		if a > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return s
}
