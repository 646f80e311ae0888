package guest

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
)

// Vpod calls (ABI v1.3). The vpod engine registers each policy once per
// instance (EnsureVPodPolicy), sends the topology when it changes
// (VPodTopology), and runs one VPodStep per vreplica placement or
// removal step. Every step reply is checked whole before the engine sees
// it: a verdict per candidate naming a predicate entry with a code a
// predicate may return, each priority entry once with a score per
// candidate, score errors naming a priority and a candidate. A reply that
// fails a check is an ErrInvalidReply error for the whole step.

// vpodPolicy is a policy registered with this instance and the guest's
// answer.
type vpodPolicy struct {
	policy *abi.VPodPolicy
	reply  *abi.VPodPolicyReply
}

// EnsureVPodPolicy registers p with this instance unless this very *p
// (pointer identity) is already registered, and returns the guest's reply
// (cached): per entry, empty when its args were accepted, else why they
// were refused. p must not change once registered: a changed policy is
// a new *VPodPolicy (its ID may be reused: registering an ID again
// replaces it in the guest). Entries must name plugins of this module
// that implement the entry's kind.
func (c *Client) EnsureVPodPolicy(ctx context.Context, p *abi.VPodPolicy) (*abi.VPodPolicyReply, error) {
	if r, ok := c.vpodPolicies[p.ID]; ok && r.policy == p {
		return r.reply, nil
	}
	if err := c.checkVPodPolicy(p); err != nil {
		return nil, err
	}
	delete(c.vpodPolicies, p.ID) // whatever the guest had under this ID is being replaced
	c.enc.Reset()
	c.enc.VPodPolicy(p)
	body, err := c.run(ctx, abi.FuncVPodPolicy, moduleWide, c.enc.B)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	reply := &abi.VPodPolicyReply{}
	c.dec.VPodPolicyReply(reply, len(p.Entries))
	if err := c.replyErr(abi.FuncVPodPolicy, moduleWide); err != nil {
		return nil, err
	}
	if len(reply.Invalid) != len(p.Entries) {
		return nil, c.invalidVPod(abi.FuncVPodPolicy, true, fmt.Errorf("%d answers for %d policy entries", len(reply.Invalid), len(p.Entries)))
	}
	// An entry's answer decides: "" accepts its args, anything else
	// refuses them, even text that cleans to nothing.
	guestTexts(reply.Invalid, noRefusalText)
	if c.vpodPolicies == nil {
		c.vpodPolicies = map[uint32]vpodPolicy{}
	}
	c.vpodPolicies[p.ID] = vpodPolicy{policy: p, reply: reply}
	return reply, nil
}

// checkVPodPolicy refuses entries the module cannot serve: the host's
// own mistake, reported before the guest is asked.
func (c *Client) checkVPodPolicy(p *abi.VPodPolicy) error {
	plugins := c.module.manifest.Plugins
	for i, e := range p.Entries {
		if int(e.Plugin) >= len(plugins) {
			return fmt.Errorf("module %q: vpod policy %d entry %d: plugin index %d out of range", c.module.name, p.ID, i, e.Plugin)
		}
		want := abi.PointVPodPredicate
		if e.Kind == abi.VPodPriority {
			want = abi.PointVPodPriority
		} else if e.Kind != abi.VPodPredicate {
			return fmt.Errorf("module %q: vpod policy %d entry %d: unknown kind %d", c.module.name, p.ID, i, e.Kind)
		}
		if pl := plugins[e.Plugin]; !pl.Points.Has(want) {
			return fmt.Errorf("module %q: vpod policy %d entry %d: plugin %q is no %s plugin (it implements %s)",
				c.module.name, p.ID, i, pl.Name, want, pl.Points)
		}
	}
	return nil
}

// VPodTopology sends t unless this instance already has t.Generation.
// Generations identify topologies: a different topology must come with
// a different generation.
func (c *Client) VPodTopology(ctx context.Context, t *abi.VPodTopology) error {
	if c.vpodTopoSent && c.vpodTopo == t.Generation {
		return nil
	}
	c.vpodTopoSent = false
	c.enc.Reset()
	c.enc.VPodTopology(t)
	if _, err := c.push(ctx, abi.FuncVPodTopology, c.enc.B); err != nil {
		return err
	}
	c.vpodTopo, c.vpodTopoSent = t.Generation, true
	return nil
}

