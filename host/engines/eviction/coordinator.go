package eviction

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/decision"
	"github.com/wasmsched/wasmsched/host/metrics"
	"github.com/wasmsched/wasmsched/host/platform/guest"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
)

// Defaults, as Katalyst's: the configuration's, for coordinators built
// without one.
const (
	DefaultSyncPeriod                = config.DefaultEvictionSyncPeriod
	DefaultBurst                     = config.DefaultEvictionBurst
	DefaultConditionTransitionPeriod = config.DefaultEvictionConditionTransitionPeriod
	DefaultRate                      = config.DefaultEvictionRate
)

// Settings tune the coordinator (the configuration's eviction section).
type Settings struct {
	// SyncPeriod is the time between rounds.
	SyncPeriod time.Duration
	// Burst is the most pods evicted per node and round (and the most
	// one policy may name for a node in one answer).
	Burst int
	// Rate and RateBurst bound evictions cluster-wide (a token bucket,
	// evictions per second): a round's victims beyond it wait for a
	// later round.
	Rate      float64
	RateBurst int
	// SkipAnnotations and SkipLabels: pods with any of these annotation
	// or label keys are never offered to policies.
	SkipAnnotations, SkipLabels []string
	// ConditionTransitionPeriod is how long a reported node condition
	// (and its taint) outlives the last report.
	ConditionTransitionPeriod time.Duration
}

// bounded returns the settings with defaults for what is unset and the
// configuration's bounds (config.MaxEviction*) on what could overflow the
// coordinator's arithmetic or its requests to guests: the burst goes to
// guests as a uint32 limit, the rate into a token bucket. notes name each
// setting brought within its bound. A configuration's settings are
// within them already (config.Validate refuses others); this guards
// coordinators built otherwise.
func (s Settings) bounded() (out Settings, notes []string) {
	if s.SyncPeriod <= 0 {
		s.SyncPeriod = DefaultSyncPeriod
	}
	if s.SyncPeriod > config.MaxEvictionSyncPeriod {
		notes = append(notes, fmt.Sprintf("syncPeriod %s is over %s", s.SyncPeriod, config.MaxEvictionSyncPeriod))
		s.SyncPeriod = config.MaxEvictionSyncPeriod
	}
	if s.Burst <= 0 {
		s.Burst = DefaultBurst
	}
	if s.Burst > config.MaxEvictionBurst {
		notes = append(notes, fmt.Sprintf("burst %d is over %d", s.Burst, config.MaxEvictionBurst))
		s.Burst = config.MaxEvictionBurst
	}
	if !(s.Rate > 0) { // NaN too
		s.Rate = DefaultRate
	}
	if s.RateBurst <= 0 {
		// Rate may be +Inf (no limit): the ceiling is taken of a bounded
		// value, since converting an infinity to int is undefined.
		s.RateBurst = max(s.Burst, int(math.Ceil(min(s.Rate, config.MaxEvictionRateBurst))))
	}
	if s.ConditionTransitionPeriod < 0 {
		s.ConditionTransitionPeriod = 0
	}
	if s.ConditionTransitionPeriod > config.MaxEvictionConditionTransitionPeriod {
		notes = append(notes, fmt.Sprintf("conditionTransitionPeriod %s is over %s", s.ConditionTransitionPeriod, config.MaxEvictionConditionTransitionPeriod))
		s.ConditionTransitionPeriod = config.MaxEvictionConditionTransitionPeriod
	}
	return s, notes
}

// Cluster is what the coordinator reads and writes besides the killer's
// calls: the scheduler's cache, and node taints.
type Cluster interface {
	// UpdateSnapshot brings dst up to date with the cluster's nodes and
	// pods (cache.Cache.UpdateSnapshot).
	UpdateSnapshot(dst *snapshot.Snapshot)
	// SetEvictionTaints makes the node's taints under TaintPrefix exactly
	// these (sorted), leaving its other taints alone. It should make the
	// change visible to the scheduler's cache at once.
	SetEvictionTaints(ctx context.Context, node string, taints []abi.Taint) error
}

