package noderesources

import (
	"math"
	"strings"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/guest-sdk/plugin"
)

// Shared statuses for the fixed single reasons, in two flavours: a request
// larger than the node's whole allocatable cannot be helped by preemption
// (UnschedulableAndUnresolvable, as upstream since 1.32), one larger than
// what is free can (Unschedulable).
var (
	statusTooManyPods = plugin.NewStatus(abi.Unschedulable, ReasonTooManyPods)
	statusSingle      = [4][2]*plugin.Status{
		checkPods:      {statusTooManyPods, statusTooManyPods},
		checkCPU:       {plugin.NewStatus(abi.Unschedulable, ReasonInsufficientCPU), plugin.NewStatus(abi.UnschedulableAndUnresolvable, ReasonInsufficientCPU)},
		checkMemory:    {plugin.NewStatus(abi.Unschedulable, ReasonInsufficientMemory), plugin.NewStatus(abi.UnschedulableAndUnresolvable, ReasonInsufficientMemory)},
		checkEphemeral: {plugin.NewStatus(abi.Unschedulable, ReasonInsufficientEphemeral), plugin.NewStatus(abi.UnschedulableAndUnresolvable, ReasonInsufficientEphemeral)},
	}
	fixedReasons = [4]string{ReasonTooManyPods, ReasonInsufficientCPU, ReasonInsufficientMemory, ReasonInsufficientEphemeral}
)

// Checks in upstream's order: pod count, cpu, memory, ephemeral storage,
// then scalar resources (index checkScalars + j).
const (
	checkPods = iota
	checkCPU
	checkMemory
	checkEphemeral
	checkScalars
)

var (
	fitPreFilterKey = plugin.NewStateKey()
	fitPreScoreKey  = plugin.NewStateKey()
)

// scoringType is the parsed scoring strategy.
type scoringType uint8

const (
	scoreLeast scoringType = iota
	scoreMost
	scoreRatio
)

// Fit is NodeResourcesFit: Filter checks free resources, Score ranks
// nodes by the configured scoring strategy.
type Fit struct {
	ignoredResources      []string
	ignoredResourceGroups []string
	scoring               scoringType
	resources             []resourceSpec
	shape                 []shapePoint
	// fixedMulti caches Filter's statuses for two or more failed fixed
	// checks (pods, cpu, memory, ephemeral storage), by failed-check mask
	// and [resolvable, unresolvable]: they do not depend on the pod, so
	// they are built once per plugin, lazily. A guest runs one call at a
	// time and builds its own plugin objects, so no lock is needed.
	fixedMulti [1 << checkScalars][2]*plugin.Status
}

// NewFit builds NodeResourcesFit from NodeResourcesFitArgs (see
// ParseFitArgs).
func NewFit(args *abi.Value, _ plugin.Handle) (plugin.Plugin, error) {
	a, err := ParseFitArgs(args)
	if err != nil {
		return nil, err
	}
	f := &Fit{ignoredResources: a.IgnoredResources, ignoredResourceGroups: a.IgnoredResourceGroups}
	switch a.ScoringStrategy.Type {
	case MostAllocated:
		f.scoring = scoreMost
	case RequestedToCapacityRatio:
		f.scoring = scoreRatio
		for _, p := range a.ScoringStrategy.Shape {
			f.shape = append(f.shape, shapePoint{
				utilization: int64(p.Utilization),
				score:       int64(p.Score) * (abi.MaxScore / maxCustomPriorityScore),
			})
		}
	}
	for _, r := range a.ScoringStrategy.Resources {
		f.resources = append(f.resources, newResourceSpec(r.Name, r.Weight))
	}
	return f, nil
}

// Name implements plugin.Plugin.
func (*Fit) Name() string { return FitName }

// scalarCheck is a scalar resource the pod requests and Filter checks.
type scalarCheck struct {
	name   string
	value  int64
	reason string
	// single holds this reason's statuses: [resolvable, unresolvable].
	single [2]*plugin.Status
}

// fitState is the pod's effective requests, computed once per cycle.
type fitState struct {
	req abi.Resources
	// empty: the pod requests nothing, so only the pod count is checked.
	empty   bool
	scalars []scalarCheck
	// multi caches Filter's statuses for two or more failed checks
	// including a scalar one (their reasons name the pod's scalars), by
	// mask<<1 | unresolvable; built lazily, so that the nodes failing the
	// same way share one status.
	multi map[uint64]*plugin.Status
}

