package preemption

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// Messages, kube-scheduler's wording where it has one.
const (
	msgPreemptNever      = "not eligible due to preemptionPolicy=Never."
	msgTerminatingVictim = "not eligible due to a terminating pod on the nominated node."
	msgNotHelpful        = "Preemption is not helpful for scheduling"
	msgNoVictims         = "No preemption victims found for incoming pod"
	msgGuarded           = "preemption would violate a PodDisruptionBudget its PriorityClass guards against this priority"
	msgNoCandidate       = "no candidate node for preemption"
)

// candidate is a node where removing victims makes the pod fit.
type candidate struct {
	node          string
	slot          uint32
	victims       []*abi.Pod
	violating     []bool
	numViolations int32
}

// PostFilter implements framework.PostFilterPlugin: kube-scheduler's
// preemption with the victim policy in Wasm (see the package comment).
//
// An explained cycle (CycleState.Explanation) gets the preemption's
// record attached to its own (decision.Scheduling.Preemption), filled
// from the dry runs' and the policy's replies as they come; an
// unexplained one allocates nothing for it.
func (p *Plugin) PostFilter(ctx context.Context, state *framework.CycleState, pod *abi.Pod, fit *framework.FitError, dr *framework.DryRun) (string, *framework.Status) {
	p.opts.Metrics.Attempt(p.profile)
	log := p.opts.Log.With("plugin", Name, "profile", p.profile, "pod", pod.Namespace+"/"+pod.Name)
	var rec *decision.Preemption
	if state != nil {
		if sched := state.Explanation(); sched != nil {
			rec = decision.NewPreemption(pod.Namespace+"/"+pod.Name, p.profile, p.args.VictimPolicy, p.args.AsyncPreemption)
			sched.Preemption = rec
			ctx = withRecord(ctx, rec)
		}
	}
	if msg := p.ineligible(pod, fit, dr.Snapshot()); msg != "" {
		log.Debug("not eligible to preempt", "reason", msg)
		if rec != nil {
			rec.Ineligible, rec.Message = msg, msg
		}
		return "", unschedulable(msg)
	}
	cands, diag, err := p.findCandidates(ctx, pod, fit, dr)
	if rec != nil {
		rec.SetNoCandidate(decision.Limits{}, diag.byNode)
	}
	if err != nil {
		log.Warn("preemption dry runs failed", "error", err)
		if rec != nil {
			rec.Message = err.Error()
		}
		return "", framework.AsStatus(fmt.Errorf("preemption: %w", err))
	}
	if len(cands) == 0 {
		p.clearNomination(pod)
		msg := diag.message(dr.Snapshot().NumNodes())
		log.Debug("no preemption candidate", "message", msg)
		if rec != nil {
			rec.Message = msg
		}
		return "", unschedulable(msg)
	}
	ranked, err := p.rank(ctx, dr, cands)
	if err != nil {
		log.Warn("ranking preemption candidates failed", "error", err)
		if rec != nil {
			rec.Message = err.Error()
		}
		return "", framework.AsStatus(fmt.Errorf("preemption: %w", err))
	}
	if len(ranked) == 0 {
		return "", unschedulable(msgNoCandidate)
	}
	if rec != nil {
		rec.SetCandidates(decision.Limits{}, recordCandidates(ranked))
	}
	node, st := p.prepare(ctx, pod, ranked, log)
	if rec != nil {
		rec.Nominated = node
		if st != nil && !st.IsSuccess() {
			rec.Message = st.Message()
		}
	}
	return node, st
}

// recordCandidates are the ranked candidates as the record keeps them,
// with the facts kube-scheduler's ranking compares.
func recordCandidates(ranked []*candidate) []decision.Candidate {
	out := make([]decision.Candidate, len(ranked))
	for i, c := range ranked {
		dc := decision.Candidate{Node: c.node, PDBViolations: int(c.numViolations), NumVictims: len(c.victims), Victims: make([]string, len(c.victims))}
		earliest := int64(0)
		for k, v := range c.victims {
			dc.Victims[k] = v.Namespace + "/" + v.Name
			dc.PrioritySum += int64(v.Priority) + 1<<31
			switch {
			case k == 0 || v.Priority > dc.HighestPriority:
				dc.HighestPriority, earliest = v.Priority, v.StartTime
			case v.Priority == dc.HighestPriority && v.StartTime != 0 && (earliest == 0 || v.StartTime < earliest):
				earliest = v.StartTime
			}
		}
		dc.EarliestStart = earliest
		out[i] = dc
	}
	return out
}