// Usage is measured node and pod usage; nil means no data.
type Usage interface {
	Node(name string) *abi.Usage
	Pod(namespace, name string) *abi.Usage
}

// UsageSource gives the usage of the moment, once per round.
type UsageSource interface {
	Usage(ctx context.Context) (Usage, error)
}

// CachedUsageSource is a UsageSource that reuses a reading for a while:
// when the sync period changes (SetSettings), the coordinator makes that
// half the new period, so each round still gets a fresh reading.
type CachedUsageSource interface {
	UsageSource
	SetTTL(time.Duration)
}

// PodKiller is the killer as the coordinator uses it.
type PodKiller interface {
	Submit(reqs []KillRequest)
	// Holds reports whether a pod is queued or being killed: it is not
	// offered to policies again meanwhile.
	Holds(uid string) bool
}

// Options are a coordinator's parts.
type Options struct {
	Settings Settings
	Cluster  Cluster
	Killer   PodKiller
	// Usage may be nil: no usage data.
	Usage   UsageSource
	Metrics *metrics.Eviction
	Log     hclog.Logger
	// Clock defaults to the real one.
	Clock clock.WithTicker
	// Decisions, if set, receives a decision.Eviction for every round it
	// wants (decision.Sink.Want with the round's key); nil records none
	// and costs nothing.
	Decisions decision.Sink
}

// Coordinator runs eviction rounds. RunRound and Run must not be called
// concurrently; SetPolicies and Blocked may be called from anywhere.
type Coordinator struct {
	settings Settings
	cluster  Cluster
	killer   PodKiller
	usage    UsageSource
	metrics  *metrics.Eviction
	log      hclog.Logger
	clock    clock.WithTicker
	limiter  *rate.Limiter
	skip     skipKeys

	policies atomic.Pointer[PolicySet]

	decisions decision.Sink
	// rounds numbers the rounds run, for their records' keys.
	rounds int

	state *state
	snap  *snapshot.Snapshot
	// idleSet is the empty policy set whose last full round had nothing
	// to do (no taint to set or remove, no condition still in its
	// transition period). While it is the set, rounds skip the snapshot
	// and the coordinator holds none: with no policies a copy of the
	// whole cluster every sync period would only cost memory and CPU.
	// A new set (a reload) ends it, so a set emptied by a reload still
	// gets the round that removes its taints.
	idleSet *PolicySet
	tables  []*snapshot.Observations
	// tableSet is the policy set the tables were made for.
	tableSet *PolicySet
	live     map[uint32]bool // slots observed last round
	// stamps say what each slot's observations were built from: a node
	// at the same generation with the same usage reading needs none
	// built again (the usage sources return one reading per scrape).
	stamps  map[uint32]obsStamp
	reading Usage
	gauges  map[thresholdKey]bool

	mu      sync.Mutex
	blocked map[string]time.Time // from the killer's goroutines
	retired []*PolicySet         // replaced sets, closed at the next round
	// pending are settings SetSettings handed over, applied by the round
	// goroutine before its next round; resched tells Run to restart its
	// ticker on the new sync period.
	pending *Settings
	resched chan struct{}
}

