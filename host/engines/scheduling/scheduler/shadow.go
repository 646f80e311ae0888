package scheduler

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// Shadow decisions: a profile's shadow (config: profiles[].shadow) decides
// for every pod the live profile schedules, on the cluster state the live
// cycle saw, and the two decisions are compared.
//
// The evaluation runs on a goroutine of its own, with a snapshot of its
// own. The live cycle hands a pod over only when that goroutine is idle:
// it then brings the shadow's snapshot up to the cache (the nodes changed
// since the last hand-over: the live cycle's own state, before the pod is
// assumed) and passes the pod, the start of its node walk and its
// decision. When the shadow is still busy with an earlier pod, this pod
// is skipped and counted; the live path never waits. One snapshot object
// per shadow keeps the shadow's guests' mirrors incremental.

// shadowRestFactor is how long a shadow rests after an evaluation, as a
// multiple of the evaluation's time: 1 caps it at half a core.
const shadowRestFactor = 1.0

// ShadowDiffsKept is how many differing decisions /debug/shadow lists.
const ShadowDiffsKept = 100

// ShadowDiff is one pod for which the shadow decided differently.
type ShadowDiff struct {
	Time    time.Time `json:"time"`
	Pod     string    `json:"pod"`
	Profile string    `json:"profile"`
	Shadow  string    `json:"shadow"`
	Result  string    `json:"result"`
	// LiveNode and LiveScore: the live decision ("" when unschedulable).
	LiveNode  string `json:"liveNode,omitempty"`
	LiveScore int64  `json:"liveScore"`
	// ShadowNode and ShadowScore: the shadow's, with its reason when it
	// found no node.
	ShadowNode    string `json:"shadowNode,omitempty"`
	ShadowScore   int64  `json:"shadowScore"`
	ShadowMessage string `json:"shadowMessage,omitempty"`
	// Plugins are the shadow's score plugins whose scores of the two
	// nodes differ most (weighted), largest difference first.
	Plugins []PluginScoreDiff `json:"plugins,omitempty"`
	// LiveNodeRejected is the shadow's filter verdict on the live node
	// ("plugin: reason") when one of its filters rejected it.
	LiveNodeRejected string `json:"liveNodeRejected,omitempty"`
}

// PluginScoreDiff is one plugin's weighted score of the live node and of
// the shadow's node, as the shadow profile scored them.
type PluginScoreDiff struct {
	Plugin     string `json:"plugin"`
	LiveNode   int64  `json:"liveNode"`
	ShadowNode int64  `json:"shadowNode"`
}

// shadowJob is one pod handed to a shadow.
type shadowJob struct {
	pod       *abi.Pod
	start     int
	liveNode  string // "" when the live cycle found no node
	liveScore int64
}

// shadowRunner evaluates one profile's shadow.
type shadowRunner struct {
	live    string
	prof    *framework.Profile
	s       *Scheduler
	snap    *snapshot.Snapshot
	idle    chan struct{} // a token while the goroutine waits for a job
	jobs    chan shadowJob
	stopped chan struct{}
	rng     *rand.Rand
	log     hclog.Logger
	lastLog time.Time
	quiet   int // differences not logged since lastLog
}

func (s *Scheduler) newShadowRunner(live string, prof *framework.Profile) *shadowRunner {
	r := &shadowRunner{live: live, prof: prof, s: s, snap: snapshot.New(),
		idle: make(chan struct{}, 1), jobs: make(chan shadowJob, 1), stopped: make(chan struct{}),
		rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
		log: s.log.With("profile", live, "shadow", prof.Name)}
	r.idle <- struct{}{} // idle from the start: the first pod is taken
	go r.run()
	return r
}

func (r *shadowRunner) run() {
	defer close(r.stopped)
	for job := range r.jobs {
		start := time.Now()
		r.evaluate(job)
		// Rest as long as the evaluation took: a shadow uses at most half
		// a core, leaving the rest to the live cycle, its bindings and the
		// GC (the pods it misses meanwhile are counted as skipped).
		time.Sleep(time.Duration(float64(time.Since(start)) * shadowRestFactor))
		r.idle <- struct{}{}
	}
}

// offer hands the pod of a live cycle to the shadow if it is idle, or
// counts it skipped. Called on the scheduling goroutine, after the live
// decision and before the pod is assumed.
func (r *shadowRunner) offer(job shadowJob) {
	select {
	case <-r.idle:
	default:
		r.s.metrics.ShadowDecision(r.live, metrics.ShadowSkipped)
		return
	}
	r.s.cache.UpdateSnapshot(r.snap)
	r.jobs <- job
}

// stop ends the goroutine once its current evaluation ends, then closes
// the shadow profile.
func (r *shadowRunner) stop() {
	r.halt()
	r.prof.Close(context.Background())
}

// halt ends the goroutine once its current evaluation ends.
func (r *shadowRunner) halt() {
	close(r.jobs)
	<-r.stopped
}

