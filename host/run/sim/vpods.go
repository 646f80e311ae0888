package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmsched/wasmsched/abi"
	"github.com/wasmsched/wasmsched/host/config"
	"github.com/wasmsched/wasmsched/host/engines/vpod"
	"github.com/wasmsched/wasmsched/host/run/memapi"
)

// VPodObject is a vpods.wasmsched.io/v1alpha1 VPod document (the CRD in
// deploy/vpod-crd.yaml): a source's vreplica count, the adapter
// StatefulSet it runs on and, optionally, the placements it already has.
type VPodObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              VPodSpec   `json:"spec"`
	Status            VPodStatus `json:"status,omitempty"`
}

// VPodSpec is a VPod's desired state.
type VPodSpec struct {
	// VReplicas is the number of vreplicas to place (required, ≥ 0).
	VReplicas *int32 `json:"vreplicas"`
	// StatefulSet is the adapter StatefulSet: "name" (in the vpod
	// scheduler's namespace) or "namespace/name".
	StatefulSet string `json:"statefulSet"`
}

// VPodStatus is where a VPod's vreplicas run.
type VPodStatus struct {
	Placements []vpod.Placement `json:"placements,omitempty"`
}

// MaxVPods is the most VPod objects a simulation reads: scheduling one
// vpod costs O(vpods), so a run costs O(vpods²).
const MaxVPods = 10000