func unschedulable(msg string) *framework.Status {
	return &framework.Status{Code: abi.Unschedulable, Reasons: []string{"preemption: " + msg}, Plugin: Name}
}

// ineligible returns why the pod may not preempt, or "".
func (p *Plugin) ineligible(pod *abi.Pod, fit *framework.FitError, snap *snapshot.Snapshot) string {
	if pod.PreemptNever {
		return msgPreemptNever
	}
	nominated := p.opts.Queue.NominatedNode(pod.UID)
	if nominated == "" {
		nominated = pod.NominatedNodeName
	}
	if nominated == "" {
		return ""
	}
	// A nominated node that is now unresolvable is a dead nomination.
	if st := fit.Diagnosis.StatusOf(nominated); st != nil && st.Code == abi.UnschedulableAndUnresolvable {
		return ""
	}
	if ni := snap.Get(nominated); ni != nil {
		for i := range ni.Info.Pods {
			v := &ni.Info.Pods[i]
			if v.Priority < pod.Priority && v.Terminating && v.PreemptedByScheduler {
				return msgTerminatingVictim
			}
		}
	}
	return ""
}

// diagnosis collects per-node reasons for the "no candidates" message.
type diagnosis struct {
	mu     sync.Mutex
	byNode map[string][]string
}

func (d *diagnosis) set(node string, reasons ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byNode == nil {
		d.byNode = map[string][]string{}
	}
	d.byNode[node] = reasons
}