func (r *shadowRunner) evaluate(job shadowJob) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	state := framework.NewCycleState()
	rec := decision.NewScheduling(decision.Limits{})
	rec.Pin = job.liveNode
	state.Explain(rec)
	res, err := r.prof.Schedule(ctx, state, job.pod, r.snap, job.start, r.s.queue, r.rng)
	var fit *framework.FitError
	unfit := errors.As(err, &fit)
	d := ShadowDiff{Time: time.Now(), Pod: job.pod.Namespace + "/" + job.pod.Name, Profile: r.live, Shadow: r.prof.Name,
		LiveNode: job.liveNode, LiveScore: job.liveScore}
	switch {
	case err != nil && !unfit:
		d.Result, d.ShadowMessage = metrics.ShadowError, err.Error()
	case unfit && job.liveNode == "":
		d.Result = metrics.ShadowBothUnfit
	case unfit:
		d.Result, d.ShadowMessage = metrics.ShadowOnlyLiveFeasible, framework.FailureMessage(err)
	case job.liveNode == "":
		d.Result, d.ShadowNode, d.ShadowScore = metrics.ShadowOnlyShadowFeasible, res.Node, res.Score
	case res.Node == job.liveNode:
		d.Result = metrics.ShadowSame
	default:
		d.Result, d.ShadowNode, d.ShadowScore = metrics.ShadowDifferentNode, res.Node, res.Score
		d.Plugins = pluginDiffs(rec, job.liveNode, res.Node)
		if v := rec.VerdictOf(job.liveNode); v != nil {
			d.LiveNodeRejected = v.Plugin + ": " + strings.Join(v.Reasons, ", ")
		}
	}
	r.s.metrics.ShadowDecision(r.live, d.Result)
	if d.Result == metrics.ShadowSame || d.Result == metrics.ShadowBothUnfit {
		return
	}
	r.s.shadowDiffs.add(d)
	r.logDiff(d)
}

// logDiff logs a differing decision, at most one line a second (with the
// number left out since).
func (r *shadowRunner) logDiff(d ShadowDiff) {
	if time.Since(r.lastLog) < time.Second {
		r.quiet++
		return
	}
	args := []any{"pod", d.Pod, "result", d.Result, "liveNode", d.LiveNode, "liveScore", d.LiveScore,
		"shadowNode", d.ShadowNode, "shadowScore", d.ShadowScore}
	if len(d.Plugins) > 0 {
		args = append(args, "topPlugin", d.Plugins[0].Plugin)
	}
	if d.ShadowMessage != "" {
		args = append(args, "shadowMessage", d.ShadowMessage)
	}
	if r.quiet > 0 {
		args = append(args, "notLogged", r.quiet)
	}
	r.log.Info("shadow decided differently", args...)
	r.lastLog, r.quiet = time.Now(), 0
}

// pluginDiffs lists the shadow's score plugins by how differently they
// scored the two nodes, at most three.
// They come from the shadow cycle's decision record, which keeps the
// live node's scores (its Pin) whatever its rank.
func pluginDiffs(rec *decision.Scheduling, liveNode, shadowNode string) []PluginScoreDiff {
	live, shadow := rec.ScoreOf(liveNode), rec.ScoreOf(shadowNode)
	if shadow == nil {
		return nil
	}
	var out []PluginScoreDiff
	for i, p := range rec.ScorePlugins {
		d := PluginScoreDiff{Plugin: p.Name, ShadowNode: shadow.Weighted[i]}
		if live != nil {
			d.LiveNode = live.Weighted[i]
		}
		out = append(out, d)
	}
	abs := func(v int64) int64 {
		if v < 0 {
			return -v
		}
		return v
	}
	sort.Slice(out, func(i, j int) bool {
		di, dj := abs(out[i].ShadowNode-out[i].LiveNode), abs(out[j].ShadowNode-out[j].LiveNode)
		if di != dj {
			return di > dj
		}
		return out[i].Plugin < out[j].Plugin
	})
	return out[:min(len(out), 3)]
}

// diffRing keeps the last ShadowDiffsKept differing decisions.
type diffRing struct {
	mu    sync.Mutex
	items []ShadowDiff
	next  int
}

func (d *diffRing) add(x ShadowDiff) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.items) < ShadowDiffsKept {
		d.items = append(d.items, x)
		return
	}
	d.items[d.next] = x
	d.next = (d.next + 1) % ShadowDiffsKept
}

func (d *diffRing) list() []ShadowDiff {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]ShadowDiff, 0, len(d.items))
	out = append(out, d.items[d.next:]...)
	return append(out, d.items[:d.next]...)
}

// ShadowDiffs lists the most recent differing shadow decisions, oldest
// first (served at /debug/shadow).
func (s *Scheduler) ShadowDiffs() []ShadowDiff { return s.shadowDiffs.list() }

// ShadowIdle reports whether the shadow of a profile would take the next
// pod (false also when it has none): tests pace their pods with it.
func (s *Scheduler) ShadowIdle(profile string) bool {
	p := s.set.Load().byName[profile]
	return p != nil && p.shadow != nil && len(p.shadow.idle) == 1
}