// New returns a coordinator running the policies of set (which may be
// empty or nil: rounds then only keep taints up to date).
func New(opts Options, set *PolicySet) *Coordinator {
	s, notes := opts.Settings.bounded()
	c := &Coordinator{
		settings: s, cluster: opts.Cluster, killer: opts.Killer, usage: opts.Usage,
		skip:    newSkipKeys(s.SkipAnnotations, s.SkipLabels),
		metrics: opts.Metrics, log: opts.Log, clock: opts.Clock, decisions: opts.Decisions,
		state: newState(), snap: snapshot.New(), live: map[uint32]bool{}, stamps: map[uint32]obsStamp{},
		gauges: map[thresholdKey]bool{}, blocked: map[string]time.Time{}, resched: make(chan struct{}, 1),
	}
	if c.log == nil {
		c.log = hclog.NewNullLogger()
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	for _, n := range notes {
		c.log.Warn("eviction setting out of bounds; using the bound", "setting", n)
	}
	c.limiter = rate.NewLimiter(rate.Limit(s.Rate), s.RateBurst)
	if set == nil {
		set = &PolicySet{}
	}
	c.policies.Store(set)
	return c
}

// Policies lists the policies the next round runs.
func (c *Coordinator) Policies() []*Policy { return c.policies.Load().Policies() }

// PolicySet is the set the next round runs, for a reload to build the
// next one from (ReloadPolicies); it stays open until SetPolicies
// replaces it.
func (c *Coordinator) PolicySet() *PolicySet { return c.policies.Load() }

// Settings are the coordinator's settings, defaults applied: those a
// SetSettings not yet applied by a round handed over, else those running.
func (c *Coordinator) Settings() Settings {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending != nil {
		return *c.pending
	}
	return c.settings
}

// SetSettings changes the settings of a running coordinator (a reload):
// the next round runs with them, and Run's next round comes one new sync
// period after the change. A round in progress finishes on the settings
// it started with. The cluster-wide rate limiter keeps its tokens; its
// rate and burst change.
func (c *Coordinator) SetSettings(s Settings) {
	b, notes := s.bounded()
	for _, n := range notes {
		c.log.Warn("eviction setting out of bounds; using the bound", "setting", n)
	}
	c.mu.Lock()
	c.pending = &b
	c.mu.Unlock()
	select {
	case c.resched <- struct{}{}:
	default:
	}
}

// applySettings applies settings SetSettings handed over, if any, and
// reports whether the sync period changed. Only the round goroutine
// calls it (it alone reads c.settings without the lock).
func (c *Coordinator) applySettings() (periodChanged bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		return false
	}
	s := *c.pending
	c.pending = nil
	periodChanged = s.SyncPeriod != c.settings.SyncPeriod
	if !slices.Equal(s.SkipAnnotations, c.settings.SkipAnnotations) || !slices.Equal(s.SkipLabels, c.settings.SkipLabels) {
		c.skip = newSkipKeys(s.SkipAnnotations, s.SkipLabels)
	}
	now := c.clock.Now()
	c.limiter.SetLimitAt(now, rate.Limit(s.Rate))
	c.limiter.SetBurstAt(now, s.RateBurst)
	if cu, ok := c.usage.(CachedUsageSource); ok && periodChanged {
		cu.SetTTL(s.SyncPeriod / 2)
	}
	c.settings = s
	return periodChanged
}

// SetPolicies swaps in a new policy set (a reload): the next round uses
// it. A round in progress finishes on the set it started with; the
// replaced set is closed when the next round starts.
func (c *Coordinator) SetPolicies(set *PolicySet) {
	if set == nil {
		set = &PolicySet{}
	}
	old := c.policies.Swap(set)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retired = append(c.retired, old)
}

// Close closes the coordinator's policy sets; call it after Run returns.
func (c *Coordinator) Close(ctx context.Context) {
	c.closeRetired(ctx)
	c.policies.Load().Close(ctx)
}

func (c *Coordinator) closeRetired(ctx context.Context) {
	c.mu.Lock()
	retired := c.retired
	c.retired = nil
	c.mu.Unlock()
	for _, s := range retired {
		s.Close(ctx)
	}
}

// Blocked tells the coordinator not to offer a pod to policies before
// until: the Eviction API refused it (429). The killer calls it.
func (c *Coordinator) Blocked(uid string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.blocked[uid] = until
}

func (c *Coordinator) isBlocked(uid string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	until, ok := c.blocked[uid]
	if ok && !now.Before(until) {
		delete(c.blocked, uid)
		return false
	}
	return ok
}

// Run runs a round every sync period until ctx is done. A SetSettings
// with another sync period restarts the period from the change.
func (c *Coordinator) Run(ctx context.Context) {
	c.applySettings()
	t := c.clock.NewTicker(c.settings.SyncPeriod)
	defer func() { t.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.resched:
			if c.applySettings() {
				t.Stop()
				t = c.clock.NewTicker(c.settings.SyncPeriod)
				c.log.Info("eviction sync period changed", "sync_period", c.settings.SyncPeriod)
			}
		case <-t.C():
			c.RunRound(ctx)
		}
	}
}