// Clone implements plugin.StateData. The requests are immutable and
// shared; the clone starts its own status cache.
func (s *fitState) Clone() plugin.StateData {
	c := *s
	c.multi = nil
	return &c
}

func (f *Fit) newFitState(pod *abi.Pod) *fitState {
	s := &fitState{req: abi.PodRequests(pod)}
	// Only scalar resources make it into kube's request set.
	n := 0
	for _, sc := range s.req.Scalars {
		if isScalarResourceName(sc.Name) {
			s.req.Scalars[n] = sc
			n++
		}
	}
	s.req.Scalars = s.req.Scalars[:n]
	s.empty = s.req.MilliCPU == 0 && s.req.Memory == 0 && s.req.EphemeralStorage == 0 && len(s.req.Scalars) == 0
	for _, sc := range s.req.Scalars {
		if sc.Value == 0 || f.ignored(sc.Name) {
			continue
		}
		reason := ReasonInsufficientScalarPrefix + sc.Name
		s.scalars = append(s.scalars, scalarCheck{name: sc.Name, value: sc.Value, reason: reason,
			single: [2]*plugin.Status{plugin.NewStatus(abi.Unschedulable, reason), plugin.NewStatus(abi.UnschedulableAndUnresolvable, reason)}})
	}
	return s
}

// ignored reports whether args exclude an extended resource from the
// check, by full name or by the group before its "/".
func (f *Fit) ignored(name string) bool {
	if !isExtendedResourceName(name) {
		return false
	}
	for _, r := range f.ignoredResources {
		if r == name {
			return true
		}
	}
	group := name
	if i := strings.IndexByte(name, '/'); i >= 0 {
		group = name[:i]
	}
	for _, g := range f.ignoredResourceGroups {
		if g == group {
			return true
		}
	}
	return false
}

// PreFilter computes the pod's requests: app containers and sidecars
// summed, raised to the peak of any init container, plus overhead.
func (f *Fit) PreFilter(state *plugin.CycleState, pod *abi.Pod) *plugin.Status {
	state.Write(fitPreFilterKey, f.newFitState(pod))
	return nil
}

// fails evaluates check i on node n: whether it fails, and whether it
// would fail even on an empty node (unresolvable). Filter calls it per
// node and check: inlined (a hint TinyGo honours at -opt=s).
//
//go:inline
func (s *fitState) fails(i int, n *abi.NodeInfo) (failed, unresolvable bool) {
	alloc, used := &n.Node.Allocatable, &n.Requested
	switch i {
	case checkPods:
		return int64(n.PodCount)+1 > n.Node.AllowedPods, false
	case checkCPU:
		r := s.req.MilliCPU
		return r > 0 && r > alloc.MilliCPU-used.MilliCPU, r > alloc.MilliCPU
	case checkMemory:
		r := s.req.Memory
		return r > 0 && r > alloc.Memory-used.Memory, r > alloc.Memory
	case checkEphemeral:
		r := s.req.EphemeralStorage
		return r > 0 && r > alloc.EphemeralStorage-used.EphemeralStorage, r > alloc.EphemeralStorage
	}
	c := &s.scalars[i-checkScalars]
	a, _ := scalar(alloc, c.name)
	u, _ := scalar(used, c.name)
	return c.value > a-u, c.value > a
}

func (s *fitState) reason(i int) string {
	if i < checkScalars {
		return fixedReasons[i]
	}
	return s.scalars[i-checkScalars].reason
}

func (s *fitState) single(i int, unresolvable bool) *plugin.Status {
	u := 0
	if unresolvable {
		u = 1
	}
	if i < checkScalars {
		return statusSingle[i][u]
	}
	return s.scalars[i-checkScalars].single[u]
}

