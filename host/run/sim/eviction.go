package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/engines/eviction"
	"github.com/wasmsched/wasmsched/host/engines/podremoval"
	"github.com/wasmsched/wasmsched/host/internal/usage"
	"github.com/wasmsched/wasmsched/host/platform/snapshot"
	"github.com/wasmsched/wasmsched/host/run/memapi"
)

// StatusEvicted is the outcome of a pod an eviction policy removed.
const StatusEvicted = "Evicted"

// EvictionReport is what the eviction rounds of a run did.
type EvictionReport struct {
	Rounds int `json:"rounds"`
	// Evictions are the pods the coordinator chose, in order, with what
	// became of them and of their replacements.
	Evictions []Eviction `json:"evictions,omitempty"`
	// DryRun are the pods dry-run policies would have evicted.
	DryRun []Eviction `json:"dryRun,omitempty"`
	// Taints are the changes to nodes' eviction.wasmsched.io/ taints.
	Taints []NodeTaints `json:"taints,omitempty"`
	// Failures are policy calls whose answers were dropped.
	Failures []PolicyFailure `json:"failures,omitempty"`
}

// Eviction is one pod chosen for eviction.
type Eviction struct {
	Round  int    `json:"round"`
	Pod    string `json:"pod"` // namespace/name
	Node   string `json:"node"`
	Policy string `json:"policy"`
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
	// Outcome: "evicted", "blocked" (a PodDisruptionBudget refused it:
	// a later round may choose another pod), or "failed: …".
	Outcome string `json:"outcome,omitempty"`
	// Replacement is the pod its controller (ReplicaSet, StatefulSet)
	// created in its place, and where the scheduler put it.
	Replacement       string `json:"replacement,omitempty"`
	ReplacementNode   string `json:"replacementNode,omitempty"`
	ReplacementStatus string `json:"replacementStatus,omitempty"`

	replacementUID string
}

// NodeTaints is a change of a node's managed taints in a round.
type NodeTaints struct {
	Round int    `json:"round"`
	Node  string `json:"node"`
	// Taints after the change ("" when removed), e.g.
	// "eviction.wasmsched.io/MemoryPressure:NoSchedule".
	Taints []string `json:"taints"`
	Error  string   `json:"error,omitempty"`
}

// PolicyFailure is a dropped policy call.
type PolicyFailure struct {
	Round  int    `json:"round"`
	Policy string `json:"policy"`
	Call   string `json:"call"`
	Error  string `json:"error"`
}

// evictionEnv is the coordinator of a simulation and what it needs.
type evictionEnv struct {
	coord  *eviction.Coordinator
	killer *eviction.Killer
	set    *eviction.PolicySet
	stop   context.CancelFunc
	done   chan struct{}
	// pods are the manifests of every pod admitted, by namespace/name,
	// for replacements.
	pods map[string]*corev1.Pod
}

// startEviction builds the coordinator when the configuration has
// eviction policies (nil otherwise).
func (e *Env) startEviction(ctx context.Context) error {
	s := e.cfg.Eviction.Defaulted()
	if len(s.Policies) == 0 {
		return nil
	}
	set, err := eviction.PoliciesFrom(ctx, e.cfg, e.registry)
	if err != nil {
		return err
	}
	src, err := usage.StaticFrom(e.objs.NodeMetrics, e.objs.PodMetrics)
	if err != nil {
		set.Close(ctx)
		return err
	}
	ev := &evictionEnv{set: set, done: make(chan struct{}), pods: map[string]*corev1.Pod{}}
	for _, p := range e.objs.Pods {
		ev.pods[namespaceOf(p)+"/"+p.Name] = p
	}
	kopts := eviction.KillerOptionsFrom(s)
	kopts.Clock, kopts.Log, kopts.Metrics = e.clock, e.log, e.metrics.Eviction()
	var coord *eviction.Coordinator
	kopts.OnBlocked = func(uid string, until time.Time) { coord.Blocked(uid, until) }
	ev.killer = eviction.NewKiller(killAPI{e.cluster}, kopts)
	coord = eviction.New(eviction.Options{Settings: eviction.SettingsFrom(s), Cluster: simCluster{e},
		Killer: ev.killer, Usage: staticUsage{src}, Metrics: e.metrics.Eviction(), Log: e.log, Clock: e.clock, Decisions: e.sink()}, set)
	ev.coord = coord
	kctx, cancel := context.WithCancel(ctx)
	ev.stop = cancel
	go func() { ev.killer.Run(kctx); close(ev.done) }()
	e.eviction = ev
	return nil
}

