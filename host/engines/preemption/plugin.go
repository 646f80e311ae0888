// Package preemption is the host's DefaultPreemption plugin: when no node
// fits a pod, it looks for a node where removing lower-priority pods would
// make room, as kube-scheduler's preemption does, with three changes:
//
//   - Which pods on a node become victims, and which candidate node wins,
//     are a Wasm preemption policy (ABI v1.1); the host drives the dry
//     runs, since the filters live in other modules.
//   - The API calls run asynchronously by default (KEP-4832): PostFilter
//     nominates the pod at once and returns; a goroutine marks and removes
//     the victims while a PreEnqueue gate holds the pod back; on failure
//     the nomination is cleared; when the goroutine ends the pod is always
//     re-activated (upstream can strand it for five minutes).
//   - PriorityClasses can guard their pods' PodDisruptionBudgets against
//     low-priority preemptors (KEP-3280, from an annotation): such victims
//     go through the Eviction API, and a refusal (429) moves preemption to
//     the next candidate node. A node's guarded victims are dealt with
//     before any other victim of it is touched: checked together with
//     dry-run evictions, then evicted one at a time, stopping at the
//     first refusal; only then are the others marked and removed. So a
//     refusal the dry runs see abandons the node with every pod on it
//     running; what is left is a budget that changes between the dry run
//     and the eviction, or one budget shared by several guarded victims
//     (dry runs spend nothing, so each passes alone): that costs the
//     guarded victims evicted before the refusal, never the others.
package preemption

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/scheduling/framework"
)

// Name is the plugin's name in profiles, as kube-scheduler's.
const Name = "DefaultPreemption"

// GateReason is the PreEnqueue message while a pod's victims are being
// removed.
const GateReason = "waiting for the preemption for this pod to be finished"

// Queue is what preemption needs of the scheduling queue: the nominator,
// and Activate to retry a preemptor when its preemption ends.
type Queue interface {
	AddNominatedPod(pod *abi.Pod, node string)
	DeleteNominatedPodIfExists(pod *abi.Pod)
	NominatedPodsForNode(node string) []*abi.Pod
	// NominatedNode is the node the pod is nominated to, or "".
	NominatedNode(uid string) string
	Activate(pods []*abi.Pod)
	// Requeue retries the pods after their backoff.
	Requeue(pods []*abi.Pod)
}

// Pods looks up the cache's current view of a pod (nil when gone).
type Pods interface {
	GetPod(uid string) *abi.Pod
}

// Options are what DefaultPreemption shares across profiles.
type Options struct {
	API   API
	Queue Queue
	Pods  Pods
	// Guard returns a PriorityClass's KEP-3280 value, for pods the host
	// saw before their class (nil: none).
	Guard   func(class string) *int32
	Metrics Metrics
	// Rand picks the dry runs' starting offset; seed it for reproducible
	// runs. Guarded by a lock inside.
	Rand *rand.Rand
	Log  hclog.Logger
}

// Plugin is DefaultPreemption. New returns the shared, unconfigured
// plugin; the framework makes one per profile with ForProfile.
type Plugin struct {
	*shared
	profile string
	args    Args
}

// shared is the state every profile's instance uses: one preemption run
// per preemptor at a time, whatever its profile.
type shared struct {
	opts    Options
	rngMu   sync.Mutex
	mu      sync.Mutex
	running map[string]*run // preemptor UID → its asynchronous preemption
	wg      sync.WaitGroup
}

// run is one asynchronous preemption in flight.
type run struct {
	// lastVictim is set just before the last victim is removed: once it
	// is gone the preemptor may be retried even if the goroutine has not
	// finished its bookkeeping (kube-scheduler PR #134294).
	lastVictim *abi.Pod
}

var (
	_ framework.PostFilterPlugin     = (*Plugin)(nil)
	_ framework.Configurable         = (*Plugin)(nil)
	_ framework.PreemptionPolicyUser = (*Plugin)(nil)
)

// New returns DefaultPreemption with default args.
func New(opts Options) *Plugin {
	if opts.Metrics == nil {
		opts.Metrics = nopMetrics{}
	}
	if opts.Log == nil {
		opts.Log = hclog.NewNullLogger()
	}
	if opts.Rand == nil {
		opts.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	if opts.Guard == nil {
		opts.Guard = func(string) *int32 { return nil }
	}
	return &Plugin{shared: &shared{opts: opts, running: map[string]*run{}}, args: DefaultArgs()}
}

// Name implements framework.Plugin.
func (*Plugin) Name() string { return Name }

// ForProfile implements framework.Configurable.
func (p *Plugin) ForProfile(info framework.ProfileInfo, raw []byte) (framework.Plugin, error) {
	a, err := ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	return &Plugin{shared: p.shared, profile: info.Name, args: a}, nil
}

// PreemptionPolicy implements framework.PreemptionPolicyUser.
func (p *Plugin) PreemptionPolicy() string { return p.args.VictimPolicy }

// Args returns the plugin's configuration.
func (p *Plugin) Args() Args { return p.args }

// PreEnqueue keeps a preemptor out of activeQ while its victims are being
// removed (KEP-4832).
func (p *Plugin) PreEnqueue(pod *abi.Pod) (bool, string) {
	if p.IsPodRunningPreemption(pod.UID) {
		return false, GateReason
	}
	return true, ""
}

// IsPodRunningPreemption reports whether the pod's asynchronous preemption
// is still under way: it is, until the goroutine ends or the last victim
// is gone (deleted from the cache or terminating).
func (s *shared) IsPodRunningPreemption(uid string) bool {
	s.mu.Lock()
	r, ok := s.running[uid]
	var last *abi.Pod
	if ok {
		last = r.lastVictim
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	if last == nil {
		return true
	}
	cur := s.opts.Pods.GetPod(last.UID)
	return cur != nil && !cur.Terminating
}

// Wait blocks until every asynchronous preemption has ended (the
// simulation settles on it; tests use it).
func (s *shared) Wait() { s.wg.Wait() }

func (s *shared) startRun(uid string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.running[uid]; dup {
		return false
	}
	s.running[uid] = &run{}
	return true
}

func (s *shared) setLastVictim(uid string, v *abi.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.running[uid]; r != nil {
		r.lastVictim = v
	}
}

func (s *shared) endRun(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, uid)
}

func (s *shared) offset(n int) int {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.opts.Rand.IntN(n)
}

// background is the context of preemption goroutines: not the cycle's,
// which ends with the cycle.
func background() context.Context { return context.Background() }

// NominatesItself implements framework.SelfNominating: PostFilter puts
// the nomination in the nominator itself, before any goroutine starts, so
// a goroutine that fails at once clears it for good.
func (*Plugin) NominatesItself() bool { return true }