// candidate is a pod some policy wants evicted, with the attribution the
// aggregation keeps and the host's protection facts about it.
type candidate struct {
	pod *abi.Pod
	// guard is the pod's protection, computed from its host record when
	// the round was assembled (zero for every pod offered).
	guard  protection
	node   string
	scope  string
	policy string
	reason string
	grace  *int64
	// forceDelete: the attributed policy's configuration says force.
	forceDelete bool
}

// nodeRound is one node's share of a round.
type nodeRound struct {
	ni *snapshot.NodeInfo
	// pods are the host's facts about each pod of ni.Info.Pods, by index.
	pods []podFacts
	// candidates are the indexes of the pods offered to policies.
	candidates []uint32
	force      map[string]*candidate
	soft       map[string]*candidate
}

// podFacts are what a round's assembly found about one pod.
type podFacts struct {
	// guard is the pod's protection (zero: none).
	guard protection
	// offered: unprotected, not held by the killer, not blocked.
	offered bool
	// held: unprotected but held by the killer; blocked: unprotected,
	// not held, refused by a budget until later.
	held, blocked bool
}

// candidateAt makes the candidate for the pod a policy named by index:
// only an offered pod (unprotected, not held, not blocked) becomes one.
// The policy client checks replies against the candidates already; this
// keeps the coordinator's own filter from resting on that check.
func (nr *nodeRound) candidateAt(idx uint32) (*candidate, bool) {
	if int64(idx) >= int64(len(nr.pods)) || !nr.pods[idx].offered {
		return nil, false
	}
	return &candidate{pod: &nr.ni.Info.Pods[idx], guard: nr.pods[idx].guard, node: nr.ni.Info.Node.Name}, true
}

// RunRound runs one eviction round and reports what it did.
func (c *Coordinator) RunRound(ctx context.Context) *Round {
	c.closeRetired(ctx) // rounds never overlap: nothing uses them now
	c.applySettings()
	start := c.clock.Now()
	now := start
	set := c.policies.Load()
	round := &Round{At: now}
	c.rounds++
	if c.decisions != nil && c.decisions.Want(decision.KindEviction, decision.EvictionKey(c.rounds)) {
		round.rec = decision.NewEviction(c.rounds, now, decision.Limits{})
		round.rec.Burst, round.rec.Rate, round.rec.RateBurst = c.settings.Burst, c.settings.Rate, c.settings.RateBurst
	}

	if set == c.idleSet {
		c.metrics.Round(c.clock.Since(start))
		return round
	}
	c.cluster.UpdateSnapshot(c.snap)
	var usage Usage
	if c.usage != nil && len(set.policies) > 0 {
		u, err := c.usage.Usage(ctx)
		if err != nil {
			c.log.Warn("eviction round: no usage data this round", "error", err)
		} else {
			usage = u
		}
	}
	nodes := c.offer(now)
	c.observe(set, nodes, usage)
	if round.rec != nil {
		recordNotOffered(round.rec, nodes)
	}

	byName := make(map[string]*nodeRound, len(nodes))
	for _, nr := range nodes {
		byName[nr.ni.Info.Node.Name] = nr
	}
	// As Katalyst: every policy's evict_pods and threshold_met first,
	// then the top_eviction_pods of the thresholds met past their grace
	// period, in the policies' order.
	tops := make([]*topQuery, 0, len(set.policies))
	for _, p := range set.policies {
		if q := c.askPolicy(ctx, p, nodes, now, round); q != nil {
			tops = append(tops, q)
		}
	}
	for _, q := range tops {
		c.askTop(ctx, q, nodes, round)
	}
	c.forgetGone(set, byName)
	c.applyTaints(ctx, now, round)
	c.selectVictims(nodes, now, round)

	if len(round.Victims) > 0 {
		reqs := make([]KillRequest, len(round.Victims))
		for i, v := range round.Victims {
			reqs[i] = KillRequest{Pod: v.Pod, GracePeriodSeconds: v.Grace, Policy: v.Policy, Reason: v.Reason, ForceDelete: v.forceDelete}
		}
		c.killer.Submit(reqs)
	}
	c.goIdleIfNothingToDo(set, round)
	c.metrics.Round(c.clock.Since(start))
	if round.rec != nil {
		c.decisions.Add(&decision.Record{Kind: decision.KindEviction, Time: now, Key: decision.EvictionKey(round.rec.Round), Eviction: round.rec})
	}
	return round
}

