package preemption

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
)

// Event reasons.
const (
	// ReasonPreempted is the Event on a victim, as kube-scheduler's.
	ReasonPreempted = "Preempted"
	// ReasonPreemptionFailed is the Event on a preemptor whose preemption
	// could not be carried out (API failure, or every candidate refused
	// by the Eviction API under KEP-3280).
	ReasonPreemptionFailed = "FailedPreemption"
	// ReasonEvictBlocked is the Warning Event on a victim whose eviction
	// (or dry run) the Eviction API refused with 429. It is the eviction
	// killer's reason (host/engines/eviction's ReasonEvictBlocked), so one reason
	// finds every refusal whoever asked.
	ReasonEvictBlocked = "EvictBlocked"
)

// errRefused marks a KEP-3280 victim the Eviction API refused (429) while
// the preemptor's priority is below the victim's guard: this candidate
// cannot be used; the next one may.
var errRefused = errors.New("eviction refused by a PodDisruptionBudget the victim's PriorityClass guards (429)")

// prepare carries out the preemption on the best candidate: in the cycle
// (sync) or in a goroutine after nominating the pod (async).
func (p *Plugin) prepare(ctx context.Context, pod *abi.Pod, ranked []*candidate, log hclog.Logger) (string, *framework.Status) {
	best := ranked[0]
	p.opts.Metrics.Victims(len(best.victims))
	if !p.args.AsyncPreemption {
		node, err := p.execute(ctx, pod, ranked, false, log)
		if err != nil {
			var nl *noneLeft
			if errors.As(err, &nl) {
				p.clearNomination(pod)
				p.opts.API.Event(pod, true, ReasonPreemptionFailed, err.Error())
				return "", unschedulable(err.Error())
			}
			return "", framework.AsStatus(fmt.Errorf("preemption: %w", err))
		}
		p.nominate(pod, node)
		return node, placed(node, ranked)
	}
	// Async: nominate now, so the next cycles keep the room; the API calls
	// follow in a goroutine while the gate holds the pod back.
	p.nominate(pod, best.node)
	if len(p.live(best.victims)) == 0 {
		if rec := recordOf(ctx); rec != nil {
			rec.Finish(best.node, nil)
		}
		return best.node, placed(best.node, ranked) // every victim is already leaving
	}
	if !p.startRun(pod.UID) {
		return best.node, placed(best.node, ranked) // one is already running (cannot pass the gate; defensive)
	}
	preemptor := *pod
	p.wg.Add(1)
	go p.runAsync(withRecord(background(), recordOf(ctx)), &preemptor, ranked, log)
	return best.node, placed(best.node, ranked)
}

// placed is the Success status of a preemption that nominated node: its
// message ends the pod's FailedScheduling text, in kube-scheduler v1.37's
// words, the victims being all of that candidate's.
func placed(node string, ranked []*candidate) *framework.Status {
	victims := 0
	for _, c := range ranked {
		if c.node == node {
			victims = len(c.victims)
			break
		}
	}
	return &framework.Status{Code: abi.Success, Plugin: Name,
		Reasons: []string{fmt.Sprintf("preemption: found a potential placement for pod on node %v, preempting %d victims", node, victims)}}
}

// runAsync is the preemption goroutine (KEP-4832). Whatever happens, it
// ends by re-activating the preemptor, so the pod never waits for the
// five-minute flush (kubernetes issue #141694): after a success straight
// to activeQ (the room is made), after a failure through its backoff
// (upstream activates at once, which spins against an API that keeps
// failing).
func (p *Plugin) runAsync(ctx context.Context, pod *abi.Pod, ranked []*candidate, log hclog.Logger) {
	defer p.wg.Done()
	start := time.Now()
	result := ResultSuccess
	_, err := p.execute(ctx, pod, ranked, true, log)
	if err != nil {
		result = ResultError
		log.Warn("asynchronous preemption failed; clearing the nomination", "error", err)
		p.clearNomination(pod)
		p.opts.API.Event(pod, true, ReasonPreemptionFailed, "preemption: "+err.Error())
	}
	p.endRun(pod.UID)
	p.opts.Metrics.GoroutineDone(result, time.Since(start))
	if err != nil {
		p.opts.Queue.Requeue([]*abi.Pod{pod})
	} else {
		p.opts.Queue.Activate([]*abi.Pod{pod})
	}
}

