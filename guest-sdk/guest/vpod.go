package guest

import (
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Vpod calls (ABI v1.3). The host registers policies (FuncVPodPolicy),
// sends the topology when it changes (FuncVPodTopology), and asks one
// FuncVPodStep per vreplica step. The guest keeps every registered policy
// by ID with each entry's filter or scorer, built once from the entry's
// args, and only the latest topology. Whatever the host sends, a step
// that names an unknown policy or topology, or an index out of range,
// gets an Error reply; no input makes the guest panic.

// vpodRuntime is the vpod state of a guest, made on the first vpod call
// so that other modules carry none of it.
type vpodRuntime struct {
	policies map[uint32]*vpodPolicy
	topo     abi.VPodTopology
	haveTopo bool

	step     abi.VPodStep
	state    plugin.VPodState
	pods     []int // the step's candidates
	sub      []int // the candidates a filter or scorer is given
	subAt    []int // their positions among the candidates
	verdicts []*plugin.Status
	scores   []int64
	reply    abi.VPodStepReply
}

// vpodPolicy is a registered policy.
type vpodPolicy struct {
	entries []vpodEntry
}

// vpodEntry is one entry of a registered policy: a filter or a scorer,
// or neither when its args were refused (invalid).
type vpodEntry struct {
	kind    abi.VPodEntryKind
	name    string
	filter  plugin.VPodFilter
	scorer  plugin.VPodScorer
	invalid bool
}

// errNoVPod is one fixed error, so that modules without vpod plugins pay
// for no message building here.
var errNoVPod error = &guestError{"vpod call before init or to a module without vpod plugins"}

// reasonInvalidArgs is Knative's reason for an entry whose args do not
// decode.
const reasonInvalidArgs = "invalid arguments"

var statusInvalidArgs = plugin.NewStatus(abi.Unschedulable, reasonInvalidArgs)

// isVPodPlugin reports whether p implements a vpod point.
func isVPodPlugin(p plugin.Plugin) bool {
	if _, ok := p.(plugin.VPodPredicatePlugin); ok {
		return true
	}
	_, ok := p.(plugin.VPodPriorityPlugin)
	return ok
}

// vpodCall runs FuncVPodPolicy, FuncVPodTopology or FuncVPodStep. A
// module without a vpod plugin refuses them all: with no type
// implementing the vpod interfaces, the check is constant and TinyGo
// drops the rest (what remains costs such a module about 250 bytes).
func (g *Guest) vpodCall(fn abi.Func, in []byte) error {
	has := false // and false before init, when there are no plugins yet
	for _, p := range g.plugins {
		has = has || isVPodPlugin(p)
	}
	if !has {
		return errNoVPod
	}
	if g.vpod == nil {
		g.vpod = &vpodRuntime{policies: map[uint32]*vpodPolicy{}}
	}
	switch fn {
	case abi.FuncVPodPolicy:
		return g.vpodPolicy(in)
	case abi.FuncVPodTopology:
		return g.vpodTopology(in)
	}
	return g.vpodStep(in)
}

// vpodPolicy registers a policy, replacing one with the same ID, and
// replies which entries' args were refused. An entry naming no plugin of
// the module, or one without the entry's point, fails the whole call and
// leaves the ID unregistered: the host built a policy this module cannot
// serve.
func (g *Guest) vpodPolicy(in []byte) error {
	var p abi.VPodPolicy
	if err := g.codec.decodeWhole(in, "vpod policy", func(d *abi.Decoder) { d.VPodPolicy(&p) }); err != nil {
		return err
	}
	rt := g.vpod
	delete(rt.policies, p.ID)
	pol := &vpodPolicy{entries: make([]vpodEntry, len(p.Entries))}
	invalid := make([]string, len(p.Entries))
	for i := range p.Entries {
		e := &p.Entries[i]
		if uint64(e.Plugin) >= uint64(len(g.plugins)) {
			return newError("vpod policy entry " + utoa(uint64(i)) + ": plugin index " + utoa(uint64(e.Plugin)) + " out of range")
		}
		pl := g.plugins[e.Plugin]
		en := &pol.entries[i]
		en.kind, en.name = e.Kind, pl.Name()
		var err error
		switch e.Kind {
		case abi.VPodPredicate:
			pp, ok := pl.(plugin.VPodPredicatePlugin)
			if !ok {
				return newError("vpod policy entry " + utoa(uint64(i)) + ": " + pl.Name() + " is not a vpod predicate")
			}
			g.cycle.current = en.name
			en.filter, err = pp.NewVPodFilter(e.Args)
		default: // the decoder admits only the two kinds
			pp, ok := pl.(plugin.VPodPriorityPlugin)
			if !ok {
				return newError("vpod policy entry " + utoa(uint64(i)) + ": " + pl.Name() + " is not a vpod priority")
			}
			g.cycle.current = en.name
			en.scorer, err = pp.NewVPodScorer(e.Args)
		}
		g.cycle.current = ""
		if ie, ok := err.(*plugin.ArgsIgnoredError); ok && (en.filter != nil || en.scorer != nil) {
			// A plugin that takes no args runs as if the entry had none.
			invalid[i], err = ie.Error(), nil
		}
		if err == nil && en.filter == nil && en.scorer == nil {
			err = newError(pl.Name() + " returned neither an error nor a filter or scorer")
		}
		if err != nil {
			en.invalid, en.filter, en.scorer = true, nil, nil
			invalid[i] = err.Error()
			if invalid[i] == "" {
				invalid[i] = reasonInvalidArgs
			}
		}
	}
	rt.policies[p.ID] = pol
	g.codec.enc.VPodPolicyReply(&abi.VPodPolicyReply{Invalid: invalid})
	return nil
}

// vpodTopology replaces the topology. A malformed one leaves the guest
// with none, so no step runs against a half-decoded topology.
func (g *Guest) vpodTopology(in []byte) error {
	rt := g.vpod
	rt.haveTopo = false
	if err := g.codec.decodeWhole(in, "vpod topology", func(d *abi.Decoder) { d.VPodTopology(&rt.topo) }); err != nil {
		rt.topo = abi.VPodTopology{}
		return err
	}
	rt.haveTopo = true
	return nil
}

// vpodStep runs every entry of a registered policy over a step's
// candidates: predicates in policy order, each over the candidates every
// earlier one passed; then each priority over the candidates all
// predicates passed (the others score 0).
func (g *Guest) vpodStep(in []byte) error {
	rt := g.vpod
	if err := g.codec.decodeWhole(in, "vpod step", func(d *abi.Decoder) { d.VPodStep(&rt.step) }); err != nil {
		return err
	}
	s := &rt.step
	pol := rt.policies[s.Policy]
	if pol == nil {
		return newError("vpod step: policy " + utoa(uint64(s.Policy)) + " is not registered")
	}
	if !rt.haveTopo || rt.topo.Generation != s.Topology {
		return newError("vpod step: topology generation " + utoa(s.Topology) + " is not the one this guest has")
	}
	if err := rt.state.Load(&rt.topo, s); err != nil {
		return newError("vpod step: " + err.Error())
	}
	n := len(s.Candidates)
	rt.pods = resize(rt.pods, n)
	for i, c := range s.Candidates {
		if uint64(c) >= uint64(len(rt.topo.Pods)) {
			return newError("vpod step: candidate pod index " + utoa(uint64(c)) + " out of range (" + utoa(uint64(len(rt.topo.Pods))) + " pods)")
		}
		rt.pods[i] = int(c)
	}
	r := &rt.reply
	r.Verdicts = resize(r.Verdicts, n)
	clear(r.Verdicts)
	r.Scores = r.Scores[:0]
	r.Errors = r.Errors[:0]

	for i := range pol.entries {
		en := &pol.entries[i]
		if en.kind != abi.VPodPredicate {
			continue
		}
		rt.passing(r.Verdicts)
		if len(rt.sub) == 0 {
			break
		}
		rt.verdicts = resize(rt.verdicts, len(rt.sub))
		clear(rt.verdicts)
		if en.invalid {
			for k := range rt.verdicts {
				rt.verdicts[k] = statusInvalidArgs
			}
		} else {
			g.cycle.current = en.name
			en.filter(&rt.state, rt.sub, rt.verdicts)
			g.cycle.current = ""
		}
		for k, st := range rt.verdicts {
			if st.IsSuccess() {
				continue
			}
			v := &r.Verdicts[rt.subAt[k]]
			v.Entry, v.Code, v.Reason = uint32(i)+1, st.Code(), st.Message()
			switch v.Code {
			case abi.Unschedulable, abi.UnschedulableAndUnresolvable, abi.Error:
			default:
				v.Code, v.Reason = abi.Error, "invalid predicate status code "+st.Code().String()+": "+v.Reason
			}
		}
	}

	rt.passing(r.Verdicts)
	for i := range pol.entries {
		en := &pol.entries[i]
		if en.kind != abi.VPodPriority {
			continue
		}
		if k := len(r.Scores); k < cap(r.Scores) {
			r.Scores = r.Scores[:k+1] // reuse the last step's score slice
		} else {
			r.Scores = append(r.Scores, abi.VPodScores{})
		}
		sc := &r.Scores[len(r.Scores)-1]
		sc.Entry, sc.Scores = uint32(i), resize(sc.Scores, n)
		clear(sc.Scores)
		scores := sc.Scores
		if en.invalid {
			for c := 0; c < n; c++ {
				r.Errors = append(r.Errors, abi.VPodScoreError{Entry: uint32(i), Candidate: uint32(c), Message: reasonInvalidArgs})
			}
			continue
		}
		if len(rt.sub) == 0 {
			continue
		}
		rt.scores = resize(rt.scores, len(rt.sub))
		clear(rt.scores)
		g.cycle.current = en.name
		err := en.scorer(&rt.state, rt.sub, rt.scores)
		g.cycle.current = ""
		if err != nil {
			msg := err.Error()
			for _, at := range rt.subAt {
				r.Errors = append(r.Errors, abi.VPodScoreError{Entry: uint32(i), Candidate: uint32(at), Message: msg})
			}
			continue
		}
		for k, at := range rt.subAt {
			scores[at] = rt.scores[k]
		}
	}
	g.codec.enc.VPodStepReply(r)
	return nil
}

// passing sets rt.sub and rt.subAt to the candidates whose verdict is
// still a pass, and their positions.
func (rt *vpodRuntime) passing(verdicts []abi.VPodVerdict) {
	// Sized once and written by index: an append per candidate is a
	// runtime call in a TinyGo guest.
	sub, subAt := resize(rt.sub, len(verdicts)), resize(rt.subAt, len(verdicts))
	pods := rt.pods[:len(verdicts)]
	n := 0
	for k := range verdicts {
		if verdicts[k].Entry == 0 {
			sub[n], subAt[n] = pods[k], k
			n++
		}
	}
	rt.sub, rt.subAt = sub[:n], subAt[:n]
}

// resize returns s with length n, reusing its memory.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