// goIdleIfNothingToDo makes set the idle set, and lets the snapshot go,
// when set has no policies and the round just run changed nothing and
// left no condition that could still taint a node.
func (c *Coordinator) goIdleIfNothingToDo(set *PolicySet, round *Round) {
	if len(set.policies) > 0 || len(round.Taints) > 0 || len(round.Victims) > 0 || len(c.state.conditions) > 0 {
		return
	}
	c.idleSet = set
	c.snap = snapshot.New()
	c.live, c.stamps = map[uint32]bool{}, map[uint32]obsStamp{}
}

// offer assembles the round: the nodes of the snapshot, each pod's
// protection computed from its host record, and the pods policies may
// name: unprotected (not critical — static, mirror, system-critical
// priority —, not terminating, without a skip annotation or label key),
// not already being killed and not refused by a budget until later.
func (c *Coordinator) offer(now time.Time) []*nodeRound {
	all := c.snap.Nodes()
	out := make([]*nodeRound, len(all))
	total := 0
	for _, ni := range all {
		total += len(ni.Info.Pods)
	}
	facts := make([]podFacts, total) // one allocation for the round
	for i, ni := range all {
		pods := ni.Info.Pods
		nr := &nodeRound{ni: ni, pods: facts[:len(pods):len(pods)], force: map[string]*candidate{}, soft: map[string]*candidate{}}
		facts = facts[len(pods):]
		for j := range pods {
			f := &nr.pods[j]
			f.guard = c.skip.protectionOf(&pods[j])
			if f.guard != 0 {
				continue
			}
			switch uid := pods[j].UID; {
			case c.killer.Holds(uid):
				f.held = true
			case c.isBlocked(uid, now):
				f.blocked = true
			default:
				f.offered = true
				nr.candidates = append(nr.candidates, uint32(j))
			}
		}
		out[i] = nr
	}
	return out
}

// recordNotOffered lists in rec the pods no policy was offered, with
// why, as offer found them.
func recordNotOffered(rec *decision.Eviction, nodes []*nodeRound) {
	for _, nr := range nodes {
		for j := range nr.pods {
			f := &nr.pods[j]
			why := ""
			switch {
			case f.offered:
				continue
			case f.guard != 0:
				why = "protected: " + f.guard.String()
			case f.held:
				why = "being evicted already (held by the killer)"
			case f.blocked:
				why = "the Eviction API refused it (429) until later"
			}
			p := &nr.ni.Info.Pods[j]
			rec.Add(&rec.NotOffered, decision.EvictionPod{Pod: p.Namespace + "/" + p.Name, Node: nr.ni.Info.Node.Name, Reason: why})
		}
	}
	rec.Nodes = len(nodes)
}

// observe fills one observation table per distinct annotation-key set of
// the policies' modules.
func (c *Coordinator) observe(set *PolicySet, nodes []*nodeRound, usage Usage) {
	if c.tableSet != set {
		c.tables, c.tableSet = make([]*snapshot.Observations, len(set.keys)), set
		for i := range c.tables {
			c.tables[i] = snapshot.NewObservations()
		}
		clear(c.stamps)
	}
	live := make(map[uint32]bool, len(nodes))
	for _, nr := range nodes {
		live[nr.ni.Slot] = true
	}
	for slot := range c.live {
		if !live[slot] {
			for _, t := range c.tables {
				t.Delete(slot)
			}
			delete(c.stamps, slot)
		}
	}
	c.live = live
	reading, stable := usageIdentity(usage)
	for _, nr := range nodes {
		stamp := obsStamp{name: nr.ni.Info.Node.Name, gen: nr.ni.Generation, usage: reading}
		if old, ok := c.stamps[nr.ni.Slot]; ok && stable && old == stamp {
			continue
		}
		c.stamps[nr.ni.Slot] = stamp
		for ti, t := range c.tables {
			o := observation(&nr.ni.Info, set.keys[ti], usage)
			t.Set(nr.ni.Slot, &o)
		}
	}
	c.reading = usage
}