// VPodStep runs one step of policy p, which must be registered with this
// instance (EnsureVPodPolicy) under s.Policy, over the topology sent last
// (VPodTopology), whose generation s.Topology must name. It checks the
// reply whole against s and p: a verdict per candidate (Entry 0, or 1 +
// the index of a predicate entry, with code Unschedulable,
// UnschedulableAndUnresolvable or Error), every priority entry exactly
// once in policy order with one score per candidate, and score errors
// naming a priority entry and a candidate in range. A bad reply is an
// ErrInvalidReply *CallError; one whose counts do not match the request
// also loses the instance (its state is not to be trusted). The reply is
// the caller's: the next call does not reuse it.
func (c *Client) VPodStep(ctx context.Context, p *abi.VPodPolicy, s *abi.VPodStep) (*abi.VPodStepReply, error) {
	if r, ok := c.vpodPolicies[p.ID]; !ok || r.policy != p {
		return nil, fmt.Errorf("module %q: vpod step: policy %d is not registered with this instance (call EnsureVPodPolicy first)", c.module.name, p.ID)
	}
	if s.Policy != p.ID {
		return nil, fmt.Errorf("module %q: vpod step names policy %d but runs policy %d", c.module.name, s.Policy, p.ID)
	}
	if !c.vpodTopoSent || s.Topology != c.vpodTopo {
		return nil, fmt.Errorf("module %q: vpod step names topology generation %d, which this instance was not sent (call VPodTopology first)", c.module.name, s.Topology)
	}
	c.enc.Reset()
	c.enc.VPodStep(s)
	body, err := c.run(ctx, abi.FuncVPodStep, moduleWide, c.enc.B)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	r := &abi.VPodStepReply{}
	c.dec.VPodStepReply(r, len(p.Entries), len(s.Candidates))
	if err := c.replyErr(abi.FuncVPodStep, moduleWide); err != nil {
		return nil, err
	}
	if err := c.checkVPodStepReply(p, s, r); err != nil {
		return nil, err
	}
	return r, nil
}

// checkVPodStepReply validates a step reply against its request.
func (c *Client) checkVPodStepReply(p *abi.VPodPolicy, s *abi.VPodStep, r *abi.VPodStepReply) error {
	n := len(s.Candidates)
	if len(r.Verdicts) != n {
		return c.invalidVPod(abi.FuncVPodStep, true, fmt.Errorf("%d verdicts for %d candidates", len(r.Verdicts), n))
	}
	for i := range r.Verdicts {
		v := &r.Verdicts[i]
		if v.Entry == 0 {
			continue
		}
		v.Reason = decisionText(v.Reason, noReasonText)
		e := int(v.Entry) - 1
		if e >= len(p.Entries) || p.Entries[e].Kind != abi.VPodPredicate {
			return c.invalidVPod(abi.FuncVPodStep, false, fmt.Errorf("candidate %d: verdict names entry %d, which is no predicate of the policy", i, e))
		}
		switch v.Code {
		case abi.Unschedulable, abi.UnschedulableAndUnresolvable, abi.Error:
		default:
			return c.invalidVPod(abi.FuncVPodStep, false, fmt.Errorf("candidate %d: status code %d is not one a vpod predicate may return (2 Unschedulable, 3 UnschedulableAndUnresolvable, 1 Error); reason: %s",
				i, uint8(v.Code), v.Reason))
		}
	}
	next := 0 // the next priority entry expected in Scores
	for k := range r.Scores {
		sc := &r.Scores[k]
		for next < len(p.Entries) && p.Entries[next].Kind != abi.VPodPriority {
			next++
		}
		if next >= len(p.Entries) || int(sc.Entry) != next {
			return c.invalidVPod(abi.FuncVPodStep, true, fmt.Errorf("scores %d name entry %d; want each priority entry once, in policy order", k, sc.Entry))
		}
		if len(sc.Scores) != n {
			return c.invalidVPod(abi.FuncVPodStep, true, fmt.Errorf("priority entry %d: %d scores for %d candidates", sc.Entry, len(sc.Scores), n))
		}
		next++
	}
	for ; next < len(p.Entries); next++ {
		if p.Entries[next].Kind == abi.VPodPriority {
			return c.invalidVPod(abi.FuncVPodStep, true, fmt.Errorf("no scores for priority entry %d", next))
		}
	}
	for k := range r.Errors {
		x := &r.Errors[k]
		x.Message = decisionText(x.Message, noErrorText)
		if int(x.Entry) >= len(p.Entries) || p.Entries[x.Entry].Kind != abi.VPodPriority {
			return c.invalidVPod(abi.FuncVPodStep, false, fmt.Errorf("score error %d names entry %d, which is no priority of the policy", k, x.Entry))
		}
		if int(x.Candidate) >= n {
			return c.invalidVPod(abi.FuncVPodStep, false, fmt.Errorf("score error %d names candidate %d of %d", k, x.Candidate, n))
		}
	}
	return nil
}

// invalidVPod is the error for a vpod reply that decoded but breaks the
// ABI's rules: an ErrInvalidReply *CallError, which also loses the
// instance when broken (counts that do not match the request).
func (c *Client) invalidVPod(fn abi.Func, broken bool, err error) error {
	if broken {
		c.broken = true
		c.vpodPolicies, c.vpodTopoSent = nil, false
	}
	return &CallError{Module: c.module.name, Func: fn, Broken: broken,
		Err: &wrapped{msg: fmt.Sprintf("%v: %v", ErrInvalidReply, err), err: ErrInvalidReply}}
}