// message is kube-scheduler's "0/N nodes are available: ..." over the
// preemption outcome of every node.
func (d *diagnosis) message(numNodes int) string {
	counts := map[string]int{}
	for _, rs := range d.byNode {
		for _, r := range rs {
			counts[r]++
		}
	}
	hist := make([]string, 0, len(counts))
	for r, n := range counts {
		hist = append(hist, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(hist)
	return fmt.Sprintf(framework.NoNodeAvailableMsg+": %s.", numNodes, strings.Join(hist, ", "))
}

// findCandidates runs the dry runs over the potential nodes from a random
// offset until enough candidates are found.
func (p *Plugin) findCandidates(ctx context.Context, pod *abi.Pod, fit *framework.FitError, dr *framework.DryRun) ([]*candidate, *diagnosis, error) {
	snap := dr.Snapshot()
	diag := &diagnosis{}
	var potential []*snapshot.NodeInfo
	for _, ni := range snap.Nodes() {
		if st := fit.Diagnosis.NodeToStatus[ni.Info.Node.Name]; st != nil && st.Code == abi.Unschedulable {
			potential = append(potential, ni)
		} else {
			diag.set(ni.Info.Node.Name, msgNotHelpful)
		}
	}
	n := len(potential)
	if rec := recordOf(ctx); rec != nil {
		rec.PotentialNodes = n
	}
	if n == 0 {
		return nil, diag, nil
	}
	want := p.args.NumCandidates(n)
	offset := p.offset(n)
	sessions, release := dr.Sessions(ctx, runtime.GOMAXPROCS(0))
	defer release()

	var nonViolating, violating []*candidate
	enough := func() bool { return len(nonViolating) > 0 && len(nonViolating)+len(violating) >= want }
	chunk := max(want, 16)
	var errs []error
	for done := 0; done < n && !enough(); done += chunk {
		var nodes []*snapshot.NodeInfo
		for i := done; i < min(done+chunk, n); i++ {
			nodes = append(nodes, potential[(offset+i)%n])
		}
		found, err := p.dryRunChunk(ctx, pod, nodes, sessions, dr, diag)
		if err != nil {
			return nil, diag, err
		}
		for _, r := range found {
			switch {
			case r.err != nil:
				errs = append(errs, r.err)
			case r.cand == nil:
			case r.cand.numViolations == 0:
				if len(nonViolating) < want {
					nonViolating = append(nonViolating, r.cand)
				}
			default:
				if len(violating) < want {
					violating = append(violating, r.cand)
				}
			}
			if enough() {
				break
			}
		}
	}
	cands := append(nonViolating, violating...)
	if len(cands) == 0 && len(errs) > 0 {
		return nil, diag, errors.Join(errs...)
	}
	return cands, diag, nil
}

type dryResult struct {
	cand *candidate
	err  error
}

// dryRunChunk asks the policy for the victims of a batch of nodes, then
// evaluates the nodes in parallel over the sessions. Results keep the
// nodes' order.
func (p *Plugin) dryRunChunk(ctx context.Context, pod *abi.Pod, nodes []*snapshot.NodeInfo, sessions []*framework.Session, dr *framework.DryRun, diag *diagnosis) ([]dryResult, error) {
	var req []abi.NodeCandidates
	var reqNodes []*snapshot.NodeInfo
	var podsOf [][]*abi.Pod
	for _, ni := range nodes {
		var nc abi.NodeCandidates
		var pods []*abi.Pod
		nc.Slot = ni.Slot
		for i := range ni.Info.Pods {
			v := &ni.Info.Pods[i]
			if v.Priority < pod.Priority {
				nc.Pods = append(nc.Pods, p.victimCandidate(v))
				pods = append(pods, v)
			}
		}
		if len(pods) == 0 {
			diag.set(ni.Info.Node.Name, msgNoVictims)
			continue
		}
		req = append(req, nc)
		reqNodes = append(reqNodes, ni)
		podsOf = append(podsOf, pods)
	}
	if len(req) == 0 {
		return nil, nil
	}
	answers, err := sessions[0].SelectVictims(ctx, p.args.VictimPolicy, req)
	if err != nil {
		return nil, fmt.Errorf("victim policy %q: %w", p.args.VictimPolicy, err)
	}
	type job struct {
		i       int
		victims []*abi.Pod
		viol    []bool
	}
	var jobs []job
	for i, a := range answers {
		name := reqNodes[i].Info.Node.Name
		if a.Code != abi.Success || len(a.Victims) == 0 {
			reasons := a.Reasons
			if len(reasons) == 0 {
				reasons = []string{msgNoVictims}
			}
			if p.hasGuardedLeftOver(pod, req[i].Pods, a.Victims) {
				reasons = []string{msgGuarded}
			}
			diag.set(name, reasons...)
			continue
		}
		j := job{i: i}
		for _, v := range a.Victims {
			j.victims = append(j.victims, podsOf[i][v.Index])
			j.viol = append(j.viol, v.Violating)
		}
		jobs = append(jobs, j)
	}
	results := make([]dryResult, len(answers))
	if debugBatch != nil {
		debugBatch(dr.Batchable())
	}
	if dr.Batchable() {
		// What-ifs on different nodes are independent for this pod: each
		// session evaluates a share of the nodes in one view, filtering
		// them together.
		var wg sync.WaitGroup
		errs := make([]error, len(sessions))
		per := (len(jobs) + len(sessions) - 1) / len(sessions)
		for si, s := range sessions {
			lo, hi := si*per, min((si+1)*per, len(jobs))
			if lo >= hi {
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var bj []batchJob
				for _, j := range jobs[lo:hi] {
					bj = append(bj, batchJob{ni: reqNodes[j.i], victims: j.victims, viol: j.viol})
				}
				cands, sts, err := p.evalBatch(ctx, s, pod, bj, dr.Nominator())
				if err != nil {
					errs[si] = err
					return
				}
				for k, j := range jobs[lo:hi] {
					p.recordEval(results, j.i, cands[k], sts[k], reqNodes[j.i], pod, req[j.i].Pods, answers[j.i].Victims, diag)
				}
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return results, nil
	}
	next := make(chan job)
	var wg sync.WaitGroup
	var fatalMu sync.Mutex
	var fatal error
	for _, s := range sessions {
		wg.Add(1)
		go func(s *framework.Session) {
			defer wg.Done()
			for j := range next {
				ni := reqNodes[j.i]
				cand, st, err := p.evalNode(ctx, s, pod, ni, j.victims, j.viol, dr.Nominator())
				switch {
				case err != nil:
					fatalMu.Lock()
					if fatal == nil {
						fatal = err
					}
					fatalMu.Unlock()
				default:
					p.recordEval(results, j.i, cand, st, ni, pod, req[j.i].Pods, answers[j.i].Victims, diag)
				}
			}
		}(s)
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	if fatal != nil {
		return nil, fatal
	}
	return results, nil
}

// recordEval files one node's dry-run outcome: a candidate, or the
// reasons it is none.
func (p *Plugin) recordEval(results []dryResult, i int, cand *candidate, st *framework.Status, ni *snapshot.NodeInfo, pod *abi.Pod, offered []abi.VictimCandidate, chosen []abi.VictimChoice, diag *diagnosis) {
	if st == nil {
		results[i].cand = cand
		return
	}
	reasons := st.Reasons
	if st.Code == abi.Error {
		results[i].err = fmt.Errorf("node %s: %s", ni.Info.Node.Name, st.Message())
	}
	if p.hasGuardedLeftOver(pod, offered, chosen) {
		reasons = append(append([]string(nil), reasons...), msgGuarded)
	}
	diag.set(ni.Info.Node.Name, reasons...)
}

// batchJob is one node of evalBatch.
type batchJob struct {
	ni      *snapshot.NodeInfo
	victims []*abi.Pod
	viol    []bool
}

// evalBatch is evalNode for many nodes in one view, in lockstep: remove
// every node's chosen pods, check them all in one batched filter pass,
// then reprieve the k-th pod (in each node's reprieve order: violating
// first, then the others) on every node still in play and check those
// together, for k = 0, 1, ... Only valid when what-ifs on different nodes
// are independent (DryRun.Batchable).
func (p *Plugin) evalBatch(ctx context.Context, s *framework.Session, pod *abi.Pod, jobs []batchJob, nom framework.Nominator) ([]*candidate, []*framework.Status, error) {
	if err := s.Push(ctx); err != nil {
		return nil, nil, err
	}
	cands, sts, err := p.evalBatchInView(ctx, s, pod, jobs, nom)
	if perr := s.Pop(ctx); err == nil && perr != nil {
		err = perr
	}
	return cands, sts, err
}

func (p *Plugin) evalBatchInView(ctx context.Context, s *framework.Session, pod *abi.Pod, jobs []batchJob, nom framework.Nominator) ([]*candidate, []*framework.Status, error) {
	cands := make([]*candidate, len(jobs))
	sts := make([]*framework.Status, len(jobs))
	slots := make([]uint32, len(jobs))
	// Each step's changes go to every module in one call: all removals,
	// then per reprieve step its restores and the removals it decides.
	var edits []guest.ViewEdit
	for i, j := range jobs {
		slots[i] = j.ni.Slot
		for _, v := range j.victims {
			edits = append(edits, guest.ViewEdit{Slot: j.ni.Slot, Op: guest.EditRemove, Pod: v})
		}
	}
	if err := s.Edit(ctx, edits); err != nil {
		return nil, nil, err
	}
	first, err := s.FitsMany(ctx, pod, slots, nom)
	if err != nil {
		return nil, nil, err
	}
	victim := make([][]bool, len(jobs))
	order := make([][]int, len(jobs))
	numViolations := make([]int32, len(jobs))
	var active []int
	for i, j := range jobs {
		if first[i] != nil {
			sts[i] = first[i]
			continue
		}
		victim[i] = make([]bool, len(j.victims))
		for _, violatingPass := range []bool{true, false} {
			for k := range j.victims {
				if j.viol[k] == violatingPass {
					order[i] = append(order[i], k)
				}
			}
		}
		active = append(active, i)
	}
	for k := 0; ; k++ {
		var step []int
		var stepSlots []uint32
		edits = edits[:0]
		for _, i := range active {
			if k < len(order[i]) {
				step = append(step, i)
				stepSlots = append(stepSlots, jobs[i].ni.Slot)
				edits = append(edits, guest.ViewEdit{Slot: jobs[i].ni.Slot, Op: guest.EditRestore, Pod: jobs[i].victims[order[i][k]]})
			}
		}
		if len(step) == 0 {
			break
		}
		if err := s.Edit(ctx, edits); err != nil {
			return nil, nil, err
		}
		res, err := s.FitsMany(ctx, pod, stepSlots, nom)
		if err != nil {
			return nil, nil, err
		}
		edits = edits[:0]
		for n, i := range step {
			if res[n] == nil {
				continue // it fits with this pod back: reprieved
			}
			v := order[i][k]
			victim[i][v] = true
			if jobs[i].viol[v] {
				numViolations[i]++
			}
			edits = append(edits, guest.ViewEdit{Slot: jobs[i].ni.Slot, Op: guest.EditRemoveRestored, Pod: jobs[i].victims[v]})
		}
		if err := s.Edit(ctx, edits); err != nil {
			return nil, nil, err
		}
	}
	for _, i := range active {
		j := jobs[i]
		c := &candidate{node: j.ni.Info.Node.Name, slot: j.ni.Slot, numViolations: numViolations[i]}
		for k, v := range j.victims {
			if victim[i][k] {
				c.victims = append(c.victims, v)
				c.violating = append(c.violating, j.viol[k])
			}
		}
		if len(c.victims) == 0 {
			sts[i] = &framework.Status{Code: abi.Error, Reasons: []string{"expected at least one victim"}}
			continue
		}
		cands[i] = c
	}
	return cands, sts, nil
}

// hasGuardedLeftOver reports whether the policy left out a pod whose
// KEP-3280 guard protects it from this preemptor, to explain a failure.
func (p *Plugin) hasGuardedLeftOver(pod *abi.Pod, offered []abi.VictimCandidate, chosen []abi.VictimChoice) bool {
	picked := make(map[uint32]bool, len(chosen))
	for _, c := range chosen {
		picked[c.Index] = true
	}
	for i := range offered {
		if g := offered[i].DisruptionGuard; g != nil && pod.Priority < *g && !picked[uint32(i)] {
			return true
		}
	}
	return false
}

// victimCandidate summarises a pod for the policy; a pod the host saw
// before its PriorityClass gets the class's guard now.
func (p *Plugin) victimCandidate(v *abi.Pod) abi.VictimCandidate {
	g := v.DisruptionGuard
	if g == nil && v.PriorityClassName != "" {
		g = p.opts.Guard(v.PriorityClassName)
	}
	return abi.VictimCandidate{UID: v.UID, Namespace: v.Namespace, Name: v.Name, Labels: v.Labels,
		Priority: v.Priority, StartTime: v.StartTime, DisruptionGuard: g}
}

// evalNode is kube-scheduler's SelectVictimsOnNode with the policy's
// choice: remove every chosen pod, check that the preemptor fits, then
// give pods back one at a time — violating ones first, then the others,
// each in the policy's order — keeping those it still fits with.
func (p *Plugin) evalNode(ctx context.Context, s *framework.Session, pod *abi.Pod, ni *snapshot.NodeInfo, chosen []*abi.Pod, viol []bool, nom framework.Nominator) (*candidate, *framework.Status, error) {
	if err := s.Push(ctx); err != nil {
		return nil, nil, err
	}
	cand, st, err := p.evalNodeInView(ctx, s, pod, ni, chosen, viol, nom)
	if perr := s.Pop(ctx); err == nil && perr != nil {
		err = perr
	}
	return cand, st, err
}

func (p *Plugin) evalNodeInView(ctx context.Context, s *framework.Session, pod *abi.Pod, ni *snapshot.NodeInfo, chosen []*abi.Pod, viol []bool, nom framework.Nominator) (*candidate, *framework.Status, error) {
	edits := make([]guest.ViewEdit, len(chosen))
	for i, v := range chosen {
		edits[i] = guest.ViewEdit{Slot: ni.Slot, Op: guest.EditRemove, Pod: v}
	}
	if err := s.Edit(ctx, edits); err != nil {
		return nil, nil, err
	}
	st, err := s.Fits(ctx, pod, ni.Slot, nom)
	if err != nil || st != nil {
		return nil, st, err
	}
	victim := make([]bool, len(chosen))
	var numViolations int32
	reprieve := func(i int) error {
		edits[0] = guest.ViewEdit{Slot: ni.Slot, Op: guest.EditRestore, Pod: chosen[i]}
		if err := s.Edit(ctx, edits[:1]); err != nil {
			return err
		}
		st, err := s.Fits(ctx, pod, ni.Slot, nom)
		if err != nil {
			return err
		}
		if st != nil {
			victim[i] = true
			if viol[i] {
				numViolations++
			}
			edits[0].Op = guest.EditRemoveRestored
			return s.Edit(ctx, edits[:1])
		}
		return nil
	}
	for _, violatingPass := range []bool{true, false} {
		for i := range chosen {
			if viol[i] == violatingPass {
				if err := reprieve(i); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	c := &candidate{node: ni.Info.Node.Name, slot: ni.Slot, numViolations: numViolations}
	for i, v := range chosen {
		if victim[i] {
			c.victims = append(c.victims, v)
			c.violating = append(c.violating, viol[i])
		}
	}
	if len(c.victims) == 0 {
		return nil, &framework.Status{Code: abi.Error, Reasons: []string{"expected at least one victim"}}, nil
	}
	return c, nil, nil
}

// rank asks the policy to order the candidates, best first.
func (p *Plugin) rank(ctx context.Context, dr *framework.DryRun, cands []*candidate) ([]*candidate, error) {
	if len(cands) == 1 {
		return cands, nil
	}
	req := make([]abi.Candidate, len(cands))
	for i, c := range cands {
		req[i] = abi.Candidate{Slot: c.slot, NumPDBViolations: c.numViolations}
		for _, v := range c.victims {
			req[i].Victims = append(req[i].Victims, p.victimCandidate(v))
		}
	}
	sessions, release := dr.Sessions(ctx, 1)
	defer release()
	order, err := sessions[0].RankCandidates(ctx, p.args.VictimPolicy, req)
	if err != nil {
		return nil, fmt.Errorf("victim policy %q: %w", p.args.VictimPolicy, err)
	}
	out := make([]*candidate, 0, len(order))
	for _, i := range order {
		out = append(out, cands[i])
	}
	return out, nil
}

// debugBatch, when set by tests, is told which dry-run path each chunk takes.
var debugBatch func(batched bool)
