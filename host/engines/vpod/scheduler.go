package vpod

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/metrics"
)

// Scheduler places the vreplicas of vpods onto the pods of one adapter
// StatefulSet, Knative Eventing style. Schedule calls run one at a time;
// Autoscale may run alongside them. Safe for concurrent use.
type Scheduler struct {
	set     Settings
	c       Cluster
	log     hclog.Logger
	evict   Evictor
	rand    func(int64) int64
	now     func() time.Time
	metrics *metrics.VPod
	// decisions receives the records (Options.Decisions); rec is the
	// record of the Schedule call running (guarded by mu), nil when it
	// is not recorded.
	decisions decision.Sink
	rec       *decision.VPod

	pols atomic.Pointer[Policies]

	mu sync.Mutex // one Schedule at a time; guards cc and topo
	cc *committedCache
	// topo is the last module topology sent, with its generation.
	topo *abi.VPodTopology

	resMu sync.Mutex // guards reserved and failed
	// reserved holds placements computed but not yet seen committed.
	reserved map[Key]map[string]int32
	// failed holds the vpods whose last Schedule failed in a policy
	// module: the autoscaler counts no demand for their pending
	// vreplicas (scaling up cannot fix a module).
	failed map[Key]struct{}

	asMu        sync.Mutex // one autoscaler pass at a time; guards asCC, lastCompact and lastCapped
	asCC        *committedCache
	lastCompact time.Time
	// lastCapped is the uncapped target of the last pass that hit
	// MaxReplicas (0: the last pass did not), so the cap is logged once
	// per change rather than on every pass; lastBounded the same for
	// the scale-up bound.
	lastCapped, lastBounded int32

	trigger chan struct{}
	leader  atomic.Bool
}

// New returns a scheduler for the StatefulSet of s over the cluster c.
// p binds the policies of the Policy strategy to their modules; it may be
// nil for MAXFILLUP and MAXFILLUP_SPREAD, and for a Policy strategy with
// no policy at all.
func New(s Settings, c Cluster, p *Policies, o Options) (*Scheduler, error) {
	if c == nil {
		return nil, errors.New("vpod scheduler: no cluster")
	}
	if s.StatefulSet == "" {
		return nil, fmt.Errorf("vpod scheduler %q: no statefulset name", s.Name)
	}
	if s.Capacity < 1 {
		return nil, fmt.Errorf("vpod scheduler %q: pod capacity %d: must be at least 1 (a pod must hold a vreplica)", s.Name, s.Capacity)
	}
	if s.Capacity > config.MaxVPodCapacity {
		return nil, fmt.Errorf("vpod scheduler %q: pod capacity %d exceeds the limit %d", s.Name, s.Capacity, config.MaxVPodCapacity)
	}
	if s.MinReplicas < 0 {
		return nil, fmt.Errorf("vpod scheduler %q: minReplicas %d is negative", s.Name, s.MinReplicas)
	}
	if s.MaxReplicas == 0 {
		s.MaxReplicas = max(DefaultMaxReplicas, s.MinReplicas)
	}
	switch {
	case s.MaxReplicas < 1:
		return nil, fmt.Errorf("vpod scheduler %q: maxReplicas %d is negative", s.Name, s.MaxReplicas)
	case s.MaxReplicas > MaxMaxReplicas:
		return nil, fmt.Errorf("vpod scheduler %q: maxReplicas %d exceeds the limit %d", s.Name, s.MaxReplicas, MaxMaxReplicas)
	case s.MinReplicas > s.MaxReplicas:
		return nil, fmt.Errorf("vpod scheduler %q: minReplicas %d is above maxReplicas %d", s.Name, s.MinReplicas, s.MaxReplicas)
	case s.MaxScaleUpStep < 0:
		return nil, fmt.Errorf("vpod scheduler %q: maxScaleUpStep %d is negative", s.Name, s.MaxScaleUpStep)
	case s.MaxScaleUpStep > MaxMaxReplicas:
		return nil, fmt.Errorf("vpod scheduler %q: maxScaleUpStep %d exceeds the limit %d", s.Name, s.MaxScaleUpStep, MaxMaxReplicas)
	}
	switch s.Strategy {
	case StrategyPolicy:
		if p == nil && (s.SchedPolicy != nil || s.DeschedPolicy != nil) {
			return nil, fmt.Errorf("vpod scheduler %q: policies configured but not bound to modules (build them with NewPolicies)", s.Name)
		}
	case StrategyMaxFillUp, StrategyMaxFillUpSpread:
	case "":
		return nil, fmt.Errorf("vpod scheduler %q: no strategy", s.Name)
	default:
		return nil, fmt.Errorf("vpod scheduler %q: unknown strategy %q (want %s, %s or %s)", s.Name, s.Strategy, StrategyPolicy, StrategyMaxFillUp, StrategyMaxFillUpSpread)
	}
	if s.RefreshPeriod <= 0 {
		s.RefreshPeriod = DefaultRefreshPeriod
	}
	if s.RetryPeriod <= 0 {
		s.RetryPeriod = DefaultRetryPeriod
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if o.Rand == nil {
		o.Rand = cryptoRand
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	sch := &Scheduler{
		set:       s,
		c:         c,
		log:       o.Log.With("scheduler", s.Name, "statefulset", s.Namespace+"/"+s.StatefulSet),
		evict:     o.Evictor,
		rand:      o.Rand,
		now:       o.Now,
		metrics:   o.Metrics,
		decisions: o.Decisions,
		failed:    map[Key]struct{}{},
		cc:        newCommittedCache(),
		asCC:      newCommittedCache(),
		reserved:  map[Key]map[string]int32{},
		trigger:   make(chan struct{}, 1),
		// Long enough ago that the first scale-down pass may compact.
		lastCompact: o.Now().Add(-s.RefreshPeriod - time.Minute),
	}
	bad := func(k Key, pod string) {
		sch.log.Warn("placement names a pod with no usable ordinal; left out of capacity", "vpod", k.String(), "pod", pod)
	}
	sch.cc.bad = bad
	sch.asCC.bad = func(Key, string) {}
	sch.pols.Store(p)
	return sch, nil
}

// cryptoRand is a uniform integer in [0, n) from crypto/rand.
func cryptoRand(n int64) int64 {
	if n <= 1 {
		return 0
	}
	var b [8]byte
	limit := ^uint64(0) - ^uint64(0)%uint64(n)
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0
		}
		if v := binary.LittleEndian.Uint64(b[:]); v < limit {
			return int64(v % uint64(n))
		}
	}
}