// Filter reports every insufficient resource at once, in upstream's order.
// Nodes failing the same way share one status: a single reason's is
// prebuilt, combinations are built the first time they occur and cached.
func (f *Fit) Filter(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) *plugin.Status {
	s, ok := state.Read(fitPreFilterKey).(*fitState)
	if !ok {
		// PreFilter did not run: compute the requests once and keep them
		// for the cycle's other nodes.
		s = f.newFitState(pod)
		state.Write(fitPreFilterKey, s)
	}
	n := &node.NodeInfo
	checks := checkScalars + len(s.scalars)
	if s.empty {
		checks = checkCPU // pod count only
	}
	count, first, last, unresolvable := 0, -1, -1, false
	var mask uint64 // failed checks below 64
	for i := 0; i < checks; i++ {
		failed, u := s.fails(i, n)
		if !failed {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		if i < 64 {
			mask |= 1 << i
		}
		count++
		unresolvable = unresolvable || u
	}
	switch count {
	case 0:
		return nil
	case 1:
		return s.single(first, unresolvable)
	}
	u := 0
	if unresolvable {
		u = 1
	}
	if last < checkScalars {
		st := f.fixedMulti[mask][u]
		if st == nil {
			st = s.multiStatus(n, first, checks, unresolvable)
			f.fixedMulti[mask][u] = st
		}
		return st
	}
	if checks > 63 {
		return s.multiStatus(n, first, checks, unresolvable) // beyond the mask: not cached
	}
	key := mask<<1 | uint64(u)
	if st := s.multi[key]; st != nil {
		return st
	}
	if s.multi == nil {
		s.multi = map[uint64]*plugin.Status{}
	}
	st := s.multiStatus(n, first, checks, unresolvable)
	s.multi[key] = st
	return st
}

// multiStatus builds the status listing every failed check from first on.
func (s *fitState) multiStatus(n *abi.NodeInfo, first, checks int, unresolvable bool) *plugin.Status {
	var reasons []string
	for i := first; i < checks; i++ {
		if failed, _ := s.fails(i, n); failed {
			reasons = append(reasons, s.reason(i))
		}
	}
	code := abi.Unschedulable
	if unresolvable {
		code = abi.UnschedulableAndUnresolvable
	}
	return plugin.NewStatus(code, reasons...)
}

// requestList is a pod's request per configured scoring resource;
// immutable, so Clone shares it.
type requestList struct {
	requests []int64
	// bestEffort: BalancedAllocation's Score ran without PreScore for a
	// pod requesting none of its resources, which PreScore would skip.
	bestEffort bool
}

// Clone implements plugin.StateData.
func (r *requestList) Clone() plugin.StateData { return r }

// PreScore computes the pod's request for each scoring resource, with
// kube's non-zero defaults for CPU and memory.
func (f *Fit) PreScore(state *plugin.CycleState, pod *abi.Pod, _ []*plugin.NodeInfo) *plugin.Status {
	state.Write(fitPreScoreKey, &requestList{requests: podRequestList(pod, f.resources, false)})
	return nil
}

// Score ranks the node by the scoring strategy over the configured
// resources, skipping resources the node has none of.
func (f *Fit) Score(state *plugin.CycleState, pod *abi.Pod, node *plugin.NodeInfo) (int64, *plugin.Status) {
	rl, ok := state.Read(fitPreScoreKey).(*requestList)
	if !ok {
		// PreScore did not run: compute the requests once and keep them
		// for the cycle's other nodes.
		rl = &requestList{requests: podRequestList(pod, f.resources, false)}
		state.Write(fitPreScoreKey, rl)
	}
	n := &node.NodeInfo
	var nodeScore, weightSum int64
	for i := range f.resources {
		r := &f.resources[i]
		alloc, req := r.allocatableRequested(n, rl.requests[i], false)
		if alloc == 0 {
			continue
		}
		var s int64
		switch f.scoring {
		case scoreLeast:
			s = leastRequestedScore(req, alloc)
		case scoreMost:
			s = mostRequestedScore(req, alloc)
		case scoreRatio:
			s = ratioScore(f.shape, req, alloc)
			if s <= 0 {
				continue // upstream averages over resources scoring > 0 only
			}
		}
		nodeScore += s * r.weight
		weightSum += r.weight
	}
	if weightSum == 0 {
		return 0, nil
	}
	if f.scoring == scoreRatio {
		return int64(math.Round(float64(nodeScore) / float64(weightSum))), nil
	}
	return nodeScore / weightSum, nil
}