// noneLeft says every candidate was refused under KEP-3280.
type noneLeft struct{ tried []string }

func (e *noneLeft) Error() string {
	return fmt.Sprintf("no candidate node left: the Eviction API refused victims whose PriorityClass guards their PodDisruptionBudget against this priority on %d node(s) %v", len(e.tried), e.tried)
}

// execute removes the victims of the first candidate that works, moving
// to the next when a guarded victim's eviction is refused (KEP-3280),
// and returns the node used. Other failures end it.
//
// The attempt's record, if any (recordOf), gets every victim's outcome,
// the candidates abandoned and the node used.
func (p *Plugin) execute(ctx context.Context, pod *abi.Pod, ranked []*candidate, async bool, log hclog.Logger) (used string, err error) {
	if rec := recordOf(ctx); rec != nil {
		defer func() { rec.Finish(used, err) }()
	}
	var tried []string
	for i, c := range ranked {
		if i > 0 {
			log.Info("moving preemption to the next candidate", "node", c.node, "refused", tried[len(tried)-1])
			p.nominate(pod, c.node)
		}
		err := p.preemptOn(ctx, pod, c, async, log)
		if errors.Is(err, errRefused) {
			log.Info("eviction refused (429) for a PDB-guarded victim", "node", c.node, "error", err)
			tried = append(tried, c.node)
			if rec := recordOf(ctx); rec != nil {
				rec.Refused(c.node)
			}
			continue
		}
		if err != nil {
			return "", err
		}
		if err := p.clearLowerNominations(ctx, pod, c.node); err != nil && async {
			return c.node, err
		}
		return c.node, nil
	}
	return "", &noneLeft{tried: tried}
}

// live are the victims not already terminating.
func (p *Plugin) live(victims []*abi.Pod) []*abi.Pod {
	var out []*abi.Pod
	for _, v := range victims {
		cur := p.opts.Pods.GetPod(v.UID)
		if cur == nil || cur.Terminating || v.Terminating {
			continue
		}
		out = append(out, cur)
	}
	return out
}

// preemptOn removes one candidate's victims, ordered so that a KEP-3280
// refusal is learned before anything on the node is removed:
//
//  1. The guarded victims (a guard above the preemptor's priority: the
//     only ones whose eviction may be refused) are checked with dry-run
//     evictions, in parallel, when the API offers them; a 429 abandons
//     the node with every pod on it untouched.
//  2. They are evicted for real one at a time, stopping at the first
//     refusal, so a budget that changed since the dry run costs at most
//     the guarded victims evicted before it.
//  3. Only then are the others marked and removed. Sync: all in parallel,
//     the first error cancelling the rest. Async: all but the last in
//     parallel, then the last (recorded first, for the gate), skipped if
//     any other failed.
func (p *Plugin) preemptOn(ctx context.Context, pod *abi.Pod, c *candidate, async bool, log hclog.Logger) error {
	victims := p.live(c.victims)
	if len(victims) == 0 {
		return nil
	}
	guarded, rest := p.splitGuarded(pod, victims)
	if err := p.checkGuarded(ctx, pod, c.node, guarded); err != nil {
		return err
	}
	for i, v := range guarded {
		if async && len(rest) == 0 && i == len(guarded)-1 {
			p.setLastVictim(pod.UID, v)
		}
		if err := p.preemptVictim(ctx, pod, c.node, v); err != nil {
			if i > 0 && errors.Is(err, errRefused) {
				log.Warn("a guarded victim was refused after others of the node were evicted; abandoning the node without them",
					"node", c.node, "evicted", names(guarded[:i]), "error", err)
			}
			return err
		}
	}
	if !async {
		return p.preemptAll(ctx, pod, c.node, rest)
	}
	if len(rest) == 0 {
		return nil
	}
	last := rest[len(rest)-1]
	if err := p.preemptAll(ctx, pod, c.node, rest[:len(rest)-1]); err != nil {
		return err
	}
	p.setLastVictim(pod.UID, last)
	return p.preemptVictim(ctx, pod, c.node, last)
}