// SetPolicies swaps in new policies for the following Schedule calls and
// autoscaler passes. The caller closes the old ones.
func (s *Scheduler) SetPolicies(p *Policies) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pols.Store(p)
}

// policies are the current policies' bound forms (nil when absent).
func (s *Scheduler) policies() (sched, desched *boundPolicy) {
	if p := s.pols.Load(); p != nil {
		return p.sched, p.desched
	}
	return nil, nil
}

// schedPolicy is the configured scheduling policy, for the autoscaler.
func (s *Scheduler) schedPolicy() *Policy {
	if p := s.pols.Load(); p != nil {
		return p.Sched()
	}
	return s.set.SchedPolicy
}

// Settings are the scheduler's settings, defaults filled in.
func (s *Scheduler) Settings() Settings { return s.set }

// Reserved returns a copy of the reservations: per vpod, the vreplicas
// per pod that were scheduled but not yet seen committed.
func (s *Scheduler) Reserved() map[Key]map[string]int32 {
	s.resMu.Lock()
	defer s.resMu.Unlock()
	return copyReserved(s.reserved)
}

func copyReserved(r map[Key]map[string]int32) map[Key]map[string]int32 {
	out := make(map[Key]map[string]int32, len(r))
	for k, m := range r {
		c := make(map[string]int32, len(m))
		for pod, n := range m {
			c[pod] = n
		}
		out[k] = c
	}
	return out
}

// Trigger asks the autoscaler loop (Run) for a scale-up pass. It never
// blocks: a pass already asked for covers this one.
func (s *Scheduler) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Promote makes this scheduler the leader. With MAXFILLUP_SPREAD the
// reservations, which are that strategy's starting point, are rebuilt
// from the committed placements of every vpod (Knative ≥ v1.17).
func (s *Scheduler) Promote(ctx context.Context) error {
	if s.set.Strategy == StrategyMaxFillUpSpread {
		vpods, err := s.c.VPods()
		if err != nil {
			return fmt.Errorf("vpod scheduler %q: promote: list vpods: %w", s.set.Name, err)
		}
		res := make(map[Key]map[string]int32, len(vpods))
		for _, v := range vpods {
			m := make(map[string]int32, len(v.Placements))
			for _, p := range v.Placements {
				m[p.PodName] += p.VReplicas
			}
			res[v.Key] = m
		}
		s.resMu.Lock()
		s.reserved = res
		s.resMu.Unlock()
	}
	s.leader.Store(true)
	return nil
}