// obsStamp is what a slot's observations were built from. The reading
// they name is kept in Coordinator.reading, so its address cannot be
// reused by a later one while a stamp refers to it.
type obsStamp struct {
	name  string
	gen   uint64
	usage uintptr
}

// usageIdentity tells one usage reading from another: the address of a
// pointer-typed reading (the sources hand out one per scrape). Other
// types cannot be told apart cheaply, so they count as new every round.
func usageIdentity(u Usage) (id uintptr, stable bool) {
	if u == nil {
		return 0, true
	}
	if v := reflect.ValueOf(u); v.Kind() == reflect.Pointer {
		return v.Pointer(), true
	}
	return 0, false
}

// observation builds a node's eviction view: the guests' copy, which no
// host decision reads. Each pod's annotations in it are those of keys
// (the module's manifest's annotationKeys, sorted, at most
// MaxAnnotationKeys) the pod carries, with the values of its host record
// (over convert.MaxAnnotationValue bytes: empty).
func observation(ni *abi.NodeInfo, keys []string, usage Usage) abi.NodeObservation {
	o := abi.NodeObservation{Conditions: ni.Node.Conditions, Pods: make([]abi.PodObservation, len(ni.Pods))}
	if usage != nil {
		o.Usage = usage.Node(ni.Node.Name)
	}
	for i := range ni.Pods {
		p := &ni.Pods[i]
		po := &o.Pods[i]
		po.QoS = p.QoS
		if p.Static {
			po.Flags |= abi.PodStatic
		}
		if p.Mirror {
			po.Flags |= abi.PodMirror
		}
		if p.Critical() {
			po.Flags |= abi.PodCritical
		}
		po.Annotations = annotationsOf(p.Annotations, keys)
		if usage != nil {
			po.Usage = usage.Pod(p.Namespace, p.Name)
		}
	}
	return o
}

// annotationsOf is the guests' copy of a pod's annotations: those of keys
// (sorted) found in the pod's host record (sorted by key, as
// host/internal/convert builds it), looked up by binary search so that a pod
// carrying many annotations costs a policy's few keys no scan of them.
func annotationsOf(record abi.Labels, keys []string) abi.Labels {
	var out abi.Labels
	for _, k := range keys {
		i := sort.Search(len(record), func(i int) bool { return record[i].Key >= k })
		if i < len(record) && record[i].Key == k {
			out = append(out, abi.Label{Key: k, Value: record[i].Value})
		}
	}
	return out
}

// forgetGone drops threshold state and gauges of nodes and policies no
// longer there.
func (c *Coordinator) forgetGone(set *PolicySet, nodes map[string]*nodeRound) {
	names := make(map[string]bool, len(set.policies))
	for _, p := range set.policies {
		names[p.Plugin] = true
	}
	keep := func(k thresholdKey) bool { return names[k.policy] && nodes[k.node] != nil }
	c.state.forgetThresholds(keep)
	for k := range c.gauges {
		if !keep(k) {
			c.metrics.DeleteThresholdMet(k.policy, k.node)
			delete(c.gauges, k)
		}
	}
}

// errReason names a policy failure for the failures metric.
func errReason(err error) string {
	var ce *guest.CallError
	switch {
	case errors.Is(err, guest.ErrDeadlineExceeded):
		return "timeout"
	case errors.Is(err, guest.ErrGuestTrap):
		return "trap"
	case errors.Is(err, guest.ErrInvalidReply):
		return "invalid_reply"
	case errors.As(err, &ce) && ce.Broken:
		return "malformed_reply"
	}
	return "error"
}