// names are the pods' namespace/name, for logs.
func names(pods []*abi.Pod) []string {
	out := make([]string, len(pods))
	for i, v := range pods {
		out[i] = v.Namespace + "/" + v.Name
	}
	return out
}

// guardOf is the victim's KEP-3280 value: its own, or its class's for a
// pod the host saw before the class (nil: none).
func (p *Plugin) guardOf(v *abi.Pod) *int32 {
	if v.DisruptionGuard == nil && v.PriorityClassName != "" {
		return p.opts.Guard(v.PriorityClassName)
	}
	return v.DisruptionGuard
}

// protects reports whether the victim's guard is above the preemptor's
// priority: its eviction must not fall back to delete.
func (p *Plugin) protects(pod, v *abi.Pod) bool {
	g := p.guardOf(v)
	return g != nil && pod.Priority < *g
}

// splitGuarded separates the victims the preemptor may only evict
// (keeping their order) from the rest.
func (p *Plugin) splitGuarded(pod *abi.Pod, victims []*abi.Pod) (guarded, rest []*abi.Pod) {
	for _, v := range victims {
		if p.protects(pod, v) {
			guarded = append(guarded, v)
		} else {
			rest = append(rest, v)
		}
	}
	return guarded, rest
}

// checkGuarded asks the Eviction API, as a dry run and in parallel,
// whether it would evict each guarded victim now: errRefused if it would
// refuse one. Without dry runs in the API it checks nothing.
func (p *Plugin) checkGuarded(ctx context.Context, pod *abi.Pod, node string, guarded []*abi.Pod) error {
	dry, ok := p.opts.API.(podremoval.DryRunEvictor)
	if !ok || len(guarded) == 0 {
		return nil
	}
	return forEach(ctx, guarded, func(ctx context.Context, v *abi.Pod) error {
		err := dry.EvictPodDryRun(ctx, v)
		switch {
		case err == nil:
			note(ctx, v, node, decision.VictimDryRunOK, nil)
			return nil
		case errors.Is(err, podremoval.ErrNotFound):
			note(ctx, v, node, decision.VictimGone, nil)
			return nil // a gone victim counts as done, as when removing it
		case errors.Is(err, podremoval.ErrTooManyRequests):
			note(ctx, v, node, decision.VictimDryRunNo, err)
			p.evictionBlocked(pod, v, node, true, err, "the pod stays, and preemption tries the next candidate node")
			return fmt.Errorf("victim %s/%s on %s (dry run): %w", v.Namespace, v.Name, node, errRefused)
		}
		note(ctx, v, node, decision.VictimFailed, err)
		return fmt.Errorf("dry-run eviction of victim %s/%s: %w", v.Namespace, v.Name, err)
	})
}

func (p *Plugin) preemptAll(ctx context.Context, pod *abi.Pod, node string, victims []*abi.Pod) error {
	return forEach(ctx, victims, func(ctx context.Context, v *abi.Pod) error {
		return p.preemptVictim(ctx, pod, node, v)
	})
}

// forEach runs f on every victim in parallel; an error other than a
// refusal cancels the rest and wins, since a refusal only says "try the
// next candidate".
func forEach(ctx context.Context, victims []*abi.Pod, f func(context.Context, *abi.Pod) error) error {
	if len(victims) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(victims))
	var wg sync.WaitGroup
	for i, v := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = f(ctx, v); errs[i] != nil && !errors.Is(errs[i], errRefused) {
				cancel()
			}
		}()
	}
	wg.Wait()
	var refused error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, errRefused):
			refused = err
		default:
			return err
		}
	}
	return refused
}

