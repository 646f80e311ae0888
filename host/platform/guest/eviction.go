package guest

import (
	"context"
	"fmt"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// Eviction calls (ABI v1.2). Every reply is checked before the
// coordinator sees it: one answer per requested node, pods named only
// among that node's candidates and at most once, no more than the limit
// (and topN), grace periods not negative, conditions well formed. A reply
// that fails a check is an ErrInvalidReply error for the whole call, so
// the coordinator skips the policy's round rather than acting on part of
// an answer it cannot trust. The counts (answers, pods per node within
// the limit and topN, candidates) are bounded by the decoder itself,
// before it allocates (abi.LimitError): a reply over them also loses the
// instance.

// Observe brings the guest's eviction view up to date with obs, sending
// only the records newer than what this instance has (all of them the
// first time, after a mirror reset, or for a different table).
func (c *Client) Observe(ctx context.Context, obs *snapshot.Observations) error {
	since := c.obsSynced
	if c.obs != obs {
		since = 0
	}
	if since != 0 && since == obs.Version() {
		return nil
	}
	c.enc.Reset()
	obs.EncodeSince(&c.enc, since)
	if _, err := c.push(ctx, abi.FuncObserve, c.enc.B); err != nil {
		c.obs, c.obsSynced = nil, 0
		return err
	}
	c.obs, c.obsSynced = obs, obs.Version()
	return nil
}

// EvictPods asks a PointEvictPods plugin which pods to evict on each
// node regardless of thresholds.
func (c *Client) EvictPods(ctx context.Context, plugin int, req *abi.EvictionRequest) ([]abi.NodeEvictPods, error) {
	c.enc.Reset()
	c.enc.EvictionRequest(req)
	body, err := c.run(ctx, abi.FuncEvictPods, plugin, c.enc.B)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	rs := c.dec.EvictPodsReply(req)
	if err := c.replyErr(abi.FuncEvictPods, plugin); err != nil {
		return nil, err
	}
	if len(rs) != len(req.Nodes) {
		return nil, c.brokenReply(abi.FuncEvictPods, plugin, fmt.Errorf("%d answers for %d nodes", len(rs), len(req.Nodes)))
	}
	for i := range rs {
		n := &req.Nodes[i]
		picked := make([]uint32, len(rs[i].Pods))
		for j := range rs[i].Pods {
			p := &rs[i].Pods[j]
			p.Reason = decisionText(p.Reason, noReasonText)
			picked[j] = p.Pod
			if err := checkGrace(p.GracePeriodSeconds); err != nil {
				return nil, c.invalid(abi.FuncEvictPods, plugin, n.Slot, err)
			}
		}
		if err := checkPicked(picked, n.Candidates); err != nil {
			return nil, c.invalid(abi.FuncEvictPods, plugin, n.Slot, err)
		}
		if err := checkCondition(rs[i].Condition); err != nil {
			return nil, c.invalid(abi.FuncEvictPods, plugin, n.Slot, err)
		}
	}
	return rs, nil
}

// ThresholdMet asks a PointEvictionThreshold plugin whether its
// threshold is met on each node.
func (c *Client) ThresholdMet(ctx context.Context, plugin int, req *abi.EvictionRequest) ([]abi.ThresholdResult, error) {
	c.enc.Reset()
	c.enc.EvictionRequest(req)
	body, err := c.run(ctx, abi.FuncThresholdMet, plugin, c.enc.B)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	rs := c.dec.ThresholdMetReply(req)
	if err := c.replyErr(abi.FuncThresholdMet, plugin); err != nil {
		return nil, err
	}
	if len(rs) != len(req.Nodes) {
		return nil, c.brokenReply(abi.FuncThresholdMet, plugin, fmt.Errorf("%d answers for %d nodes", len(rs), len(req.Nodes)))
	}
	for i := range rs {
		r, n := &rs[i], &req.Nodes[i]
		r.Operator, r.Scope = Text(r.Operator), Text(r.Scope)
		if r.GracePeriodSeconds < 0 {
			return nil, c.invalid(abi.FuncThresholdMet, plugin, n.Slot, fmt.Errorf("grace period %ds is negative", r.GracePeriodSeconds))
		}
		if err := checkPicked(r.Candidates, n.Candidates); err != nil {
			return nil, c.invalid(abi.FuncThresholdMet, plugin, n.Slot, err)
		}
		if err := checkCondition(r.Condition); err != nil {
			return nil, c.invalid(abi.FuncThresholdMet, plugin, n.Slot, err)
		}
	}
	return rs, nil
}

// TopEvictionPods asks a PointEvictionThreshold plugin which pods to
// evict on the nodes where its threshold is met.
func (c *Client) TopEvictionPods(ctx context.Context, plugin int, req *abi.TopEvictionRequest) ([]abi.TopEvictionPods, error) {
	c.enc.Reset()
	c.enc.TopEvictionRequest(req)
	body, err := c.run(ctx, abi.FuncTopEvictionPods, plugin, c.enc.B)
	if err != nil {
		return nil, err
	}
	c.dec.Reset(body, false)
	rs := c.dec.TopEvictionReply(req)
	if err := c.replyErr(abi.FuncTopEvictionPods, plugin); err != nil {
		return nil, err
	}
	if len(rs) != len(req.Nodes) {
		return nil, c.brokenReply(abi.FuncTopEvictionPods, plugin, fmt.Errorf("%d answers for %d nodes", len(rs), len(req.Nodes)))
	}
	for i := range rs {
		n := &req.Nodes[i]
		if err := checkPicked(rs[i].Pods, n.Candidates); err != nil {
			return nil, c.invalid(abi.FuncTopEvictionPods, plugin, n.Slot, err)
		}
		if err := checkGrace(rs[i].GracePeriodSeconds); err != nil {
			return nil, c.invalid(abi.FuncTopEvictionPods, plugin, n.Slot, err)
		}
	}
	return rs, nil
}

// invalid is the error for a reply that decoded but asks for something
// the policy may not: the instance stays usable, the call fails.
func (c *Client) invalid(fn abi.Func, plugin int, slot uint32, err error) error {
	return &CallError{Module: c.module.name, Func: fn, Plugin: c.pluginName(plugin),
		Err: &wrapped{msg: fmt.Sprintf("%v: node slot %d: %v", ErrInvalidReply, slot, err), err: ErrInvalidReply}}
}

// checkPicked refuses a pod index that is not among the offered
// candidates, or named twice.
func checkPicked(picked, offered []uint32) error {
	if len(picked) == 0 {
		return nil
	}
	ok := make(map[uint32]bool, len(offered))
	for _, i := range offered {
		ok[i] = true
	}
	seen := make(map[uint32]bool, len(picked))
	for _, i := range picked {
		switch {
		case !ok[i]:
			return fmt.Errorf("pod index %d is not one of the candidates offered", i)
		case seen[i]:
			return fmt.Errorf("pod index %d is named twice", i)
		}
		seen[i] = true
	}
	return nil
}

func checkGrace(g *int64) error {
	if g != nil && *g < 0 {
		return fmt.Errorf("grace period %ds is negative", *g)
	}
	return nil
}

// maxConditionName bounds a condition's name: it becomes the name part of
// a taint key (eviction.wasmsched.io/<name>), at most 63 characters of
// letters, digits, '-', '_' and '.', starting and ending alphanumeric.
const maxConditionName = 63

func checkCondition(c *abi.EvictionCondition) error {
	if c == nil {
		return nil
	}
	if err := validConditionName(c.Name); err != nil {
		return err
	}
	for _, e := range c.Effects {
		if e < abi.EffectNoSchedule || e > abi.EffectNoExecute {
			return fmt.Errorf("condition %q: taint effect %d is not NoSchedule (1), PreferNoSchedule (2) or NoExecute (3)", c.Name, uint8(e))
		}
	}
	return nil
}

func validConditionName(s string) error {
	if s == "" || len(s) > maxConditionName {
		return fmt.Errorf("condition name %q must have 1 to %d characters", Text(s), maxConditionName)
	}
	alnum := func(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' }
	for i := 0; i < len(s); i++ {
		if b := s[i]; !alnum(b) && b != '-' && b != '_' && b != '.' {
			return fmt.Errorf("condition name %q may hold only letters, digits, '-', '_' and '.'", Text(s))
		}
	}
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return fmt.Errorf("condition name %q must start and end with a letter or digit", s)
	}
	return nil
}