// Schedule computes the placements of v: where its vreplicas should run.
// They are reserved until the vpod is listed with them committed. An
// error wrapping *RequeueError means some vreplicas could not be placed
// (the autoscaler was asked for more pods); the placements returned
// then are what to commit meanwhile.
//
// An error wrapping *PolicyError means a policy module failed: no
// placements are returned (keep the committed ones), nothing was
// reserved or scaled; retry the vpod with backoff. A vpod wanting more
// than MaxVReplicas, or listing more than MaxPlacements placements, is
// refused without being attempted.
func (s *Scheduler) Schedule(ctx context.Context, v VPod) ([]Placement, error) {
	if err := checkVPod(v); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resMu.Lock()
	defer s.resMu.Unlock()
	var ps []Placement
	var err error
	if s.decisions != nil && s.decisions.Want(decision.KindVPod, decision.VPodKey(v.Key.String())) {
		s.rec = s.newRecord(&v)
		defer func() { s.finishRecord(ps, err) }()
	}
	if s.set.Strategy == StrategyMaxFillUpSpread {
		ps, err = s.scheduleSpread(ctx, &v)
		sortPlacements(ps)
		s.replaceReserved(v.Key, ps)
		return ps, err
	}
	ps, err = s.scheduleVPod(ctx, &v)
	s.noteFailure(v.Key, err)
	if ps == nil {
		return nil, err
	}
	sortPlacements(ps)
	s.reservePlacements(v.Key, ps)
	return ps, err
}

// checkVPod refuses what the engine does not attempt: a negative count,
// more than MaxVReplicas, more than MaxPlacements placements.
func checkVPod(v VPod) error {
	switch {
	case v.VReplicas < 0:
		return fmt.Errorf("vpod %s: vreplicas %d is negative", v.Key, v.VReplicas)
	case v.VReplicas > MaxVReplicas:
		return fmt.Errorf("vpod %s: vreplicas %d exceeds the limit %d", v.Key, v.VReplicas, MaxVReplicas)
	case len(v.Placements) > MaxPlacements:
		return fmt.Errorf("vpod %s: %d placements exceed the limit %d", v.Key, len(v.Placements), MaxPlacements)
	}
	return nil
}

// noteFailure records whether the vpod's Schedule failed in a policy
// module (the autoscaler then counts none of its pending vreplicas), and
// forgets it once a Schedule got past the modules; s.resMu is held.
func (s *Scheduler) noteFailure(k Key, err error) {
	var pe *PolicyError
	_, requeue := IsRequeue(err)
	switch {
	case errors.As(err, &pe):
		s.failed[k] = struct{}{}
	case err == nil || requeue:
		delete(s.failed, k)
	}
}

// Failed lists the vpods whose last Schedule failed in a policy module
// (not yet scheduled past the modules since), sorted.
func (s *Scheduler) Failed() []Key {
	s.resMu.Lock()
	defer s.resMu.Unlock()
	out := make([]Key, 0, len(s.failed))
	for k := range s.failed {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i], out[j]) })
	return out
}

// sortPlacements orders placements by ordinal, keeping equal ones in place.
func sortPlacements(ps []Placement) {
	sort.SliceStable(ps, func(i, j int) bool { return ordinalOf(ps[i].PodName) < ordinalOf(ps[j].PodName) })
}

// reservePlacements is v1.16.0's: it writes an entry per placement,
// leaving the vpod's other entries, and empties the vpod's map when there
// are no placements.
func (s *Scheduler) reservePlacements(k Key, ps []Placement) {
	if len(ps) == 0 {
		s.reserved[k] = map[string]int32{}
	}
	for _, p := range ps {
		m := s.reserved[k]
		if m == nil {
			m = map[string]int32{}
			s.reserved[k] = m
		}
		m[p.PodName] = p.VReplicas
	}
}

// replaceReserved is HEAD's reservePlacements: the vpod's map becomes
// exactly the placements, and goes away when there are none.
func (s *Scheduler) replaceReserved(k Key, ps []Placement) {
	if len(ps) == 0 {
		delete(s.reserved, k)
		return
	}
	m := make(map[string]int32, len(ps))
	for _, p := range ps {
		m[p.PodName] = p.VReplicas
	}
	s.reserved[k] = m
}

// requeue is the error for vreplicas left unplaced.
func (s *Scheduler) requeue(k Key, left int32) error {
	return &RequeueError{After: RequeueAfter, Left: left, VPod: k, StatefulSet: s.set.Namespace + "/" + s.set.StatefulSet}
}

// copyPlacements copies ps, keeping nil nil.
func copyPlacements(ps []Placement) []Placement {
	if ps == nil {
		return nil
	}
	return append(make([]Placement, 0, len(ps)), ps...)
}