func namespaceOf(p *corev1.Pod) string {
	if p.Namespace == "" {
		return corev1.NamespaceDefault
	}
	return p.Namespace
}

func (ev *evictionEnv) close(ctx context.Context) {
	ev.stop()
	<-ev.done
	ev.set.Close(ctx)
}

// Evict runs eviction rounds, a sync period apart on the simulated clock,
// each followed by scheduling what the evictions' controllers recreate.
// A run without eviction policies reports nothing.
func (e *Env) Evict(ctx context.Context, rounds int) (*EvictionReport, error) {
	rep := &EvictionReport{}
	if e.eviction == nil {
		return rep, nil
	}
	ev := e.eviction
	period := ev.coord.Settings().SyncPeriod
	for r := 1; r <= rounds; r++ {
		if r > 1 {
			e.clock.Step(period)
		}
		round := ev.coord.RunRound(ctx)
		rep.Rounds = r
		// The killer works on its own goroutines; the round's outcome is
		// known when it has nothing left (the in-memory API answers at
		// once, so this is short).
		for !ev.killer.Idle() {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			time.Sleep(100 * time.Microsecond)
		}
		for _, f := range round.Failures {
			rep.Failures = append(rep.Failures, PolicyFailure{Round: r, Policy: f.Policy, Call: f.Call, Error: f.Err.Error()})
		}
		for _, tc := range round.Taints {
			nt := NodeTaints{Round: r, Node: tc.Node, Taints: []string{}}
			for _, t := range tc.After {
				nt.Taints = append(nt.Taints, t.Key+":"+t.Effect.String())
			}
			if tc.Err != nil {
				nt.Error = tc.Err.Error()
			}
			rep.Taints = append(rep.Taints, nt)
		}
		for _, v := range round.DryRun {
			rep.DryRun = append(rep.DryRun, evictionOf(r, &v))
		}
		var replacements []*corev1.Pod
		outcomes := e.killOutcomes()
		for _, v := range round.Victims {
			ev := evictionOf(r, &v)
			ev.Outcome = outcomes[v.Pod.Namespace+"/"+v.Pod.Name]
			if ev.Outcome == "" {
				ev.Outcome = "not attempted"
			}
			if ev.Outcome == "evicted" {
				e.rec.setStatus(v.Pod.UID, StatusEvicted, "evicted by "+v.Policy+": "+v.Reason)
				if rp := e.eviction.replacement(v.Pod, r); rp != nil {
					ev.Replacement, ev.replacementUID = rp.Namespace+"/"+rp.Name, string(rp.UID)
					replacements = append(replacements, rp)
				}
			}
			rep.Evictions = append(rep.Evictions, ev)
		}
		if len(replacements) > 0 {
			if err := e.AddPods(replacements...); err != nil {
				return rep, fmt.Errorf("eviction round %d: recreate evicted pods: %w", r, err)
			}
			for _, rp := range replacements {
				e.eviction.pods[rp.Namespace+"/"+rp.Name] = rp
			}
		}
		if _, err := e.Settle(ctx); err != nil && !errors.Is(err, ErrNotSettled) {
			return rep, err
		}
	}
	for i := range rep.Evictions {
		x := &rep.Evictions[i]
		if x.Replacement == "" {
			continue
		}
		if res := e.rec.get(x.replacementUID); res != nil {
			x.ReplacementNode, x.ReplacementStatus = res.Node, res.Status
		}
	}
	return rep, nil
}

func evictionOf(round int, v *eviction.Victim) Eviction {
	return Eviction{Round: round, Pod: v.Pod.Namespace + "/" + v.Pod.Name, Node: v.Node, Policy: v.Policy, Scope: v.Scope, Reason: v.Reason}
}