// checkVPod refuses what the API server's schema refuses, and the sizes
// the vpod engine does not attempt (vpod.MaxVReplicas vreplicas,
// vpod.MaxPlacements placements, placements holding more vreplicas in
// all than a vpod may want).
func checkVPod(v *VPodObject) error {
	var errs []string
	if v.Spec.VReplicas == nil {
		errs = append(errs, "spec.vreplicas: required")
	} else if n := *v.Spec.VReplicas; n < 0 {
		errs = append(errs, fmt.Sprintf("spec.vreplicas: must be at least 0, not %d", n))
	} else if n > vpod.MaxVReplicas {
		errs = append(errs, fmt.Sprintf("spec.vreplicas: %d exceeds the limit %d", n, vpod.MaxVReplicas))
	}
	if v.Spec.StatefulSet == "" {
		errs = append(errs, "spec.statefulSet: required")
	}
	if n := len(v.Status.Placements); n > vpod.MaxPlacements {
		errs = append(errs, fmt.Sprintf("status.placements: %d placements exceed the limit %d", n, vpod.MaxPlacements))
		return errors.New(strings.Join(errs, "; "))
	}
	var total int64
	for i, p := range v.Status.Placements {
		if p.PodName == "" {
			errs = append(errs, fmt.Sprintf("status.placements[%d].podName: required", i))
		}
		if p.VReplicas < 0 {
			errs = append(errs, fmt.Sprintf("status.placements[%d].vreplicas: must be at least 0, not %d", i, p.VReplicas))
		}
		total += int64(max(p.VReplicas, 0))
	}
	if total > vpod.MaxVReplicas {
		errs = append(errs, fmt.Sprintf("status.placements: %d vreplicas in all exceed the limit %d", total, vpod.MaxVReplicas))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// Simulated vpod autoscaling: how many scale-up passes may follow one
// another (each adds pods the scheduler then binds) before the run gives
// up, and how many refresh ticks (scale-down passes: compaction, then
// scaling down) follow.
const (
	maxVPodScaleUps  = 8
	vpodRefreshTicks = 3
)

// VPodReport is what the vpod schedulers did in a run.
type VPodReport struct {
	Schedulers []VPodSchedulerReport `json:"schedulers"`
	// Ignored are the VPod documents no configured scheduler takes (their
	// statefulSet names none), with why.
	Ignored []VPodResult `json:"ignored,omitempty"`
}

// VPodSchedulerReport is one vpod scheduler: its StatefulSet before and
// after, each vpod's outcome and each autoscaler pass.
type VPodSchedulerReport struct {
	Name        string `json:"name"`
	StatefulSet string `json:"statefulSet"`
	Strategy    string `json:"strategy"`
	// ReplicasBefore and ReplicasAfter are the StatefulSet's scale.
	ReplicasBefore int32 `json:"replicasBefore"`
	ReplicasAfter  int32 `json:"replicasAfter"`
	// Error is set when the scheduler could not run at all.
	Error  string          `json:"error,omitempty"`
	VPods  []VPodResult    `json:"vpods"`
	Passes []AutoscalePass `json:"autoscaler,omitempty"`
}

// VPodResult is one vpod's final state.
type VPodResult struct {
	VPod       string           `json:"vpod"`
	VReplicas  int32            `json:"vreplicas"`
	Placements []vpod.Placement `json:"placements"`
	// Pending is the vreplicas without a placement at the end.
	Pending int32 `json:"pending"`
	// Error is the last scheduling error (a requeue after the
	// autoscaler ran out of options, a policy module's failure, or a
	// refusal).
	Error string `json:"error,omitempty"`
	// PolicyFailure is set when the last scheduling failed in a policy
	// module: the vpod kept its placements and nothing was scaled for it.
	PolicyFailure *VPodPolicyFailure `json:"policyFailure,omitempty"`
}

// VPodPolicyFailure is a vpod step that failed in a policy module.
type VPodPolicyFailure struct {
	Module string `json:"module"`
	Plugin string `json:"plugin"`
	// Reason is trap, timeout, invalid_reply, malformed_reply or error.
	Reason string `json:"reason"`
}

// AutoscalePass is one autoscaler pass: "scale-up" after a vpod was left
// with vreplicas, "refresh" on a refresh tick (scale down, compaction).
type AutoscalePass struct {
	Kind     string `json:"kind"`
	Replicas int32  `json:"replicas"`
	Target   int32  `json:"target"`
	Scaled   bool   `json:"scaled"`
	// Capped: the pass wanted Wanted replicas, more than the scheduler's
	// maxReplicas, and asked for maxReplicas.
	Capped bool  `json:"capped,omitempty"`
	Wanted int32 `json:"wanted,omitempty"`
	// Bounded: the pass wanted Wanted replicas, more than the scale-up
	// bound (Bound: the vpods' Need plus maxScaleUpStep, and the
	// replicas plus the step) allows, and asked for the bound.
	Bounded   bool            `json:"bounded,omitempty"`
	Bound     int32           `json:"bound,omitempty"`
	Need      int32           `json:"need,omitempty"`
	Compacted bool            `json:"compacted"`
	Evictions []vpod.Eviction `json:"evictions,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// vpodRun is one configured vpod scheduler in a simulation.
type vpodRun struct {
	e        *Env
	set      config.VPodSettings
	sts      *appsv1.StatefulSet
	cluster  *vpod.StaticCluster
	sched    *vpod.Scheduler
	policies *vpod.Policies
	order    []vpod.Key
	errs     map[vpod.Key]error
	rep      *VPodSchedulerReport
}

// ScheduleVPods runs every configured vpod scheduler over the VPod
// documents naming its StatefulSet, after the adapter pods are bound:
// each vpod is scheduled; when vreplicas are left, a scale-up pass of
// the autoscaler grows the StatefulSet, the new pods are scheduled like
// any other, and the vpods are scheduled again; then refresh ticks run
// scale-down passes (compaction evicts placements from the last pods,
// which are placed again, and the StatefulSet shrinks).
func (e *Env) ScheduleVPods(ctx context.Context) (*VPodReport, error) {
	sets, err := e.cfg.VPod.Defaulted()
	if err != nil {
		return nil, err
	}
	rep := &VPodReport{}
	for _, v := range e.objs.VPods {
		taken := false
		for i := range sets {
			taken = taken || vpodNames(v, sets[i], sets)
		}
		if !taken {
			rep.Ignored = append(rep.Ignored, VPodResult{VPod: namespaceOr(v.Namespace) + "/" + v.Name, VReplicas: *v.Spec.VReplicas, Pending: *v.Spec.VReplicas,
				Error: fmt.Sprintf("spec.statefulSet %q is no configured vpod scheduler's StatefulSet: not scheduled", v.Spec.StatefulSet)})
		}
	}
	for i := range sets {
		r := &VPodSchedulerReport{Name: sets[i].Name, StatefulSet: sets[i].Namespace + "/" + sets[i].StatefulSet, Strategy: string(sets[i].Strategy)}
		rep.Schedulers = append(rep.Schedulers, *r)
		r = &rep.Schedulers[len(rep.Schedulers)-1]
		run, err := e.startVPods(ctx, sets[i], sets, r)
		if err != nil {
			r.Error = err.Error()
			continue
		}
		err = run.run(ctx)
		run.policies.Close(ctx)
		if err != nil {
			return rep, fmt.Errorf("vpod scheduler %q: %w", sets[i].Name, err)
		}
	}
	return rep, nil
}

// bindVPodPolicies binds every vpod scheduler's policies to the modules,
// as serve does when it starts: a policy naming a plugin no module serves
// or args its plugin refuses (unless the scheduler is lenient) fails the
// simulation here, with the entry's file, line and field.
func (e *Env) bindVPodPolicies(ctx context.Context) error {
	if !e.cfg.HasVPod() {
		return nil
	}
	sets, err := e.cfg.VPod.Defaulted()
	if err != nil {
		return err
	}
	e.vpodPolicies = map[string]*vpod.Policies{}
	for _, set := range sets {
		if set.SchedPolicy == nil && set.DeschedPolicy == nil {
			continue
		}
		pols, err := vpod.NewPolicies(ctx, e.registry, vpod.PolicyFrom(set.SchedPolicy), vpod.PolicyFrom(set.DeschedPolicy), e.log.With("vpodScheduler", set.Name))
		if err != nil {
			return fmt.Errorf("vpod scheduler %q: policies: %w", set.Name, err)
		}
		e.vpodPolicies[set.Name] = pols
	}
	return nil
}

func (e *Env) startVPods(ctx context.Context, set config.VPodSettings, all []config.VPodSettings, r *VPodSchedulerReport) (*vpodRun, error) {
	run := &vpodRun{e: e, set: set, rep: r, errs: map[vpod.Key]error{}}
	for _, s := range e.objs.StatefulSets {
		if s.Namespace == set.Namespace && s.Name == set.StatefulSet {
			run.sts = s
		}
	}
	var vps []vpod.VPod
	for _, v := range e.objs.VPods {
		if !vpodNames(v, set, all) {
			continue
		}
		k := vpod.Key{Namespace: namespaceOr(v.Namespace), Name: v.Name}
		run.order = append(run.order, k)
		vps = append(vps, vpod.VPod{Key: k, VReplicas: *v.Spec.VReplicas, Placements: append([]vpod.Placement(nil), v.Status.Placements...)})
	}
	if run.sts == nil {
		return nil, fmt.Errorf("StatefulSet %s/%s not found in the manifests: its %d vpod(s) are not scheduled", set.Namespace, set.StatefulSet, len(vps))
	}
	replicas := *replicasOf(run.sts.Spec.Replicas)
	r.ReplicasBefore, r.ReplicasAfter = replicas, replicas
	run.cluster = vpod.NewStaticCluster(set.Namespace, set.StatefulSet, replicas, run.adapterPods(), e.objs.Nodes, vps)
	pols, ok := e.vpodPolicies[set.Name]
	delete(e.vpodPolicies, set.Name)
	if !ok {
		var err error
		if pols, err = vpod.NewPolicies(ctx, e.registry, vpod.PolicyFrom(set.SchedPolicy), vpod.PolicyFrom(set.DeschedPolicy), e.log.With("vpodScheduler", set.Name)); err != nil {
			return nil, err
		}
	}
	run.policies = pols
	rng := rand.New(rand.NewPCG(e.seed, e.seed^0x5bd1e995))
	var err error
	run.sched, err = vpod.New(vpod.SettingsFrom(set), run.cluster, pols, vpod.Options{
		Log:       e.log.With("vpodScheduler", set.Name),
		Evictor:   run.evict,
		Rand:      func(n int64) int64 { return rng.Int64N(n) },
		Now:       e.clock.Now,
		Metrics:   e.metrics.VPod(),
		Decisions: e.sink(),
	})
	if err != nil {
		pols.Close(ctx)
		return nil, err
	}
	// The simulation's scheduler is the leader from the start (the
	// MAXFILLUP_SPREAD strategy takes its reservations from the vpods
	// then).
	if err := run.sched.Promote(ctx); err != nil {
		pols.Close(ctx)
		return nil, err
	}
	return run, nil
}

// vpodNames reports whether a VPod document names set's StatefulSet, as
// serve routes VPods: "namespace/name" must match exactly; a bare name
// matches a scheduler's StatefulSet of that name, and when several
// schedulers have one, the one in the VPod's own namespace.
func vpodNames(v *VPodObject, set config.VPodSettings, all []config.VPodSettings) bool {
	ns, name, ok := strings.Cut(v.Spec.StatefulSet, "/")
	if ok {
		return ns == set.Namespace && name == set.StatefulSet
	}
	if name != set.StatefulSet {
		return false
	}
	same := 0
	for _, o := range all {
		if o.StatefulSet == name {
			same++
		}
	}
	return same == 1 || set.Namespace == namespaceOr(v.Namespace)
}

func namespaceOr(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

// adapterPods are the StatefulSet's pods as the API has them now: the
// ordinals below the scale, and any left above it.
func (run *vpodRun) adapterPods() []*corev1.Pod {
	n := *replicasOf(run.sts.Spec.Replicas)
	if run.cluster != nil {
		if r, err := run.cluster.Replicas(context.Background()); err == nil {
			n = r
		}
	}
	var out []*corev1.Pod
	for i := int32(0); i < n+strayOrdinals; i++ {
		if p := run.e.cluster.PodByName(run.set.Namespace, fmt.Sprintf("%s-%d", run.set.StatefulSet, i)); p != nil {
			out = append(out, corePod(p))
		}
	}
	return out
}

// strayOrdinals is how far above the scale the simulation looks for
// adapter pods left behind (a manifest may list more pods than replicas).
const strayOrdinals = 64

// corePod is what the vpod engine reads of an adapter pod.
func corePod(p *abi.Pod) *corev1.Pod {
	var ann map[string]string
	if len(p.Annotations) > 0 {
		ann = make(map[string]string, len(p.Annotations))
		for _, a := range p.Annotations {
			ann[a.Key] = a.Value
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Annotations: ann},
		Spec:       corev1.PodSpec{NodeName: p.NodeName},
	}
}

func (run *vpodRun) run(ctx context.Context) error {
	for pass := 0; ; pass++ {
		left := run.scheduleAll(ctx)
		if !left || pass >= maxVPodScaleUps {
			break
		}
		res, err := run.sched.Autoscale(ctx, false)
		run.record("scale-up", res, err)
		if err != nil || !res.Scaled {
			break
		}
		if err := run.resize(ctx, res.Target); err != nil {
			return err
		}
	}
	for tick := 0; tick < vpodRefreshTicks; tick++ {
		run.e.clock.Step(run.set.RefreshPeriod)
		res, err := run.sched.Autoscale(ctx, true)
		run.record("refresh", res, err)
		if err != nil {
			continue
		}
		if res.Scaled {
			if err := run.resize(ctx, res.Target); err != nil {
				return err
			}
		}
		if len(res.Evictions) > 0 {
			run.scheduleAll(ctx)
		}
	}
	r, _ := run.cluster.Replicas(ctx)
	run.rep.ReplicasAfter = r
	for _, k := range run.order {
		v, _ := run.cluster.VPod(k)
		res := VPodResult{VPod: k.String(), VReplicas: v.VReplicas, Placements: v.Placements}
		if err := run.errs[k]; err != nil {
			res.Error = err.Error()
			var pe *vpod.PolicyError
			if errors.As(err, &pe) {
				res.PolicyFailure = &VPodPolicyFailure{Module: pe.Module, Plugin: pe.Plugin, Reason: pe.Reason}
			}
		}
		if placed := vpod.TotalVReplicas(v.Placements); placed < v.VReplicas {
			res.Pending = v.VReplicas - placed
		}
		run.rep.VPods = append(run.rep.VPods, res)
	}
	return nil
}

// scheduleAll schedules every vpod once, in document order, committing
// the placements as a source's reconciler writes its status; it reports
// whether any was left with vreplicas. A vpod whose scheduling failed (a
// policy module's failure among others) keeps its placements and asks
// for no pods.
func (run *vpodRun) scheduleAll(ctx context.Context) (left bool) {
	for _, k := range run.order {
		v, ok := run.cluster.VPod(k)
		if !ok {
			continue
		}
		ps, err := run.sched.Schedule(ctx, v)
		delete(run.errs, k)
		if err != nil {
			run.errs[k] = err
			if _, requeue := vpod.IsRequeue(err); requeue {
				left = true
			} else {
				continue
			}
		}
		if ps != nil || err == nil {
			run.cluster.Commit(k, ps)
		}
	}
	return left
}

func (run *vpodRun) record(kind string, res vpod.AutoscaleResult, err error) {
	p := AutoscalePass{Kind: kind, Replicas: res.Replicas, Target: res.Target, Scaled: res.Scaled, Capped: res.Capped, Wanted: res.Wanted,
		Bounded: res.Bounded, Bound: res.Bound, Need: res.Need,
		Compacted: res.Compacted, Evictions: res.Evictions}
	if err != nil {
		p.Error = err.Error()
	}
	run.rep.Passes = append(run.rep.Passes, p)
}

// evict is the simulation's Evictor: like eventing-kafka-broker's, it
// removes the placement from the vpod's status, so the vpod is placed
// again (on lower ordinals) at its next scheduling.
func (run *vpodRun) evict(_ context.Context, _ *corev1.Pod, v vpod.VPod, from vpod.Placement) error {
	cur, ok := run.cluster.VPod(v.Key)
	if !ok {
		return fmt.Errorf("vpod %s is gone", v.Key)
	}
	var kept []vpod.Placement
	for _, p := range cur.Placements {
		if p.PodName != from.PodName {
			kept = append(kept, p)
		}
	}
	run.cluster.Commit(v.Key, kept)
	return nil
}

// resize plays the StatefulSet controller after a scale change: pods for
// new ordinals are created and scheduled like any other pod; pods at or
// above the new count are deleted.
func (run *vpodRun) resize(ctx context.Context, replicas int32) error {
	e, sts := run.e, run.sts
	var add []*corev1.Pod
	for i := int32(0); i < replicas; i++ {
		if e.cluster.PodByName(sts.Namespace, fmt.Sprintf("%s-%d", sts.Name, i)) == nil {
			add = append(add, statefulSetPod(sts, i))
		}
	}
	for i := replicas; i < replicas+strayOrdinals; i++ {
		if p := e.cluster.PodByName(sts.Namespace, fmt.Sprintf("%s-%d", sts.Name, i)); p != nil {
			if err := e.cluster.DeleteAs(ctx, p, memapi.OpScaleDown); err != nil {
				return fmt.Errorf("scale %s/%s down: delete %s: %w", sts.Namespace, sts.Name, p.Name, err)
			}
			run.cluster.DeletePod(p.Name)
		}
	}
	if len(add) > 0 {
		if err := e.AddPods(add...); err != nil {
			return fmt.Errorf("scale %s/%s up: %w", sts.Namespace, sts.Name, err)
		}
		if _, err := e.Settle(ctx); err != nil && !errors.Is(err, ErrNotSettled) {
			return err
		}
	}
	for _, p := range run.adapterPods() {
		run.cluster.SetPod(p)
	}
	return nil
}
