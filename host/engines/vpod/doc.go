// Package vpod is the vpod engine: Knative Eventing's vreplica scheduler
// (knative.dev/eventing pkg/scheduler) rebuilt on wasmsched, its
// predicates and priorities served by policy modules.
//
// A vpod is a resource (a KafkaSource, a trigger's consumer group, …)
// that wants some number of vreplicas; the engine spreads them over the
// pods of one adapter StatefulSet, each pod holding up to Capacity, and
// scales the StatefulSet so they fit.
//
// # Strategies
//
//   - Policy (Knative v1.16.0, the last release with plugin policies):
//     a scale-up or a scale-down without a descheduling policy re-places
//     every vreplica of the vpod one at a time (state → predicates →
//     priorities → best pod, ties broken at random); a scale-down with a
//     descheduling policy takes vreplicas off one at a time.
//   - MAXFILLUP (v1.16.0): fill the vpod's pods, then pods by ordinal.
//   - MAXFILLUP_SPREAD (Knative ≥ v1.17's MAXFILLUP): the reservations are
//     the starting point; vreplicas go round-robin over the candidates,
//     and a vpod spreads over at least MinReplicas pods. Call Promote
//     first: it rebuilds the reservations from the committed placements.
//
// # Using the library
//
// The steps are those of Knative's own scheduler tests: a cluster of
// plain pods, nodes, a replica count and vpods; a scheduler with a pod
// capacity and policies; Schedule; Reserved; an autoscaler pass.
//
// Step 1, the cluster. StaticCluster is an in-memory Cluster (serve
// implements Cluster over informers):
//
//	c := vpod.NewStaticCluster("knative-eventing", "kafka-source-dispatcher", 3,
//		pods, nodes, []vpod.VPod{{Key: k, VReplicas: 5}})
//
// Pods are named <statefulset>-<ordinal>; a pod takes vreplicas when its
// ordinal is below the replicas, it is bound to a node, it is not
// annotated eventing.knative.dev/unschedulable=true, and (Policy and
// MAXFILLUP) its node is neither cordoned nor tainted
// node.kubernetes.io/unreachable NoExecute/NoSchedule. Nodes are in the
// zone of their topology.kubernetes.io/zone label, or "unknown".
//
// Step 2, the policies (Policy strategy only), bound to the modules
// serving their plugins. The builtin knative bundle serves Knative's ten
// plugins; args are Knative's, a JSON string holding an object:
//
//	reg, err := modules.Load(ctx, cfg, modules.Options{})
//	sched := &vpod.Policy{
//		Predicates: []vpod.PolicyEntry{
//			{Name: "PodFitsResources"},
//			{Name: "EvenPodSpread", Args: json.RawMessage(`"{\"MaxSkew\": 2}"`)},
//		},
//		Priorities: []vpod.PolicyEntry{
//			{Name: "AvailabilityZonePriority", Weight: 10, Args: json.RawMessage(`"{\"MaxSkew\": 2}"`)},
//			{Name: "LowestOrdinalPriority", Weight: 2},
//		},
//	}
//	pols, err := vpod.NewPolicies(ctx, reg, sched, nil, log)
//
// A plugin name no module serves as that kind, or args its plugin
// refuses, fail NewPolicies (a config.Errors naming each entry, where it
// was written and the plugins that exist); a Lenient policy logs and
// skips the first and keeps the second, as Knative does.
// Every placement step is one call per module (abi FuncVPodStep) covering
// all candidate pods.
//
// Step 3, the scheduler:
//
//	s, err := vpod.New(vpod.Settings{Name: "kafka", Namespace: "knative-eventing",
//		StatefulSet: "kafka-source-dispatcher", Capacity: 20,
//		Strategy: vpod.StrategyPolicy, SchedPolicy: sched},
//		c, pols, vpod.Options{Log: log, Evictor: evict})
//
// Step 4, schedule a vpod and commit the answer (a controller writes it
// into the vpod's status; with StaticCluster, Commit). Until the engine
// sees it committed, the answer is reserved: the next Schedule of any
// vpod counts it.
//
//	ps, err := s.Schedule(ctx, v)
//	var pe *vpod.PolicyError
//	if errors.As(err, &pe) {
//		// a policy module failed: commit nothing, retry with backoff
//	} else if _, ok := vpod.IsRequeue(err); ok || err == nil {
//		// (ok: some vreplicas are left over; schedule it again later)
//		c.Commit(v.Key, ps)
//	}
//
// A vpod is scheduled as Cluster.VPods lists it (its spread comes from
// there); the VPod passed in gives the wanted vreplicas and the current
// placements.
//
// Step 5, inspect and scale. Reserved shows the reservations. One
// autoscaler pass is synchronous:
//
//	res, err := s.Autoscale(ctx, false) // scale up if needed
//	res, err = s.Autoscale(ctx, true)   // may scale down, or compact
//
// or run the loop on the leader: go s.Run(ctx). Schedule triggers a
// scale-up pass when vreplicas are left over.
//
// # Fidelity
//
// The engine follows the v1.16.0 (and HEAD) code, quirks included: for
// instance MAXFILLUP's second pass places on any ordinal below the
// replicas whether or not the pod is schedulable; a failed rebalance
// returns the old placements but leaves the newly placed ones reserved;
// LastOrdinal counts the schedulable pods as well as every placement and
// reservation; reservations of vpods no longer listed are dropped, and
// those of vpods with nothing pending emptied, when a Schedule starts.
// Knative rebuilds its whole state before every single-vreplica step,
// which costs O(every placement) per step; this engine builds it once per
// Schedule from a cache of committed placements (re-read only for vpods
// whose ResourceVersion changed) and then keeps it current as the stepped
// vpod's reservations change. Tests check every step's state against a
// from-scratch build.
//
// These behaviours are deliberately different (docs/ARCHITECTURE.md,
// "Vpods", gives each its reason):
//
//   - Signed scores. Knative's scores are uint64 "MaxUint64 − penalty",
//     weighted and summed in uint64: the sum wraps, so mixing them with a
//     small positive score (RemoveWithHighestOrdinalPriority's ordinal)
//     inverts the ranking once the weighted ordinal exceeds the penalties
//     (a pod with no penalty and a high ordinal sums to 0, the worst). Here
//     every such score is −penalty (LowestOrdinalPriority −ordinal,
//     RemoveWithHighestOrdinalPriority +ordinal), weighted and summed in
//     int64 (saturating), so the best pod is the one with the least
//     weighted penalty, as intended.
//   - Descheduling never loses removals. v1.16.0 takes candidates for a
//     removal from the vpod's committed placements and does not reserve a
//     pod whose last vreplica it removed, so the next step may pick that
//     pod again and remove nothing: a scale-down removes fewer vreplicas
//     than asked. Here the candidates are the current working placements
//     and such a pod is reserved at 0, so every asked removal happens.
//   - The revert path returns a copy. When a rebalance leaves vreplicas
//     over, v1.16.0 returns the vpod's own placements slice and sorts it
//     in place; Schedule returns a sorted copy and never reorders the
//     caller's placements.
//   - Policies fail closed unless Lenient (see NewPolicies), and the
//     autoscaler's growth is bounded by the vpods' need (see below).
//
// Inputs Knative cannot handle are refused or contained rather than
// crashing: a capacity below 1 or above 1048576 and a maxReplicas
// outside 1..65536 (New fails), negative vreplicas or more than
// MaxVReplicas, more than MaxPlacements placements (Schedule fails for
// that vpod; the autoscaler counts no demand for a vpod listed with more
// than MaxVReplicas), placements naming pods without a usable ordinal or
// above 65535 (left out of the capacity tally, logged). The autoscaler
// never asks for more than Settings.MaxReplicas (AutoscaleResult.Capped
// says when it wanted more; the rest stays pending), and a pass never adds
// more than Settings.MaxScaleUpStep nor goes above the vpods'
// need plus that step (AutoscaleResult.Bounded): Knative's policy-mode
// target grows on every pass while vreplicas stay pending, whatever the
// cause.
//
// A module that traps, runs past its call deadline or answers what the
// ABI does not allow is a module failure, not a lack of pods (Knative
// would read its failed step as vreplicas left and scale up on every
// requeue): Schedule fails with a *PolicyError naming the module, plugin
// and reason and returns no placements, the vpod's reservations are as
// before, the autoscaler is not triggered and counts none of the vpod's
// pending vreplicas until a Schedule of it gets past the modules again
// (Failed lists those vpods); the failure is logged and counted
// (Options.Metrics), and the instance is replaced. Placements on pods
// that are not <statefulset>-<ordinal> count toward capacity by their
// ordinal, as in Knative, but not toward a vpod's spread (modules see the
// StatefulSet's pods only). Where HEAD leaves an order to map iteration
// (MAXFILLUP_SPREAD's reserved candidates), it is by ordinal here.
package vpod
