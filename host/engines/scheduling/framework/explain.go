package framework

import (
	"errors"
	"sync"
	"time"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/platform/guest"
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
// NormalizeScore, as the reply's bytes (guest.RawScores), are
// rawBuf[rawAt : rawAt+8*len(feasible)] (rawAt -1: the module did not
// send them, so they equal the scores).
type scoredPlugin struct {
	plugin decision.ScorePlugin
	at     int
	rawAt  int
}

// scoreBufs and rawBufs recycle the buffers explained cycles copy Score
// replies into (the client reuses its reply buffer from call to call),
// so that recording allocates only what the record keeps.
var (
	scoreBufs = sync.Pool{New: func() any { return new([]int64) }}
	rawBufs   = sync.Pool{New: func() any { return new([]byte) }}
)

// keepScores copies plugin p's Score reply for the record: scores and
// raw, the scores before NormalizeScore, nil when the module is older
// than abi.RawScoresMinor. Raw scores stay encoded: the record decodes
// those of the few nodes it keeps.
func (c *cycle) keepScores(p *wasmPlugin, scores []int64, raw guest.RawScores) {
	if c.scoreBuf == nil {
		c.scoreBuf, c.rawBuf = scoreBufs.Get().(*[]int64), rawBufs.Get().(*[]byte)
		*c.scoreBuf, *c.rawBuf = (*c.scoreBuf)[:0], (*c.rawBuf)[:0]
	}
	norm := p.points.Has(abi.PointNormalizeScore)
	sp := decision.ScorePlugin{Name: p.name, Weight: p.weight, NormalizeScore: norm, RawKnown: raw != nil || !norm}
	kept := scoredPlugin{plugin: sp, at: len(*c.scoreBuf), rawAt: -1}
	*c.scoreBuf = append(*c.scoreBuf, scores...)
	if raw != nil {
		kept.rawAt = len(*c.rawBuf)
		*c.rawBuf = append(*c.rawBuf, raw...)
	}
	c.scored = append(c.scored, kept)
}

// keptScores is the decision.ScoreSource of an explained cycle's Score
// replies.
type keptScores struct{ c *cycle }

// Normalized implements decision.ScoreSource.
func (k keptScores) Normalized(p, i int) int64 {
	return (*k.c.scoreBuf)[k.c.scored[p].at+i]
}

// Raw implements decision.ScoreSource.
func (k keptScores) Raw(p, i int) int64 {
	sp := k.c.scored[p]
	if sp.rawAt < 0 {
		return (*k.c.scoreBuf)[sp.at+i]
	}
	return guest.RawScores((*k.c.rawBuf)[sp.rawAt:]).At(i)
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
	for i, sp := range c.scored {
		plugins[i] = sp.plugin
	}
	defer func() {
		scoreBufs.Put(c.scoreBuf)
		rawBufs.Put(c.rawBuf)
		c.scoreBuf, c.rawBuf = nil, nil
	}()
	name := func(i int) string { return c.snap.Slot(feasible[i]).Info.Node.Name }
	c.rec.SetScores(len(feasible), name, plugins, keptScores{c}, totals, best)
}

// explainOutcome finishes rec after a cycle of pod on profile begun at
// t0 returned res and err.
func explainOutcome(rec *decision.Scheduling, profile string, pod *abi.Pod, t0 time.Time, res Result, err error) {
	rec.Pod, rec.UID, rec.Profile = pod.Namespace+"/"+pod.Name, pod.UID, profile
	rec.Time, rec.DurationNanos = t0, int64(time.Since(t0))
	if err == nil {
		rec.Outcome, rec.Node = decision.OutcomeChosen, res.Node
		if rec.Score == 0 {
			rec.Score = res.Score
		}
	} else {
		explainFailure(rec, err)
	}
	rec.Finish()
}

// explainFailure records why a cycle failed. It is apart from
// explainOutcome because the targets errors.As fills live on the heap:
// here only a failed cycle pays for them.
func explainFailure(rec *decision.Scheduling, err error) {
	var fit *FitError
	var nominated *NominatedError
	switch {
	case errors.As(err, &nominated):
		rec.Outcome, rec.Node, rec.Message = decision.OutcomeNominated, nominated.Node, FailureMessage(err)
	case errors.As(err, &fit):
		rec.Outcome, rec.Message = decision.OutcomeUnschedulable, FailureMessage(err)
	default:
		rec.Outcome, rec.Message = decision.OutcomeError, FailureMessage(err)
	}
}
