package framework

import (
	"errors"
	"sync"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
)

// An explained cycle (CycleState.Explain) fills a decision.Scheduling from
// the replies it already has: PreFilter statuses as they come, the
// Diagnosis the filter walk keeps anyway, and a copy of each Score reply.
// An unexplained cycle checks a nil pointer at those points and does
// nothing else.

// notRunCode is the PreFilter code of a plugin that did not run: its
// module is down, or it failed under failurePolicy Ignore.
const notRunCode = "NotRun"

// scoredPlugin is one Score plugin's reply in an explained cycle: its
// scores are scoreBuf[at : at+len(feasible)], and its scores before
// NormalizeScore follow them (a copy of the scores when the module did
// not send them).
type scoredPlugin struct {
	plugin decision.ScorePlugin
	at     int
}

// scoreBufs recycles the buffers explained cycles copy Score replies
// into (the client reuses its reply buffer from call to call), so that
// recording allocates only what the record keeps.
var scoreBufs = sync.Pool{New: func() any { return new([]int64) }}

// keepScores copies plugin p's Score reply for the record: scores and
// raw, the scores before NormalizeScore, nil when the module is older
// than abi.RawScoresMinor.
func (c *cycle) keepScores(p *wasmPlugin, scores, raw []int64) {
	if c.scoreBuf == nil {
		c.scoreBuf = scoreBufs.Get().(*[]int64)
		*c.scoreBuf = (*c.scoreBuf)[:0]
	}
	norm := p.points.Has(abi.PointNormalizeScore)
	sp := decision.ScorePlugin{Name: p.name, Weight: p.weight, NormalizeScore: norm, RawKnown: raw != nil || !norm}
	c.scored = append(c.scored, scoredPlugin{plugin: sp, at: len(*c.scoreBuf)})
	*c.scoreBuf = append(*c.scoreBuf, scores...)
	if raw == nil {
		raw = scores
	}
	*c.scoreBuf = append(*c.scoreBuf, raw...)
}

// Explain makes the cycle fill rec with why it decided what it did.
func (c *CycleState) Explain(rec *decision.Scheduling) { c.explain = rec }

// Explanation is the record the cycle fills, or nil.
func (c *CycleState) Explanation() *decision.Scheduling { return c.explain }

// explainFilter records the filter walk: the rejections diag holds,
// evaluated nodes filtered and feasible of them passing.
func (c *cycle) explainFilter(diag *Diagnosis, evaluated, feasible int) {
	if c.rec == nil {
		return
	}
	c.rec.Evaluated, c.rec.Feasible = max(evaluated, len(diag.NodeToStatus)), feasible
	c.rec.NotEvaluated = c.rec.NumNodes - c.rec.Evaluated
	for node, st := range diag.NodeToStatus {
		c.rec.Reject(node, st.Plugin, st.Code.String(), st.Reasons)
	}
}

// explainScores records the Score point over feasible and the choice
// of best.
func (c *cycle) explainScores(feasible []uint32, totals []int64, best int) {
	plugins := make([]decision.ScorePlugin, len(c.scored))
	normalized, raw := make([][]int64, len(c.scored)), make([][]int64, len(c.scored))
	n := len(feasible)
	for i, sp := range c.scored {
		plugins[i], normalized[i], raw[i] = sp.plugin, (*c.scoreBuf)[sp.at:sp.at+n], (*c.scoreBuf)[sp.at+n:sp.at+2*n]
	}
	defer func() {
		scoreBufs.Put(c.scoreBuf)
		c.scoreBuf = nil
	}()
	name := func(i int) string { return c.snap.Slot(feasible[i]).Info.Node.Name }
	c.rec.SetScores(len(feasible), name, plugins, raw, normalized, totals, best)
}

// explainOutcome finishes rec after a cycle of pod on profile begun at
// t0 returned res and err.
func explainOutcome(rec *decision.Scheduling, profile string, pod *abi.Pod, t0 time.Time, res Result, err error) {
	rec.Pod, rec.UID, rec.Profile = pod.Namespace+"/"+pod.Name, pod.UID, profile
	rec.Time, rec.DurationNanos = t0, int64(time.Since(t0))
	var fit *FitError
	var nominated *NominatedError
	switch {
	case err == nil:
		rec.Outcome, rec.Node = decision.OutcomeChosen, res.Node
		if rec.Score == 0 {
			rec.Score = res.Score
		}
	case errors.As(err, &nominated):
		rec.Outcome, rec.Node, rec.Message = decision.OutcomeNominated, nominated.Node, FailureMessage(err)
	case errors.As(err, &fit):
		rec.Outcome, rec.Message = decision.OutcomeUnschedulable, FailureMessage(err)
	default:
		rec.Outcome, rec.Message = decision.OutcomeError, FailureMessage(err)
	}
	rec.Finish()
}