// killOutcomes reads what the killer's calls did from the API's
// timeline, per pod (namespace/name): the outcome of its last eviction or
// deletion.
func (e *Env) killOutcomes() map[string]string {
	out := map[string]string{}
	for _, t := range e.cluster.Timeline() {
		if t.Op != memapi.OpEvictionEvict && t.Op != memapi.OpEvictionDelete {
			continue
		}
		switch {
		case t.Err == "":
			out[t.Pod] = "evicted"
		case t.Code == http.StatusTooManyRequests:
			out[t.Pod] = "blocked"
		default:
			out[t.Pod] = "failed: " + t.Err
		}
	}
	return out
}

// replacement is the pod a controller creates for an evicted one: a
// StatefulSet's under the same name, a ReplicaSet's (or
// ReplicationController's, Job's) under a new generated name; nil for a
// pod no controller recreates.
func (ev *evictionEnv) replacement(pod *abi.Pod, round int) *corev1.Pod {
	src := ev.pods[pod.Namespace+"/"+pod.Name]
	if src == nil {
		return nil
	}
	owner := metav1.GetControllerOf(src)
	if owner == nil {
		return nil
	}
	p := src.DeepCopy()
	p.Spec.NodeName = ""
	p.Status = corev1.PodStatus{}
	p.ResourceVersion = ""
	switch owner.Kind {
	case "StatefulSet":
	case "ReplicaSet", "ReplicationController", "Job":
		base := p.GenerateName
		if base == "" {
			base = p.Name + "-"
		}
		for attempt := 0; ; attempt++ {
			name := base + nameSuffix(pod.Name, round, attempt)
			if ev.pods[pod.Namespace+"/"+name] == nil {
				p.Name = name
				break
			}
		}
	default:
		return nil
	}
	p.UID = ktypes.UID(fmt.Sprintf("uid-%s/%s-r%d", pod.Namespace, p.Name, round))
	return p
}

// killAPI is the in-memory API as the killer sees it: its removals are
// recorded under the killer's own ops, so the report tells them apart
// from preemption's.
type killAPI struct{ c *memapi.Cluster }

func (k killAPI) EvictPod(ctx context.Context, pod *abi.Pod, _ *int64) error {
	return k.c.EvictAs(ctx, pod, memapi.OpEvictionEvict)
}

func (k killAPI) DeletePod(ctx context.Context, pod *abi.Pod, _ *int64) error {
	return k.c.DeleteAs(ctx, pod, memapi.OpEvictionDelete)
}

func (k killAPI) PodUID(_ context.Context, namespace, name string) (string, error) {
	if p := k.c.PodByName(namespace, name); p != nil {
		return p.UID, nil
	}
	return "", fmt.Errorf("pod %s/%s: %w", namespace, name, podremoval.ErrNotFound)
}

func (k killAPI) Event(pod *abi.Pod, warning bool, reason, message string) {
	k.c.Event(pod, warning, reason, message)
}

// simCluster is the simulation's cache and nodes as the coordinator sees
// them: a taint change goes to the scheduler at once, as an informer
// update would.
type simCluster struct{ e *Env }

func (s simCluster) UpdateSnapshot(dst *snapshot.Snapshot) { s.e.Cache.UpdateSnapshot(dst) }

func (s simCluster) SetEvictionTaints(_ context.Context, node string, taints []abi.Taint) error {
	old, ok := s.e.Cache.Node(node)
	if !ok {
		return fmt.Errorf("node %q: not found", node)
	}
	n := old
	n.Taints = eviction.SwapTaints(old.Taints, taints)
	s.e.Scheduler.OnNodeUpdate(&old, &n)
	return nil
}

// staticUsage adapts the simulation's usage documents.
type staticUsage struct{ s *usage.Static }

func (u staticUsage) Usage(ctx context.Context) (eviction.Usage, error) {
	snap, err := u.s.Usage(ctx)
	if err != nil {
		return nil, err
	}
	return snap, nil
}