// preemptVictim removes one victim. Without a KEP-3280 guard: mark it
// (DisruptionTarget, PreemptionByScheduler), then delete it, as
// kube-scheduler does. With a guard the preemptor reaches: mark, then
// evict, falling back to delete on 429 (best effort, as the KEP says).
// With a guard above the preemptor's priority: evict without marking
// first (the Eviction API sets the condition itself when it agrees); a
// 429 is errRefused. NotFound counts as done.
func (p *Plugin) preemptVictim(ctx context.Context, pod *abi.Pod, node string, v *abi.Pod) error {
	guard := p.guardOf(v)
	protected := guard != nil && pod.Priority < *guard
	if !protected {
		msg := fmt.Sprintf("%s: preempting to accommodate a higher priority pod", p.profile)
		if err := p.opts.API.MarkVictim(ctx, v, msg); err != nil {
			if errors.Is(err, podremoval.ErrNotFound) {
				note(ctx, v, node, decision.VictimGone, nil)
				return nil
			}
			note(ctx, v, node, decision.VictimFailed, err)
			return fmt.Errorf("mark victim %s/%s: %w", v.Namespace, v.Name, err)
		}
	}
	var err error
	how, outcome := "deleted", decision.VictimDeleted
	switch {
	case guard == nil:
		err = p.deleteVictim(ctx, v)
	default:
		how, outcome = "evicted through the Eviction API", decision.VictimEvicted
		err = p.opts.API.EvictPod(ctx, v, nil)
		if errors.Is(err, podremoval.ErrTooManyRequests) {
			if protected {
				note(ctx, v, node, decision.VictimRefused, err)
				p.evictionBlocked(pod, v, node, false, err, "the pod stays, and preemption tries the next candidate node")
				return fmt.Errorf("victim %s/%s on %s: %w", v.Namespace, v.Name, node, errRefused)
			}
			p.evictionBlocked(pod, v, node, false, err,
				"deleting the pod instead, as its PriorityClass lets this priority violate the budget (KEP-3280 best effort)")
			how, outcome = "deleted after the Eviction API refused (429)", decision.VictimFellBack
			err = p.deleteVictim(ctx, v)
		}
	}
	switch {
	case errors.Is(err, podremoval.ErrNotFound):
		note(ctx, v, node, decision.VictimGone, nil)
	case err != nil:
		note(ctx, v, node, decision.VictimFailed, err)
		return fmt.Errorf("remove victim %s/%s: %w", v.Namespace, v.Name, err)
	default:
		note(ctx, v, node, outcome, nil)
	}
	msg := fmt.Sprintf("Preempted by pod %s/%s on node %s (%s)", pod.Namespace, pod.Name, node, how)
	if re, ok := p.opts.API.(RelatedEventer); ok {
		re.EventRelated(v, pod, false, ReasonPreempted, msg)
	} else {
		p.opts.API.Event(v, false, ReasonPreempted, msg)
	}
	return nil
}

// deleteVictim deletes v with its own grace period. The only conflict a
// deletion meets is its UID precondition failing: the name belongs to
// another pod now, so v is gone, as if the answer had been 404.
func (p *Plugin) deleteVictim(ctx context.Context, v *abi.Pod) error {
	err := p.opts.API.DeletePod(ctx, v, nil)
	if errors.Is(err, podremoval.ErrConflict) {
		return fmt.Errorf("another pod has the name of victim %s/%s: %w (%w)", v.Namespace, v.Name, podremoval.ErrNotFound, err)
	}
	return err
}

// evictionBlocked reports a 429 from the Eviction API for victim v of
// the preemptor on node, as soon as it arrives: a Warning Event on the
// victim naming the budget and the server's Retry-After when the answer
// gave them, a log line at the default level, and the metric. then says
// what preemption does next.
func (p *Plugin) evictionBlocked(pod, v *abi.Pod, node string, dry bool, err error, then string) {
	p.opts.Metrics.EvictionBlocked()
	by, kind := "a PodDisruptionBudget", "eviction"
	if dry {
		kind = "dry-run eviction"
	}
	var retryAfter time.Duration
	var blocked *podremoval.RefusedError
	if errors.As(err, &blocked) {
		if blocked.PDB != "" {
			by = "PodDisruptionBudget " + blocked.PDB
		}
		retryAfter = blocked.RetryAfter
	}
	wait := ""
	if retryAfter > 0 {
		wait = fmt.Sprintf(" (Retry-After %s)", retryAfter)
	}
	p.opts.Log.Warn("the Eviction API refused a preemption victim (429)", "victim", v.Namespace+"/"+v.Name,
		"preemptor", pod.Namespace+"/"+pod.Name, "node", node, "dry_run", dry, "retry_after", retryAfter, "next", then, "error", err)
	p.opts.API.Event(v, true, ReasonEvictBlocked, fmt.Sprintf("The %s for preemptor %s/%s on node %s was refused by %s%s: %s",
		kind, pod.Namespace, pod.Name, node, by, wait, then))
}

// nominate records the nomination in the nominator at once (the next
// cycles respect it) and patches it onto the pod.
func (p *Plugin) nominate(pod *abi.Pod, node string) {
	p.opts.Queue.AddNominatedPod(pod, node)
	if err := p.opts.API.SetNomination(background(), pod, node); err != nil {
		p.opts.Log.Debug("patch nominatedNodeName", "pod", pod.Namespace+"/"+pod.Name, "error", err)
	}
}

// clearNomination drops the pod's nomination, in memory and on the pod.
func (p *Plugin) clearNomination(pod *abi.Pod) {
	had := p.opts.Queue.NominatedNode(pod.UID) != "" || pod.NominatedNodeName != ""
	p.opts.Queue.DeleteNominatedPodIfExists(pod)
	if had {
		if err := p.opts.API.SetNomination(background(), pod, ""); err != nil {
			p.opts.Log.Debug("clear nominatedNodeName", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		}
	}
}

// clearLowerNominations drops the nominations of lower-priority pods to
// node: this preemption takes the room made for them. They are not refit.
func (p *Plugin) clearLowerNominations(ctx context.Context, pod *abi.Pod, node string) error {
	var errs []error
	for _, np := range p.opts.Queue.NominatedPodsForNode(node) {
		if np.Priority >= pod.Priority || np.UID == pod.UID {
			continue
		}
		p.opts.Queue.DeleteNominatedPodIfExists(np)
		if err := p.opts.API.SetNomination(ctx, np, ""); err != nil && !errors.Is(err, podremoval.ErrNotFound) {
			errs = append(errs, fmt.Errorf("clear nomination of %s/%s: %w", np.Namespace, np.Name, err))
		}
	}
	return errors.Join(errs...)
}

// recordKey carries an explained attempt's preemption record through
// the calls that carry the preemption out (on the cycle, or in the
// asynchronous goroutine).
type recordKey struct{}

// withRecord returns ctx carrying rec (ctx itself when rec is nil).
func withRecord(ctx context.Context, rec *decision.Preemption) context.Context {
	if rec == nil {
		return ctx
	}
	return context.WithValue(ctx, recordKey{}, rec)
}

// recordOf is the record ctx carries, or nil.
func recordOf(ctx context.Context) *decision.Preemption {
	rec, _ := ctx.Value(recordKey{}).(*decision.Preemption)
	return rec
}

// note records one victim's outcome in the attempt's record, if any.
func note(ctx context.Context, v *abi.Pod, node, outcome string, err error) {
	if rec := recordOf(ctx); rec != nil {
		rec.Victim(decision.Limits{}, v.Namespace+"/"+v.Name, node, outcome, err)
	}
}
